"""The trace schema: one row per event (documented in docs/traces-format.md).

A row is a flat record, the same in JSON Lines (one JSON object per line) and Parquet (one column per
field). Columns are listed in `COLUMNS` with their type; which ones a row must fill depends on its
`kind` (`REQUIRED_BY_KIND`). `payload` holds the full request or response record as JSON
(traces.codec), so the replay needs nothing else to rebuild it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final, Optional

from model.vocabulary import PastableEnum

SCHEMA_VERSION: Final = "groupspec.trace/1"


class EventKind(PastableEnum):
    config = "config"  # seq 0 of a recorded group: the CoordinatorConfig (payload), optional
    request = "request"  # a request handed to the coordinator (payload = request record)
    response = "response"  # a response delivered to a callback (payload = response record)
    advance = "advance"  # the driver moved the virtual clock to ts_ms
    timer = "timer"  # a timer fired inside the coordinator (api = TimerEvent name)
    transition = "transition"  # the group changed state (from_state -> to_state, generation)
    log = "log"  # one broker server.log line about the group (log_event names what it says)


class LogEvent(PastableEnum):
    """What a parsed GroupCoordinator log line says about a group (traces.logparse)."""

    PrepareRebalance = "PrepareRebalance"  # -> PreparingRebalance (generation = old generation)
    Stabilized = "Stabilized"  # PreparingRebalance -> CompletingRebalance, generation + 1
    NowEmpty = "NowEmpty"  # PreparingRebalance -> Empty, generation + 1
    AssignmentReceived = "AssignmentReceived"  # leader SyncGroup accepted (-> Stable if persisted)
    MemberJoined = "MemberJoined"  # a member (new id) added to the group
    MemberIdRequired = "MemberIdRequired"  # MEMBER_ID_REQUIRED answered: pending id, not a member
    StaticMemberReplaced = "StaticMemberReplaced"  # static restart: old id replaced by new id
    MemberLeft = "MemberLeft"  # explicit LeaveGroup
    MemberFailed = "MemberFailed"  # session expiry removed the member
    PendingMemberRemoved = "PendingMemberRemoved"  # pending id left or expired
    DynamicMembersRemoved = "DynamicMembersRemoved"  # join phase evicted non-rejoined members
    RebalanceStuck = "RebalanceStuck"  # "could not complete rebalance because no members rejoined"
    Loaded = "Loaded"  # partition immigration: group restored (Stable or Empty)
    Unloaded = "Unloaded"  # partition emigration: -> Dead
    Dead = "Dead"  # offset expiry / DeleteGroups: -> Dead
    Info = "Info"  # a known coordinator message that changes nothing the checker tracks


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str  # "string" | "int64" | "int32"
    doc: str


COLUMNS: Final[tuple[Column, ...]] = (
    Column("group_id", "string", "the consumer group"),
    Column("seq", "int64", "per-group sequence number from 0, the replay order"),
    Column("ts_ms", "int64", "virtual clock (traces) or epoch milliseconds (logs)"),
    Column("source", "string", "who produced the row: 'reference', 'model', 'broker-log', ..."),
    Column("kind", "string", "EventKind name"),
    Column("member_id", "string", "member the event is about, if any"),
    Column("instance_id", "string", "group.instance.id of that member, if any"),
    Column("api", "string", "ApiKey name (request/response) or TimerEvent name (timer)"),
    Column("api_version", "int32", "request version when known (logs and wire traces)"),
    Column("request_id", "int64", "correlates a request with its response"),
    Column("generation", "int32", "generation in the request, response, transition or log line"),
    Column("error", "string", "Error name of a response (top-level or first per-item error)"),
    Column("from_state", "string", "transition source state (GroupState name)"),
    Column("to_state", "string", "transition target state, or the state a log line reports"),
    Column("log_event", "string", "LogEvent name for kind=log"),
    Column("member_count", "int32", "member count a log line reports"),
    Column("payload", "string", "full request/response record as JSON (traces.codec)"),
    Column("origin", "string", "provenance: file:line of a log line, or the producer's note"),
)

COLUMN_NAMES: Final = tuple(c.name for c in COLUMNS)
COLUMN_TYPES: Final[dict[str, str]] = {c.name: c.type for c in COLUMNS}
ALWAYS_REQUIRED: Final = ("group_id", "seq", "ts_ms", "source", "kind")

REQUIRED_BY_KIND: Final[dict[EventKind, tuple[str, ...]]] = {
    EventKind.config: ("payload",),
    EventKind.request: ("api", "request_id", "payload"),
    EventKind.response: ("api", "request_id", "payload"),
    EventKind.advance: (),
    EventKind.timer: ("api",),
    EventKind.transition: ("from_state", "to_state", "generation"),
    EventKind.log: ("log_event",),
}

INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One validated row."""

    group_id: str
    seq: int
    ts_ms: int
    source: str
    kind: EventKind
    member_id: Optional[str] = None
    instance_id: Optional[str] = None
    api: Optional[str] = None
    api_version: Optional[int] = None
    request_id: Optional[int] = None
    generation: Optional[int] = None
    error: Optional[str] = None
    from_state: Optional[str] = None
    to_state: Optional[str] = None
    log_event: Optional[str] = None
    member_count: Optional[int] = None
    payload: Optional[str] = None
    origin: Optional[str] = None

    def to_row(self) -> dict[str, Any]:
        row = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        row["kind"] = self.kind.value
        return row


def arrow_schema() -> Any:
    """The pyarrow schema of a trace file (pyarrow is imported here only)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32()}
    return pa.schema(
        [pa.field(c.name, types[c.type], nullable=c.name not in ALWAYS_REQUIRED) for c in COLUMNS]
    )


def spark_ddl(columns: tuple[Column, ...] = COLUMNS) -> str:
    spark_types = {"string": "string", "int64": "bigint", "int32": "int"}
    return ", ".join(f"{c.name} {spark_types[c.type]}" for c in columns)

"""Randomized workloads recorded as traces: `groupspec traces generate`.

Each group gets its own coordinator from the factory and a few simulated clients (dynamic or
static) that behave like Kafka's consumer: join (MEMBER_ID_REQUIRED then rejoin), sync, heartbeat,
commit, leave, and react to errors by rejoining. Faults are client misbehaviour: `crash` (stops
without leaving: session timeout), `session-timeout` (pauses heartbeats past the session timeout,
then resumes), `rebalance-timeout` (rejoins late), `lost-response` (ignores one response and retries),
`leave` (leaves and maybe comes back). The virtual clock advances between actions.

A chosen fraction of groups runs with a named coordinator bug. The manifest lists them, and which of
them the bug visibly changed: the same group is re-run without the bug and the two traces are
compared (member ids aside), so "the job flags exactly the bugged groups" can be checked honestly.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Final, Optional, Protocol

from model.coordinator_api import Coordinator, CoordinatorConfig, Recorder
from model.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    ProtocolMetadata,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartition,
)
from model.vocabulary import Error
from traces import codec
from traces.output import AtomicOutput
from traces.recorder import InternalEventsOnly, RecordingCoordinator, TraceRecorder
from traces.schema import EventKind, TraceEvent

FAULTS: Final = ("crash", "session-timeout", "rebalance-timeout", "lost-response", "leave")
SESSION_TIMEOUT_MS: Final = 10000
REBALANCE_TIMEOUT_MS: Final = 15000
HEARTBEAT_INTERVAL_MS: Final = 3000


class GenerateError(ValueError):
    """Bad generator options (exit 2)."""


class CoordinatorFactory(Protocol):
    def __call__(
        self, config: CoordinatorConfig, recorder: Optional[Recorder] = ..., bugs: frozenset[str] = ...
    ) -> Coordinator: ...


def model_factory(
    config: CoordinatorConfig, recorder: Optional[Recorder] = None, bugs: frozenset[str] = frozenset()
) -> Coordinator:
    """The model as a trace producer (the seeded bugs belong to the reference coordinator)."""
    if bugs:
        raise GenerateError("the model has no seeded bugs; inject bugs with the reference coordinator")
    from model.concrete import ModelCoordinator

    return ModelCoordinator(config, recorder=recorder)


@dataclass(frozen=True, slots=True)
class GeneratorOptions:
    groups: int
    seed: int = 0
    faults: frozenset[str] = frozenset(FAULTS)
    bugs: tuple[str, ...] = ()
    bug_fraction: float = 0.1
    steps: int = 40
    fmt: str = "jsonl"
    files: int = 1

    @classmethod
    def from_args(cls, *, groups: int, seed: int, faults: str, bugs: tuple[str, ...], bug_fraction: float,
                  steps: int, fmt: str, files: int) -> "GeneratorOptions":
        if groups < 1:
            raise GenerateError("--groups must be >= 1")
        if not 0.0 <= bug_fraction <= 1.0:
            raise GenerateError("--bug-fraction must be in [0, 1]")
        if steps < 1 or files < 1:
            raise GenerateError("--steps and --files must be >= 1")
        names = {"all": set(FAULTS), "none": set()}.get(faults)
        if names is None:
            names = {f.strip() for f in faults.split(",") if f.strip()}
            unknown = sorted(names - set(FAULTS))
            if unknown:
                raise GenerateError(f"unknown fault(s) {unknown}; known: {', '.join(FAULTS)}")
        return cls(groups, seed, frozenset(names), bugs, bug_fraction, steps, fmt, files)


@dataclass(slots=True)
class _Client:
    name: str
    instance_id: Optional[str]
    member_id: str = ""
    generation: int = -1
    phase: str = "new"  # new | rejoin | waiting | sync | stable | paused | crashed | left
    leader: bool = False
    members: tuple[str, ...] = ()
    resume_at: int = 0
    drop_next: bool = False
    on_ok: str = "stable"  # phase after a successful heartbeat/commit (sync while a sync is owed)


@dataclass(slots=True)
class _Group:
    group_id: str
    rng: random.Random
    faults: frozenset[str]
    coordinator: Coordinator
    clients: list[_Client] = field(default_factory=list)

    def send(self, client: _Client, request: Any) -> None:
        client.phase = "waiting"

        def on_response(response: Response) -> None:
            if client.drop_next:  # lost-response: the client never sees it and retries later
                client.drop_next = False
                client.phase = "rejoin" if client.member_id else "new"
                return
            self._react(client, response)

        self.coordinator.handle(request, on_response)

    def _react(self, c: _Client, r: Response) -> None:
        if c.phase in ("crashed", "left"):
            return
        error = getattr(r, "error", Error.NONE)
        if isinstance(r, JoinGroupResponse):
            if error == Error.MEMBER_ID_REQUIRED:
                c.member_id, c.phase = r.member_id, "rejoin"
            elif error == Error.NONE:
                c.member_id, c.generation = r.member_id, r.generation_id
                c.leader = r.leader == r.member_id
                c.members = tuple(m.member_id for m in r.members)
                c.phase = "sync"
            elif error == Error.FENCED_INSTANCE_ID:
                c.phase = "crashed"
            else:
                c.member_id = "" if error == Error.UNKNOWN_MEMBER_ID else c.member_id
                c.phase = "rejoin" if c.member_id else "new"
        elif isinstance(r, (SyncGroupResponse, HeartbeatResponse)):
            if error == Error.NONE:
                c.phase = c.on_ok if isinstance(r, HeartbeatResponse) else "stable"
                c.on_ok = "stable"
            elif error == Error.UNKNOWN_MEMBER_ID:
                c.member_id, c.phase = "", "new"
            elif error == Error.FENCED_INSTANCE_ID:
                c.phase = "crashed"
            else:
                c.phase = "rejoin"
        else:  # commit / leave answers change nothing for the client
            if c.phase == "waiting":
                c.phase, c.on_ok = c.on_ok, "stable"

    def join(self, c: _Client) -> None:
        self.send(c, JoinGroupRequest(
            group_id=self.group_id, member_id=c.member_id, protocol_type="consumer",
            protocols=(ProtocolMetadata("range", c.name.encode()), ProtocolMetadata("roundrobin")),
            session_timeout_ms=SESSION_TIMEOUT_MS, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            group_instance_id=c.instance_id, client_id=c.name,
        ))

    def act(self, c: _Client, now: int) -> None:
        rng = self.rng
        if c.phase == "paused" and now >= c.resume_at:
            c.phase = "stable"
        if c.phase in ("new", "rejoin"):
            if "rebalance-timeout" in self.faults and c.phase == "rejoin" and rng.random() < 0.1:
                c.phase, c.resume_at = "paused", now + REBALANCE_TIMEOUT_MS + 2000
                return
            self.join(c)
        elif c.phase == "sync" and rng.random() < 0.2:
            # The consumer's background thread heartbeats (or commits) while a sync is owed.
            c.on_ok = "sync"
            if rng.random() < 0.5:
                self.send(c, HeartbeatRequest(self.group_id, c.member_id, c.generation, c.instance_id))
            else:
                tp = TopicPartition("events", 0)
                self.send(c, OffsetCommitRequest(self.group_id, c.member_id, c.generation, ((tp, 1),), c.instance_id))
        elif c.phase == "sync":
            assignments = tuple((m, f"a:{m}".encode()) for m in c.members) if c.leader else ()
            self.send(c, SyncGroupRequest(self.group_id, c.member_id, c.generation, c.instance_id,
                                          "consumer", "range", assignments))
        elif c.phase == "stable":
            roll = rng.random()
            if "crash" in self.faults and roll < 0.02:
                c.phase = "crashed"
            elif "leave" in self.faults and roll < 0.05:
                self.send(c, LeaveGroupRequest(self.group_id, (MemberIdentity(c.member_id, c.instance_id),)))
                c.phase = "left" if rng.random() < 0.5 else "new"
                c.member_id = "" if c.phase == "new" and c.instance_id is None else c.member_id
            elif "session-timeout" in self.faults and roll < 0.08:
                c.phase, c.resume_at = "paused", now + SESSION_TIMEOUT_MS + 3000
            elif roll < 0.25:
                tp = TopicPartition("events", rng.randrange(3))
                self.send(c, OffsetCommitRequest(self.group_id, c.member_id, c.generation,
                                                 ((tp, rng.randrange(1000)),), c.instance_id))
            else:
                if "lost-response" in self.faults and rng.random() < 0.03:
                    c.drop_next = True
                self.send(c, HeartbeatRequest(self.group_id, c.member_id, c.generation, c.instance_id))


def _config(rng: random.Random) -> CoordinatorConfig:
    return CoordinatorConfig(group_initial_rebalance_delay_ms=rng.choice((0, 3000)))


def run_group(group_id: str, seed: str, options: GeneratorOptions, factory: CoordinatorFactory,
              bugs: frozenset[str], source: str) -> list[TraceEvent]:
    """One group's whole life, recorded."""
    rng = random.Random(seed)
    events: list[TraceEvent] = []
    recorder = TraceRecorder(events.append, source)
    config = _config(rng)
    recorder._emit(group_id, ts_ms=0, kind=EventKind.config, payload=codec.dumps_config(config))
    inner = factory(config, InternalEventsOnly(recorder), bugs) if bugs else factory(config, InternalEventsOnly(recorder))
    proxy = RecordingCoordinator(inner, recorder, group_id)
    group = _Group(group_id, rng, options.faults, proxy)
    static = rng.random() < 0.3
    for k in range(rng.randint(1, 4)):
        group.clients.append(_Client(f"{group_id}-c{k}", f"{group_id}-i{k}" if static and rng.random() < 0.7 else None))
    for _ in range(options.steps):
        now = proxy.now_ms()
        ready = [c for c in group.clients if c.phase not in ("waiting", "crashed", "left")
                 and not (c.phase == "paused" and now < c.resume_at)]
        if not ready or rng.random() < 0.35:
            proxy.advance(rng.choice((50, 500, HEARTBEAT_INTERVAL_MS, 3100, 6000, 12000)))
            continue
        group.act(rng.choice(ready), now)
    proxy.advance(REBALANCE_TIMEOUT_MS + 1)  # let pending timers fire before the trace ends
    return events


def visible_projection(events: list[TraceEvent]) -> list[tuple[Any, ...]]:
    """What a bug can visibly change: responses and transitions (timers are internal), member ids aside."""
    return [(e.kind, e.ts_ms, e.api, e.error, e.generation if e.kind != EventKind.request else None,
             e.from_state, e.to_state) for e in events if e.kind != EventKind.timer]


def generate(options: GeneratorOptions, factory: CoordinatorFactory, out_dir: Path, overwrite: bool = False,
             source: str = "reference") -> dict[str, Any]:
    chooser = random.Random(f"{options.seed}:bugs")
    bugged = {i for i in range(options.groups) if options.bugs and chooser.random() < options.bug_fraction}
    manifest: dict[str, Any] = {
        "schema": "groupspec.trace/1", "source": source, "seed": options.seed, "groups": options.groups,
        "steps": options.steps, "faults": sorted(options.faults), "bugs": list(options.bugs),
        "bug_fraction": options.bug_fraction, "bugged_groups": [], "bug_observable_groups": [], "events": 0,
        "files": [],
    }
    with AtomicOutput(out_dir, overwrite) as out:
        writers = [_writer(out.path(f"part-{i:05d}.{options.fmt}"), options.fmt) for i in range(options.files)]
        try:
            for i in range(options.groups):
                group_id = f"g{i:07d}"
                seed = f"{options.seed}:{i}"
                bugs = frozenset(options.bugs) if i in bugged else frozenset()
                events = run_group(group_id, seed, options, factory, bugs, source)
                if bugs:
                    manifest["bugged_groups"].append(group_id)
                    clean = run_group(group_id, seed, options, factory, frozenset(), source)
                    if visible_projection(clean) != visible_projection(events):
                        manifest["bug_observable_groups"].append(group_id)
                writers[i % len(writers)].write(events)
                manifest["events"] += len(events)
        finally:
            for w in writers:
                w.close()
        manifest["files"] = [f"part-{i:05d}.{options.fmt}" for i in range(options.files)]
        (out.path("manifest.json")).write_text(json.dumps(manifest, indent=2) + "\n")
        out.commit({"groups": options.groups, "events": manifest["events"]})
    return manifest


class _Writer(Protocol):
    def write(self, events: list[TraceEvent]) -> None: ...
    def close(self) -> None: ...


class _JsonlWriter:
    def __init__(self, path: Path) -> None:
        self._handle = open(path, "w", encoding="utf-8")

    def write(self, events: list[TraceEvent]) -> None:
        for e in events:
            row = {k: v for k, v in e.to_row().items() if v is not None}
            self._handle.write(json.dumps(row, separators=(",", ":")) + "\n")

    def close(self) -> None:
        self._handle.close()


class _ParquetWriter:
    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        from traces.schema import arrow_schema

        self._schema = arrow_schema()
        self._writer = pq.ParquetWriter(str(path), self._schema)
        self._rows: list[dict[str, Any]] = []

    def write(self, events: list[TraceEvent]) -> None:
        self._rows.extend(e.to_row() for e in events)
        if len(self._rows) >= 100_000:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self._schema))
            self._rows = []

    def close(self) -> None:
        self._flush()
        self._writer.close()


def _writer(path: Path, fmt: str) -> _Writer:
    return _JsonlWriter(path) if fmt == "jsonl" else _ParquetWriter(path)


Generate = Callable[[GeneratorOptions, CoordinatorFactory, Path], dict[str, Any]]

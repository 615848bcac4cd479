"""The vectorized stage 1 (pyarrow parse + compute checks, payloads decoded in stage 2) accepts and
rejects exactly the rows the row-at-a-time validator does, with the same reasons."""

from __future__ import annotations

import json
from typing import Optional

import pyarrow as pa
import pytest

from model.messages import HeartbeatResponse, JoinGroupRequest, ProtocolMetadata
from model.vocabulary import Error
from traces_helpers import model_trace, row_json
from traces import codec
from traces.batch import flag_rows, parse_schema, stage_json_lines
from traces.pipeline import validate_json_line
from traces.schema import COLUMN_NAMES, EventKind, TraceEvent
from traces.validate import RowError, decode_payload, parse_json_line

GOOD: dict[str, object] = {
    "group_id": "g", "seq": 1, "ts_ms": 0, "source": "t", "kind": "request", "api": "JoinGroup",
    "request_id": 1,
    "payload": codec.dumps_record(JoinGroupRequest("g", "", "consumer", (ProtocolMetadata("range"),))),
}
RESPONSE = GOOD | {"kind": "response", "api": "Heartbeat", "payload": codec.dumps_record(HeartbeatResponse(Error.NONE))}

LINES = [
    json.dumps(GOOD), json.dumps(RESPONSE),
    json.dumps(GOOD)[:-20], "", "   ", "[1, 2]", "5", "null",
    json.dumps(GOOD | {"seq": "1"}), json.dumps(GOOD | {"seq": True}), json.dumps(GOOD | {"seq": 1.0}),
    json.dumps(GOOD | {"seq": -1}), json.dumps(GOOD | {"group_id": ""}), json.dumps(GOOD | {"group_id": None}),
    json.dumps({k: v for k, v in GOOD.items() if k != "ts_ms"}),
    json.dumps({k: v for k, v in GOOD.items() if k != "payload"}),
    json.dumps({k: v for k, v in GOOD.items() if k != "request_id"}),
    json.dumps(GOOD | {"kind": "gossip"}), json.dumps(GOOD | {"api": "Produce"}),
    json.dumps(GOOD | {"kind": "timer", "api": "JoinGroup"}),
    json.dumps(GOOD | {"kind": "timer", "api": "MemberSessionExpire"}),
    json.dumps(GOOD | {"extra": 1}), json.dumps(GOOD | {"generation": 2**40}),
    json.dumps(GOOD | {"kind": "transition", "from_state": "Rebalancing", "to_state": "Stable", "generation": 1}),
    json.dumps(GOOD | {"kind": "transition", "from_state": "Empty", "to_state": "Stable", "generation": 1}),
    json.dumps(GOOD | {"kind": "transition", "from_state": "Empty", "to_state": "Stable"}),
    json.dumps(GOOD | {"error": "NOPE"}), json.dumps(GOOD | {"log_event": "Nope"}),
    json.dumps(GOOD | {"api": "SyncGroup"}), json.dumps(GOOD | {"group_id": "other"}),
    json.dumps(GOOD | {"payload": "{not json"}), json.dumps(GOOD | {"payload": 7}),
    json.dumps(RESPONSE | {"api": "JoinGroup"}), json.dumps(RESPONSE | {"api": "FindCoordinator"}),
    json.dumps(GOOD | {"kind": "config", "payload": '{"group_max_size": 3}'}),
    json.dumps(GOOD | {"kind": "config", "payload": '{"group_max_size": "3"}'}),
    '{"group_id":"g","group_id":"h","seq":0,"ts_ms":0,"source":"t","kind":"advance"}',  # duplicate key
    json.dumps({"group_id": "g", "seq": 0, "ts_ms": 0, "source": "t", "kind": "advance"}) + " x",
]


def _row_at_a_time(line: str) -> Optional[str]:
    try:
        parse_json_line(line)
    except RowError as e:
        return str(e)
    return None


def _batch(lines: list[str]) -> list[Optional[str]]:
    origins = pa.array([f"f:{i}" for i in range(len(lines))], pa.string())
    table = stage_json_lines(lines, origins, lambda i: validate_json_line(lines[i], f"f:{i}"))
    assert table.num_rows == len(lines)  # nothing dropped, nothing doubled
    by_origin: dict[str, Optional[str]] = {}
    for row in table.to_pylist():
        reason = row["reject_reason"]
        if reason is None and row["kind"] in ("request", "response"):
            values = {n: row[n] for n in COLUMN_NAMES} | {"kind": EventKind(row["kind"])}
            try:
                decode_payload(TraceEvent(**values))  # stage 2's payload check
            except RowError as e:
                reason = str(e)
        by_origin[row["origin"]] = reason
    return [by_origin[f"f:{i}"] for i in range(len(lines))]


def test_batch_stage_gives_the_row_validators_verdicts_and_reasons() -> None:
    expected = [_row_at_a_time(line) for line in LINES]
    assert expected[:2] == [None, None] and sum(r is not None for r in expected) > 30
    assert _batch(LINES) == expected


def test_a_recorded_trace_passes_the_vector_checks_untouched() -> None:
    lines = [row_json(e) for e in model_trace(steps=60)]
    origins = pa.array([f"f:{i}" for i in range(len(lines))], pa.string())
    called: list[int] = []

    def check(i: int) -> dict[str, object]:
        called.append(i)
        return validate_json_line(lines[i], f"f:{i}")

    table = stage_json_lines(lines, origins, check)
    assert table.num_rows == len(lines) and table["reject_reason"].null_count == len(lines)
    kinds = [json.loads(line)["kind"] for line in lines]
    assert [kinds[i] for i in called] == ["config"]  # only the config row is checked in Python


@pytest.mark.parametrize("column, value", [("kind", "gossip"), ("api", "Produce"), ("to_state", "Nope"),
                                           ("group_id", ""), ("seq", -1), ("request_id", None)])
def test_the_vector_checks_can_fail(column: str, value: object) -> None:
    # negative control: each rule flags the row it should, and only that row
    rows = [dict.fromkeys(COLUMN_NAMES) | GOOD for _ in range(3)]
    rows[1][column] = value
    flags = flag_rows(pa.Table.from_pylist(rows, schema=parse_schema())).to_pylist()
    assert flags == [False, True, False]

"""Row validation and the payload codec: each malformed row is rejected with a reason naming the field."""

from __future__ import annotations

import json

import pytest

from model.messages import JoinGroupRequest, JoinGroupResponse, JoinGroupMember, ProtocolMetadata
from model.vocabulary import Error
from traces_helpers import model_trace, row_json
from traces import codec
from traces.validate import RowError, SchemaError, check_first_json_line, parse_json_line


def test_records_round_trip_through_json() -> None:
    for event in model_trace(steps=60):
        if event.payload is not None and event.kind.value in ("request", "response"):
            record = codec.loads_record(event.payload)
            assert codec.dumps_record(record) == event.payload


def test_every_recorded_row_validates() -> None:
    for event in model_trace(steps=60):
        assert parse_json_line(row_json(event)) == event


GOOD: dict[str, object] = {
    "group_id": "g", "seq": 1, "ts_ms": 0, "source": "t", "kind": "request", "api": "JoinGroup",
    "request_id": 1,
    "payload": codec.dumps_record(JoinGroupRequest("g", "", "consumer", (ProtocolMetadata("range"),))),
}


@pytest.mark.parametrize(
    "line, reason",
    [
        (json.dumps(GOOD)[:-20], "not valid JSON"),
        ("", "empty line"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps(GOOD | {"seq": "1"}), "column seq: expected integer, got str"),
        (json.dumps(GOOD | {"seq": True}), "column seq: expected integer, got bool"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "ts_ms"}), "missing field ts_ms"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "payload"}), "missing field payload (required for kind request)"),
        (json.dumps(GOOD | {"kind": "gossip"}), "column kind: expected one of"),
        (json.dumps(GOOD | {"api": "Produce"}), "column api: 'Produce' is not a ApiKey name"),
        (json.dumps(GOOD | {"extra": 1}), "unknown column(s) extra"),
        (json.dumps(GOOD | {"kind": "transition", "from_state": "Rebalancing", "to_state": "Stable", "generation": 1}),
         "column from_state: unknown group state 'Rebalancing'"),
        (json.dumps(GOOD | {"api": "SyncGroup"}), "payload is a JoinGroupRequest, but column api is SyncGroup"),
        (json.dumps(GOOD | {"group_id": "other"}), "payload group_id 'g' differs from column group_id 'other'"),
        (json.dumps(GOOD | {"payload": str(GOOD["payload"]).replace('"consumer"', "7")}), "payload.protocol_type: expected str, got int"),
        (json.dumps(GOOD | {"payload": '{"type":"JoinGroupRequest","group_id":"g"}'}), "missing field(s) member_id, protocol_type, protocols"),
        (json.dumps(GOOD | {"generation": 2**40}), "column generation: 1099511627776 out of int32 range"),
    ],
)
def test_malformed_rows_are_rejected_with_their_reason(line: str, reason: str) -> None:
    with pytest.raises(RowError) as caught:
        parse_json_line(line)
    assert reason in str(caught.value)


def test_response_payload_must_match_the_api() -> None:
    response = JoinGroupResponse(Error.NONE, 1, "consumer", "range", "m", "m", False, (JoinGroupMember("m", None, b"\x01"),))
    row = GOOD | {"kind": "response", "payload": codec.dumps_record(response)}
    assert parse_json_line(json.dumps(row)).api == "JoinGroup"
    with pytest.raises(RowError, match="expected HeartbeatResponse, got JoinGroupResponse"):
        parse_json_line(json.dumps(row | {"api": "Heartbeat"}))


def test_a_file_that_is_not_a_trace_stops_the_job() -> None:
    with pytest.raises(SchemaError, match="no group_id and no kind column"):
        check_first_json_line("x.jsonl", json.dumps({"user": "u", "event": "login"}))
    check_first_json_line("x.jsonl", json.dumps({"group_id": "g"}))  # a bad row, not a bad file
    check_first_json_line("x.jsonl", '{"group_id": "g", "se')  # truncated: that row's problem

"""The parser accepts every scenario file and names file/scenario/step/field on bad input."""

from __future__ import annotations

import glob
import json
import os
from typing import Any

import pytest

from conformance.parse import STEP_OPS, ScenarioFormatError, load, parse_text
from conformance.scenario import FORMAT, JoinStep, SyncStep

SCENARIO_DIR = os.path.join(os.path.dirname(__file__), "..", "scenarios")
FILES = sorted(glob.glob(os.path.join(SCENARIO_DIR, "*.json"))
               + glob.glob(os.path.join(SCENARIO_DIR, "kafka-coordinator-test", "*.json")))


def doc(steps: list[Any], **extra: Any) -> str:
    base: dict[str, Any] = {"format": FORMAT, "defaults": {"group": "g"}, "scenarios": [{"name": "s", "steps": steps}]}
    base.update(extra)
    return json.dumps(base)


def error_of(text: str) -> str:
    with pytest.raises(ScenarioFormatError) as info:
        parse_text(text, "f.json")
    return str(info.value)


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_every_scenario_file_parses(path: str) -> None:
    f = load(path)
    assert f.scenarios
    for s in f.scenarios:
        assert s.source, f"{s.name} has no source"
        assert s.steps


def test_scenario_files_cover_enough() -> None:
    assert sum(len(load(p).scenarios) for p in FILES) >= 40
    used = {json.loads(s.raw)["steps"][i]["op"] for p in FILES for s in load(p).scenarios for i in range(len(s.steps))}
    missing = STEP_OPS - used
    assert not missing, f"ops no scenario uses: {sorted(missing)}"


def test_defaults_are_merged() -> None:
    text = json.dumps(
        {
            "format": FORMAT,
            "defaults": {
                "group": "g",
                "config": {"group_max_size": 5, "group_initial_rebalance_delay_ms": 0},
                "join": {"session_timeout_ms": 7000, "protocols": [{"name": "rr", "metadata": "0a"}]},
            },
            "whatever": 1,
            "scenarios": [
                {
                    "name": "s",
                    "config": {"group_max_size": 3, "not_owned_groups": ["x"], "append_result": "MESSAGE_TOO_LARGE"},
                    "steps": [
                        {"op": "join", "member": "", "rebalance_timeout_ms": 1, "bind": {"member_id": "A"}},
                        {"op": "sync", "group": "h", "member": "$A", "generation": 1},
                    ],
                }
            ],
        }
    )
    s = parse_text(text, "f.json").scenarios[0]
    assert s.config.group_max_size == 3
    assert s.config.group_initial_rebalance_delay_ms == 0
    assert s.config.not_owned_groups == frozenset({"x"})
    assert s.config.append_result.name == "MESSAGE_TOO_LARGE"
    join, sync = s.steps
    assert isinstance(join, JoinStep) and isinstance(sync, SyncStep)
    assert join.session_timeout_ms == 7000 and join.rebalance_timeout_ms == 1
    assert [p.name for p in join.protocols] == ["rr"] and join.protocols[0].metadata == b"\x0a"
    assert join.protocol_type == "consumer" and join.require_known_member_id
    assert join.meta.group == "g" and sync.meta.group == "h"


def test_bad_json_names_line_and_column() -> None:
    msg = error_of('{\n  "format": ,\n}')
    assert msg.startswith("f.json: line 2, column 13: invalid JSON")


def test_unknown_op() -> None:
    msg = error_of(doc([{"op": "advance", "ms": 1}, {"op": "jion", "member": ""}]))
    assert "f.json: scenario 0 ('s'): step 1 (jion): field 'op': expected one of" in msg
    assert '"jion"' in msg


def test_missing_field() -> None:
    msg = error_of(doc([{"op": "heartbeat", "member": "m"}]))
    assert msg == "f.json: scenario 0 ('s'): step 0 (heartbeat): field 'generation': missing required field"


def test_wrong_type() -> None:
    msg = error_of(doc([{"op": "join", "member": "", "session_timeout_ms": "10s"}]))
    assert msg == "f.json: scenario 0 ('s'): step 0 (join): field 'session_timeout_ms': expected an integer, got \"10s\""
    msg = error_of(doc([{"op": "join", "member": "", "expect": {"error": "NOPE"}}]))
    assert "field 'expect.error': expected a Kafka error name" in msg
    msg = error_of(doc([{"op": "check_group", "expect": {"state": "Sleeping"}}]))
    assert "step 0 (check_group): field 'expect.state'" in msg


def test_unknown_field_and_expect_key() -> None:
    assert "field 'expcet': unknown field for op join" in error_of(doc([{"op": "join", "member": "", "expcet": {}}]))
    assert "field 'expect.members': unknown expect key for join" in error_of(
        doc([{"op": "join", "member": "", "expect": {"members": 1}}])
    )


def test_bad_member_reference() -> None:
    msg = error_of(doc([{"op": "heartbeat", "member": "$A", "generation": 1}]))
    assert msg.startswith("f.json: scenario 0 ('s'): step 0 (heartbeat): field 'member': $A is not bound by an earlier step")
    msg = error_of(doc([{"op": "heartbeat", "member": "$A-1", "generation": 1}]))
    assert "field 'member': expected \"$X\" with X a name bound by an earlier `bind`" in msg
    # binding later in the scenario does not help an earlier reference
    msg = error_of(
        doc(
            [
                {"op": "leave", "members": [{"member_id": "$A"}]},
                {"op": "join", "member": "", "bind": {"member_id": "A"}},
            ]
        )
    )
    assert "step 0 (leave): field 'members[0].member_id': $A is not bound" in msg
    msg = error_of(doc([{"op": "join", "member": "", "bind": {"member_id": "A"}}, {"op": "join", "member": "", "bind": {"member_id": "A"}}]))
    assert "step 1 (join): field 'bind.member_id': $A is already bound at step 0" in msg


def test_bad_generation_reference() -> None:
    msg = error_of(doc([{"op": "heartbeat", "member": "m", "generation": "$gen:j"}]))
    assert msg == "f.json: scenario 0 ('s'): step 0 (heartbeat): field 'generation': $gen:j: 'j' is not the id of an earlier join step"
    msg = error_of(doc([{"op": "heartbeat", "member": "m", "generation": "gen:j"}]))
    assert "field 'generation': expected an integer or \"$gen:<id of an earlier join>\", got \"gen:j\"" in msg
    msg = error_of(doc([{"op": "heartbeat", "id": "h", "member": "m", "generation": 1}, {"op": "heartbeat", "member": "m", "generation": "$gen:h"}]))
    assert "step 1 (heartbeat): field 'generation': $gen:h: 'h' is not the id of an earlier join step" in msg


def test_request_ids_and_await_rules() -> None:
    assert "field 'id': 'x' is not the id of an earlier request step" in error_of(doc([{"op": "check_response", "id": "x"}]))
    assert "field 'id': missing: an `await: \"later\"` request needs an id" in error_of(
        doc([{"op": "join", "member": "", "await": "later"}])
    )
    assert "field 'expect': not allowed on an `await: \"later\"` request" in error_of(
        doc([{"op": "join", "id": "j", "member": "", "await": "later", "expect": {"error": "NONE"}}])
    )
    assert "field 'await': expected \"immediate\" or \"later\"" in error_of(doc([{"op": "join", "member": "", "await": "soon"}]))


def test_missing_group_without_default() -> None:
    text = json.dumps({"format": FORMAT, "scenarios": [{"name": "s", "steps": [{"op": "describe"}]}]})
    assert "step 0 (describe): field 'group': missing (and the file has no defaults.group)" in error_of(text)


def test_file_level_errors() -> None:
    assert "field 'format': expected" in error_of(json.dumps({"format": "other/1", "scenarios": []}))
    assert "field 'scenarios': expected a non-empty list" in error_of(json.dumps({"format": FORMAT}))
    assert "field 'defaults.config.group_max_sz': unknown config key" in error_of(
        json.dumps({"format": FORMAT, "defaults": {"config": {"group_max_sz": 1}}, "scenarios": [{"name": "s", "steps": []}]})
    )
    assert "scenario 1 ('s'): field 'name': duplicate scenario name 's'" in error_of(
        json.dumps({"format": FORMAT, "scenarios": [{"name": "s", "steps": []}, {"name": "s", "steps": []}]})
    )
    assert "backdoor" in error_of(doc([{"op": "setup_prepare_rebalance"}]))


def test_unreadable_file(tmp_path: Any) -> None:
    with pytest.raises(ScenarioFormatError) as info:
        load(str(tmp_path / "nope.json"))
    assert "nope.json: cannot read" in str(info.value)


@pytest.mark.parametrize("op,key", [("describe", "state"), ("check_group", "state")])
def test_a_list_where_a_state_name_belongs_is_a_format_error(op: str, key: str) -> None:
    # (was a TypeError: a list is no member of a set of names)
    message = error_of(doc([{"op": op, "expect": {key: ["Stable"]}}]))
    assert f"field 'expect.{key}'" in message and 'got ["Stable"]' in message
    parse_text(doc([{"op": op, "expect": {key: "Stable"}}]), "f.json")  # the name itself is fine

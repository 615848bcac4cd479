"""Findings that replay exactly: the scenario keeps each request's API version, checks the set of
answers the model allows, names the step where the target departs, and "as found" means the
replay fails at that step with the finding's class (elsewhere, or otherwise, it is not)."""

from __future__ import annotations

import io
import json
import os
from typing import Any

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import Error
from server.run import start_in_thread

from conformance.cli import run_files
from conformance.parse import load
from conformance.runner import Outcome
from conformance.scenario import CheckResponseStep, REQUEST_STEP_TYPES
from fuzz.engine import Event, SequenceResult
from fuzz.judge import Finding
from fuzz.replay import judge_replay, replay
from fuzz.shrink import scenario_document

CFG = CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=60000,
                        group_initial_rebalance_delay_ms=0)
TP = m.TopicPartition("fuzz-topic", 0)
ROW = "Empty/Heartbeat/unknown-member"


def finding(expected: tuple[dict[str, Any], ...] = ({"error": "UNKNOWN_MEMBER_ID"},),
            shape: str = "expected UNKNOWN_MEMBER_ID actual NONE") -> Finding:
    return Finding(2, "Heartbeat", 3, ("Empty",), (ROW,), expected, {"error": "NONE"}, 5, shape, ROW)


def run_result() -> SequenceResult:
    """A commit with generation -1 makes an Empty group (with offsets); an unknown member's
    heartbeat (v3) is answered NONE: the seeded bug heartbeat-empty-accepted."""
    commit = m.OffsetCommitRequest("g", "", -1, ((TP, 5),))
    beat = m.HeartbeatRequest("g", "ghost-7", 0)
    events = [Event("send", 1, 0, commit, 7), Event("recv", 1, 1, response=m.OffsetCommitResponse(((TP, Error.NONE),))),
              Event("send", 2, 2, beat, 3), Event("recv", 2, 3, response=m.HeartbeatResponse(Error.NONE))]
    return SequenceResult(0, "g", [], events=events)


def write(tmp: str, f: Finding, name: str = "s") -> str:
    path = os.path.join(tmp, f"{name}.json")
    with open(path, "w", encoding="utf-8") as out:
        json.dump(scenario_document(run_result(), f, CFG, name, "serve"), out)
    return path


def test_scenario_keeps_versions_answers_and_departing_step(tmp_path: str) -> None:
    two = finding(({"error": "UNKNOWN_MEMBER_ID"}, {"error": "REBALANCE_IN_PROGRESS"}),
                  "expected REBALANCE_IN_PROGRESS/UNKNOWN_MEMBER_ID actual NONE")
    path = write(str(tmp_path), two)
    scenario = load(path).scenarios[0]
    requests = [s for s in scenario.steps if isinstance(s, REQUEST_STEP_TYPES)]
    assert [r.meta.api_version for r in requests] == [7, 3]
    conv = json.load(open(path))["conventions"]
    check = scenario.steps[conv["departs_at_step"]]
    assert isinstance(check, CheckResponseStep) and check.id == "r2"
    assert [dict((e.key, e.value) for e in alt) for alt in check.expect_any] == [
        {"error": "UNKNOWN_MEMBER_ID"}, {"error": "REBALANCE_IN_PROGRESS"}]
    assert conv["departs_request_step"] == requests[1].meta.index and conv["api_version"] == 3
    # the model's own answer is one of those allowed: the scenario passes on the model ...
    assert run_files([path], "model", out=io.StringIO()) == 0
    # ... and a set of answers without it fails (negative control of expect_any)
    other = finding(({"error": "REBALANCE_IN_PROGRESS"}, {"error": "ILLEGAL_GENERATION"}),
                    "expected ILLEGAL_GENERATION/REBALANCE_IN_PROGRESS actual NONE")
    assert run_files([write(str(tmp_path), other, "o")], "model", out=io.StringIO()) == 1


def test_fails_as_found_on_the_buggy_target_only(tmp_path: str) -> None:
    path = write(str(tmp_path), finding())
    with start_in_thread(CFG, "heartbeat-empty-accepted") as buggy:
        got = replay(path, f"kafka://127.0.0.1:{buggy.port}")
    assert got.as_found and got.failed_step == json.load(open(path))["conventions"]["departs_at_step"]
    with start_in_thread(CFG) as good:
        clean = replay(path, f"kafka://127.0.0.1:{good.port}")
    assert not clean.as_found and "passes" in clean.text
    # negative control: the same failure, recorded as another class, is not "as found"
    doc = json.load(open(path))
    doc["conventions"]["shape"] = "expected UNKNOWN_MEMBER_ID actual REBALANCE_IN_PROGRESS"
    with open(path, "w", encoding="utf-8") as out:
        json.dump(doc, out)
    with start_in_thread(CFG, "heartbeat-empty-accepted") as buggy:
        wrong = replay(path, f"kafka://127.0.0.1:{buggy.port}")
    assert not wrong.as_found and "another class" in wrong.text


def test_a_replay_failing_at_another_step_is_not_as_found() -> None:
    conv = {"departs_at_step": 4, "api": "Heartbeat", "api_version": 3,
            "shape": "expected UNKNOWN_MEMBER_ID actual NONE", "expected": [{"error": "UNKNOWN_MEMBER_ID"}]}
    none = m.HeartbeatResponse(Error.NONE)
    assert judge_replay(conv, Outcome.FAIL, 4, none).as_found
    assert not judge_replay(conv, Outcome.FAIL, 2, none).as_found  # another step
    assert not judge_replay(conv, Outcome.FAIL, 4, m.HeartbeatResponse(Error.REBALANCE_IN_PROGRESS)).as_found
    assert not judge_replay(conv, Outcome.PASS, None, None).as_found
    nothing = judge_replay({**conv, "shape": "expected UNKNOWN_MEMBER_ID actual no-response"},
                           Outcome.FAIL, 4, None)
    assert nothing.as_found  # no answer at that step, found as no-response


def test_expect_any_is_checked_by_the_parser(tmp_path: str) -> None:
    """Bad input: `expect_any` with `expect`, an empty list, an unknown key inside: a format error
    naming the step and field."""
    import pytest
    from conformance.parse import parse_text
    from model.errors import BadInput
    doc = scenario_document(run_result(), finding(({"error": "UNKNOWN_MEMBER_ID"}, {"error": "NONE"}),
                                                  "expected NONE/UNKNOWN_MEMBER_ID actual NONE"), CFG, "s", "serve")
    check = doc["scenarios"][0]["steps"][-1]
    assert "expect_any" in check
    for bad, field in (({"expect": {"error": "NONE"}}, "expect_any"), ({"expect_any": []}, "expect_any"),
                       ({"expect_any": [{"nope": 1}]}, "expect_any[0].nope")):
        broken = json.loads(json.dumps(doc))
        broken["scenarios"][0]["steps"][-1].update(bad)
        with pytest.raises(BadInput) as e:
            parse_text(json.dumps(broken), "x.json")
        assert field in str(e.value)

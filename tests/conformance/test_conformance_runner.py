"""Runner mechanics against a tiny fake target (negative controls included)."""

from __future__ import annotations

import json
from typing import Any, Optional

from model.coordinator_api import Coordinator, CoordinatorConfig
from model.messages import HeartbeatRequest, Request, Response
from model.vocabulary import Error

from conformance.finding import finding_document, render_finding
from conformance.parse import parse_text
from conformance.runner import Outcome, ScenarioResult, run_scenario
from conformance.scenario import FORMAT, Scenario, ScenarioFile

from conformance_fake_target import FakeCoordinator, WhiteBoxFake


def parse(steps: list[Any], **scenario: Any) -> ScenarioFile:
    body: dict[str, Any] = {"name": "s", "source": "test", "steps": steps}
    body.update(scenario)
    return parse_text(json.dumps({"format": FORMAT, "defaults": {"group": "g"}, "scenarios": [body]}), "t.json")


def run(steps: list[Any], target: Optional[Coordinator] = None, **scenario: Any) -> ScenarioResult:
    f = parse(steps, **scenario)
    made = target if target is not None else FakeCoordinator(CoordinatorConfig())
    return run_scenario(f.path, f.scenarios[0], lambda config: made)


JOIN_OK = {"op": "join", "id": "j", "member": "", "bind": {"member_id": "A"}, "expect": {"error": "NONE", "generation": 1, "leader": "self", "member_id": "m-1"}}


def test_matching_expectations_pass() -> None:
    r = run([JOIN_OK, {"op": "heartbeat", "member": "$A", "generation": "$gen:j", "expect": {"error": "NONE"}}])
    assert r.outcome is Outcome.PASS, r.describe()


def test_wrong_expectation_fails_at_its_step() -> None:
    r = run([JOIN_OK, {"op": "advance", "ms": 5}, {"op": "heartbeat", "member": "$A", "generation": 1, "expect": {"error": "REBALANCE_IN_PROGRESS"}}])
    assert r.outcome is Outcome.FAIL
    assert r.failure is not None and r.failure.step_index == 2 and r.failure.op == "heartbeat"
    (m,) = r.failure.mismatches
    assert (m.key, m.resolved, m.actual) == ("error", "REBALANCE_IN_PROGRESS", "NONE")
    assert 'step 2 (heartbeat): response differs: error: expected "REBALANCE_IN_PROGRESS", actual "NONE"' in r.describe()


def test_resolved_references_are_reported() -> None:
    r = run([JOIN_OK, {"op": "join", "member": "", "expect": {"member_id_not": ["$A"], "generation": "$gen:j", "leader": "$A"}}])
    assert r.outcome is Outcome.FAIL and r.failure is not None
    assert [m.key for m in r.failure.mismatches] == ["member_id_not"]
    assert "(= [\"m-1\"])" in r.failure.describe()


def test_immediate_request_left_parked_fails() -> None:
    r = run([{"op": "join", "member": "x"}])
    assert r.outcome is Outcome.FAIL and r.failure is not None
    assert r.failure.step_index == 0 and "parked" in r.failure.message


def test_later_response_checked_after_advance() -> None:
    steps = [
        {"op": "join", "id": "j", "member": "x", "await": "later"},
        {"op": "check_pending", "id": "j"},
        {"op": "advance", "ms": 1},
        {"op": "check_response", "id": "j", "expect": {"error": "NONE", "generation": 2, "member_id": "x"}},
    ]
    assert run(steps).outcome is Outcome.PASS
    wrong = steps[:2] + [{"op": "advance", "ms": 1}, {"op": "check_pending", "id": "j"}]
    r = run(wrong)
    assert r.outcome is Outcome.FAIL and r.failure is not None and r.failure.step_index == 3
    early = steps[:1] + [{"op": "check_response", "id": "j"}]
    r = run(early)
    assert r.outcome is Outcome.FAIL and r.failure is not None and "no response yet" in r.failure.message


def test_double_answer_and_raising_target_fail() -> None:
    t = FakeCoordinator(CoordinatorConfig())
    t.answer_twice = True
    r = run([{"op": "join", "member": ""}], target=t)
    assert r.outcome is Outcome.FAIL and r.failure is not None and "ran 2 times" in r.failure.message
    t = FakeCoordinator(CoordinatorConfig())
    t.raise_on_heartbeat = True
    r = run([{"op": "heartbeat", "member": "m", "generation": 1}], target=t)
    assert r.outcome is Outcome.FAIL and r.failure is not None and "RuntimeError: boom" in r.failure.message


def test_error_count_and_same_error_checks() -> None:
    hb = [{"op": "heartbeat", "id": f"h{i}", "member": "m", "generation": 1} for i in range(2)]
    ok = run(hb + [{"op": "check_error_counts", "ids": ["h0", "h1"], "counts": {"NONE": 2}}, {"op": "check_same_errors", "pairs": [["h0", "h1"]]}])
    assert ok.outcome is Outcome.PASS
    bad = run(hb + [{"op": "check_error_counts", "ids": ["h0", "h1"], "counts": {"NONE": 1, "UNKNOWN_MEMBER_ID": 1}}])
    assert bad.outcome is Outcome.FAIL and bad.failure is not None and bad.failure.step_index == 2


def test_check_one_of() -> None:
    steps: list[Any] = [
        {"op": "join", "id": "a", "member": ""},
        {"op": "join", "id": "b", "member": "x", "await": "later"},
        {"op": "advance", "ms": 1},
    ]
    one = {"op": "check_one_of", "ids": ["a", "b"], "leader_expect": {"generation": 1}, "follower_expect": {"generation": 2}}
    assert run(steps + [one]).outcome is Outcome.PASS
    none = dict(one, leader_expect={"generation": 3})
    assert run(steps + [none]).outcome is Outcome.FAIL
    other = dict(one, follower_expect={"leader_is_other": True})
    r = run(steps + [other])
    assert r.outcome is Outcome.FAIL and r.failure is not None and "expected leader 'm-1'" in r.failure.message


def test_black_box_check_group_is_skipped_not_passed() -> None:
    steps = [{"op": "join", "member": "", "bind": {"member_id": "A"}}, {"op": "check_group", "expect": {"members_count": 1, "generation": 1}}]
    r = run(steps)
    assert r.outcome is Outcome.SKIP and "check_group.generation" in r.reason
    mappable = run([steps[0], {"op": "check_group", "expect": {"members_count": 1, "member_ids": ["$A"], "state": "Stable"}}])
    assert mappable.outcome is Outcome.PASS, mappable.describe()
    wrong = run([steps[0], {"op": "check_group", "expect": {"members_count": 2, "generation": 1}}])
    assert wrong.outcome is Outcome.FAIL  # a performable check still fails


def test_white_box_check_group_and_missing_group() -> None:
    t = WhiteBoxFake(CoordinatorConfig())
    r = run([{"op": "check_group", "expect": {"state": "Missing", "members_count": 0}}, JOIN_OK, {"op": "check_group", "expect": {"state": "Stable", "generation": 1, "leader": "$A", "member_timeouts": {"$A": {"session_timeout_ms": 10000}}}}], target=t)
    assert r.outcome is Outcome.PASS, r.describe()
    t = WhiteBoxFake(CoordinatorConfig())
    r = run([JOIN_OK, {"op": "check_group", "expect": {"member_timeouts": {"$A": {"session_timeout_ms": 1}}}}], target=t)
    assert r.outcome is Outcome.FAIL


def test_hook_targets_are_skipped_with_reason() -> None:
    r = run([{"op": "setup_prepare_rebalance", "backdoor": True}])
    assert r.outcome is Outcome.SKIP and "BackdoorCoordinator" in r.reason
    assert r.reason.endswith("needed by steps 0 (setup_prepare_rebalance)")
    r = run([{"op": "join", "member": "", "append_error": "MESSAGE_TOO_LARGE"}])
    assert r.outcome is Outcome.SKIP and "WhiteBoxCoordinator" in r.reason


def test_append_error_is_set_around_the_join_only() -> None:
    t = WhiteBoxFake(CoordinatorConfig())
    r = run([{"op": "join", "member": "", "append_error": "MESSAGE_TOO_LARGE"}], target=t, config={"append_result": "NOT_ENOUGH_REPLICAS"})
    assert r.outcome is Outcome.PASS
    assert t.append_results == [Error.MESSAGE_TOO_LARGE, Error.NOT_ENOUGH_REPLICAS]


def test_factory_gets_the_merged_config_and_a_fresh_target_per_scenario() -> None:
    seen: list[CoordinatorConfig] = []

    def factory(config: CoordinatorConfig) -> Coordinator:
        seen.append(config)
        return FakeCoordinator(config)

    f = parse([{"op": "advance", "ms": 1}], config={"group_max_size": 7})
    run_scenario(f.path, f.scenarios[0], factory)
    run_scenario(f.path, f.scenarios[0], factory)
    assert [c.group_max_size for c in seen] == [7, 7]


def test_step_hook_sees_every_step_and_late_responses() -> None:
    calls: list[tuple[int, Optional[str], Optional[str]]] = []

    def hook(s: Scenario, i: int, req: Optional[Request], resp: Optional[Response]) -> None:
        calls.append((i, type(req).__name__ if req else None, type(resp).__name__ if resp else None))

    f = parse([{"op": "join", "id": "j", "member": "x", "await": "later"}, {"op": "advance", "ms": 1}, {"op": "heartbeat", "member": "m", "generation": 1}])
    run_scenario(f.path, f.scenarios[0], lambda c: FakeCoordinator(c), hook)
    assert calls == [
        (0, "JoinGroupRequest", None),
        (1, None, None),
        (0, "JoinGroupRequest", "JoinGroupResponse"),
        (2, "HeartbeatRequest", "HeartbeatResponse"),
    ]


def test_finding_is_a_ready_to_run_scenario_that_fails_again() -> None:
    steps = [JOIN_OK, {"op": "heartbeat", "member": "$A", "generation": 1, "expect": {"error": "ILLEGAL_GENERATION"}}, {"op": "advance", "ms": 1}]
    f = parse(steps, notes="original note")
    result = run_scenario(f.path, f.scenarios[0], lambda c: FakeCoordinator(c))
    text = render_finding(result, f, "fake")
    doc = json.loads(text)
    assert len(doc["scenarios"][0]["steps"]) == 2
    assert doc["finding"]["observed"] == [{"key": "error", "expected": "ILLEGAL_GENERATION", "resolved": "ILLEGAL_GENERATION", "actual": "NONE"}]
    assert "original note" in doc["scenarios"][0]["notes"] and "FINDING against target 'fake' at step 1" in doc["scenarios"][0]["notes"]
    again = parse_text(text, "finding.json")
    replay = run_scenario(again.path, again.scenarios[0], lambda c: FakeCoordinator(c))
    assert replay.outcome is Outcome.FAIL and replay.failure is not None and replay.failure.step_index == 1
    passing = run_scenario(f.path, parse([JOIN_OK]).scenarios[0], lambda c: FakeCoordinator(c))
    try:
        finding_document(passing, f, "fake")
    except ValueError as e:
        assert "only a FAIL is a finding" in str(e)
    else:
        raise AssertionError("a PASS must not render as a finding")


def test_heartbeat_request_record_is_built_from_references() -> None:
    sent: list[Request] = []

    class Recording(FakeCoordinator):
        def handle(self, request: Request, callback: Any) -> None:
            sent.append(request)
            super().handle(request, callback)

    t = Recording(CoordinatorConfig())
    run([JOIN_OK, {"op": "heartbeat", "member": "$A", "generation": "$gen:j", "instance_id": "i"}], target=t)
    assert sent[1] == HeartbeatRequest("g", "m-1", 1, "i")

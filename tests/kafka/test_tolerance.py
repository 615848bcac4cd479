"""Scenario step tolerances (tolerance_ms): they apply to real-clock targets only, and can fail."""

from __future__ import annotations

import json
import time
from typing import Callable

import pytest

from model.concrete import ModelCoordinator
from model.coordinator_api import CoordinatorConfig

from conformance.parse import ScenarioFormatError, parse_text
from conformance.runner import Outcome, run_scenario


class RealClockModel(ModelCoordinator):
    """The model posing as a real-clock target whose advance takes `lag_s` of real time."""

    real_clock = True
    lag_s = 0.0

    def advance(self, ms: int, reverse_ties: bool = False) -> None:
        super().advance(ms, reverse_ties)
        time.sleep(self.lag_s)

    def wait_real(self, seconds: float, until: Callable[[], bool]) -> None:
        pass


def _scenario(tolerance: dict[str, object]) -> str:
    steps = [
        {"op": "join", "id": "j", "member": "", "require_known_member_id": False, "await": "later"},
        {"op": "advance", "ms": 3001},  # the initial delay ends: the join is answered
        {"op": "check_pending", "id": "j", **tolerance},
    ]
    return json.dumps({"format": "kafka-classic-group-conformance/1",
                       "defaults": {"group": "g", "join": {"protocol_type": "consumer",
                                                           "protocols": [{"name": "r", "metadata": ""}]}},
                       "scenarios": [{"name": "t", "config": {"group_initial_rebalance_delay_ms": 3000},
                                      "steps": steps}]})


def _run(text: str, make: Callable[[CoordinatorConfig], ModelCoordinator]) -> Outcome:
    f = parse_text(text, "<t>")
    return run_scenario(f.path, f.scenarios[0], make).outcome


WITH = {"tolerance_ms": 500, "tolerance_why": "test"}


def test_tolerance_lets_a_just_arrived_response_pass_on_a_real_clock_target() -> None:
    assert _run(_scenario(WITH), RealClockModel) is Outcome.PASS
    assert _run(_scenario({}), RealClockModel) is Outcome.FAIL  # no tolerance: exact


def test_tolerance_is_ignored_by_exact_targets_and_bounded_in_time() -> None:
    assert _run(_scenario(WITH), ModelCoordinator) is Outcome.FAIL

    class Slow(RealClockModel):
        lag_s = 0.7  # the response arrived 0.7 s before the check: beyond 500 ms

    assert _run(_scenario(WITH), Slow) is Outcome.FAIL


def test_a_tolerance_needs_its_reason() -> None:
    with pytest.raises(ScenarioFormatError, match="tolerance_why"):
        parse_text(_scenario({"tolerance_ms": 500}), "<t>")


def _group_scenario(state: str, advance: int) -> str:
    steps = [
        {"op": "join", "id": "j", "member": "", "require_known_member_id": False, "await": "later"},
        {"op": "advance", "ms": advance},
        {"op": "check_group", "expect": {"state": state}, **WITH},
        {"op": "advance", "ms": 3001 - advance},
        {"op": "check_response", "id": "j", "expect": {"error": "NONE"}},
    ]
    return json.dumps({"format": "kafka-classic-group-conformance/1",
                       "defaults": {"group": "g", "join": {"protocol_type": "consumer",
                                                           "protocols": [{"name": "r", "metadata": ""}]}},
                       "scenarios": [{"name": "t", "config": {"group_initial_rebalance_delay_ms": 3000},
                                      "steps": steps}]})


def test_check_group_tolerance_runs_the_check_early_on_a_real_clock_target_only() -> None:
    before = _group_scenario("PreparingRebalance", 3000)  # 1 ms before the deadline
    assert _run(before, RealClockModel) is Outcome.PASS
    assert _run(before, ModelCoordinator) is Outcome.PASS
    after = _group_scenario("CompletingRebalance", 3001)  # just after: early, it cannot hold
    assert _run(after, ModelCoordinator) is Outcome.PASS
    assert _run(after, RealClockModel) is Outcome.FAIL

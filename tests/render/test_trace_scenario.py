"""A scenario file run on the model becomes a trace: the rows fired, the state after each step,
answers to parked requests arriving later, and a failing expectation as the trace's violation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from model.errors import BadInput
from model.table import CLASSIC_TABLE

from render.trace import ADMIN, COORDINATOR, trace_of_scenario, traces_of_scenarios

SEEDS = "tests/scenarios/seeds.json"
FIRST = "seed-three-consumers-one-assignment-interleaved"


def test_the_seed_scenario_is_traced_with_rows_and_states() -> None:
    t = trace_of_scenario(SEEDS, FIRST)
    assert t.kind == "scenario" and t.violation is None
    assert t.clients == ("C3", "C2", "C1")  # the scenario's binding names, in order of appearance
    first = t.steps[0]
    assert first.cause.kind == "request" and first.cause.source == "C3" and first.cause.target == COORDINATOR
    assert first.rows == ("Missing/JoinGroup/create-group", "Empty/JoinGroup/member-id-required")
    assert [a.error for a in first.answers] == ["MEMBER_ID_REQUIRED"]
    assert first.group is not None and first.group.state == "Empty" and first.group.pending == ("C3",)
    timer = next(s for s in t.steps if s.cause.kind == "timer")
    assert timer.cause.label == "InitialDelayedJoinExpire" and timer.time_ms == 3001
    assert timer.rows == ("PreparingRebalance/InitialDelayedJoinExpire/next-generation",)
    late = timer.answers[0]  # the JoinGroup C3 parked two steps before
    assert late.late and late.target == "C3" and late.error == "NONE"
    assert timer.group is not None and timer.group.state == "CompletingRebalance" and timer.group.generation == 1
    assert t.states == len(t.steps) + 1
    every_row = {r.id for r in CLASSIC_TABLE.rows}
    assert all(r in every_row for s in t.steps for r in s.rows)


def test_every_committed_scenario_runs_clean_on_the_model() -> None:
    # known-differences.json holds scenarios the model fails on purpose (see test_conformance_targets.py)
    kafka_tests = [p for p in sorted(Path("tests/scenarios/kafka-coordinator-test").glob("*.json"))
                   if p.name != "known-differences.json"]
    for path in [*sorted(Path("tests/scenarios").glob("*.json")), *kafka_tests]:
        traces = traces_of_scenarios(str(path))
        for t in traces:
            assert t.violation is None, (path, t.title, t.violation)
        assert sum(len(t.steps) for t in traces) > len(traces), path


def test_a_scenario_that_fails_on_the_model_carries_the_failure(tmp_path: Path) -> None:
    """Negative control: a wrong expectation is not drawn as a clean run."""
    doc = {"format": "kafka-classic-group-conformance/1", "defaults": {"group": "g"},
           "scenarios": [{"name": "wrong", "source": "test", "steps": [
               {"op": "join", "member": "", "expect": {"error": "NONE"}}]}]}
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(doc))
    t = trace_of_scenario(str(path))
    assert t.violation is not None and t.violation.name == "scenario expectation"
    assert "MEMBER_ID_REQUIRED" in t.violation.message and t.violation.step == 1


def test_admin_requests_and_setup_hooks_use_the_admin_lifeline() -> None:
    traces = traces_of_scenarios("tests/scenarios/backdoor-and-unit.json")
    setups = [s for t in traces for s in t.steps if s.cause.kind == "setup"]
    assert setups and all(s.cause.source == ADMIN and not s.rows for s in setups)
    assert any(ADMIN in t.clients for t in traces)


def test_bad_input_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput):
        trace_of_scenario(str(tmp_path / "missing.json"))
    with pytest.raises(BadInput, match="no scenario named"):
        trace_of_scenario(SEEDS, "no-such-scenario")

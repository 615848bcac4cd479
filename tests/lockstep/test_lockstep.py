"""The lockstep comparison of the reference coordinator with the model (Hypothesis stateful test),
its negative controls (seeded reference bugs must be caught) and the printing of a failure as a
runnable scenario file."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from model.concrete import ModelCoordinator
from model.messages import HeartbeatResponse
from model.vocabulary import Error
from model.coordinator_api import Coordinator, CoordinatorConfig
from reference import BUGS, ReferenceCoordinator

from conformance.actions import Everyone, Fetch, Heartbeat, Join, Leave, Sync, Wait
from conformance.lockstep import (
    KNOWN_DIFFERENCES,
    PROLOGUES,
    Divergence,
    IdMap,
    KnownDifference,
    Lockstep,
    RunConfig,
    finding_text,
    lockstep_machine,
    run_actions,
)
from conformance.parse import parse_text
from conformance.runner import Outcome, run_scenario


def _settings(examples: int, steps: int, shrink: bool = True) -> settings:
    phases = tuple(Phase) if shrink else (Phase.explicit, Phase.reuse, Phase.generate)
    return settings(max_examples=examples, stateful_step_count=steps, deadline=None, derandomize=True,
                    database=None, suppress_health_check=list(HealthCheck), print_blob=False,
                    phases=phases)


CLEAN = _settings(examples=200, steps=50)


def _assert_machine_agrees(machine: type, run_settings: settings) -> None:
    """Run the lockstep machine: a difference raises Divergence (an AssertionError) and fails the
    test; and the run compared something (most examples applied actions to both sides)."""
    applied: list[int] = []

    def teardown(self: Any) -> None:
        applied.append(self.ls.steps)

    setattr(machine, "teardown", teardown)  # a fresh class per lockstep_machine() call
    run_state_machine_as_test(machine, settings=run_settings)
    assert sum(1 for n in applied if n > 0) > len(applied) // 2, applied


def test_reference_and_model_agree() -> None:
    _assert_machine_agrees(lockstep_machine(), CLEAN)


def test_reference_and_model_agree_on_one_group() -> None:
    _assert_machine_agrees(lockstep_machine(groups=1), _settings(examples=30, steps=50))


# Seeded bugs (reference/bugs.py) and the example budget within which each must be caught. Runs
# are derandomized, so the example that catches a bug is fixed (measured: in brackets); budgets
# leave room for harmless changes to the generators.
NEGATIVE_CONTROLS: dict[str, int] = {
    "session-expiry-while-parked": 600,  # timer bug [320]
    "static-no-fence": 700,  # static-membership bug [359]
    "no-delayed-sync": 300,  # timer bug, KAFKA-12890 [115]
    "sync-accepted-in-preparing": 250,  # [76]
    "no-generation-bump": 100,  # [4]
    "heartbeat-empty-accepted": 100,  # [20]
    "leave-no-rebalance": 100,  # [21]
}
STEPS = 50


@pytest.mark.parametrize("bug", sorted(NEGATIVE_CONTROLS))
def test_seeded_bug_is_caught(bug: str) -> None:
    assert bug in BUGS
    machine = lockstep_machine(frozenset({bug}))
    with pytest.raises(Divergence) as caught:
        # Detection only (no shrinking) keeps CI fast; `conformance.lockstep.shrink` and the
        # Hypothesis shrinker both work on these failures (see the printing tests below).
        run_state_machine_as_test(machine, settings=_settings(NEGATIVE_CONTROLS[bug], STEPS, shrink=False))
    d = caught.value
    assert d.scenario["finding"]["bugs"] == [bug]
    # The printed scenario replays: the buggy reference passes it, the model fails it.
    _assert_replays(d, frozenset({bug}))


def _run(doc_text: str, make: Any) -> Any:
    parsed = parse_text(doc_text, "<lockstep>")
    return run_scenario(parsed.path, parsed.scenarios[0], make)


def _assert_replays(d: Divergence, bugs: frozenset[str]) -> None:
    text = d.render()
    on_reference = _run(text, lambda c: ReferenceCoordinator(c, bugs=bugs))
    assert on_reference.outcome is Outcome.PASS, on_reference.describe()
    on_model = _run(text, lambda c: ModelCoordinator(c))
    if d.kind in ("response-differs", "response-missing", "group-differs"):
        assert on_model.outcome is Outcome.FAIL, on_model.describe()


# ---------------------------------------------------------------- printing a failure

# A short hand-written run that the seeded bug `no-generation-bump` makes diverge at the join
# completion: one dynamic member (JoinGroup v4+: MEMBER_ID_REQUIRED, then the real join), the
# initial delay (1000 ms) expires, the parked JoinGroup is answered with generation 0 instead of 1.
SHORT_RUN = (
    Join(group=0, who=0, inst=1, proto=0, session=1, rebalance=0, known_id=1),
    Join(group=0, who=5, inst=0, proto=0, session=1, rebalance=0, known_id=1),
    Wait(ms=0),  # 1001 ms
)


def test_failure_prints_as_a_runnable_scenario_file() -> None:
    with pytest.raises(Divergence) as caught:
        run_actions(SHORT_RUN, RunConfig(initial_delay=1), bugs=frozenset({"no-generation-bump"}))
    d = caught.value
    assert d.kind == "response-differs"
    assert "generation_id: reference 0, model 1" in d.message
    assert "--- scenario file ---" in str(d) and d.render() in str(d)
    doc = json.loads(d.render())
    steps = doc["scenarios"][0]["steps"]
    assert [s["op"] for s in steps if s["op"] != "check_group"] == ["join", "join", "advance", "check_response"]
    assert steps[0]["bind"] == {"member_id": "M0"} and steps[0]["expect"]["error"] == "MEMBER_ID_REQUIRED"
    assert steps[2]["member"] == "$M0" and steps[2]["await"] == "later"
    answer = [s for s in steps if s["op"] == "check_response"][0]
    assert answer["expect"]["generation"] == 0 and answer["expect"]["leader"] == "self"
    _assert_replays(d, frozenset({"no-generation-bump"}))
    # The clean reference fails the buggy reference's expectations too (at the same step as the model).
    on_clean = _run(d.render(), lambda c: ReferenceCoordinator(c))
    on_model = _run(d.render(), lambda c: ModelCoordinator(c))
    assert on_clean.outcome is Outcome.FAIL and on_model.outcome is Outcome.FAIL
    assert on_clean.failure is not None and on_model.failure is not None
    assert on_clean.failure.step_index == on_model.failure.step_index


def test_finding_text_is_cut_at_the_failing_step_by_conformance_finding() -> None:
    with pytest.raises(Divergence) as caught:
        run_actions(SHORT_RUN, RunConfig(initial_delay=1), bugs=frozenset({"no-generation-bump"}))
    doc = json.loads(finding_text(caught.value, bugs=frozenset({"no-generation-bump"})))
    assert doc["finding"]["target"] == "model"
    assert doc["finding"]["lockstep"]["bugs"] == ["no-generation-bump"]
    steps = doc["scenarios"][0]["steps"]
    assert steps[-1]["op"] == "check_response" and doc["finding"]["step"] == len(steps) - 1
    parse_text(json.dumps(doc), "<finding>")  # still a valid scenario file


def test_clean_short_run_agrees() -> None:
    ls = run_actions(SHORT_RUN + (Sync(group=0, who=0, gen=0, inst=0, assign=0, proto=1),), RunConfig(initial_delay=1))
    view = ls.reference.group_view("g0")
    assert view is not None and view.state.name == "Stable" and view.generation_id == 1



def test_a_rejoin_that_clears_assignments_and_completes_the_join_is_no_invariant_finding() -> None:
    """Kafka keeps the stored assignments when a Stable group rebalances (a member left); the one
    member left rejoins (generation 2, CompletingRebalance, its old assignment still stored), then
    rejoins with other protocols: resetAndPropagateAssignmentError clears the assignment
    (GC:1252) and, every member having rejoined, the join phase completes in the same step
    (generation 3). only-leader-assigns once flagged that step, as it allowed a clear only when
    the step ended in PreparingRebalance (found by a lockstep run under another Hypothesis seed)."""
    actions = PROLOGUES[1] + (
        Join(who=0, inst=0, proto=0, session=0, rebalance=0, known_id=0, skip=0), Fetch(all=0),
        Leave(who=0, inst=0, who2=0, inst2=0), Leave(who=0, inst=2, who2=0, inst2=0),
        Everyone(what=0, proto=0), Everyone(what=0, proto=1))
    ls = run_actions(actions, RunConfig(initial_delay=1, max_size=0), groups=1)
    view = ls.model.group_view("g0")
    assert view is not None and view.state.name == "CompletingRebalance" and view.generation_id == 3
    assert [m.assignment for m in view.members] == [b""]

# ---------------------------------------------------------------- the id bijection

def test_id_map_learns_and_rejects_inconsistent_pairs() -> None:
    ids = IdMap()
    a = "consumer-" + "0" * 8 + "-0000-4000-8000-" + "0" * 12
    b = "consumer-" + "1" * 8 + "-1111-4111-8111-" + "1" * 12
    c = "consumer-" + "2" * 8 + "-2222-4222-8222-" + "2" * 12
    assert ids.pair(a, b, "x") is None and ids.model_id(a) == b
    assert ids.pair(a, b, "x") is None
    assert ids.pair(a, c, "x") is not None  # a is already paired with b
    assert ids.pair(c, b, "x") is not None  # b is already paired with a
    assert ids.pair("", c, "x") is not None  # the unknown id only matches itself
    assert ids.pair("i1-" + c[len("consumer-"):], c, "x") is not None  # prefixes differ


def test_known_differences_carry_reasons() -> None:
    for name, known in KNOWN_DIFFERENCES.items():
        assert name and len(known.reason) > 40


def _accept_heartbeat(request: Any, ref: Any, model: Any) -> Any:
    if isinstance(ref, HeartbeatResponse) and ref.error == Error.NONE and isinstance(model, HeartbeatResponse):
        return ref
    return None


def test_known_difference_mechanism_tolerates_exactly_its_case() -> None:
    # The seeded bug heartbeat-empty-accepted stands in for a known difference: a Heartbeat to an
    # Empty group is answered NONE by the reference, UNKNOWN_MEMBER_ID by the model.
    bugs = frozenset({"heartbeat-empty-accepted"})
    run = (Join(who=0, session=1, known_id=1), Heartbeat(who=0, gen=0))
    known = {"heartbeat-empty": KnownDifference("stand-in for a documented difference", normalize=_accept_heartbeat)}
    ls = Lockstep(RunConfig(), bugs=bugs, known=known)
    for a in run:
        ls.apply(a)
    assert ls.tolerated == {"heartbeat-empty": 1}
    with pytest.raises(Divergence) as caught:
        run_actions(run, RunConfig(), bugs=bugs)  # the real list does not tolerate it
    assert "error: reference Error.NONE, model Error.UNKNOWN_MEMBER_ID" in caught.value.message
    # Everything else is still compared: a different bug in the same run is caught.
    other = Lockstep(RunConfig(), bugs=frozenset({"no-generation-bump"}), known=known)
    with pytest.raises(Divergence):
        for step in SHORT_RUN:
            other.apply(step)


# ---------------------------------------------------------------- fixed disagreements, as regressions

# Minimal runs that once showed a disagreement between the reference and the model (the model was
# wrong both times; now fixed). They must run strictly clean. Their scenario files are in
# tests/scenarios/lockstep-regressions.json, which every target runs.
REGRESSION_RUNS: dict[str, tuple[Any, ...]] = {
    "pending-static-join-member-id": (Join(who=0, session=1, known_id=1),
                                      Join(who=5, inst=2, session=1, known_id=1)),
    "session-not-rearmed-on-sync-error": PROLOGUES[3] + (
        Wait(ms=0), Sync(who=1, assign=1), Leave(who=0), Wait(ms=3)),
}


@pytest.mark.parametrize("name", sorted(REGRESSION_RUNS))
def test_fixed_disagreement_runs_clean(name: str) -> None:
    strict = Lockstep(RunConfig(), known={})
    for a in REGRESSION_RUNS[name]:
        strict.apply(a)  # raises Divergence at the first difference
    assert strict.steps == len(REGRESSION_RUNS[name]) and strict.tolerated == {}


# ---------------------------------------------------------------- equal deadlines

def _random_run(seed: int, steps: int, explore: bool) -> Lockstep:
    import random

    from conformance.lockstep import random_action, random_config

    rng = random.Random(seed)
    ls = Lockstep(random_config(rng), seed=seed)
    ls.explore_tie_orders = explore
    for a in PROLOGUES[rng.randrange(len(PROLOGUES))]:
        ls.apply(a)
    for _ in range(steps):
        ls.apply(random_action(rng))
    return ls


def test_tied_timers_are_replayed_in_the_other_order() -> None:
    # Seed 1868 (found by `groupspec soak`): a member's session expiry and a new static member's
    # join timeout fall due at the same instant; the reference fires the new member's first (it
    # leaves UNKNOWN_MEMBER_ID, group Empty), the model the session first (join completes with
    # the static member). Both are Kafka behaviours: the order of equal deadlines is unspecified.
    with pytest.raises(Divergence) as caught:
        _random_run(1868, 400, explore=False)
    assert caught.value.kind.endswith("-after-timing-tie")
    assert "timing-tie" in caught.value.scenario["scenarios"][0]["tags"]
    ls = _random_run(1868, 400, explore=True)
    assert ls.tolerated.get("timing-tie-order", 0) >= 1

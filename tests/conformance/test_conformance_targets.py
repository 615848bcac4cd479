"""Every scenario file against every in-process target (the model and the reference).

Both targets implement the white-box and backdoor hooks, so every scenario must PASS (a SKIP would
hide a gap, and a disagreement with Kafka is a failure until the target is fixed).

The scenario files are also a checker, so they get negative controls: each scenario with an expected
error fails on the reference once that error is changed, and every seeded bug of the reference
(`reference.BUGS`) makes the scenario named for it in SEEDED_BUG_CATCHERS fail.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import replace

import pytest

from conformance.parse import load, parse_text
from conformance.runner import Outcome, TargetFactory, run_scenario
from conformance.targets import resolve_target
from model.concrete import ModelCoordinator
from model.coordinator_api import Coordinator, CoordinatorConfig
from model.dsl import Guard, Table
from model.table import CLASSIC_TABLE
from reference import BUGS
from reference.coordinator import ReferenceCoordinator

SCENARIO_DIR = os.path.join(os.path.dirname(__file__), "..", "scenarios")
# kafka-coordinator-test/: Kafka 3.9's GroupCoordinatorTest transcribed (its README-free conventions are in
# each file); known-differences.json there holds the scenarios a target here disagrees with.
FILES = sorted(glob.glob(os.path.join(SCENARIO_DIR, "*.json"))
               + glob.glob(os.path.join(SCENARIO_DIR, "kafka-coordinator-test", "*.json")))
TARGETS = ("model", "reference")

# (target, scenario) -> why it FAILs there: a disagreement with Kafka's own test, kept visible as a strict
# xfail (it turns into a failure the day the target is fixed, so the entry must then go). The scenario's
# notes give the evidence.
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {
    ("reference", "staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged"):
        "timing tie at 1052 ms: Kafka's MockTimer fires the DelayedJoin before the leader's session expiry",
}

# Seeded bug of the reference -> the scenario that pins the Kafka behaviour it breaks (the most direct
# one; several scenarios catch some bugs). Every entry of reference.BUGS must be here: a seeded bug
# that no scenario catches is a gap in the scenario files.
SEEDED_BUG_CATCHERS: dict[str, str] = {
    "sync-accepted-in-preparing": "seed-leader-sync-during-preparing-rebalance",
    "no-generation-bump": "seed-three-consumers-two-rebalances",
    "timer-join-no-generation-bump": "seed-three-consumers-simultaneous-initial-delay",
    "no-delayed-sync": "delayed-sync-expiry-removes-non-syncing-member",
    "static-no-fence": "static-member-fencing-on-every-api",
    "heartbeat-empty-accepted": "backdoor-group-with-members-has-generation-0",
    "session-expiry-while-parked": "parked-member-never-session-expires",
    "leave-no-rebalance": "seed-leave-during-stable-and-empty",
    "heartbeat-completing-rebalance-in-progress": "heartbeat-in-completing-rebalance-renews-session",
    "commit-in-completing-accepted": "commit-in-completing-and-preparing-rebalance",
    "pending-ignored-in-join-check": "pending-member-blocks-join-completion-until-it-expires",
    "static-removed-at-join-timeout": "static-member-kept-at-rebalance-timeout-leader-reelected",
    "initial-delay-completes-early": "initial-delayed-join-extended-per-new-member",
    "max-size-counts-members": "group-max-size-evicts-late-rejoiner",
    "describe-protocol-outside-stable": "describe-group-in-each-state",
    "session-expiry-late": "session-expiry-strictly-after-timeout",
    "session-expiry-early": "session-expiry-strictly-after-timeout",
    "join-unanswered-at-rebalance-timeout": "delayed-join-expiry-removes-non-rejoined-dynamic-member",
    "empty-group-deleted": "seed-leave-during-stable-and-empty",
    "heartbeat-answered-late": "sync-and-heartbeat-validation-order",
    "rebalance-timeout-first-member": "delayed-join-timeout-is-the-largest-rebalance-timeout",
}


def _cases() -> list[object]:
    return [
        pytest.param(target, path, scenario.name, id=f"{target}:{os.path.basename(path)}:{scenario.name}",
                     marks=[pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[(target, scenario.name)])]
                     if (target, scenario.name) in KNOWN_DIFFERENCES else [])
        for target in TARGETS
        for path in FILES
        for scenario in load(path).scenarios
    ]


def _scenario_paths() -> dict[str, str]:
    """Scenario name -> its file, over every scenario file."""
    return {s.name: path for path in FILES for s in load(path).scenarios}


@pytest.mark.parametrize(("target", "path", "name"), _cases())
def test_scenario_passes_on_target(target: str, path: str, name: str) -> None:
    scenario = next(s for s in load(path).scenarios if s.name == name)
    result = run_scenario(path, scenario, resolve_target(target, allow_remote=False))
    assert result.outcome is Outcome.PASS, result.describe()


def test_known_differences_name_scenarios_of_the_known_differences_file() -> None:
    """Every excused failure is a real scenario in known-differences.json (so none hides in a themed file)."""
    path = os.path.join(SCENARIO_DIR, "kafka-coordinator-test", "known-differences.json")
    names = {s.name for s in load(path).scenarios}
    assert {name for _, name in KNOWN_DIFFERENCES} == names


def test_seeded_bug_catchers_cover_every_seeded_bug() -> None:
    """The registry is the reference's whole bug list (an empty one fails), naming real scenarios."""
    assert BUGS, "reference.BUGS is empty: nothing to check the scenario files against"
    assert set(SEEDED_BUG_CATCHERS) == set(BUGS), sorted(set(SEEDED_BUG_CATCHERS) ^ set(BUGS))
    unknown = set(SEEDED_BUG_CATCHERS.values()) - set(_scenario_paths())
    assert not unknown, f"SEEDED_BUG_CATCHERS names scenarios that do not exist: {sorted(unknown)}"


def _buggy_reference(bug: str) -> TargetFactory:
    def factory(config: CoordinatorConfig) -> Coordinator:
        return ReferenceCoordinator(config, bugs=frozenset({bug}))

    return factory


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_seeded_bug_fails_its_scenario(bug: str) -> None:
    """With one seeded bug on, its scenario FAILs on the reference (it PASSes without: see above)."""
    name = SEEDED_BUG_CATCHERS.get(bug)
    assert name is not None, f"no scenario in SEEDED_BUG_CATCHERS catches the seeded bug {bug!r}"
    path = _scenario_paths()[name]
    scenario = next(s for s in load(path).scenarios if s.name == name)
    result = run_scenario(path, scenario, _buggy_reference(bug))
    assert result.outcome is Outcome.FAIL and result.failure is not None, result.describe()


def test_a_scenario_that_misses_the_bug_still_passes() -> None:
    """Negative control: the check above is not "any seeded bug fails any scenario"; a scenario that
    never reaches the buggy code passes on the buggy reference."""
    name = SEEDED_BUG_CATCHERS["describe-protocol-outside-stable"]
    path = _scenario_paths()[name]
    scenario = next(s for s in load(path).scenarios if s.name == name)
    result = run_scenario(path, scenario, _buggy_reference("no-delayed-sync"))
    assert result.outcome is Outcome.PASS, result.describe()


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_mutated_expectations_fail_on_reference(path: str) -> None:
    """Negative control on a real target: changing one expected error makes each scenario FAIL there."""
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    mutated = 0
    for scenario in raw["scenarios"]:
        index = next((i for i, st in enumerate(scenario["steps"]) if "error" in st.get("expect", {})), None)
        if index is None:
            continue
        step = scenario["steps"][index]
        step["expect"]["error"] = "UNKNOWN_SERVER_ERROR" if step["expect"]["error"] != "UNKNOWN_SERVER_ERROR" else "NONE"
        one = dict(raw, scenarios=[scenario])
        parsed = parse_text(json.dumps(one), path).scenarios[0]
        result = run_scenario(path, parsed, resolve_target("reference", allow_remote=False))
        assert result.outcome is Outcome.FAIL and result.failure is not None, result.describe()
        assert result.failure.step_index == index, result.describe()
        mutated += 1
    assert mutated > 0


def _without_invalid_group_id_rows() -> Table:
    """The table as it was before the INVALID_GROUP_ID rows: those rows gone and the
    `!group-id-empty` literal dropped from the other rows of the four group APIs."""
    rows = tuple(replace(r, guard=Guard(tuple(lit for lit in r.guard.literals if lit.atom != "group-id-empty")))
                 for r in CLASSIC_TABLE.rows if not r.id.endswith("/invalid-group-id"))
    table = Table("no-invalid-group-id", rows, CLASSIC_TABLE.events)
    table.validate()
    return table


@pytest.mark.parametrize("name", ["testInvalidGroupId",
                                  "empty-group-id-refused-by-group-apis-accepted-by-offsets-and-admin"])
def test_the_empty_group_id_scenarios_fail_without_the_invalid_group_id_rows(name: str) -> None:
    """Negative control of the `*/invalid-group-id` rows: the model running the table without them
    FAILs the empty-group-id scenarios at their first step (it answers the JoinGroup)."""
    table = _without_invalid_group_id_rows()

    def factory(config: CoordinatorConfig) -> Coordinator:
        return ModelCoordinator(config, table=table)

    path = _scenario_paths()[name]
    scenario = next(s for s in load(path).scenarios if s.name == name)
    result = run_scenario(path, scenario, factory)
    assert result.outcome is Outcome.FAIL and result.failure is not None, result.describe()
    assert result.failure.step_index == 0, result.describe()

"""The refinement plan (check/plan.py REFINEMENT_PLAN, check/diff.py explore_diff_plan): `groupspec
diff` and `check --refines` without bound options run several lockstep searches, stop at the first
difference, name it with a scenario that passes on Kafka's table and fails on the table under test,
and report the rows of the table under test that no lockstep run fired (JUnit records them). The
whole plan (Kafka's table against itself and a renaming; every mutant and historical bug killed)
is in the slow tests below."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from check.abstract import Bounds
from check.diff import NOT_FIRED, explore_diff, explore_diff_plan
from check.historical import HISTORICAL
from check.mutants import MUTANTS, mutate
from check.plan import REFINEMENT_PLAN
from conformance.diff import Side, run_document
from conformance.runner import Outcome
from groupspec import junit
from groupspec.cli import main
from groupspec.commands.diff import refinement_cases, verify_from_reference
from model.dsl import SAME, R, Table
from model.vocabulary import Error
from model.table import CLASSIC_TABLE, URGENT

F = frozenset
KAFKA = Side("kafka-3.9", CLASSIC_TABLE, URGENT)
SEARCH = partial(explore_diff, verify=verify_from_reference)
STATIC_LOST = ("a static consumer", Bounds(dynamic=0, static=1, max_generation=1,
                                           faults=F({"session", "rebalance", "crash", "lost"})))
UNLOAD_1 = ("one consumer, unload", Bounds(dynamic=1, max_generation=2,
                                          faults=F({"session", "rebalance", "unload", "append"})))
RENAMED = Table("renamed", tuple(replace(r, id="renamed:" + r.id.replace("/", "|"))
                                 for r in CLASSIC_TABLE.rows), CLASSIC_TABLE.events)


def test_the_plan_covers_what_the_issue_asks_for() -> None:
    bounds = [b for _, b in REFINEMENT_PLAN]
    assert any(b.mode == "closed" and {"session", "rebalance", "stall"} <= b.faults for b in bounds)
    assert any(b.mode == "closed" and "crash" in b.faults for b in bounds)
    assert {(b.dynamic, b.static) for b in bounds if b.mode == "open"} >= {(1, 0), (0, 1)}
    assert any("impersonate" in b.faults and b.static for b in bounds)
    assert any("unload" in b.faults for b in bounds) and any("append" in b.faults for b in bounds)
    assert any(not b.require_known_member_id for b in bounds)
    assert any(b.group_max_size < 10 for b in bounds)


def test_rows_no_run_fires_are_reported_and_a_difference_stops_the_plan() -> None:
    plan = [STATIC_LOST, UNLOAD_1]
    same = explore_diff_plan(KAFKA, KAFKA, plan, one_sided=True, search=SEARCH, progress=None)
    assert same.differences == [] and same.complete and same.skipped == []
    never = {rid for rid, why in same.unfired.items() if why == NOT_FIRED}
    assert "Stable/JoinGroup/static-restart" in same.rows_fired  # a static member restarts
    assert "CompletingRebalance/JoinGroup/new-dynamic-member" in never  # needs a second client
    assert set(same.rows_fired) | set(same.unfired) == {r.id for r in CLASSIC_TABLE.rows}
    assert set(same.rows_fired).isdisjoint(same.unfired)
    # the same plan on a mutant stops at the run that finds the difference
    mutant = Side("no-generation-bump", MUTANTS["no-generation-bump"][0], URGENT)
    bad = explore_diff_plan(mutant, KAFKA, plan, one_sided=True, search=SEARCH, progress=None)
    assert len(bad.runs) == 1 and bad.skipped == [UNLOAD_1[0]] and bad.differences
    cases = refinement_cases("t", "kafka-3.9", 0, same)
    assert [c.outcome for c in cases] == [junit.PASSED, junit.SKIPPED]
    assert "CompletingRebalance/JoinGroup/new-dynamic-member" in cases[1].text
    assert refinement_cases("t", "kafka-3.9", 1, bad)[0].outcome == junit.FAILURE


def test_diff_without_bounds_runs_the_plan_and_writes_the_first_difference(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "diff.json"
    assert main(["diff", "--table", "check.mutants:no-generation-bump", "--against", "kafka-3.9",
                 "--out", str(tmp_path), "--json", str(report), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "the refinement plan" in out and "not run (stopped at the first difference)" in out
    doc = json.loads(report.read_text())
    assert doc["runs"][-1]["label"] in {label for label, _ in REFINEMENT_PLAN} and doc["skipped"]
    scenario = json.loads((tmp_path / "difference-1.json").read_text())
    table = MUTANTS["no-generation-bump"][0]
    shown = {run_document(scenario, CLASSIC_TABLE), run_document(scenario, table)}
    assert shown == {Outcome.PASS, Outcome.FAIL}


def _kill(table: Table, name: str) -> str:
    """The plan's first difference on `table`, checked; the label of the run that found it."""
    p = explore_diff_plan(Side(name, table, URGENT), KAFKA, REFINEMENT_PLAN, one_sided=True,
                          search=SEARCH, max_differences=1, progress=None)
    assert p.differences, f"{name}: the refinement plan finds no difference"
    d = p.differences[0]
    assert d.scenario is not None, f"{name}: no scenario: {d.unrendered}"
    assert d.scenario_passes_on == "kafka-3.9", (name, d.scenario_passes_on)
    assert run_document(d.scenario, CLASSIC_TABLE) is Outcome.PASS
    assert run_document(d.scenario, table) is Outcome.FAIL
    return next(label for label, r in p.runs if r.differences)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_the_plan_kills_every_mutant_with_a_scenario_kafka_passes(name: str) -> None:
    assert _kill(MUTANTS[name][0], name)


@pytest.mark.parametrize("name", sorted(HISTORICAL))
def test_the_plan_kills_every_historical_bug_with_a_scenario_kafka_passes(name: str) -> None:
    assert _kill(HISTORICAL[name].table, name)


# The two tables of issue 24 that passed `--refines kafka-3.9` at diff's one default bound.
LEADER_REJOIN_NO_REBALANCE = mutate(CLASSIC_TABLE, "leader-rejoin-no-rebalance", {
    "Stable/JoinGroup/leader-rejoin": {"reply": R(Error.NONE, "join-current"), "effects": (),
                                       "next_state": SAME}})
LEADER_LEAVE_NO_REBALANCE = mutate(CLASSIC_TABLE, "leader-leave-no-rebalance", {
    "CompletingRebalance/LeaveGroup/member-leaves": {"effects": ("remove-member",),
                                                     "next_state": SAME}})


@pytest.mark.parametrize("table", [LEADER_REJOIN_NO_REBALANCE, LEADER_LEAVE_NO_REBALANCE],
                         ids=lambda t: t.name)
def test_the_plan_kills_what_one_bound_missed(table: Table) -> None:
    assert _kill(table, table.name) != REFINEMENT_PLAN[-1][0]


@pytest.mark.parametrize("table", [CLASSIC_TABLE, RENAMED], ids=["itself", "renamed-rows"])
def test_kafka_refines_itself_and_a_renaming_on_the_whole_plan(table: Table) -> None:
    p = explore_diff_plan(Side("t", table, URGENT), KAFKA, REFINEMENT_PLAN, one_sided=True,
                          search=SEARCH, progress=None)
    assert p.complete and p.differences == [] and len(p.runs) == len(REFINEMENT_PLAN)
    assert len(p.rows_fired) > len(table.rows) // 2

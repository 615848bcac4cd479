"""`groupspec diff` / `check --refines`: every mutant differs from Kafka's table with a scenario that
passes on one table and fails on the other; the table against itself and against a copy with other
row ids does not differ."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Optional

import pytest

from conformance.diff import DiffReport, Side, explore_diff, run_document
from conformance.runner import Outcome
from groupspec.cli import main
from check.abstract import Bounds
from model.dsl import Table
from check.mutants import MUTANTS
from check.profiles import PROFILES, profile_table, register
from model.table import CLASSIC_TABLE, URGENT

F = frozenset
KAFKA = Side("kafka-3.9", CLASSIC_TABLE, URGENT)

# Bounds tried in order until one shows a difference (each finishes in about a second).
TRY_BOUNDS = (
    Bounds(dynamic=1, max_generation=1, mode="open", max_ids_per_client=1,
           faults=F({"session", "rebalance"})),
    Bounds(dynamic=2, max_generation=2, faults=F({"session", "rebalance", "stall"})),
    Bounds(dynamic=1, static=1, max_generation=1, max_ids_per_client=1,
           faults=F({"session", "rebalance", "crash"})),
)
# Mutants whose first difference has no verified scenario (none now). parked-member-expired was
# one: its first difference is a parked SyncGroup the mutant drops, which a scenario cannot tell
# from one Kafka still holds; a later one (a parked JoinGroup answered UNKNOWN_MEMBER_ID) renders
# since the renderer may shorten the new-member join timeout (conformance/diff.py, _CONFIGS).
NOT_RENDERED: frozenset[str] = frozenset()
# ... and one whose difference needs a replaced static member's old client still sending (open mode
# with two ids per static client), beyond TRY_BOUNDS: not found there (pinned; a known gap).
NOT_FOUND = frozenset({"fenced-heartbeat-accepted"})
CLOSED_2 = Bounds(dynamic=2, max_generation=1, faults=F({"session", "rebalance", "stall"}))

RENAMED = Table(name="renamed", rows=tuple(replace(r, id="renamed:" + r.id.replace("/", "|"))
                                           for r in CLASSIC_TABLE.rows),
                events=CLASSIC_TABLE.events)


def first_difference(table: Table) -> Optional[DiffReport]:
    for b in TRY_BOUNDS:
        r = explore_diff(Side("mutant", table, URGENT), KAFKA, b, progress=None, max_differences=1)
        if r.differences:
            return r
    return None


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_every_mutant_differs_with_a_verified_scenario(name: str) -> None:
    table = MUTANTS[name][0]
    r = first_difference(table)
    if name in NOT_FOUND:
        assert r is None, f"{name} is now found: take it off NOT_FOUND"
        return
    assert r is not None, f"{name}: no client-visible difference at any of the tried bounds"
    d = r.differences[0]
    if name in NOT_RENDERED:
        # Known gap (the lead's closing note, session 4): the lockstep search finds the difference,
        # but the concrete replay's scenario does not tell the tables apart yet (it passes on both),
        # so it is reported with that reason instead of a scenario. Pinned so that a fix shows.
        assert d.scenario is None and "PASS on" in d.unrendered, (name, d.unrendered)
        return
    assert d.scenario is not None, f"{name}: no scenario: {d.unrendered}"
    # Re-run the scenario independently: it passes on the table that shows the answer and fails
    # on the other one.
    passes = table if d.shown_by == "A" else CLASSIC_TABLE
    fails = CLASSIC_TABLE if d.shown_by == "A" else table
    assert run_document(d.scenario, passes) is Outcome.PASS
    assert run_document(d.scenario, fails) is Outcome.FAIL
    assert d.other and d.shown not in d.other


@pytest.mark.parametrize("table,bounds", [(CLASSIC_TABLE, CLOSED_2), (RENAMED, CLOSED_2),
                                          (RENAMED, TRY_BOUNDS[0])],
                         ids=["itself-closed", "renamed-rows-closed", "renamed-rows-open"])
def test_the_table_does_not_differ_from_itself_or_a_renaming(table: Table, bounds: Bounds) -> None:
    r = explore_diff(Side("t", table, URGENT), KAFKA, bounds, progress=None)
    assert r.complete and r.differences == []
    assert r.nodes > 50  # it explored something


def test_a_difference_is_the_shortest_one() -> None:
    # no-generation-bump: the first JoinGroup response already carries generation 0, not 1.
    r = explore_diff(Side("m", MUTANTS["no-generation-bump"][0], URGENT), KAFKA, CLOSED_2,
                     progress=None)
    assert {d.depth for d in r.differences} == {3}
    steps = r.differences[0].scenario["scenarios"][0]["steps"] if r.differences[0].scenario else []
    assert [s["op"] for s in steps] == ["join", "join", "advance", "check_response"]


def test_refinement_is_one_sided() -> None:
    # A table that answers a Heartbeat to an Empty group with NONE shows a client something Kafka
    # would not: it does not refine Kafka, and every reported answer is the mutant's.
    mutant = Side("m", MUTANTS["heartbeat-empty-accepted"][0], URGENT)
    fwd = explore_diff(mutant, KAFKA, TRY_BOUNDS[0], one_sided=True, progress=None)
    assert fwd.differences and all(d.shown_by == "A" for d in fwd.differences)
    assert "NONE" in str(fwd.differences[0].shown)
    # Kafka's table refines itself.
    same = explore_diff(KAFKA, KAFKA, TRY_BOUNDS[0], one_sided=True, progress=None)
    assert same.differences == [] and same.complete


def test_profiles_register_in_one_line() -> None:
    assert profile_table("kafka-3.9") is CLASSIC_TABLE
    from check.mutants import NO_DELAYED_SYNC
    register("test-no-delayed-sync", "check.mutants:NO_DELAYED_SYNC", "a mutant, for this test")
    try:
        assert profile_table("test-no-delayed-sync") is NO_DELAYED_SYNC
        with pytest.raises(ValueError):
            register("test-no-delayed-sync", "model.table:CLASSIC_TABLE", "another table, same name")
    finally:
        del PROFILES["test-no-delayed-sync"]


# -- the command line ---------------------------------------------------------------------------


def test_diff_cli_writes_verified_scenarios(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "diff.json"
    status = main(["diff", "--table", "check.mutants:no-delayed-sync", "--against", "kafka-3.9",
                   "--members", "1", "--faults", "session,rebalance", "--quiet",
                   "--out", str(tmp_path), "--json", str(report)])
    assert status == 1
    out = capsys.readouterr().out
    assert "DIFFERENCE 1" in out and "DelayedSyncExpire" in out
    files = sorted(tmp_path.glob("difference-*.json"))
    assert files
    # the written file runs with the ordinary scenario command on the model (Kafka's table) ...
    assert main(["scenario", "run", str(files[0]), "--target", "model"]) == 0
    # ... and fails on the mutant
    assert run_document(json.loads(files[0].read_text()), MUTANTS["no-delayed-sync"][0]) is Outcome.FAIL
    doc = json.loads(report.read_text())
    assert doc["differences"][0]["scenario_passes_on"] == "kafka-3.9"


def test_diff_cli_no_difference_exits_0_and_a_cut_short_search_exits_3() -> None:
    assert main(["diff", "--table", "kafka-3.9", "--against", "model.table:CLASSIC_TABLE",
                 "--members", "1", "--quiet"]) == 0
    assert main(["diff", "--table", "kafka-3.9", "--against", "kafka-3.9", "--members", "1",
                 "--quiet", "--max-states", "5"]) == 3


@pytest.mark.parametrize("argv,needle", [
    (["diff", "--table", "nope", "--against", "kafka-3.9"], "neither a profile"),
    (["diff", "--table", "kafka-3.9", "--against", "check.mutants:nope"], "--against"),
    (["diff", "--table", "kafka-3.9"], "--against"),
    (["diff", "--table", "kafka-3.9", "--against", "kafka-3.9", "--members", "9"], "more than 4"),
    (["diff", "--table", "kafka-3.9", "--against", "kafka-3.9", "--out", str(Path(__file__).resolve().parents[2] / "pyproject.toml" / "d")],
     "cannot create directory"),
    (["check", "--refines", "nope"], "neither a profile"),
])
def test_diff_bad_input_exits_2(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert needle in capsys.readouterr().err


def test_check_refines_fails_on_a_mutant_and_passes_on_kafka(capsys: pytest.CaptureFixture[str]) -> None:
    bounds = ["--members", "1", "--max-generation", "1", "--faults", "session,rebalance",
              "--quiet", "--no-liveness", "--invariant", "dead-is-absorbing"]
    assert main(["check", "--table", "check.mutants:no-generation-bump",
                 "--refines", "kafka-3.9", *bounds]) == 1
    assert "would not" in capsys.readouterr().out
    assert main(["check", "--refines", "kafka-3.9", *bounds]) == 0


def test_a_search_without_scenarios_counts_each_difference_once() -> None:
    """Without rendering, the search stops at the first depth with a difference; that depth's
    differences are reported once each (they were once counted twice: total_differences doubled)."""
    from check.diff import explore_diff as search
    table = MUTANTS["no-delayed-sync"][0]
    r = search(Side("mutant", table, URGENT), KAFKA, CLOSED_2, progress=None, max_differences=1000)
    assert r.differences, "the mutant differs from Kafka's table at these bounds"
    signatures = [d.signature() for d in r.differences]
    assert len(signatures) == len(set(signatures))
    assert r.total_differences == len(r.differences)

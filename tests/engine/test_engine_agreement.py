"""The native engine agrees with the Python explorer: identical states, edges, depth, frontier,
row counts and verdicts on the default plan; the same violations with the same rendered
counterexamples on every mutant table and every historical bug; the same fast first
counterexample. Every named property (state, transition and path) is checked by both: the engine
implements them all (tests/engine/test_engine_completeness.py). Python (check/explore.py) is the
reference."""

from __future__ import annotations

import pytest

from check.abstract import Bounds
from check.explore import PATH_PROPERTIES, Report, explore
from check.historical import HISTORICAL
from check.mutants import MUTANT_BOUNDS, MUTANTS
from check.native import choose_engine, explore_native
from check.plan import AGREEMENT_PLAN
from model.dsl import Table
from model.table import CLASSIC_TABLE, URGENT


def _summary(r: Report) -> tuple[object, ...]:
    return (r.states, r.edges, r.depth, r.frontier, r.rows_fired,
            [(v.invariant, v.message, v.trace) for v in r.violations], r.uncovered, r.cut_short,
            r.liveness_checked)


def test_the_default_check_runs_natively() -> None:
    assert choose_engine("native", None, quiet=True) == "native"


@pytest.mark.parametrize("label,bounds", AGREEMENT_PLAN, ids=[label for label, _ in AGREEMENT_PLAN])
def test_default_plan_entry_agrees(label: str, bounds: Bounds) -> None:
    native = explore_native(CLASSIC_TABLE, URGENT, bounds, progress=None)
    python = explore(CLASSIC_TABLE, URGENT, bounds, progress=None)
    assert native.violations == [] and python.violations == []
    assert _summary(native) == _summary(python)


def _mutant_bounds(name: str, invariant: str) -> Bounds:
    if name in MUTANT_BOUNDS:
        return MUTANT_BOUNDS[name]
    if invariant == "commit-fencing":  # stale generations need a misbehaving client
        return Bounds(dynamic=1, max_generation=2, mode="open",
                      faults=frozenset({"session", "rebalance", "crash", "stall"}))
    if invariant == "quiescence-reachable":
        return Bounds(dynamic=2, max_generation=1, faults=frozenset({"session", "rebalance", "stall"}))
    return Bounds(dynamic=2, max_generation=2, faults=frozenset({"session", "rebalance", "crash", "stall"}))


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_mutant_gets_the_same_verdict_and_counterexample(name: str) -> None:
    table, invariant, _ = MUTANTS[name]
    assert choose_engine("native", frozenset({invariant}), quiet=True) == "native"
    b = _mutant_bounds(name, invariant)
    kw = dict(symmetry=True, progress=None, max_states=60000,
              stop_at_first_violation=invariant not in PATH_PROPERTIES)
    native = explore_native(table, URGENT, b, **kw)  # type: ignore[arg-type]
    python = explore(table, URGENT, b, **kw)  # type: ignore[arg-type]
    assert invariant in {v.invariant for v in native.violations}
    assert _summary(native) == _summary(python)
    for v in native.violations:
        assert any("->" in line for line in v.trace)


def test_symmetry_off_and_max_states_agree() -> None:
    small = Bounds(dynamic=2, max_generation=1, faults=frozenset({"session", "rebalance", "stall"}))
    big = Bounds(dynamic=2, static=1, max_generation=1, faults=frozenset({"session", "crash"}))
    for b, sym, cap in ((small, False, None), (big, True, 3000)):
        native = explore_native(CLASSIC_TABLE, URGENT, b, progress=None, symmetry=sym,
                                max_states=cap)
        python = explore(CLASSIC_TABLE, URGENT, b, progress=None, symmetry=sym, max_states=cap)
        assert _summary(native) == _summary(python)


@pytest.mark.parametrize("name", sorted(HISTORICAL))
def test_each_historical_bug_gets_the_same_verdict_natively(name: str) -> None:
    bug = HISTORICAL[name]
    kw = dict(symmetry=True, progress=None, stop_at_first_violation=True)
    native = explore_native(bug.table, URGENT, bug.bounds, **kw)  # type: ignore[arg-type]
    python = explore(bug.table, URGENT, bug.bounds, **kw)  # type: ignore[arg-type]
    assert (native.violations[0].invariant if native.violations else None) == bug.killed_by
    assert _summary(native) == _summary(python)


@pytest.mark.parametrize("name", ["no-delayed-sync", "no-generation-bump", "follower-sync-answered-early"])
def test_fast_first_counterexample_agrees(name: str) -> None:
    """all_counterexamples=False: each property stops at its first counterexample and the run
    stops once every checked property has one (or goes on for the rest); `skip` leaves out what
    a plan's earlier run found."""
    table, invariant, _ = MUTANTS[name]
    b = _mutant_bounds(name, invariant)
    for skip in (frozenset(), frozenset({"single-delayed-join"})):
        for names in (None, frozenset({invariant})):
            kw = dict(progress=None, invariants=names, all_counterexamples=False, skip=skip,
                      max_states=60000, liveness=names is None or invariant in PATH_PROPERTIES)
            native = explore_native(table, URGENT, b, **kw)  # type: ignore[arg-type]
            python = explore(table, URGENT, b, **kw)  # type: ignore[arg-type]
            assert invariant in {v.invariant for v in python.violations}
            assert _summary(native) == _summary(python)


def test_the_whole_default_plan_covers_every_row_or_says_why_natively() -> None:
    """The default `groupspec check` plan (with the bounds only the native engine finishes):
    no violation, every row fires somewhere or is marked unreachable, and no row marked
    unreachable fires."""
    from check.plan import DEFAULT_PLAN
    fired: set[str] = set()
    for _, bounds in DEFAULT_PLAN:
        r = explore_native(CLASSIC_TABLE, URGENT, bounds, progress=None)
        assert r.violations == [], bounds
        fired |= set(r.rows_fired)
    assert [row.id for row in CLASSIC_TABLE.rows if row.id not in fired and not row.unreachable] == []
    assert [row.id for row in CLASSIC_TABLE.rows if row.id in fired and row.unreachable] == []


def test_an_ill_formed_step_keeps_no_successor_of_its_state_in_either_engine() -> None:
    """Negative control of the native explorer's undo: without its Stable "summary" row,
    DescribeGroups (an admin request, tried after the clients' moves, whose successors the engine
    has by then stored) matches no row in a Stable group. Both explorers report the table as not well formed
    there and keep no successor, no row count and no violation of such a state: the same counts."""
    rows = tuple(r for r in CLASSIC_TABLE.rows if r.id != "Stable/DescribeGroups/summary")
    assert len(rows) == len(CLASSIC_TABLE.rows) - 1
    table = Table(name="no-describe-summary", rows=rows, events=CLASSIC_TABLE.events)
    b = Bounds(dynamic=2, max_generation=1, faults=frozenset({"session"}))
    native = explore_native(table, URGENT, b, progress=None, first_violation_only=False)
    python = explore(table, URGENT, b, progress=None, first_violation_only=False)
    assert [v.invariant for v in native.violations].count("table-well-formed") > 1
    assert _summary(native) == _summary(python)
    # the states past the first Stable group are never reached
    whole = explore_native(CLASSIC_TABLE, URGENT, b, progress=None)
    assert native.states < whole.states

"""The native engine agrees with the Python explorer: identical states, edges, depth, frontier,
row counts and verdicts on the default plan; the same violations with the same rendered
counterexamples on every mutant table. Python (model/explore.py) is the reference."""

from __future__ import annotations

import pytest

from model.abstract import Bounds
from model.explore import Report, explore
from model.mutants import MUTANTS
from model.explore import LIVENESS
from model.native import choose_engine, explore_native, implemented
from model.plan import AGREEMENT_PLAN
from model.table import CLASSIC_TABLE, URGENT


# What both engines check: every invariant the native engine implements, and its liveness check.
# The properties it does not implement yet make `groupspec check` fall back to Python (below and
# tests/engine/test_engine_completeness.py pins that list).
NATIVE = frozenset(implemented()["invariants"]) | {LIVENESS}


def _summary(r: Report) -> tuple[object, ...]:
    return (r.states, r.edges, r.depth, r.frontier, r.rows_fired,
            [(v.invariant, v.message, v.trace) for v in r.violations], r.uncovered)


@pytest.mark.parametrize("label,bounds", AGREEMENT_PLAN, ids=[label for label, _ in AGREEMENT_PLAN])
def test_default_plan_entry_agrees(label: str, bounds: Bounds) -> None:
    native = explore_native(CLASSIC_TABLE, URGENT, bounds, progress=None, invariants=NATIVE)
    python = explore(CLASSIC_TABLE, URGENT, bounds, progress=None, invariants=NATIVE)
    assert native.violations == [] and python.violations == []
    assert _summary(native) == _summary(python)


def _mutant_bounds(invariant: str) -> Bounds:
    if invariant == "commit-fencing":  # stale generations need a misbehaving client
        return Bounds(dynamic=1, max_generation=2, mode="open",
                      faults=frozenset({"session", "rebalance", "crash", "stall"}))
    if invariant == "quiescence-reachable":
        return Bounds(dynamic=2, max_generation=1, faults=frozenset({"session", "rebalance", "stall"}))
    return Bounds(dynamic=2, max_generation=2, faults=frozenset({"session", "rebalance", "crash", "stall"}))


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_mutant_gets_the_same_verdict_and_counterexample(name: str) -> None:
    table, invariant, _ = MUTANTS[name]
    if invariant not in NATIVE:  # not ported yet: a native check of it runs the Python explorer
        assert choose_engine("native", frozenset({invariant}), quiet=True) == "python"
        return
    b = _mutant_bounds(invariant)
    kw = dict(symmetry=True, progress=None, max_states=60000, invariants=NATIVE,
              stop_at_first_violation=invariant != "quiescence-reachable")
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
                                max_states=cap, invariants=NATIVE)
        python = explore(CLASSIC_TABLE, URGENT, b, progress=None, symmetry=sym, max_states=cap,
                         invariants=NATIVE)
        assert _summary(native) == _summary(python)


def test_the_whole_default_plan_covers_every_row_or_says_why_natively() -> None:
    """The default `groupspec check` plan (with the bounds only the native engine finishes):
    no violation, every row fires somewhere or is marked unreachable, and no row marked
    unreachable fires."""
    from model.plan import DEFAULT_PLAN
    fired: set[str] = set()
    for _, bounds in DEFAULT_PLAN:
        r = explore_native(CLASSIC_TABLE, URGENT, bounds, progress=None, invariants=NATIVE)
        assert r.violations == [], bounds
        fired |= set(r.rows_fired)
    assert [row.id for row in CLASSIC_TABLE.rows if row.id not in fired and not row.unreachable] == []
    assert [row.id for row in CLASSIC_TABLE.rows if row.id in fired and row.unreachable] == []

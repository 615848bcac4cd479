"""Pinned explorer results and negative controls (mutated tables must be caught)."""

from __future__ import annotations

import pytest

from check.abstract import Bounds, World
from check.explore import explore
from check.mutants import MUTANT_BOUNDS, MUTANTS
from model.table import CLASSIC_TABLE, URGENT

# (dynamic members, generation cap, faults, symmetry) -> (states, edges, depth).
# A change to the table or the explorer that moves these numbers must be deliberate.
PINNED = [
    ((1, 1, "", True), (10, 20, 6)),
    ((2, 1, "", True), (120, 320, 15)),
    ((2, 1, "", False), (234, 634, 15)),
    ((2, 1, "session,rebalance", True), (938, 3175, 51)),
]


def _faults(text: str) -> frozenset[str]:
    return frozenset(x for x in text.split(",") if x)


@pytest.mark.parametrize("bounds,expected", PINNED, ids=[str(b) for b, _ in PINNED])
def test_pinned_state_counts_and_no_violation(bounds: tuple[int, int, str, bool],
                                              expected: tuple[int, int, int]) -> None:
    n, gen, faults, sym = bounds
    r = explore(CLASSIC_TABLE, URGENT, Bounds(dynamic=n, max_generation=gen, faults=_faults(faults)),
                symmetry=sym, progress=None)
    assert [v.invariant for v in r.violations] == []
    assert (r.states, r.edges, r.depth) == expected


def test_symmetry_reduction_never_finds_more_states() -> None:
    b = Bounds(dynamic=2, static=1, max_generation=1, faults=frozenset())
    full = explore(CLASSIC_TABLE, URGENT, b, symmetry=False, progress=None)
    reduced = explore(CLASSIC_TABLE, URGENT, b, symmetry=True, progress=None)
    assert not full.violations and not reduced.violations
    assert reduced.states < full.states
    assert set(reduced.rows_fired) == set(full.rows_fired)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_mutant_table_is_caught_with_a_counterexample(name: str) -> None:
    """`groupspec check --stop-at-first-violation` semantics: the exploration stops after the
    first state with a violation (path properties are checked on the graph explored so far)."""
    table, invariant, _ = MUTANTS[name]
    faults = frozenset({"session", "rebalance", "crash", "stall"})
    # Stale generations from a member need a misbehaving client: open mode.
    mode, n = ("open", 1) if invariant == "commit-fencing" else ("closed", 2)
    bounds = MUTANT_BOUNDS.get(name, Bounds(dynamic=n, max_generation=2, faults=faults, mode=mode))
    r = explore(table, URGENT, bounds, symmetry=True, progress=None,
                stop_at_first_violation=True, max_states=60000)
    caught = {v.invariant: v for v in r.violations}
    assert invariant in caught, f"{name} not caught; found {sorted(caught)}"
    trace = caught[invariant].trace
    assert len(trace) >= 2 and any("->" in line for line in trace)
    assert not any("could not re-execute" in line for line in trace)


def test_the_real_table_passes_the_stall_scenario_that_breaks_no_delayed_sync() -> None:
    r = explore(CLASSIC_TABLE, URGENT,
                Bounds(dynamic=2, max_generation=2, faults=frozenset({"session", "rebalance", "stall"})),
                symmetry=True, progress=None, max_states=60000)
    assert r.violations == []


def test_default_plan_covers_every_row_or_says_why_not() -> None:
    """The default `groupspec check` plan: every row fires somewhere or is marked unreachable."""
    from check.plan import PYTHON_PLAN  # the native engine checks the whole DEFAULT_PLAN
    fired: set[str] = set()
    for _, bounds in PYTHON_PLAN:
        r = explore(CLASSIC_TABLE, URGENT, bounds, symmetry=True, progress=None)
        assert r.violations == [], bounds
        fired |= set(r.rows_fired)
    not_reached = [row.id for row in CLASSIC_TABLE.rows if row.id not in fired and not row.unreachable]
    assert not_reached == []
    # A row marked unreachable that fires is a wrong claim in the table.
    wrongly_marked = [row.id for row in CLASSIC_TABLE.rows if row.id in fired and row.unreachable]
    assert wrongly_marked == []


def test_members_with_different_protocol_lists_are_different_states() -> None:
    """Regression (found by proofs/agreement.py): the state key kept only the first protocol's
    metadata, so a member preferring roundrobin merged with one offering only range and the
    explorer never reached roundrobin at generation 1. Removing the fix makes this fail."""
    seen: set[tuple[object, int]] = set()

    class Reached(Exception):
        pass

    def note(w: World) -> None:
        seen.add((w.group.protocol_name, w.group.generation))
        if ("roundrobin", 1) in seen:
            raise Reached  # reachable: no need to explore the rest

    try:
        explore(CLASSIC_TABLE, URGENT, Bounds(dynamic=1, static=0, max_generation=1, mode="open",
                                               max_ids_per_client=2),
                symmetry=False, liveness=False, progress=None, on_state=note)
    except Reached:
        pass
    assert ("roundrobin", 1) in seen, sorted(seen, key=str)

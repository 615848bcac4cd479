"""The explorer's cache (engine/src/explore_cache.rs: groups interned, the table's steps and their
transition-invariant verdicts kept by (group, input, settings); `memo`, on by default) changes
nothing the explorer finds: with and without it the native engine reports the same states, edges,
depth, frontier, row counts and violations with the same paths, on bounds of the default plan (on
one thread and on two, each with a cache of its own) and on every mutant whose broken property is
a transition invariant (so the cached verdicts must report each violation where the fresh step
does)."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from check.abstract import Bounds
from check.mutants import MUTANT_BOUNDS, MUTANTS, mutate
from check.native import make_engine
from model.dsl import Guard, Table
from model.invariants import INVARIANTS
from model.table import CLASSIC_TABLE, URGENT
from model.vocabulary import GroupState

SRS = frozenset({"session", "rebalance", "stall"})
BOUNDS = (Bounds(dynamic=3, max_generation=1, faults=SRS),
          Bounds(dynamic=2, max_generation=1, max_ids_per_client=1,
                 faults=frozenset({"session", "rebalance", "crash", "stall"})),
          Bounds(dynamic=1, static=1, max_generation=1, max_ids_per_client=1,
                 faults=frozenset({"session", "rebalance", "unload", "lost", "crash", "offsets",
                                   "stall", "append", "impersonate"})))
CRASH = Bounds(dynamic=2, max_generation=2, max_ids_per_client=1,
               faults=frozenset({"session", "rebalance", "crash", "stall"}))
STATIC = Bounds(dynamic=1, static=1, max_generation=2, max_ids_per_client=1,
                faults=frozenset({"session", "rebalance", "crash", "stall", "impersonate"}))
TRANSITION_MUTANTS = sorted(n for n, (_, inv, _) in MUTANTS.items()
                            if inv in INVARIANTS and INVARIANTS[inv].kind == "transition")


def _mutant_bounds(name: str) -> Bounds:
    """Bounds where the mutant's violation is found (closed mode where it can be: in open mode a
    world is its group alone, so few steps repeat)."""
    if name in ("commit-stale-accepted", "static-join-in-completing-keeps-generation"):
        return STATIC
    return MUTANT_BOUNDS.get(name, CRASH)


def _run(table: Table, urgent: tuple[tuple[str, Guard], ...], b: Bounds, memo: bool,
         invariants: list[str], stop: bool = False, threads: int = 1,
         cache_bytes: Optional[int] = None) -> dict[str, Any]:
    engine = make_engine(table, urgent, b, invariants)[0]
    raw: dict[str, Any] = engine.explore(True, invariants, True, 60000, False, stop, False,
                         ["quiescence-reachable", "parked-requests-answered"], [], None, [],
                         memo=memo, threads=threads, cache_bytes=cache_bytes)
    return raw


def _found(raw: dict[str, Any]) -> tuple[object, ...]:
    """Everything the run found (not its time, memory or memo counters)."""
    return (raw["states"], raw["edges"], raw["depth"], raw["frontier"], raw["rows_fired"],
            raw["cut_short"], raw["liveness_checked"], raw["violations"])


@pytest.mark.parametrize("threads", (1, 2))
@pytest.mark.parametrize("b", BOUNDS, ids=[b.describe() for b in BOUNDS])
def test_memoised_and_fresh_steps_find_the_same(b: Bounds, threads: int) -> None:
    names = list(INVARIANTS)
    memo, fresh = (_run(CLASSIC_TABLE, URGENT, b, m, names, threads=threads) for m in (True, False))
    hits, misses = memo["memo"]
    assert hits > 0 and misses > 0  # the memo was used, and answered most lookups
    assert fresh["memo"] == (0, 0)  # the fresh run never asked it
    assert _found(memo) == _found(fresh)
    assert memo["violations"] == []


@pytest.mark.parametrize("cache_bytes", (1, 300_000))
def test_a_cache_emptied_on_the_way_finds_the_same(cache_bytes: int) -> None:
    """Past its limit a thread's cache is emptied between two states, and the run goes on with
    the same results: emptied before every state (1 byte) and now and then (300 kB)."""
    b, names = BOUNDS[1], list(INVARIANTS)
    small = _run(CLASSIC_TABLE, URGENT, b, True, names, threads=2, cache_bytes=cache_bytes)
    fresh = _run(CLASSIC_TABLE, URGENT, b, False, names, threads=2)
    assert small["memo_clears"] > 0  # it was emptied
    assert _found(small) == _found(fresh)


@pytest.mark.parametrize("name", TRANSITION_MUTANTS)
def test_memoised_verdicts_report_each_transition_violation(name: str) -> None:
    table, invariant, _ = MUTANTS[name]
    b = _mutant_bounds(name)
    memo, fresh = (_run(table, URGENT, b, m, [invariant], stop=True) for m in (True, False))
    assert sum(memo["memo"]) > 0  # the verdicts came through the memo (made there on a miss)
    assert invariant in {v[0] for v in memo["violations"]}
    assert _found(memo) == _found(fresh)


# ListGroups in Stable names Stable as its next state: the group stays as it is (a loop of the
# group's own action), yet Stable -> Stable is no valid edge, so valid-state-edges breaks on a
# loop that follows DescribeGroups' (the cache steps a group's leading loops as one run and must
# end the run there, reporting the violation at its position)
LOOP_VIOLATES = mutate(CLASSIC_TABLE, "list-groups-loop-violates", {
    "Stable/ListGroups/listed": {"next_state": GroupState.Stable}})


@pytest.mark.parametrize("threads", (1, 2))
def test_a_group_own_loop_that_violates_is_reported_where_the_fresh_step_reports_it(threads: int) -> None:
    b, names = BOUNDS[0], list(INVARIANTS)
    memo, fresh = (_run(LOOP_VIOLATES, URGENT, b, m, names, threads=threads) for m in (True, False))
    assert "valid-state-edges" in {v[0] for v in memo["violations"]}
    assert sum(memo["memo"]) > 0
    assert _found(memo) == _found(fresh)


def test_negative_control_the_comparison_sees_a_changed_table() -> None:
    # a mutant differs from the classic table at these bounds: the comparison above must see it
    table, invariant, _ = MUTANTS["no-generation-bump"]
    broken = _run(table, URGENT, CRASH, True, [invariant])
    classic = _run(CLASSIC_TABLE, URGENT, CRASH, True, [invariant])
    assert _found(broken) != _found(classic)
    assert classic["violations"] == [] and broken["violations"]

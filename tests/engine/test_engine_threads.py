"""The native explorer makes successors on several threads (engine/src/explore.rs: slices of the
BFS queue expanded by workers while the slice before is stored, in the order one thread makes
them, on the calling thread), and finds exactly
what one thread finds: the same states, edges, depth, frontier, row counts, cut, liveness verdict
and violations with the same paths (so the same BFS numbering, parent links and successor
positions), on the classic table, on mutants with state, transition and path violations (every
counterexample, and the stop at the first), with a run cut by --max-states in the middle of a
slice, and on a table whose step is ill formed in some states. A table that calls back into
Python runs on one thread whatever is asked."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from check.abstract import Bounds
from check.explore import PATH_PROPERTIES
from check.mutants import MUTANT_BOUNDS, MUTANTS
from check.native import LAST_RUN, explore_native, make_engine
from model.dsl import ATOMS, Table
from model.invariants import INVARIANTS
from model.table import CLASSIC_TABLE, URGENT

SRS = frozenset({"session", "rebalance", "stall"})
# 10,094 states: ten slices of 1,024
THREE = Bounds(dynamic=3, max_generation=1, faults=SRS)
CRASH = Bounds(dynamic=2, max_generation=2, max_ids_per_client=1,
               faults=frozenset({"session", "rebalance", "crash", "stall"}))


def _run(table: Table, b: Bounds, threads: int, *, first_only: bool = True, stop: bool = False,
         max_states: Optional[int] = None, force: tuple[str, ...] = ()) -> dict[str, Any]:
    names = list(INVARIANTS)
    engine = make_engine(table, URGENT, b, names, force)[0]
    raw: dict[str, Any] = engine.explore(True, names, True, max_states, first_only, stop, False,
                                         list(PATH_PROPERTIES), [], None, [], threads=threads)
    return raw


def _found(raw: dict[str, Any]) -> tuple[object, ...]:
    """Everything the run found (not its time or memory)."""
    return (raw["states"], raw["edges"], raw["depth"], raw["frontier"], raw["rows_fired"],
            raw["cut_short"], raw["liveness_checked"], raw["violations"])


def _same_for_any_threads(table: Table, b: Bounds, **kw: Any) -> dict[str, Any]:
    one = _run(table, b, 1, **kw)
    assert one["threads"] == 1
    for n in (2, 3):
        many = _run(table, b, n, **kw)
        assert many["threads"] == n
        assert _found(many) == _found(one)
    return one


@pytest.mark.parametrize("b", (THREE, CRASH), ids=[THREE.describe(), CRASH.describe()])
def test_the_classic_table_gives_the_same_on_any_number_of_threads(b: Bounds) -> None:
    one = _same_for_any_threads(CLASSIC_TABLE, b)
    assert one["states"] > 2 * 1024 and one["violations"] == [] and one["liveness_checked"]


def test_a_run_cut_in_the_middle_of_a_slice_is_cut_at_the_same_state() -> None:
    one = _same_for_any_threads(CLASSIC_TABLE, THREE, max_states=3000)
    assert one["states"] >= 3000 and one["cut_short"].startswith("--max-states 3000 reached")


@pytest.mark.parametrize("name", ["second-delayed-join", "no-generation-bump", "no-delayed-sync",
                                  "assignment-never-propagated", "join-answered-and-parked"])
def test_every_counterexample_of_a_mutant_is_the_same(name: str) -> None:
    table, invariant, _ = MUTANTS[name]
    b = MUTANT_BOUNDS.get(name, THREE)
    one = _same_for_any_threads(table, b, first_only=False, max_states=20000)
    assert invariant in {v[0] for v in one["violations"]}


def test_the_stop_at_the_first_violation_is_the_same() -> None:
    table = MUTANTS["no-generation-bump"][0]
    one = _same_for_any_threads(table, THREE, stop=True)
    assert one["cut_short"] == "stopped at the first violation" and len(one["violations"]) == 1


def test_an_ill_formed_step_keeps_no_successor_on_any_number_of_threads() -> None:
    rows = tuple(r for r in CLASSIC_TABLE.rows if r.id != "Stable/DescribeGroups/summary")
    table = Table(name="no-describe-summary", rows=rows, events=CLASSIC_TABLE.events)
    one = _same_for_any_threads(table, THREE, first_only=False)
    assert [v[0] for v in one["violations"]].count("table-well-formed") > 1


def test_a_table_that_calls_back_runs_on_one_thread() -> None:
    b = Bounds(dynamic=2, max_generation=1, faults=frozenset({"session", "rebalance"}))
    slow = _run(CLASSIC_TABLE, b, 2, force=tuple(ATOMS))
    assert slow["threads"] == 1
    assert _found(slow) == _found(_run(CLASSIC_TABLE, b, 2))
    explore_native(CLASSIC_TABLE, URGENT, b, progress=None, threads=2)
    assert LAST_RUN[0].threads == 2


def test_negative_control_the_comparison_sees_a_changed_table() -> None:
    mutant = MUTANTS["no-generation-bump"][0]
    assert (_found(_run(mutant, THREE, 2, max_states=3000))
            != _found(_run(CLASSIC_TABLE, THREE, 2, max_states=3000)))

"""A check counterexample becomes a trace by re-executing its printed path through the abstract
model: every mutant's counterexample does, names its invariant, and ends where it breaks; a
tampered counterexample, or one replayed on the wrong table, is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from check.abstract import Bounds
from check.explore import Violation
from check.mutants import MUTANT_BOUNDS, MUTANTS
from check.native import explore_native
from model.invariants import INVARIANTS
from model.table import CLASSIC_TABLE, URGENT

from render.counterexample import statement_of, trace_of_counterexample
from render.trace import COORDINATOR

FAULTS = frozenset({"session", "rebalance", "crash", "stall"})


def counterexample(name: str) -> tuple[Bounds, Violation]:
    table, invariant, _ = MUTANTS[name]
    # as tests/check/test_explore.py: stale generations from a member need open mode
    mode, n = ("open", 1) if invariant == "commit-fencing" else ("closed", 2)
    bounds = MUTANT_BOUNDS.get(name, Bounds(dynamic=n, max_generation=2, faults=FAULTS, mode=mode))
    r = explore_native(table, URGENT, bounds, progress=None, stop_at_first_violation=True, max_states=60000,
                       invariants=frozenset({invariant}), liveness=invariant not in INVARIANTS)
    found = [v for v in r.violations if v.invariant == invariant]
    assert found, (name, [v.invariant for v in r.violations])
    return bounds, found[0]


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_every_mutant_counterexample_re_executes_into_a_trace(name: str) -> None:
    table, invariant, _ = MUTANTS[name]
    bounds, v = counterexample(name)
    t = trace_of_counterexample(table, URGENT, bounds, v)
    numbered = [line for line in v.trace if line.strip()[:1].isdigit()]
    assert len(t.steps) == len(numbered) and t.states == len(numbered) + 1
    assert t.kind == "counterexample" and t.violation is not None
    assert t.violation.name == invariant and t.violation.step == len(t.steps)
    assert t.violation.statement == statement_of(invariant) and t.violation.message == v.message
    assert t.steps[-1].group is not None
    printed_rows = [line.strip()[len("rows: "):] for line in v.trace if line.strip().startswith("rows: ")]
    assert [", ".join(s.rows) for s in t.steps if s.rows] == printed_rows
    for s in t.steps:
        assert s.cause.source in (*t.clients, COORDINATOR) and s.time_ms is None


def test_a_tampered_counterexample_is_refused() -> None:
    table, _, _ = MUTANTS["join-answered-and-parked"]
    bounds, v = counterexample("join-answered-and-parked")
    lines = list(v.trace)
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("rows: "))
    lines[i] = lines[i].replace("rows: ", "rows: Stable/Heartbeat/ok, ")
    with pytest.raises(ValueError, match="does not re-execute"):
        trace_of_counterexample(table, URGENT, bounds, replace(v, trace=tuple(lines)))
    group = next(k for k, line in enumerate(v.trace) if line.strip().startswith("group: "))
    lines = list(v.trace)
    lines[group] = lines[group].replace("gen 0", "gen 7")
    with pytest.raises(ValueError):
        trace_of_counterexample(table, URGENT, bounds, replace(v, trace=tuple(lines)))


def test_a_counterexample_replayed_on_the_right_table_only() -> None:
    """The mutant's path does not re-execute on the classic table, whose rows differ there."""
    bounds, v = counterexample("join-answered-and-parked")
    with pytest.raises(ValueError):
        trace_of_counterexample(CLASSIC_TABLE, URGENT, bounds, v)

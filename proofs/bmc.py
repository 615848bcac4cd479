"""Bounded model checking: the table unrolled from the initial group, every named invariant
checked at every depth up to k, each counterexample decoded and replayed through model.step.

A counterexample ends in a state where no urgent completion is pending (what a step() call
returns). It must replay (decode.replay) and the model's own invariant check
(model.invariants) must flag the replayed step; otherwise the run fails with ReplayError.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import z3

from model.dsl import Guard, Table
from model.invariants import INVARIANTS, check_state, check_transition
from proofs.decode import (
    MicroStep,
    Replayed,
    ReplayError,
    Values,
    describe_input,
    describe_values,
    read,
    replay,
)
from proofs.encode import Path, bounded_input, enabled, paths, quiescent, transition
from proofs.invariants import STEP_INVARIANTS, all_state_invariants
from proofs.symbolic import Sym, initial_state, make_input, make_state


@dataclass
class Trace:
    """A decoded solver trace and its replay through the model."""

    states: list[Values]
    steps: list[MicroStep]
    replayed: list[Replayed] = field(default_factory=list)

    def render(self) -> list[str]:
        lines = [f"initial: {describe_values(self.states[0])}"]
        for i, s in enumerate(self.steps):
            lines.append(f"{i + 1:>3}. {describe_input(s.x)}")
            lines.append(f"      rows: {', '.join(s.rows)}")
            lines.append(f"      group: {describe_values(self.states[i + 1])}")
        return lines


class Unrolling:
    """States s0..sk and inputs x0..x(k-1) of the table, asserted into one solver."""

    def __init__(self, table: Table, urgent: Sequence[tuple[str, Guard]], n_ids: Optional[int],
                 solver: Optional[z3.Solver] = None, init: bool = True, tag: str = "") -> None:
        self.table = table
        self.urgent = tuple(urgent)
        self.n_ids = n_ids
        self.solver = solver if solver is not None else z3.Solver()
        self.tag = tag
        self.states: list[Sym] = [make_state(f"{tag}0")]
        self.inputs: list[Sym] = []
        self.paths: list[list[Path]] = []
        if init:
            self.solver.add(initial_state(self.states[0]))

    @property
    def domain(self) -> Optional[list[int]]:
        return None if self.n_ids is None else list(range(self.n_ids))

    def extend(self) -> None:
        k = len(self.inputs)
        s, x, s2 = self.states[k], make_input(f"{self.tag}{k}"), make_state(f"{self.tag}{k + 1}")
        ps = paths(self.table, s.v, x)
        self.solver.add(enabled(self.table.events, self.urgent, s.v, x))
        self.solver.add(transition(ps, s.v, s2.v))
        if self.n_ids is not None:
            self.solver.add(bounded_input(x, self.n_ids))
        self.inputs.append(x)
        self.states.append(s2)
        self.paths.append(ps)

    def quiescent(self, i: int) -> z3.BoolRef:
        x = self.inputs[i] if i < len(self.inputs) else make_input("q")
        return quiescent(self.urgent, self.states[i].v, x)

    def state_violation(self, name: str, i: int) -> z3.BoolRef:
        inv = all_state_invariants()[name]
        return z3.And(self.quiescent(i), z3.Not(inv.holds(self.states[i].v, self.domain)))

    def step_violation(self, name: str, i: int) -> z3.BoolRef:
        inv = STEP_INVARIANTS[name]
        s, x, s2 = self.states[i].v, self.inputs[i], self.states[i + 1].v
        return z3.Or([z3.And(p.sel, inv.violated(p, s, x, s2)) for p in self.paths[i]])

    def violation(self, name: str, upto: int) -> z3.BoolRef:
        """The invariant broken by depth `upto`, ending in a quiescent state."""
        if name in STEP_INVARIANTS:
            return z3.And(self.quiescent(upto), z3.Or([self.step_violation(name, i) for i in range(upto)]))
        return self.state_violation(name, upto)

    def trace(self, m: z3.ModelRef, upto: int, domain: Sequence[int]) -> Trace:
        states = [read(m, self.states[i], domain) for i in range(upto + 1)]
        steps = []
        for i in range(upto):
            chosen = [p for p in self.paths[i] if z3.is_true(m.eval(p.sel, model_completion=True))]
            if len(chosen) != 1:
                raise ReplayError(f"step {i}: {len(chosen)} rows selected by the solver's model")
            p = chosen[0]
            steps.append(MicroStep(read(m, self.inputs[i], domain), tuple(r.id for r in p.rows),
                                   p.uses_fresh))
        return Trace(states, steps)


@dataclass
class BmcResult:
    invariant: str
    depth: int  # bound reached (or depth of the counterexample)
    status: str  # "holds" (to depth) or "violated"
    seconds: float
    trace: Optional[Trace] = None
    message: str = ""


def confirm(table: Table, name: str, tr: Trace) -> str:
    """The model's own check flags the replayed counterexample; returns its message."""
    if name not in INVARIANTS:
        return "(auxiliary invariant: replayed, no model-side check)"
    for rp in tr.replayed:
        t = rp.transition
        msgs = (check_transition(table, t, frozenset({name})) if INVARIANTS[name].kind == "transition"
                else check_state(t.after, frozenset({name})))
        if msgs:
            return msgs[0][1]
    raise ReplayError(f"{name}: the counterexample replays, but model.invariants does not flag it:\n"
                      + "\n".join(tr.render()))


def bmc(table: Table, urgent: Sequence[tuple[str, Guard]], invariants: Sequence[str], depth: int,
        n_ids: int, timeout_ms: int = 60000) -> list[BmcResult]:
    """Check each invariant at every depth 0..depth (one query per invariant and depth); an
    invariant stops at its first violation, or when a query exceeds `timeout_ms` (status
    "unknown", `depth` = the last depth fully checked)."""
    u = Unrolling(table, urgent, n_ids)
    u.solver.set("timeout", timeout_ms)
    domain = list(range(n_ids))
    results: dict[str, BmcResult] = {}
    spent = {n: 0.0 for n in invariants}
    open_names = list(invariants)
    for k in range(depth + 1):
        if not open_names:
            break
        if k > 0:
            t0 = time.perf_counter()
            u.extend()
            share = (time.perf_counter() - t0) / len(open_names)
            for n in open_names:
                spent[n] += share
        for n in list(open_names):
            if n in STEP_INVARIANTS and k == 0:
                continue
            t0 = time.perf_counter()
            u.solver.push()
            u.solver.add(u.violation(n, k))
            verdict = u.solver.check()
            model = u.solver.model() if verdict == z3.sat else None
            reason = str(u.solver.reason_unknown()) if verdict == z3.unknown else ""
            u.solver.pop()
            spent[n] += time.perf_counter() - t0
            if verdict == z3.unknown:
                results[n] = BmcResult(n, k - 1, "unknown", spent[n],
                                       message=f"depth {k}: {reason}")
                open_names.remove(n)
            elif model is not None:
                tr = u.trace(model, k, domain)
                tr.replayed = replay(table, urgent, tr.states, tr.steps, domain).steps
                results[n] = BmcResult(n, k, "violated", spent[n], tr, confirm(table, n, tr))
                open_names.remove(n)
    for n in open_names:
        results[n] = BmcResult(n, depth, "holds", spent[n])
    return [results[n] for n in invariants]

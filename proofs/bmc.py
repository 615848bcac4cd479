"""Bounded model checking: the table unrolled from the initial group, every named invariant
checked at every depth up to k, each counterexample decoded and replayed through model.step.

A counterexample ends in a state where no urgent completion is pending (what a step() call
returns). It must replay (decode.replay) and the model's own invariant check
(model.invariants) must flag the replayed step; otherwise the run fails with ReplayError.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import z3

from model.dsl import Guard, Table
from model.invariants import INVARIANTS, check_state, check_transition
from proofs.decode import (
    MicroStep, Responses, Replayed, ReplayError, Values, describe_input, describe_values, holds_in,
    read, read_set, replay
)
from proofs.encode import Path, bounded_input, enabled, paths, quiescent, transition
from proofs.invariants import STEP_INVARIANTS, all_state_invariants
from proofs.symbolic import (
    MAX_FINITE_DEPTH,
    NUM_BITS,
    Sym,
    id_val,
    inter,
    initial_state,
    make_input,
    make_state,
)


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
                 solver: Optional[z3.Solver] = None, init: bool = True, tag: str = "",
                 finite: bool = True) -> None:
        self.table = table
        self.urgent = tuple(urgent)
        self.n_ids = n_ids
        # the finite (bit-vector) representation when ids are bounded, unless asked otherwise
        self.width = n_ids if (finite and n_ids is not None) else None
        if solver is None:
            # all-finite sorts: Z3's SAT-based finite-domain solver (far faster than SMT here)
            solver = z3.SolverFor("QF_FD") if self.width is not None else z3.Solver()
        self.solver = solver
        # what was asserted, per push level (the solver's own assertions() may hold its
        # preprocessing's auxiliary constants, so a model is checked against these)
        self.frames: list[list[z3.BoolRef]] = [[]]
        self.tag = tag
        self.states: list[Sym] = [make_state(f"{tag}0", self.width)]
        self.inputs: list[Sym] = []
        self.paths: list[list[Path]] = []
        if init:
            self.add(initial_state(self.states[0]))

    def add(self, *fs: z3.BoolRef) -> None:
        self.frames[-1].extend(fs)
        self.solver.add(*fs)

    def push(self) -> None:
        self.frames.append([])
        self.solver.push()

    def pop(self) -> None:
        self.frames.pop()
        self.solver.pop()

    def satisfies(self, m: z3.ModelRef) -> bool:
        """The model satisfies everything asserted (guards against a bogus model: seen with very
        small timeouts)."""
        return all(z3.is_true(m.eval(f, model_completion=True)) for fr in self.frames for f in fr)

    @property
    def domain(self) -> Optional[list[int]]:
        return None if self.n_ids is None else list(range(self.n_ids))

    @property
    def id_terms(self) -> Optional[list[z3.ExprRef]]:
        """The bounded ids as terms of this unrolling's representation (for invariants)."""
        return None if self.n_ids is None else [id_val(k, self.width) for k in range(self.n_ids)]

    def extend(self) -> None:
        k = len(self.inputs)
        if self.width is not None and k >= MAX_FINITE_DEPTH:
            raise ValueError(f"finite BMC is limited to depth {MAX_FINITE_DEPTH} (numbers are "
                             f"{NUM_BITS}-bit bit-vectors)")
        s, x, s2 = self.states[k], make_input(f"{self.tag}{k}", self.width), make_state(
            f"{self.tag}{k + 1}", self.width)
        ps = paths(self.table, s.v, x)
        self.add(enabled(self.table.events, self.urgent, s.v, x))
        self.add(transition(ps, s.v, s2.v))
        if self.n_ids is not None:
            self.add(bounded_input(x, self.n_ids))
        self.inputs.append(x)
        self.states.append(s2)
        self.paths.append(ps)

    def quiescent(self, i: int) -> z3.BoolRef:
        x = self.inputs[i] if i < len(self.inputs) else make_input("q", self.width)
        return quiescent(self.urgent, self.states[i].v, x)

    def state_violation(self, name: str, i: int) -> z3.BoolRef:
        inv = all_state_invariants()[name]
        return z3.And(self.quiescent(i), z3.Not(inv.holds(self.states[i].v, self.id_terms)))

    def step_violation(self, name: str, i: int) -> z3.BoolRef:
        inv = STEP_INVARIANTS[name]
        s, x, s2 = self.states[i].v, self.inputs[i], self.states[i + 1].v
        return z3.Or([z3.And(p.sel, inv.violated(p, s, x, s2)) for p in self.paths[i]])

    def violation(self, name: str, at: int) -> z3.BoolRef:
        """The invariant broken at depth `at`: a state invariant at a quiescent state (what a
        step() call returns), a step invariant by the step into depth `at` (its counterexample
        is then extended through the forced urgent completions to a quiescent state)."""
        if name in STEP_INVARIANTS:
            return self.step_violation(name, at - 1)
        return self.state_violation(name, at)

    def ensure(self, depth: int) -> None:
        while len(self.inputs) < depth:
            self.extend()

    def settle(self, at: int, max_urgent: int = 4) -> tuple[Optional[z3.ModelRef], int, str]:
        """A model of the current assertions that reaches a quiescent state within `max_urgent`
        more steps after depth `at` (urgent completions are forced, so one exists unless they
        never end), with that depth; or None and why not ("" = none exists, else the solver's
        reason for giving up)."""
        for j in range(at, at + max_urgent + 1):
            self.ensure(j)
            self.push()
            self.add(self.quiescent(j))
            verdict = self.solver.check()
            m = self.solver.model() if verdict == z3.sat else None
            ok = m is not None and self.satisfies(m)
            reason = "" if verdict != z3.unknown else str(self.solver.reason_unknown())
            self.pop()
            if ok:
                return m, j, ""
            if verdict != z3.unsat:
                return None, j, reason or "the solver gave up (its model is not one)"
        return None, at + max_urgent, ""

    def trace(self, m: z3.ModelRef, upto: int, domain: Sequence[int]) -> Trace:
        states = [read(m, self.states[i], domain) for i in range(upto + 1)]
        steps = []
        for i in range(upto):
            chosen = [p for p in self.paths[i] if holds_in(m, p.sel)]
            if len(chosen) != 1:
                raise ReplayError(f"step {i}: {len(chosen)} rows selected by the solver's model")
            p = chosen[0]
            post = self.states[i + 1].v
            responses = Responses(
                {k: read_set(m, t, domain) for k, t in p.settled.items()},
                {k: read_set(m, inter(t, post["mem"], post[k]), domain) for k, t in p.own_parked.items()},
                z3.is_true(m.eval(p.own_answered, model_completion=True)))
            steps.append(MicroStep(read(m, self.inputs[i], domain), tuple(r.id for r in p.rows),
                                   p.uses_fresh, responses))
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


@dataclass
class _Answer:
    """What one BMC query found at depth k."""

    verdict: z3.CheckSatResult
    model: Optional[z3.ModelRef]  # a violation settled into a quiescent state, if one was found
    reason: str  # why the solver gave up ("" unless verdict is unknown)
    end: int  # the depth the counterexample ends at (after its urgent completions)
    hit: list[str]  # the invariants the model violates


class _BmcRun:
    """One bmc() call in progress: the unrolling, the invariants still open, the results so far
    and the solver time spent on each invariant."""

    def __init__(self, table: Table, urgent: Sequence[tuple[str, Guard]], invariants: Sequence[str],
                 n_ids: int, timeout_ms: int, finite: bool) -> None:
        self.table, self.urgent = table, urgent
        self.u = Unrolling(table, urgent, n_ids, finite=finite)
        self.u.solver.set("timeout", timeout_ms)
        self.domain = list(range(n_ids))
        self.state_invs = all_state_invariants()
        self.results: dict[str, BmcResult] = {}
        self.spent = {n: 0.0 for n in invariants}
        self.open_names = list(invariants)

    def charge(self, names: Sequence[str], t0: float) -> None:
        share = (time.perf_counter() - t0) / max(1, len(names))
        for n in names:
            self.spent[n] += share

    def check_depth(self, k: int) -> None:
        """Ask for violations at depth k until none of the open invariants has one; a joint
        query the solver gives up on is split into one query per invariant."""
        first = [n for n in self.open_names if not (n in STEP_INVARIANTS and k == 0)]
        groups: list[list[str]] = [first] if first else []
        while groups:
            asked = [n for n in groups.pop() if n in self.open_names]
            if not asked:
                continue
            t0 = time.perf_counter()
            answer = self.ask(asked, k)
            self.charge(asked, t0)
            if answer.verdict == z3.unsat:
                continue
            if answer.model is None:
                if len(asked) > 1:  # too hard together: ask one invariant at a time
                    groups.extend([n] for n in reversed(asked))
                    continue
                self.results[asked[0]] = BmcResult(asked[0], k - 1, "unknown", self.spent[asked[0]],
                                                   message=f"depth {k}: {answer.reason}")
                self.open_names.remove(asked[0])
                continue
            tr = self.u.trace(answer.model, answer.end, self.domain)
            tr.replayed = replay(self.table, self.urgent, tr.states, tr.steps, self.domain).steps
            for n in answer.hit:
                self.results[n] = BmcResult(n, answer.end, "violated", self.spent[n], tr,
                                            confirm(self.table, n, tr))
                self.open_names.remove(n)
            groups.append([n for n in asked if n not in answer.hit])  # the rest, asked again

    def ask(self, asked: list[str], k: int) -> _Answer:
        """One query for a violation of any of `asked` at depth k, then settled (urgent
        completions run until a quiescent state)."""
        u = self.u
        violations = {n: u.violation(n, k) for n in asked}
        u.push()
        u.add(z3.Or(list(violations.values())))
        verdict = u.solver.check()
        model = u.solver.model() if verdict == z3.sat else None
        reason = str(u.solver.reason_unknown()) if verdict == z3.unknown else ""
        if model is not None and not u.satisfies(model):
            # seen with very small timeouts: a "sat" whose model breaks the assertions
            verdict, model, reason = z3.unknown, None, "the solver gave up (its model is not one)"
        end = k
        hit: list[str] = []
        if model is not None:
            hit = [n for n in asked if z3.is_true(model.eval(violations[n], model_completion=True))]
            if not hit:
                raise ReplayError(f"depth {k}: the solver's model violates none of the invariants asked")
            u.add(z3.Or([violations[n] for n in hit]))
            model, end, why = u.settle(k)
            if model is None and not why:
                raise ReplayError(f"depth {k}: a violation of {hit} never reaches a quiescent state")
            if model is None:
                verdict, reason = z3.unknown, why
            else:
                hit = [n for n in hit if z3.is_true(model.eval(violations[n], model_completion=True))]
        u.pop()
        return _Answer(verdict, model, reason, end, hit)

    def assume_cleared(self, k: int) -> None:
        """Depth k is clear of every open invariant: assume it there in the deeper queries."""
        u = self.u
        for n in self.open_names:  # known from here on: nothing reachable breaks n at depth k
            if n in self.state_invs:
                u.add(z3.Implies(u.quiescent(k), self.state_invs[n].holds(u.states[k].v, u.id_terms)))
            elif k > 0:
                u.add(z3.Not(u.violation(n, k)))


def bmc(table: Table, urgent: Sequence[tuple[str, Guard]], invariants: Sequence[str], depth: int,
        n_ids: int, timeout_ms: int = 60000, finite: bool = True,
        progress: Optional[Callable[[str], None]] = None) -> list[BmcResult]:
    """Check each invariant at every depth 0..depth. One query per depth asks for a violation of
    any invariant still open; a model names every invariant it violates (each then stops, with
    its decoded, replayed and confirmed counterexample) and the query is repeated for the rest.
    Once depth k is clear of an invariant, it is assumed at the (quiescent) states of depth k in
    the deeper queries: sound, since a shortest counterexample satisfies the invariant at every
    earlier depth, and it is what keeps deep queries cheap (the invariants are inductive). A
    joint query beyond `timeout_ms` is split into one query per invariant; an invariant whose own
    query times out stops (status "unknown", `depth` = the last depth fully checked)."""
    run = _BmcRun(table, urgent, invariants, n_ids, timeout_ms, finite)
    for k in range(depth + 1):
        if not run.open_names:
            break
        if k > len(run.u.inputs):
            t0 = time.perf_counter()
            run.u.ensure(k)
            run.charge(run.open_names, t0)
        run.check_depth(k)
        run.assume_cleared(k)
        if progress is not None:
            progress(f"BMC depth {k}/{depth}: {len(run.open_names)} invariant(s) still hold")
    for n in run.open_names:
        run.results[n] = BmcResult(n, depth, "holds", run.spent[n])
    return [run.results[n] for n in invariants]

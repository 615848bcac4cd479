"""The transition relation, built from the table: guards, row paths, the frame, the scheduler.

A *path* is what one input does before the urgent completions: one row, or a `continue` row
(group creation) followed by the row the same input then meets in the new state. For each
state variable the successor is an if-then-else over the paths that write it; the variables a
path does not declare are, by construction, its predecessor's (the generated frame). Urgent
events (model.table.URGENT) are separate steps that the scheduler must take while their guard
holds, as model.step.run_urgent does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import z3

from model.dsl import Guard, Row, Table
from model.vocabulary import GroupState, TimerEvent
from proofs.atoms import ATOM_ENCODINGS
from proofs.effects import EffCtx, EncodingError, allowed_vars, apply_effect
from proofs.symbolic import (
    CHOICE_VARS,
    EVENT,
    GSTATE,
    STATE_VARS,
    Sym,
    Terms,
    enum_ranges,
    eq,
    id_lt,
    lit,
    sel,
)


def guard_formula(guard: Guard, g: Terms, x: Sym) -> z3.BoolRef:
    lits = []
    for lit in guard.literals:
        enc = ATOM_ENCODINGS.get(lit.atom)
        if enc is None:
            raise EncodingError(f"atom {lit.atom!r} has no Z3 encoding")
        a = enc(g, x)
        lits.append(a if lit.positive else z3.Not(a))
    return z3.And(lits) if lits else z3.BoolVal(True)


@dataclass
class Path:
    rows: tuple[Row, ...]
    sel: z3.BoolRef
    post: dict[str, z3.ExprRef]
    side: list[z3.BoolRef]
    written: frozenset[str]  # state variables the path may change
    uses_fresh: bool = False
    mids: list[dict[str, z3.ExprRef]] = field(default_factory=list)  # states between its rows
    # responses (for one-response-per-request), as EffCtx tracks them over the path's rows
    settled: dict[str, z3.ExprRef] = field(default_factory=dict)
    own_parked: dict[str, z3.ExprRef] = field(default_factory=dict)
    own_answered: z3.BoolRef = field(default_factory=lambda: z3.BoolVal(False))
    bad: list[z3.BoolRef] = field(default_factory=list)


def fire_row(row: Row, g: Terms, x: Sym, before: Optional[EffCtx] = None) -> tuple[dict[str, z3.ExprRef], EffCtx]:
    """The row's effects in order, then its next state; the frame from row.modifies(). `before`:
    the context of the row the same input met first (a `continue` row), whose choices and
    responses carry over."""
    ctx = EffCtx(dict(g), x)
    if before is not None:
        ctx.choices_used = before.choices_used
        ctx.settled = dict(before.settled)
        ctx.own_parked = dict(before.own_parked)
        ctx.own_answered = before.own_answered
        ctx.bad = list(before.bad)
    for name in row.effects:
        apply_effect(name, ctx)
    if row.next_state is not None:
        ctx.g["st"] = lit(GSTATE[row.next_state], g["st"])
    allowed = allowed_vars(row.modifies())
    post: dict[str, z3.ExprRef] = {}
    for v in STATE_VARS:
        if v in allowed:
            post[v] = ctx.g[v]
        else:
            if ctx.g[v] is not g[v]:
                raise EncodingError(f"row {row.id}: {v} written outside the row's modifies")
            post[v] = g[v]
    return post, ctx


def state_is(g: Terms, states: frozenset[GroupState]) -> z3.BoolRef:
    return z3.Or([eq(g["st"], GSTATE[s]) for s in sorted(states, key=lambda s: s.name)])


def row_selector(row: Row, g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(state_is(g, row.states), eq(x["kind"], EVENT[row.event]), guard_formula(row.guard, g, x))


def paths(table: Table, g: Terms, x: Sym, events: Optional[Sequence[str]] = None) -> list[Path]:
    out: list[Path] = []
    for row in table.rows:
        if events is not None and row.event not in events:
            continue
        sel = row_selector(row, g, x)
        post, ctx = fire_row(row, g, x)
        written = allowed_vars(row.modifies())
        if row.reply.form == "continue":
            if row.next_state is None:
                raise EncodingError(f"row {row.id}: continue without a next state")
            for row2 in table.rows_for(row.next_state, row.event):
                sel2 = z3.And(sel, guard_formula(row2.guard, post, x))
                post2, ctx2 = fire_row(row2, post, x, ctx)
                if ctx.fresh_used and ctx2.fresh_used:
                    raise EncodingError(f"rows {row.id}, {row2.id}: two fresh ids in one input")
                out.append(Path((row, row2), sel2, post2, ctx.side + ctx2.side,
                                written | allowed_vars(row2.modifies()),
                                ctx.fresh_used or ctx2.fresh_used, [post],
                                ctx2.settled, ctx2.own_parked, ctx2.own_answered, ctx2.bad))
        else:
            out.append(Path((row,), sel, post, ctx.side, written, ctx.fresh_used, [],
                            ctx.settled, ctx.own_parked, ctx.own_answered, ctx.bad))
    return out


def successor(ps: Sequence[Path], g: Terms) -> dict[str, z3.ExprRef]:
    """Each variable's successor: an if-then-else over the paths that write it."""
    nxt: dict[str, z3.ExprRef] = {}
    for v in STATE_VARS:
        term = g[v]
        for p in reversed(ps):
            if v in p.written and p.post[v] is not g[v]:
                term = z3.If(p.sel, p.post[v], term)
        nxt[v] = term
    return nxt


def transition(ps: Sequence[Path], g: Terms, g2: Terms) -> z3.BoolRef:
    """Some path is taken (a missing row blocks the step), its side constraints hold, and the
    successor is as the paths say."""
    nxt = successor(ps, g)
    parts: list[z3.BoolRef] = [z3.Or([p.sel for p in ps])]
    for p in ps:
        if p.side:
            parts.append(z3.Implies(p.sel, z3.And(p.side)))
    parts.extend(g2[v] == nxt[v] for v in STATE_VARS)
    return z3.And(parts)


# -- the scheduler and the environment ------------------------------------------------------------

def urgent_guards(urgent: Sequence[tuple[str, Guard]], g: Terms, x: Sym) -> list[tuple[str, z3.BoolRef]]:
    return [(ev, guard_formula(gd, g, x)) for ev, gd in urgent]


def quiescent(urgent: Sequence[tuple[str, Guard]], g: Terms, x: Sym) -> z3.BoolRef:
    """No urgent completion is possible: the state a step() call ends in."""
    return z3.Not(z3.Or([f for _, f in urgent_guards(urgent, g, x)]))


MEMBER_TIMERS = (TimerEvent.MemberSessionExpire.value, TimerEvent.PendingMemberExpire.value)


def enabled(events: Sequence[str], urgent: Sequence[tuple[str, Guard]], g: Terms, x: Sym) -> z3.BoolRef:
    """Which input may come next: an urgent completion while one is possible (the first in
    URGENT order, as run_urgent), otherwise any request, or a timer while it is armed, a
    partition change or offset expiry as check/abstract.py schedules them (all faults on)."""
    ug = urgent_guards(urgent, g, x)
    urgent_names = {ev for ev, _ in urgent}
    forced: z3.BoolRef = z3.BoolVal(False)
    chain: Optional[z3.BoolRef] = None
    for ev, f in reversed(ug):
        chain = z3.If(f, eq(x["kind"], EVENT[ev]), chain) if chain is not None else z3.If(
            f, eq(x["kind"], EVENT[ev]), z3.BoolVal(False))
    any_urgent = z3.Or([f for _, f in ug]) if ug else z3.BoolVal(False)
    forced = chain if chain is not None else forced
    mem, pend = g["mem"], g["pend"]
    env: list[z3.BoolRef] = []
    for ev in events:
        if ev in urgent_names:
            continue
        k = eq(x["kind"], EVENT[ev])
        if ev == TimerEvent.DelayedJoinExpire.value:
            env.append(z3.And(k, g["jt"] > 0, z3.Not(g["jt_init"])))
        elif ev == TimerEvent.InitialDelayedJoinExpire.value:
            env.append(z3.And(k, g["jt"] > 0, g["jt_init"]))
        elif ev == TimerEvent.DelayedSyncExpire.value:
            env.append(z3.And(k, g["stn"] > 0))
        elif ev == TimerEvent.MemberSessionExpire.value:
            env.append(z3.And(k, z3.Not(x["mide"]), sel(mem, x["mid"]),
                              sel(g["sarm"], x["mid"])))
        elif ev == TimerEvent.PendingMemberExpire.value:
            env.append(z3.And(k, z3.Not(x["mide"]), sel(pend, x["mid"])))
        elif ev == TimerEvent.PartitionUnload.value:
            env.append(z3.And(k, g["owned"]))
        elif ev == TimerEvent.PartitionLoad.value:
            env.append(z3.And(k, z3.Not(g["owned"])))
        elif ev == TimerEvent.OffsetsExpire.value:
            env.append(z3.And(k, eq(g["st"], GSTATE[GroupState.Empty])))
        elif ev in (TimerEvent.DelayedJoinComplete.value, TimerEvent.DelayedSyncComplete.value):
            continue  # only as urgent completions
        else:
            env.append(k)  # a client request: any fields
    return z3.If(any_urgent, forced, z3.Or(env))


def bounded_input(x: Sym, n_ids: int) -> z3.BoolRef:
    """BMC: member ids, instance ids and choices range over 0..n_ids-1."""
    return z3.And([id_lt(x[v], n_ids) for v in ("mid", "iid", "fresh", *CHOICE_VARS)]
                  + [enum_ranges(x)])

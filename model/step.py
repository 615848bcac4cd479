"""Step semantics: interpret the table. No behaviour of any group state is coded here.

`step` finds the one row whose guard holds for (state, event), applies its effects in order,
checks that only the declared fields changed, sets the next state and builds the reply; then it
fires the table's urgent events (join/sync completion) while their guards hold. Kafka's arbitrary
choices (hash-map order) come from a `Chooser`; `step_all` enumerates every choice.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Optional, Sequence

from model.dsl import (
    ATOMS,
    EFFECTS,
    REPLY_FORMS,
    Chooser,
    Ctx,
    Mode,
    Output,
    Row,
    SpecDefect,
    Table,
    Guard,
)
from model.messages import LeaveGroupRequest, LeaveGroupResponse, MemberLeaveResult, Response
from model.state import Group, Input, Settings
from model.vocabulary import Error

MAX_URGENT_STEPS = 16


@dataclass(frozen=True, slots=True)
class Transition:
    """What one input did to one group: the rows fired, in order, and every response made."""

    before: Group
    after: Group
    inp: Input
    rows: tuple[str, ...]
    outputs: tuple[Output, ...]
    reply: Optional[Response]  # the input's own response when it is answered at once
    choices: tuple[int, ...] = ()


class FirstChoice:
    """Always the first option: Kafka's iteration order taken as member insertion order."""

    def choose(self, what: str, options: int) -> int:
        return 0


class ReplayChooser:
    """Follows a prefix of choices, then takes 0, recording how many options each point had."""

    def __init__(self, prefix: Sequence[int]) -> None:
        self.prefix = tuple(prefix)
        self.made: list[int] = []
        self.counts: list[int] = []

    def choose(self, what: str, options: int) -> int:
        i = len(self.made)
        pick = self.prefix[i] if i < len(self.prefix) else 0
        self.made.append(pick)
        self.counts.append(options)
        return pick


_FIELDS = tuple(f.name for f in fields(Group))


def matching_rows(table: Table, group: Group, inp: Input, settings: Settings) -> list[Row]:
    return [r for r in table.rows_for(group.state, inp.kind)
            if r.guard.holds(group, inp, settings)]


def _matching(candidates: tuple[Row, ...], group: Group, inp: Input, settings: Settings) -> list[Row]:
    """The rows whose guard holds; each atom is evaluated at most once."""
    memo: dict[str, bool] = {}
    out = []
    for r in candidates:
        for lit in r.guard.literals:
            v = memo.get(lit.atom)
            if v is None:
                v = memo[lit.atom] = ATOMS[lit.atom].fn(group, inp, settings)
            if v != lit.positive:
                break
        else:
            out.append(r)
    return out


def fire(table: Table, ctx: Ctx) -> tuple[Row, Optional[Response]]:
    """Apply the single matching row to ctx.group; return it and its reply (None if parked)."""
    candidates = table.rows_for(ctx.group.state, ctx.inp.kind)
    rows = _matching(candidates, ctx.group, ctx.inp, ctx.settings)
    if len(rows) != 1:
        raise SpecDefect(ctx.group.state, ctx.inp.kind,
                         [r.id for r in (rows or list(candidates))],
                         "no row matches" if not rows else "more than one row matches")
    row = rows[0]
    before = ctx.group
    ctx.scratch.clear()
    for name in row.effects:
        EFFECTS[name].fn(ctx)
    allowed = row.modifies()
    for f in _FIELDS:
        if f not in allowed and f != "group_id" and getattr(before, f) != getattr(ctx.group, f):
            raise SpecDefect(before.state, ctx.inp.kind, [row.id],
                             f"effects changed undeclared field {f!r}")
    if row.next_state is not None:
        ctx.group = replace(ctx.group, state=row.next_state)
    reply: Optional[Response] = None
    if row.reply.form not in ("park", "none", "continue"):
        reply = REPLY_FORMS[row.reply.form](ctx, row.reply.error)
    return row, reply


def run_urgent(table: Table, urgent: Sequence[tuple[str, Guard]], ctx: Ctx, fired: list[str]) -> None:
    """Fire urgent events while one of them is possible (purgatory checkAndComplete)."""
    for _ in range(MAX_URGENT_STEPS):
        for event, guard in urgent:
            probe = Input(kind=event)
            if guard.holds(ctx.group, probe, ctx.settings):
                saved, before = ctx.inp, ctx.group
                ctx.inp = probe
                row, _ = fire(table, ctx)
                ctx.inp = saved
                fired.append(row.id)
                if ctx.group == before:
                    return  # the completion changed nothing (e.g. a stale operation): done
                break
        else:
            return
    raise SpecDefect(ctx.group.state, "urgent", fired[-MAX_URGENT_STEPS:], "urgent events loop")


def step(table: Table, urgent: Sequence[tuple[str, Guard]], group: Group, inp: Input,
         settings: Settings, now_ms: int, mode: Mode, chooser: Optional[Chooser] = None) -> Transition:
    """One input (a request, a LeaveGroup batch, or a timer) applied to one group."""
    ch: Chooser = chooser if chooser is not None else FirstChoice()
    ctx = Ctx(group=group, inp=inp, settings=settings, now_ms=now_ms, mode=mode, chooser=ch)
    fired: list[str] = []
    reply: Optional[Response]
    if inp.kind == "LeaveGroup" and isinstance(inp.request, LeaveGroupRequest):
        reply = _leave_batch(table, urgent, ctx, inp.request, fired)
    else:
        reply = None
        for _ in range(2):  # at most one `continue` (group creation) per input
            row, reply = fire(table, ctx)
            fired.append(row.id)
            if row.reply.form != "continue":
                break
        run_urgent(table, urgent, ctx, fired)
    made = tuple(ch.made) if isinstance(ch, ReplayChooser) else ()
    return Transition(group, ctx.group, inp, tuple(fired), tuple(ctx.outputs), reply, made)


def _leave_batch(table: Table, urgent: Sequence[tuple[str, Guard]], ctx: Ctx,
                 request: LeaveGroupRequest, fired: list[str]) -> Response:
    """GC:651: one row per leaving member, in order; each removal is followed by the join check."""
    results: list[MemberLeaveResult] = []
    outer = ctx.inp
    for item in request.members:
        ctx.inp = replace(outer, member_id=item.member_id, instance_id=item.group_instance_id)
        row, reply = fire(table, ctx)
        fired.append(row.id)
        assert isinstance(reply, LeaveGroupResponse)
        if row.reply.form == "top-level":
            ctx.inp = outer
            return reply
        results.extend(reply.members)
        run_urgent(table, urgent, ctx, fired)
    ctx.inp = outer
    return LeaveGroupResponse(Error.NONE, tuple(results))


def step_all(table: Table, urgent: Sequence[tuple[str, Guard]], group: Group, inp: Input,
             settings: Settings, now_ms: int, mode: Mode) -> list[Transition]:
    """Every outcome of the input, one per resolution of the model's nondeterministic choices."""
    out: list[Transition] = []
    stack: list[tuple[int, ...]] = [()]
    while stack:
        prefix = stack.pop()
        chooser = ReplayChooser(prefix)
        out.append(step(table, urgent, group, inp, settings, now_ms, mode, chooser))
        for i in range(len(prefix), len(chooser.made)):
            for alt in range(1, chooser.counts[i]):
                stack.append(tuple(chooser.made[:i]) + (alt,))
    return out


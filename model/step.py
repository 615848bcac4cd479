"""Step semantics: interpret the table. No behaviour of any group state is coded here.

`step` finds the one row whose guard holds for (state, event), applies its effects in order,
checks that only the declared fields changed, sets the next state and builds the reply; then it
fires the table's urgent events (join/sync completion) while their guards hold. Kafka's arbitrary
choices (hash-map order) come from a `Chooser`; `step_all` enumerates every choice.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Callable, Final, Optional, Sequence, Union

from model.dsl import (
    ATOMS,
    EFFECTS,
    REPLY_FORMS,
    AtomFn,
    Chooser,
    Ctx,
    Guard,
    Mode,
    Output,
    Registry,
    ReplyFn,
    Row,
    SpecDefect,
    Table,
)
from model.messages import LeaveGroupRequest, LeaveGroupResponse, MemberLeaveResult, Response
from model.state import Group, Input, Settings, evolve, evolve_group, record_builder
from model.vocabulary import Error, GroupState

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


_new_transition: Final = record_builder(Transition)


class FirstChoice:
    """Always the first option: Kafka's iteration order taken as member insertion order."""

    def choose(self, what: str, options: int) -> int:
        return 0


_FIRST_CHOICE: Final = FirstChoice()  # stateless


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
_NO_ANSWER: Final = ("park", "none", "continue")


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


# -- the compiled form of a table ---------------------------------------------------------------
#
# `fire` runs once per input and per urgent event, so the table is compiled once per table (and
# rebuilt when an atom, effect or reply form is redefined): per (state, event) a decision tree
# over the atoms that `_matching` would evaluate, in the order it would evaluate them, ending in
# the rows that match; per row its effect functions, reply function and the fields its effects
# must leave alone. Same atoms called in the same order, same rows, same checks as the
# interpreted form above (which stays the fallback for an atom that returns a non-bool).


class _Plan:
    """One row, ready to apply."""

    __slots__ = ("row", "effects", "frame", "next_state", "reply", "form", "error")

    def __init__(self, row: Row) -> None:
        self.row = row
        self.effects = tuple(EFFECTS[name].fn for name in row.effects)
        allowed = row.modifies()
        # The fields the row's effects must not change (group_id is never compared).
        self.frame = _fields_getter(tuple(f for f in _FIELDS if f not in allowed and f != "group_id"))
        self.next_state = row.next_state
        self.form = row.reply.form
        self.error = row.reply.error
        self.reply: Optional[ReplyFn] = (
            None if row.reply.form in _NO_ANSWER else REPLY_FORMS[row.reply.form])


def _fields_getter(names: tuple[str, ...]) -> Callable[[Group], object]:
    if not names:
        return lambda g: ()
    if len(names) == 1:
        (name,) = names
        return lambda g: (getattr(g, name),)
    return attrgetter(*names)


class _Branch:
    """Evaluate `atom`; continue with `if_true` / `if_false`."""

    __slots__ = ("fn", "if_true", "if_false")

    def __init__(self, fn: AtomFn, if_true: "_Node", if_false: "_Node") -> None:
        self.fn = fn
        self.if_true = if_true
        self.if_false = if_false


_Node = Union[_Branch, tuple[_Plan, ...]]


def _decision_tree(rows: tuple[Row, ...], plans: dict[str, _Plan], known: dict[str, bool]) -> _Node:
    """What `_matching` does given the atom values in `known`: ask the next atom it would
    evaluate, or (all needed values known) the rows it would return."""
    matched: list[_Plan] = []
    for r in rows:
        for lit in r.guard.literals:
            v = known.get(lit.atom)
            if v is None:
                a = lit.atom
                return _Branch(ATOMS[a].fn, _decision_tree(rows, plans, {**known, a: True}),
                               _decision_tree(rows, plans, {**known, a: False}))
            if v != lit.positive:
                break
        else:
            matched.append(plans[r.id])
    return tuple(matched)


class _Compiled:
    __slots__ = ("table", "version", "trees", "candidates")

    def __init__(self, table: Table) -> None:
        self.table = table
        self.version = Registry.changes
        plans = {r.id: _Plan(r) for r in table.rows}
        index = table._index()
        self.candidates = index
        # keyed by (state name, event): an enum's own hash is a Python-level call
        self.trees: dict[tuple[str, str], _Node] = {
            (state._name_, event): _decision_tree(rows, plans, {})
            for (state, event), rows in index.items()}


_COMPILED: dict[int, _Compiled] = {}


_LAST: list[_Compiled] = []  # the table used last (almost always the only one)


def _compiled(table: Table) -> _Compiled:
    if _LAST:
        c = _LAST[0]
        if c.table is table and c.version == Registry.changes:
            return c
    found = _COMPILED.get(id(table))
    if found is None or found.table is not table or found.version != Registry.changes:
        found = _COMPILED[id(table)] = _Compiled(table)
    _LAST[:] = [found]
    return found


def _match(c: _Compiled, group: Group, inp: Input, settings: Settings) -> tuple[_Plan, ...]:
    node = c.trees.get((group.state._name_, inp.kind), ())
    while type(node) is _Branch:
        v = node.fn(group, inp, settings)
        if v is True:
            node = node.if_true
        elif v is False:
            node = node.if_false
        else:  # not a bool: let the interpreted form decide
            rows = _matching(c.candidates[(group.state, inp.kind)], group, inp, settings)
            return tuple(_Plan(r) for r in rows)
    assert isinstance(node, tuple)
    return node


def fire(table: Table, ctx: Ctx) -> tuple[Row, Optional[Response]]:
    """Apply the single matching row to ctx.group; return it and its reply (None if parked)."""
    c = _compiled(table)
    before = ctx.group
    plans = _match(c, before, ctx.inp, ctx.settings)
    if len(plans) != 1:
        candidates = c.candidates.get((before.state, ctx.inp.kind), ())
        raise SpecDefect(before.state, ctx.inp.kind,
                         [p.row.id for p in plans] or [r.id for r in candidates],
                         "no row matches" if not plans else "more than one row matches")
    plan = plans[0]
    ctx.scratch.clear()
    for fn in plan.effects:
        fn(ctx)
    after = ctx.group
    if after is not before and plan.frame(before) != plan.frame(after):
        for f in _FIELDS:
            if (f not in plan.row.modifies() and f != "group_id"
                    and getattr(before, f) != getattr(after, f)):
                raise SpecDefect(before.state, ctx.inp.kind, [plan.row.id],
                                 f"effects changed undeclared field {f!r}")
    if plan.next_state is not None:
        ctx.group = evolve_group(after, state=plan.next_state)
    reply: Optional[Response] = None
    if plan.reply is not None:
        reply = plan.reply(ctx, plan.error)
    return plan.row, reply


_URGENT_COMPILED: dict[int, tuple[Sequence[tuple[str, Guard]], int, tuple[
    tuple[Input, tuple[tuple[AtomFn, bool], ...]], ...]]] = {}


def _urgent_probes(urgent: Sequence[tuple[str, Guard]]) -> tuple[
        tuple[Input, tuple[tuple[AtomFn, bool], ...]], ...]:
    """Each urgent event's probe input and its guard as (atom function, polarity) pairs."""
    cached = _URGENT_COMPILED.get(id(urgent))
    if cached is None or cached[0] is not urgent or cached[1] != Registry.changes:
        probes = tuple((Input(kind=event), tuple((ATOMS[lit.atom].fn, lit.positive)
                                                 for lit in guard.literals))
                       for event, guard in urgent)
        cached = _URGENT_COMPILED[id(urgent)] = (urgent, Registry.changes, probes)
    return cached[2]


def run_urgent(table: Table, urgent: Sequence[tuple[str, Guard]], ctx: Ctx, fired: list[str]) -> None:
    """Fire urgent events while one of them is possible (purgatory checkAndComplete)."""
    probes = _urgent_probes(urgent)
    for _ in range(MAX_URGENT_STEPS):
        for probe, literals in probes:
            group, settings = ctx.group, ctx.settings
            for fn, positive in literals:
                if fn(group, probe, settings) != positive:
                    break
            else:
                saved, before = ctx.inp, group
                ctx.inp = probe
                row, _ = fire(table, ctx)
                ctx.inp = saved
                fired.append(row.id)
                if ctx.group is before or ctx.group == before:
                    return  # the completion changed nothing (e.g. a stale operation): done
                break
        else:
            return
    raise SpecDefect(ctx.group.state, "urgent", fired[-MAX_URGENT_STEPS:], "urgent events loop")


def step(table: Table, urgent: Sequence[tuple[str, Guard]], group: Group, inp: Input,
         settings: Settings, now_ms: int, mode: Mode, chooser: Optional[Chooser] = None) -> Transition:
    """One input (a request, a LeaveGroup batch, or a timer) applied to one group."""
    ch: Chooser = chooser if chooser is not None else _FIRST_CHOICE
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
    return _new_transition(group, ctx.group, inp, tuple(fired), tuple(ctx.outputs), reply, made)


def _leave_batch(table: Table, urgent: Sequence[tuple[str, Guard]], ctx: Ctx,
                 request: LeaveGroupRequest, fired: list[str]) -> Response:
    """GC:651: one row per leaving member, in order; each removal is followed by the join check."""
    results: list[MemberLeaveResult] = []
    outer = ctx.inp
    for item in request.members:
        ctx.inp = evolve(outer, member_id=item.member_id, instance_id=item.group_instance_id)
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


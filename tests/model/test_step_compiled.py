"""The step function's compiled table (model/step.py) against its interpreted definition, and the
frame check ("effects change only what they declare") with its negative controls."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import model.step as step_module
from check.abstract import Bounds
from model.dsl import ATOMS, EFFECTS, NO_REPLY, Atom, Ctx, Effect, G, Row, SpecDefect, Table
from check.explore import explore
from model.modes import AbstractMode
from model.state import Group, Input, Member, PersistedGroup, Settings, evolve
from model.step import FirstChoice, fire
from model.table import CLASSIC_TABLE, URGENT
from model.vocabulary import GroupState

SETTINGS = Settings(6000, 1800000, 10, 3000, 300000)


def _ctx(group: Group, kind: str = "Heartbeat") -> Ctx:
    return Ctx(group=group, inp=Input(kind), settings=SETTINGS, now_ms=0, mode=AbstractMode(),
               chooser=FirstChoice())


def _one_row_table(effect: str) -> Table:
    row = Row(id="Stable/Heartbeat/test", states=frozenset({GroupState.Stable}), event="Heartbeat",
              guard=G("true"), reply=NO_REPLY, next_state=None, effects=(effect,), cite="test")
    return Table(name="frame-test", rows=(row,), events=("Heartbeat",))


def test_compiled_matching_asks_the_same_atoms_and_finds_the_same_rows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every lookup of a small exploration is done both ways: same atoms evaluated in the same
    order, same rows."""
    calls: list[str] = []

    def recording(a: Atom) -> Atom:
        def fn(g: Group, x: Input, s: Settings) -> bool:
            calls.append(a.name)
            return a.fn(g, x, s)
        return dataclasses.replace(a, fn=fn)

    for name, a in list(ATOMS.items()):
        monkeypatch.setitem(ATOMS, name, recording(a))
    compiled_match = step_module._match
    checked = [0]

    def both(c: Any, group: Group, inp: Input, settings: Settings) -> Any:
        calls.clear()
        plans = compiled_match(c, group, inp, settings)
        compiled_calls = list(calls)
        calls.clear()
        rows = step_module._matching(CLASSIC_TABLE.rows_for(group.state, inp.kind), group, inp, settings)
        assert compiled_calls == calls, (group.state, inp.kind)
        assert [p.row.id for p in plans] == [r.id for r in rows]
        checked[0] += 1
        return plans

    monkeypatch.setattr(step_module, "_match", both)
    r = explore(CLASSIC_TABLE, URGENT, Bounds(dynamic=2, max_generation=1,
                                              faults=frozenset({"session", "rebalance"})),
                symmetry=True, progress=None)
    assert (r.states, r.edges) == (938, 3175) and not r.violations
    assert checked[0] > 3000


def test_an_effect_writing_outside_its_modifies_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control of the frame check: bump-generation declared as modifying only offsets."""
    table = _one_row_table("bump-generation")
    g = Group("g", state=GroupState.Stable, generation=3)
    ctx = _ctx(g)
    fire(table, ctx)  # honest declaration: allowed (and the table is compiled now)
    assert ctx.group.generation == 4
    lying = dataclasses.replace(EFFECTS["bump-generation"], modifies=frozenset({"offsets"}))
    monkeypatch.setitem(EFFECTS, "bump-generation", lying)
    with pytest.raises(SpecDefect, match="undeclared field 'generation'"):
        fire(table, _ctx(g))


def test_a_changed_member_tuple_is_refused_and_an_equal_copy_is_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    member = Member("m", None, "c", "consumer", (), 10000, 20000)
    g = Group("g", state=GroupState.Stable, members=(member,))

    def rebuild(ctx: Ctx) -> None:  # an equal, not identical, member tuple: not a change
        ctx.group = evolve(ctx.group, members=tuple(evolve(m) for m in ctx.group.members),
                           offsets=())

    def drop(ctx: Ctx) -> None:
        ctx.group = evolve(ctx.group, members=(), offsets=())

    for fn, refused in ((rebuild, False), (drop, True)):
        monkeypatch.setitem(EFFECTS, "store-offsets",
                            Effect("store-offsets", fn, frozenset({"offsets"}), False, "test"))
        ctx = _ctx(g)
        if refused:
            with pytest.raises(SpecDefect, match="undeclared field 'members'"):
                fire(_one_row_table("store-offsets"), ctx)
        else:
            fire(_one_row_table("store-offsets"), ctx)
            assert ctx.group == g


@pytest.mark.parametrize("record", [
    Group("g", state=GroupState.Stable, generation=2, leader="m"),
    Member("m", "i", "c", "consumer", (), 10000, 20000, session_deadline=5),
    PersistedGroup(GroupState.Empty, 1, None, None, None, ()),
    Input("JoinGroup", member_id="m", request_id=7),
])
def test_evolve_is_dataclasses_replace(record: Any) -> None:
    names = [f.name for f in dataclasses.fields(record)]
    assert evolve(record) == dataclasses.replace(record)
    for name in names:
        value = getattr(dataclasses.replace(record), name)
        assert evolve(record, **{name: value}) == dataclasses.replace(record, **{name: value})
    changed = {names[1]: None}
    assert evolve(record, **changed) == dataclasses.replace(record, **changed)
    with pytest.raises(TypeError):
        evolve(record, no_such_field=1)


def test_record_builder_is_the_constructor() -> None:
    from model.dsl import Output
    from model.state import record_builder
    from model.step import Transition
    g = Group("g")
    cases: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = [
        (Input, ("JoinGroup",), {"request_id": 3}),
        (Input, ("MemberSessionExpire", None, "m"), {}),
        (Output, (7, "response"), {}),
        (Transition, (g, g, Input("x"), ("r",), (), None), {}),
        (Group, ("g", GroupState.Empty, 3), {"leader": "m"}),
    ]
    for cls, args, kwargs in cases:
        built = record_builder(cls)(*args, **kwargs)
        assert built == cls(*args, **kwargs) and type(built) is cls
    with pytest.raises(TypeError):
        record_builder(Ctx)  # default factories: not handled

"""The native engine implements everything the table and model/invariants.py use, under the same
names, and refuses a table that names something it lacks (the way tests/proofs checks the Z3
encoding)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from check.abstract import FAULTS, Bounds
from model.dsl import ATOMS, EFFECTS, GROUP_FIELDS, REPLY_FORMS, Guard, Table
from check.explore import PATH_PROPERTIES
from model.invariants import INVARIANTS
from check.mutants import MUTANTS
from check.native import implemented, make_engine
from model.table import CLASSIC_TABLE, EVENTS, URGENT

SPECIAL_FORMS = {"park", "none", "continue"}


def _used(table: Table) -> dict[str, set[str]]:
    atoms = {lit.atom for r in table.rows for lit in r.guard.literals}
    atoms |= {lit.atom for _, g in URGENT for lit in g.literals}
    return {"atoms": atoms, "effects": {e for r in table.rows for e in r.effects},
            "reply_forms": {r.reply.form for r in table.rows} - SPECIAL_FORMS}


def test_engine_implements_every_atom_effect_form_and_invariant() -> None:
    have = implemented()
    tables = [CLASSIC_TABLE] + [t for t, _, _ in MUTANTS.values()]
    for table in tables:
        for kind, names in _used(table).items():
            missing = sorted(names - set(have[kind]))
            assert missing == [], f"{table.name}: the engine lacks {kind} {missing}"
    # everything the registries define, not only what the table uses today
    assert sorted(set(ATOMS) - set(have["atoms"])) == []
    assert sorted(set(EFFECTS) - set(have["effects"])) == []
    assert sorted(set(REPLY_FORMS) - set(have["reply_forms"])) == []
    assert sorted(set(INVARIANTS) - set(have["invariants"])) == []
    assert sorted(set(PATH_PROPERTIES) - set(have["path_properties"])) == []
    assert sorted(set(FAULTS) - set(have["faults"])) == []
    assert sorted(set(EVENTS) - set(have["events"])) == []
    assert sorted(set(GROUP_FIELDS) ^ set(have["group_fields"])) == []
    # and nothing the engine has is unknown to Python (same names on both sides)
    assert sorted(set(have["atoms"]) - set(ATOMS)) == []
    assert sorted(set(have["effects"]) - set(EFFECTS)) == []
    assert sorted(set(have["reply_forms"]) - set(REPLY_FORMS)) == []
    assert sorted(set(have["invariants"]) - set(INVARIANTS)) == []


def _with_row_change(**changes: object) -> Table:
    rows = list(CLASSIC_TABLE.rows)
    rows[0] = replace(rows[0], **changes)  # type: ignore[arg-type]
    return Table(name="broken", rows=tuple(rows), events=CLASSIC_TABLE.events)


@pytest.mark.parametrize("changes,named", [
    (dict(guard=Guard.parse("owned & moon-is-full")), "moon-is-full"),
    (dict(effects=("teleport-member",)), "teleport-member"),
    (dict(event="Telepathy"), "Telepathy"),
])
def test_a_table_naming_what_the_engine_lacks_is_refused_naming_it(
        changes: dict[str, object], named: str) -> None:
    table = _with_row_change(**changes)
    with pytest.raises(ValueError, match=named):
        if "effects" in changes:  # an effect Python does not define either: declare its fields
            from model.dsl import Effect
            EFFECTS["teleport-member"] = Effect("teleport-member", lambda ctx: None,
                                                frozenset({"members"}), False, "")
            try:
                make_engine(table, URGENT, Bounds())
            finally:
                del EFFECTS["teleport-member"]
        else:
            make_engine(table, URGENT, Bounds())


def test_an_unknown_reply_form_and_invariant_are_refused() -> None:
    from model.dsl import Reply
    from model.vocabulary import Error
    with pytest.raises(ValueError, match="sing-a-song"):
        make_engine(_with_row_change(reply=Reply("sing-a-song", Error.NONE)), URGENT, Bounds())
    engine = make_engine(CLASSIC_TABLE, URGENT, Bounds(dynamic=1, max_generation=0))
    with pytest.raises(ValueError, match="no-such-invariant"):
        engine.explore(True, ["no-such-invariant"], False, 10, True, False, False, [], [])
    with pytest.raises(ValueError, match="no-such-path-property"):
        engine.explore(True, [], True, 10, True, False, False, ["no-such-path-property"], [])


def test_a_missing_native_invariant_falls_back_to_python_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import check.native as native
    from model.invariants import Invariant
    monkeypatch.setitem(INVARIANTS, "never-violated", Invariant(
        "never-violated", "state", lambda g: None, "a property only Python knows"))
    note = io.StringIO()
    assert native.choose_engine("native", None, note) == "python"
    assert "never-violated" in note.getvalue()
    assert native.choose_engine("native", frozenset({"leader-is-member"}), note) == "native"
    assert native.choose_engine("python", None, note) == "python"

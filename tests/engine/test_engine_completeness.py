"""The native engine implements everything the model's table and model/invariants.py use, under
the same names (the way tests/proofs checks the Z3 encoding); what a user registers on top is
called back into Python (tests/engine/test_callbacks.py), and a table naming what nothing
defines is refused, naming it."""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

import pytest

from check.abstract import FAULTS, Bounds
from model.dsl import ATOMS, EFFECTS, GROUP_FIELDS, REPLY_FORMS, Guard, Table
from check.explore import PATH_PROPERTIES
from model.invariants import INVARIANTS
from check.mutants import MUTANTS
from check.callbacks import HOME
from check.native import NativeCannotRun, implemented, make_engine
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
    # everything the model's registries define, not only what the table uses today (what other
    # modules register, e.g. check/historical.py's own effects, goes through Python)
    def model_own(kind: str, registry: Mapping[str, object], fn: str = "fn") -> set[str]:
        return {n for n, d in registry.items()
                if getattr(getattr(d, fn, d), "__module__", None) == HOME[kind]}
    assert sorted(model_own("atoms", ATOMS) - set(have["atoms"])) == []
    assert sorted(model_own("effects", EFFECTS) - set(have["effects"])) == []
    assert sorted(model_own("reply_forms", REPLY_FORMS) - set(have["reply_forms"])) == []
    assert sorted(model_own("invariants", INVARIANTS, "check") - set(have["invariants"])) == []
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
])
def test_a_table_naming_what_nothing_defines_is_refused_naming_it(
        changes: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        make_engine(_with_row_change(**changes), URGENT, Bounds())


def test_an_event_the_engine_lacks_cannot_run_natively() -> None:
    with pytest.raises(NativeCannotRun, match="Telepathy"):
        make_engine(_with_row_change(event="Telepathy"), URGENT, Bounds())


def test_an_unknown_reply_form_and_invariant_are_refused() -> None:
    from model.dsl import Reply
    from model.vocabulary import Error
    with pytest.raises(ValueError, match="sing-a-song"):
        make_engine(_with_row_change(reply=Reply("sing-a-song", Error.NONE)), URGENT, Bounds())
    engine, _ = make_engine(CLASSIC_TABLE, URGENT, Bounds(dynamic=1, max_generation=0))
    with pytest.raises(ValueError, match="no-such-invariant"):
        engine.explore(True, ["no-such-invariant"], False, 10, True, False, False, [], [])
    with pytest.raises(ValueError, match="no-such-path-property"):
        engine.explore(True, [], True, 10, True, False, False, ["no-such-path-property"], [])


def test_an_invariant_only_python_has_keeps_the_native_engine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import check.native as native
    from model.invariants import Invariant
    monkeypatch.setitem(INVARIANTS, "never-violated", Invariant(
        "never-violated", "state", lambda g: None, "a property only Python knows"))
    note = io.StringIO()
    assert native.choose_engine("native", None, note) == "native"
    assert note.getvalue() == ""
    assert native.engine_header("native", CLASSIC_TABLE, URGENT) == \
        "native engine, 1 invariant through Python"
    assert native.choose_engine("python", None, note) == "python"


def test_bounds_whose_rosters_outgrow_the_engine_cannot_run_natively() -> None:
    # a client's roster holds at most 22 member ids inline (engine/src/model.rs ROSTER_IDS): 7
    # clients with up to 3 ids each could be listed 22 at once, 8 of them 25
    make_engine(CLASSIC_TABLE, URGENT, Bounds(dynamic=7, max_ids_per_client=3))
    with pytest.raises(NativeCannotRun, match="at most 22 member ids in a client's roster"):
        make_engine(CLASSIC_TABLE, URGENT, Bounds(dynamic=8, max_ids_per_client=3))

"""Static facts about the table, derived from the table itself (parametrized, not hand-named)."""

from __future__ import annotations

import itertools

import pytest

from model.dsl import ATOMS, EFFECTS, REPLY_FORMS, SpecDefect
from model.state import Group, Input
from model.table import ALL, CLASSIC_TABLE, EVENTS
from model.step import fire
from model.vocabulary import GroupState


@pytest.mark.parametrize("state,event", list(itertools.product(ALL, EVENTS)),
                         ids=lambda v: v.name if isinstance(v, GroupState) else str(v))
def test_every_state_and_event_has_rows(state: GroupState, event: str) -> None:
    assert CLASSIC_TABLE.rows_for(state, event), f"no rows for {state.name} x {event}"


def test_row_ids_are_unique_and_follow_the_naming_scheme() -> None:
    ids = [r.id for r in CLASSIC_TABLE.rows]
    assert len(ids) == len(set(ids))
    for r in CLASSIC_TABLE.rows:
        state, event, label = r.id.split("/")
        assert GroupState[state] in r.states and event == r.event and label


def test_every_atom_effect_and_reply_form_is_used_and_documented() -> None:
    used_atoms = {lit.atom for r in CLASSIC_TABLE.rows for lit in r.guard.literals}
    used_effects = {e for r in CLASSIC_TABLE.rows for e in r.effects}
    used_forms = {r.reply.form for r in CLASSIC_TABLE.rows}
    # the model's own definitions (check/historical.py and the tests register more, for their
    # own tables)
    atoms = {n for n, a in ATOMS.items() if a.fn.__module__ == "model.atoms"}
    effects = {n for n, e in EFFECTS.items() if e.fn.__module__ == "model.effects"}
    forms = {n for n, f in REPLY_FORMS.items() if f.__module__ == "model.replies"}
    # `member-known` is defined for readers and the proofs; guards use `member-valid`.
    assert atoms - {"member-known"} == used_atoms, atoms ^ used_atoms
    assert effects == used_effects, effects ^ used_effects
    assert forms - {"ok"} <= used_forms
    for a in ATOMS.values():
        assert a.doc, a.name
    for e in EFFECTS.values():
        assert e.doc, e.name


def test_rows_cite_kafka_or_say_why_they_cannot_fire() -> None:
    for r in CLASSIC_TABLE.rows:
        assert r.cite or r.unreachable, r.id


def test_no_row_is_a_spec_defect_detected_by_step() -> None:
    """The negative control of step's own checks: an input with no row raises SpecDefect."""
    from model.modes import AbstractMode
    from model.step import FirstChoice
    from model.dsl import Ctx
    from model.state import Settings
    s = Settings(6000, 1800000, 10, 3000, 300000)
    ctx = Ctx(group=Group("g", state=GroupState.Stable), inp=Input("NoSuchEvent"), settings=s,
              now_ms=0, mode=AbstractMode(), chooser=FirstChoice())
    with pytest.raises(SpecDefect) as e:
        fire(CLASSIC_TABLE, ctx)
    assert "Stable" in str(e.value) and "NoSuchEvent" in str(e.value)

"""The encoding covers the table's whole language, and its frame comes from the declarations."""

from __future__ import annotations

from dataclasses import replace

import pytest
import z3

from model.dsl import EFFECTS, Effect, ATOMS, Guard, Literal, Table
from model.invariants import INVARIANTS
from model.table import CLASSIC_TABLE
from proofs.atoms import ATOM_ENCODINGS
from proofs.effects import EFFECT_ENCODINGS, EncodingError, apply_effect, EffCtx
from proofs.encode import guard_formula, paths
from proofs.invariants import NOT_ENCODED, STATE_INVARIANTS, STEP_INVARIANTS
from proofs.symbolic import make_input, make_state


# The model's own atoms and effects (check/historical.py and the tests register more for their
# tables; the Z3 encoding covers the model's).
MODEL_ATOMS = sorted(n for n, a in ATOMS.items() if a.fn.__module__ == "model.atoms")
MODEL_EFFECTS = sorted(n for n, e in EFFECTS.items() if e.fn.__module__ == "model.effects")


@pytest.mark.parametrize("name", MODEL_ATOMS)
def test_every_atom_is_encoded(name: str) -> None:
    g, x = make_state("t"), make_input("t")
    assert isinstance(guard_formula(Guard((Literal(name, True),)), g.v, x), z3.BoolRef)


@pytest.mark.parametrize("name", MODEL_EFFECTS)
def test_every_effect_is_encoded(name: str) -> None:
    assert name in EFFECT_ENCODINGS


def test_no_encoding_for_unknown_names() -> None:
    assert set(ATOM_ENCODINGS) == set(MODEL_ATOMS)
    assert set(EFFECT_ENCODINGS) == set(MODEL_EFFECTS)


def test_every_named_invariant_is_encoded_or_reported() -> None:
    for name, inv in INVARIANTS.items():
        where = STATE_INVARIANTS if inv.kind == "state" else STEP_INVARIANTS
        assert name in where, name
    assert NOT_ENCODED == {}


def test_missing_atom_encoding_fails() -> None:
    g, x = make_state("t"), make_input("t")
    with pytest.raises(EncodingError, match="no Z3 encoding"):
        guard_formula(Guard((Literal("no-such-atom", True),)), g.v, x)


def test_effect_writing_outside_its_modifies_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # A declaration that lies (bump-generation claiming to modify only `offsets`) is caught.
    lying = replace(EFFECTS["bump-generation"], modifies=frozenset({"offsets"}))
    monkeypatch.setitem(EFFECTS, "bump-generation", lying)
    g, x = make_state("t"), make_input("t")
    with pytest.raises(EncodingError, match="outside its declared modifies"):
        apply_effect("bump-generation", EffCtx(dict(g.v), x))


def test_frame_is_generated_from_modifies() -> None:
    g, x = make_state("t"), make_input("t")
    for p in paths(CLASSIC_TABLE, g.v, x):
        for v, term in p.post.items():
            if v not in p.written:
                assert term is g.v[v], (p.rows[0].id, v)


def test_unencoded_effect_in_a_table_fails() -> None:
    row = replace(CLASSIC_TABLE.rows[0], effects=("no-such-effect",))
    table = Table("broken", (row,), CLASSIC_TABLE.events)
    g, x = make_state("t"), make_input("t")
    with pytest.raises(EncodingError, match="no Z3 encoding"):
        paths(table, g.v, x)
    assert isinstance(Effect, type)

"""render/site_facts.json (the site's coverage and proof facts) matches the table.

Fast: its fingerprint is the table's (rows, urgent events, invariants, the default plan). Slow: the
facts recomputed now (the default plan natively, the induction proofs) equal the committed ones.
Regenerate with `groupspec render --update-facts`.
"""

from __future__ import annotations

from check.mutants import MUTANTS
from model.table import CLASSIC_TABLE, URGENT
from render.site_facts import compute, fingerprint, load


def test_committed_facts_are_for_this_table() -> None:
    facts = load()
    assert facts.fingerprint == fingerprint(CLASSIC_TABLE, URGENT), (
        "render/site_facts.json drifted from the table: run groupspec render --update-facts")
    rows = {r.id for r in CLASSIC_TABLE.rows}
    assert set(facts.fired_by) | set(facts.proved_unreachable) == rows
    assert not set(facts.fired_by) & set(facts.proved_unreachable)
    assert set(facts.proved_unreachable) == {r.id for r in CLASSIC_TABLE.rows if r.unreachable}


def test_a_changed_table_has_another_fingerprint() -> None:
    """Negative control: every mutant (a one-row change) changes the fingerprint."""
    mine = fingerprint(CLASSIC_TABLE, URGENT)
    assert all(fingerprint(table, URGENT) != mine for table, _, _ in MUTANTS.values())


def test_recomputed_facts_equal_the_committed_ones() -> None:
    """Slow (tests/conftest.py SLOW): the default plan and the proofs, as --update-facts runs them."""
    now, committed = compute(CLASSIC_TABLE, URGENT), load()
    now.seconds = committed.seconds = {}
    assert now.to_json() == committed.to_json()

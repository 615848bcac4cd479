"""The client's contract at the bounds where it bites: every property of the contract
(model/invariants.py, "the client's contract", and the path property parked-requests-answered) is
violated by its negative-control mutant (check/mutants.py) in the default check plan itself
(`groupspec check` without bound options, the native engine), not only at hand-picked bounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from check.explore import PATH_PROPERTIES
from check.mutants import MUTANTS
from groupspec.cli import main
from model.invariants import INVARIANTS

CONTRACT = ("sync-answer-is-stored-assignment", "only-leader-assigns", "selected-protocol-supported",
            "static-old-id-fenced", "parked-member-not-expired", "join-completes-when-all-rejoined",
            "completing-membership-frozen", "parked-requests-answered")


def test_every_contract_property_has_a_negative_control() -> None:
    for prop in CONTRACT:
        assert prop in INVARIANTS or prop in PATH_PROPERTIES, prop
        assert any(inv == prop for _, inv, _ in MUTANTS.values()), f"{prop}: no mutant"


@pytest.mark.parametrize("prop", CONTRACT)
def test_the_default_plan_kills_each_contract_property_mutant(
        prop: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = next(n for n, (_, inv, _) in MUTANTS.items() if inv == prop)
    report = tmp_path / "check.json"
    status = main(["check", "--table", f"check.mutants:{name}", "--invariant", prop,
                   "--stop-at-first-violation", "--quiet", "--json", str(report)])
    out = capsys.readouterr().out
    assert status == 1, f"{name}: the default plan does not violate {prop}"
    assert f"VIOLATION {prop}" in out
    doc = json.loads(report.read_text())
    assert doc["engine"] == "native"
    assert len(doc["runs"]) > 1  # the plan, not one hand-picked bound

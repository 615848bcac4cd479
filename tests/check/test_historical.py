"""The historical-bug suite (check/historical.py): each real bug's mutant is killed by the pinned
property at its pinned bounds, with `groupspec check --stop-at-first-violation` semantics, and the
bugs no property can kill stay unkilled at theirs (so a change in the kill rate is deliberate)."""

from __future__ import annotations

import pytest

from groupspec.cli import main
from check.explore import PATH_PROPERTIES, explore
from check.historical import HISTORICAL
from model.invariants import INVARIANTS
from model.table import CLASSIC_TABLE, URGENT


@pytest.mark.parametrize("name", sorted(HISTORICAL))
def test_pinned_property_kills_each_historical_bug(name: str) -> None:
    bug = HISTORICAL[name]
    r = explore(bug.table, URGENT, bug.bounds, symmetry=True, progress=None,
                stop_at_first_violation=True)
    first = r.violations[0].invariant if r.violations else None
    assert first == bug.killed_by, f"{name}: {[v.invariant for v in r.violations]}"
    if bug.killed_by is not None:
        trace = r.violations[0].trace
        assert any("->" in line for line in trace)
        assert not any("could not re-execute" in line for line in trace)


def test_the_suite_is_documented_and_each_bug_changes_the_table() -> None:
    assert len(HISTORICAL) >= 12
    rows = {r.id: r for r in CLASSIC_TABLE.rows}
    for name, bug in HISTORICAL.items():
        assert bug.source.startswith("https://"), name
        assert bug.summary and bug.expressed, name
        assert any(rows[r.id] != r for r in bug.table.rows), f"{name} is Kafka's table"
        if bug.killed_by is None:
            assert bug.diff_expected.startswith("differs"), name
        else:
            assert bug.killed_by in INVARIANTS or bug.killed_by in PATH_PROPERTIES, name
    killed = sum(1 for b in HISTORICAL.values() if b.killed_by is not None)
    assert killed == 8  # the kill rate the README reports (8 of 12)


def test_cli_checks_a_historical_mutant(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--table", "check.historical:KAFKA_9801", "--members", "0",
                 "--static", "1", "--faults", "session,rebalance,crash,lost", "--quiet",
                 "--stop-at-first-violation"])
    out = capsys.readouterr().out
    assert code == 1
    assert "VIOLATION completing-membership-frozen" in out

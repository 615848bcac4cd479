"""The `groupspec check` command: exit codes, JSON report, bad arguments, negative control."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupspec.cli import main


@pytest.mark.parametrize("argv,needle", [
    (["check", "--members", "-1"], "--members must be >= 0"),
    (["check", "--faults", "bogus"], "unknown fault"),
    (["check", "--invariant", "no-such-invariant"], "unknown"),
    (["check", "--table", "nonsense"], "package.module:NAME"),
    (["check", "--table", "model.table:EVENTS"], "not a transition table"),
    (["check", "--json", "/no/such/dir/x.json"], "does not exist"),
    (["check", "--members", "x"], "invalid int value"),
    (["check", "--max-ids-per-client", "0"], "--max-ids-per-client must be >= 1"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_a_message(argv: list[str], needle: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert needle in capsys.readouterr().err


def test_check_writes_the_json_report(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    assert main(["check", "--members", "2", "--max-generation", "1", "--faults", "none",
                 "--quiet", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    for key in ("states", "edges", "depth", "seconds", "rows_total", "rows_covered",
                "uncovered_rows", "violations"):
        assert key in doc
    assert doc["states"] == 120 and doc["violations"] == []


def test_check_of_a_mutant_table_exits_1_with_a_trace(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    status = main(["check", "--members", "2", "--max-generation", "2", "--faults", "none",
                   "--quiet", "--table", "check.mutants:SECOND_DELAYED_JOIN", "--json", str(out)])
    assert status == 1
    doc = json.loads(out.read_text())
    names = {v["invariant"] for v in doc["violations"]}
    assert "single-delayed-join" in names
    assert "VIOLATION single-delayed-join" in capsys.readouterr().out


@pytest.mark.parametrize("engine", ["native", "python"])
def test_max_ids_per_client_bounds_both_explorers(engine: str, tmp_path: Path) -> None:
    """One id per client: a crashed client's new member cannot join while its old id is still in
    the group, so fewer states than at two; the bound is in the report and both engines agree."""
    states = {}
    for ids in (1, 2):
        out = tmp_path / f"{ids}.json"
        assert main(["check", "--members", "1", "--max-generation", "1", "--faults", "session,crash",
                     "--max-ids-per-client", str(ids), "--engine", engine, "--no-liveness",
                     "--quiet", "--json", str(out)]) == 0
        run = json.loads(out.read_text())["runs"][0]
        assert f"at most {ids} member id" in run["bounds"]
        states[ids] = run["states"]
    assert states == {1: 407, 2: 3900}

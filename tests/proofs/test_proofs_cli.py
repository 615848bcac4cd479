"""`groupspec prove` arguments, exit codes and the JSON report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupspec.cli import main


@pytest.mark.parametrize("argv", [
    ["--depth", "-1"], ["--invariant", "no-such-invariant"], ["--table", "model.table"],
    ["--table", "no.such.module:T"], ["--table", "model.table:URGENT"], ["--bogus"],
    ["--json", "/no/such/dir/out.json"], ["--depth", "x"], ["--depth", "1000"],
])
def test_bad_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", *argv]) == 2
    assert "groupspec prove" in capsys.readouterr().err


def test_proved_invariant_exits_0_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["prove", "--invariant", "single-delayed-join", "--depth", "2", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["ok"] is True
    assert [e["invariant"] for e in report["invariants"]] == ["single-delayed-join"]


def test_mutant_exits_1() -> None:
    assert main(["prove", "--table", "check.mutants:SECOND_DELAYED_JOIN", "--invariant",
                 "single-delayed-join", "--depth", "3", "--timeout-ms", "8000"]) == 1


def test_one_response_per_request_is_proved_and_its_mutant_is_not() -> None:
    assert main(["prove", "--invariant", "one-response-per-request", "--depth", "2"]) == 0
    assert main(["prove", "--table", "check.mutants:JOIN_ANSWERED_AND_PARKED", "--invariant",
                 "one-response-per-request", "--depth", "3"]) == 1

"""`groupspec scenario run`: output, exit codes, --json, bad arguments/files/targets."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.scenario import FORMAT
from conformance.targets import TargetError, resolve_target
from groupspec.cli import main


def call(argv: list[str]) -> tuple[int, str, str]:
    """`groupspec scenario run ARGV`: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["scenario", "run", *argv])
    return code, out.getvalue(), err.getvalue()


def write(path: Path, scenarios: list[Any]) -> str:
    path.write_text(json.dumps({"format": FORMAT, "defaults": {"group": "g"}, "scenarios": scenarios}))
    return str(path)


def test_bad_arguments_exit_2() -> None:
    code, _, err = call(["x.json"])
    assert code == 2 and "--target" in err
    code, _, err = call(["--target", "model"])
    assert code == 2 and "FILE" in err


def test_unknown_and_remote_targets_exit_2(tmp_path: Path) -> None:
    f = write(tmp_path / "a.json", [{"name": "s", "steps": [{"op": "advance", "ms": 1}]}])
    code, out, err = call([f, "--target", "bogus"])
    assert code == 2 and out == "" and "unknown target 'bogus'" in err
    code, _, err = call([f, "--target", "kafka://10.1.2.3:9092"])
    assert code == 2 and "--allow-remote" in err
    code, _, err = call([f, "--target", "kafka://nohost"])
    assert code == 2 and "expected kafka://HOST:PORT" in err


def test_format_error_exit_2_and_nothing_run(tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", [{"name": "s", "steps": [{"op": "advance", "ms": 1}]}])
    bad = write(tmp_path / "bad.json", [{"name": "t", "steps": [{"op": "advance"}]}])
    report = tmp_path / "r.json"
    code, out, err = call([good, bad, "--target", "reference", "--json", str(report)])
    assert code == 2 and out == "" and not report.exists()
    assert f"{bad}: scenario 0 ('t'): step 0 (advance): field 'ms': missing required field" in err


def test_pass_fail_summary_and_json(tmp_path: Path) -> None:
    scenarios = [
        {"name": "ok", "steps": [{"op": "join", "member": "", "expect": {"error": "MEMBER_ID_REQUIRED"}}]},
        {"name": "bad", "steps": [{"op": "join", "member": "", "expect": {"error": "NONE"}}]},
        {"name": "hooks", "steps": [{"op": "check_group", "expect": {"state": "Missing"}}]},
    ]
    f = write(tmp_path / "a.json", scenarios)
    report = tmp_path / "r.json"
    code, out, _ = call([f, "--target", "reference", "--json", str(report)])
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == f"PASS  {f} :: ok"
    assert lines[1].startswith(f"FAIL  {f} :: bad: step 0 (join)") and '"NONE"' in lines[1]
    assert lines[-1] == "2 passed, 1 failed, 0 skipped"
    doc = json.loads(report.read_text())
    assert (doc["passed"], doc["failed"], doc["skipped"]) == (2, 1, 0)
    assert doc["results"][1]["step"] == 0 and doc["results"][1]["mismatches"][0]["actual"] == "MEMBER_ID_REQUIRED"
    code, out, _ = call([f.replace("a.json", "a.json"), "--target", "reference"])
    assert code == 1


def test_all_pass_exit_0(tmp_path: Path) -> None:
    f = write(tmp_path / "a.json", [{"name": "ok", "steps": [{"op": "describe", "expect": {"state": "Dead"}}]}])
    code, out, _ = call([f, "--target", "reference"])
    assert code == 0 and out.endswith("1 passed, 0 failed, 0 skipped\n")


def test_resolve_target_errors() -> None:
    with pytest.raises(TargetError):
        resolve_target("", False)
    with pytest.raises(TargetError, match="--allow-remote"):
        resolve_target("kafka://example.com:9092", False)
    assert callable(resolve_target("reference", False))

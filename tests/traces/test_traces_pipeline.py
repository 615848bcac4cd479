"""The pipeline without Spark: malformed inputs land in rejects with their reason, counts add up,
a non-trace input stops with exit 2, and outputs are published atomically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traces_helpers import FIXTURES, model_trace, row_json, write_jsonl
from groupspec.cli import main
from traces.inputs import classify
from traces.local import run_local
from traces.output import AtomicOutput, is_complete


def malformed_trace(tmp: Path) -> tuple[Path, dict[str, str]]:
    """A trace of two groups plus one row of each defect; returns the file and expected reasons."""
    a = model_trace("ga", "1", steps=40)
    b = model_trace("gb", "2", steps=40)
    lines = [row_json(e) for e in a]
    good_b = [row_json(e) for e in b]
    dup = good_b[5]
    extra = [
        good_b[3][:40],  # truncated JSON
        json.dumps({"group_id": "gb", "seq": "x", "ts_ms": 0, "source": "t", "kind": "advance"}),  # wrong type
        json.dumps({"group_id": "gb", "ts_ms": 0, "source": "t", "kind": "advance"}),  # missing field
        dup,  # duplicated event
        json.dumps({"group_id": "gc", "seq": 0, "ts_ms": 0, "source": "t", "kind": "transition",
                    "from_state": "Rebalancing", "to_state": "Stable", "generation": 1}),  # unknown state
    ]
    # out-of-order: group gb's events in reverse file order, plus one event whose clock goes backwards
    body = lines + extra + list(reversed(good_b))
    assert b[-1].ts_ms > 0
    body.append(json.dumps({"group_id": "gb", "seq": len(b), "ts_ms": 0, "source": "t", "kind": "advance"}))
    reasons = {
        "not valid JSON": "truncated", "column seq: expected integer, got str": "wrong type",
        "missing field seq": "missing", "duplicate of seq 5": "duplicate",
        "unknown group state 'Rebalancing'": "unknown state", "out of order: ts_ms 0": "out of order",
    }
    return write_jsonl(tmp / "trace.jsonl", body), reasons


def test_every_defect_lands_in_rejects_and_counts_add_up(tmp_path: Path) -> None:
    path, reasons = malformed_trace(tmp_path)
    result = run_local(classify([str(path)]))
    result.counts.check()
    got = [r["reason"] for r in result.rejects]
    for fragment, what in reasons.items():
        assert any(fragment in reason for reason in got), (what, got)
    assert result.counts.rejected == len(reasons)
    assert result.counts.rows == len(path.read_text().splitlines())
    assert result.counts.violations == 0  # the good events of ga and gb (reversed in the file) replay clean
    statuses = {v["group_id"]: v["status"] for v in result.verdicts}
    assert statuses == {"ga": "ok", "gb": "ok"}


def test_replay_cli_local_writes_a_complete_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, reasons = malformed_trace(tmp_path)
    out = tmp_path / "out"
    assert main(["replay", "--input", str(path), "--output", str(out), "--local"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    rows = len(path.read_text().splitlines())
    assert last == (f"rows {rows}, replayed {rows - len(reasons)}, rejected {len(reasons)}, ignored 0, duplicates 0, "
                    "groups 2, violations 0")
    assert is_complete(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rows"] == summary["replayed"] + summary["rejected"]


def test_logs_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--input", str(FIXTURES), "--output", str(tmp_path / "o"), "--local"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].startswith("ignored 7 ")
    assert lines[-1] == "rows 60, replayed 53, rejected 0, ignored 7, duplicates 0, groups 5, violations 0"


def test_a_file_that_is_not_a_trace_exits_2_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_jsonl(tmp_path / "users.jsonl", [json.dumps({"user": "u1", "action": "login"})])
    out = tmp_path / "out"
    assert main(["replay", "--input", str(bad), "--output", str(out), "--local"]) == 2
    assert "users.jsonl: line 1 has no group_id and no kind column" in capsys.readouterr().err
    assert not out.exists()


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    assert main(["replay", "--output", str(tmp_path)]) == 2
    assert main(["replay", "--input", str(tmp_path / "missing.jsonl"), "--output", str(tmp_path / "o")]) == 2


def test_a_failed_job_leaves_no_output_that_looks_complete(tmp_path: Path) -> None:
    final = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with AtomicOutput(final) as out:
            (out.path("verdicts.jsonl")).write_text("partial\n")
            raise RuntimeError("killed")
    assert not final.exists()
    assert list(tmp_path.iterdir()) == []

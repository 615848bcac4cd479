"""`groupspec soak`: arguments, progress and summary, failures saved as scenario files.

Time is injected (a fake clock that moves one second per reading), so no test depends on speed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from typing import Callable

from conformance.parse import load
from conformance.soak import run_one, soak, summary
from groupspec.cli import main


def fake_clock(step_s: float = 1.0) -> Callable[[], float]:
    now = [0.0]

    def read() -> float:
        now[0] += step_s
        return now[0]

    return read


def test_bad_arguments_exit_2_with_a_message(tmp_path: str) -> None:
    for argv, needle in (
        ([], "--minutes"),
        (["--minutes", "0"], "--minutes must be > 0"),
        (["--minutes", "x"], "invalid float value"),
        (["--minutes", "1", "--seed", "abc"], "invalid int value"),
        (["--minutes", "1", "--steps", "0"], "--steps must be >= 1"),
        (["--minutes", "1", "--bogus"], "unrecognized arguments"),
    ):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            assert main(["soak", *argv]) == 2, argv
        assert needle in err.getvalue() and err.getvalue().startswith("groupspec soak: "), err.getvalue()


def test_unwritable_out_dir_is_a_bad_argument(tmp_path: str) -> None:
    blocker = os.path.join(str(tmp_path), "file")
    with open(blocker, "w") as f:
        f.write("x")
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert main(["soak", "--minutes", "1", "--out", os.path.join(blocker, "sub")]) == 2
    assert "cannot create directory" in err.getvalue()


def test_clean_soak_reports_progress_and_exits_0(tmp_path: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    result = soak(0.2, str(tmp_path), 7, 40, progress=err, clock=fake_clock())
    assert result.runs >= 5 and not result.failures
    assert "runs" in err.getvalue() and "steps" in err.getvalue()
    out.write(summary(result, 7))
    assert out.getvalue().rstrip().endswith("no divergence")
    assert os.listdir(str(tmp_path)) == []


def test_seeded_bug_soak_saves_replayable_findings(tmp_path: str) -> None:
    bugs = frozenset({"no-generation-bump"})
    err = io.StringIO()
    result = soak(0.05, str(tmp_path), 1, 60, bugs=bugs, progress=err, clock=fake_clock())
    assert result.failures, "a seeded bug must be found"
    seed, kind, path = result.failures[0]
    assert os.path.exists(path) and "FAILED" in err.getvalue()
    parsed = load(path)  # a valid scenario file
    doc = json.loads(open(path).read())
    assert doc["finding"]["lockstep"]["bugs"] == ["no-generation-bump"]
    assert parsed.scenarios[0].steps
    assert summary(result, 1).rstrip().endswith(f"{len(result.failures)} failed")


def test_runs_are_reproducible_from_their_seed() -> None:
    a, da = run_one(5, 80)
    b, db = run_one(5, 80)
    assert a.actions == b.actions and (da is None) == (db is None)
    assert a.transcript.steps == b.transcript.steps

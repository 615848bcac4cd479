"""`groupspec check --engine native`: the JSON report names its engine; Ctrl-C stops a native run
cleanly (exit 130, a note on stderr, no report that looks complete)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from groupspec.cli import main


def test_json_report_names_the_engine(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    from check.explore import LIVENESS
    from check.native import implemented
    only = [x for n in sorted(set(implemented()["invariants"]) | {LIVENESS}) for x in ("--invariant", n)]
    assert main(["check", "--engine", "native", "--members", "2", "--faults", "session,rebalance",
                 "--quiet", "--json", str(out), *only]) == 0
    doc = json.loads(out.read_text())
    assert doc["engine"] == "native"
    assert doc["states"] == 938 and doc["edges"] == 3175 and doc["depth"] == 51
    assert all(run["engine"] == "native" for run in doc["runs"])


def test_a_native_mutant_run_finds_its_violation(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    status = main(["check", "--engine", "native", "--table", "check.mutants:SECOND_DELAYED_JOIN",
                   "--members", "2", "--stop-at-first-violation", "--quiet",
                   "--json", str(out)])
    assert status == 1
    doc = json.loads(out.read_text())
    assert "single-delayed-join" in {v["invariant"] for v in doc["violations"]}


def test_ctrl_c_stops_a_native_run_without_a_complete_looking_report(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupspec.cli", "check", "--engine", "native", "--members", "5",
         "--max-generation", "3", "--faults", "session,rebalance,stall,crash", "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=os.getcwd(),
        # a runner started in the background may ignore SIGINT; Python then would too
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    assert proc.stderr is not None
    while time.monotonic() < deadline:  # wait until the exploration is under way
        line = proc.stderr.readline()
        if "explored" in line:
            break
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (stdout, stderr)
    assert "incomplete" in stderr
    assert "no invariant violated" not in stdout
    assert not out.exists()

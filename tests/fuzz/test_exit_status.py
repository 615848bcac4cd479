"""An honest exit status (issue 22, item 7): a run that judged too little never exits 0."""

from __future__ import annotations

import threading

import pytest

from model.errors import EXIT_FINDING, EXIT_OK, Incomplete

from fuzz.cli import FUZZ_CONFIG, MAX_INCONCLUSIVE, Fuzzer, FuzzOptions, _conclude, why_incomplete
from groupspec.cli import main
from server.run import start_in_thread


def fuzzer(sequences: int, inconclusive: int = 0, errors: int = 0, findings: int = 0) -> Fuzzer:
    """A run's bookkeeping as it ends (no broker is contacted: the report is built from it)."""
    f = Fuzzer("127.0.0.1", 9, FuzzOptions(target="kafka://127.0.0.1:9", quiet=True), FUZZ_CONFIG)
    f.stats.sequences, f.stats.inconclusive, f.stats.errors = sequences, inconclusive, errors
    f.stats.findings = findings
    f.stats.judged = 10 * sequences
    return f


def test_more_than_five_percent_inconclusive_is_incomplete(capsys: pytest.CaptureFixture[str]) -> None:
    assert MAX_INCONCLUSIVE == 0.05
    assert _conclude(fuzzer(100, inconclusive=5), fuzzer(1).options, False) == EXIT_OK  # 5 %: judged
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert "5 inconclusive groups" in line and "(1000 judged)" in line and "profile strict" in line
    with pytest.raises(Incomplete, match=r"6 of 100 groups \(6.0%\) were inconclusive"):
        _conclude(fuzzer(100, inconclusive=6), fuzzer(1).options, False)
    # findings are findings, however much was inconclusive
    assert _conclude(fuzzer(100, inconclusive=50, findings=1), fuzzer(1).options, False) == EXIT_FINDING


def test_a_target_error_is_incomplete() -> None:
    assert why_incomplete(fuzzer(100).report(False)) == ""
    assert "the target errored in 1 of 100" in why_incomplete(fuzzer(100, errors=1).report(False))
    f = fuzzer(100)
    f.target_error = "unreachable: connection refused"
    assert "unreachable" in why_incomplete(f.report(False))
    assert "nothing could be judged" in why_incomplete(fuzzer(0).report(False))


def test_a_target_that_dies_mid_run_never_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    """A real `groupspec serve` stopped 4 s into a run: the summary counts the target errors and
    the exit status is 3 (or 1, when the connections it dropped were judged as findings), never
    0; negative control: the same run against a serve that stays up exits 0. A target gone
    before the run starts is incomplete (3)."""
    for stop in (True, False):
        with start_in_thread(FUZZ_CONFIG) as handle:
            port = handle.port
            timer = threading.Timer(4.0, handle.stop) if stop else None
            if timer is not None:
                timer.start()
            rc = main(["fuzz", "--target", f"kafka://127.0.0.1:{port}", "--minutes", "0.15",
                       "--parallel", "8", "--no-shrink", "--quiet"])
            if timer is not None:
                timer.join()
        out = capsys.readouterr().out
        if stop:
            assert rc in (1, 3) and " 0 target errors" not in out, out
        else:
            assert rc == 0 and " 0 target errors" in out, out
    assert main(["fuzz", "--target", f"kafka://127.0.0.1:{port}", "--minutes", "0.05", "--quiet"]) == 3

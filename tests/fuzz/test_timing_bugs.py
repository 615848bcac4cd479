"""Timing negative controls (issue 22, item 3): every seeded timing bug of `groupspec serve` is
found by a short fuzz run judged with the strict profile; the correct serve gives nothing
(`test_fuzz_run.py::test_correct_reference_has_no_findings`, and the 10-minute runs in
benchmarks/fuzz_results.md)."""

from __future__ import annotations

import json
import os

import pytest

from reference.bugs import BUGS, TIMING_BUGS

from fuzz.cli import FUZZ_CONFIG, FuzzOptions, fuzz

# the run length that finds each in the recorded runs with margin (first findings 0.7-49 s; the
# rebalance-timeout bug needs a member that does not rejoin: the 2-minute run the issue asks for)
MINUTES = {"rebalance-timeout-first-member": 2.0}
# what a finding of the bug looks like, where its class says it (the others: any divergence)
SHAPE = {"heartbeat-answered-late": "answered too late", "join-unanswered-at-rebalance-timeout": "no-response"}


def test_six_timing_bugs_are_seeded() -> None:
    assert len(TIMING_BUGS) >= 6 and set(TIMING_BUGS) <= set(BUGS)


@pytest.mark.parametrize("bug", TIMING_BUGS)
def test_timing_bug_is_found(bug: str, tmp_path: str) -> None:
    out = os.path.join(str(tmp_path), "r")
    os.makedirs(out)
    # the run stops at its first finding class (a run that finds nothing still runs its whole time)
    options = FuzzOptions(target="serve", minutes=MINUTES.get(bug, 0.4), bugs=(bug,), report=out,
                          shrink=False, quiet=True, stop_after_classes=1)
    assert fuzz(options, FUZZ_CONFIG) == 1
    doc = json.load(open(os.path.join(out, "report.json")))
    assert doc["profile"] == "strict" and doc["allowances"] == {}
    assert doc["findings"] >= 1
    assert doc["stopped_early"].startswith("stopped after "), doc["stopped_early"]
    if bug in SHAPE:
        assert any(SHAPE[bug] in c["class"] for c in doc["classes"]), [c["class"] for c in doc["classes"]]

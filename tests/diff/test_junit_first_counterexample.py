"""`check --junit` / `prove --junit` (one testcase per property or obligation, the counterexample as
the failure text, incomplete runs never passed), and the fast first counterexample of `check`."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from groupspec.cli import main
from check.abstract import Bounds
from check.explore import LIVENESS, WELL_FORMED, explore
from model.invariants import INVARIANTS
from check.mutants import MUTANTS
from model.table import URGENT

SMALL = ["--members", "2", "--max-generation", "1", "--faults", "session,rebalance", "--quiet"]


def cases(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    out = {tc.get("name", ""): tc for tc in suite.findall("testcase")}
    # the counts in the attributes agree with the children
    for kind, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        assert int(suite.get(attr, "-1")) == sum(tc.find(kind) is not None for tc in out.values())
    assert int(suite.get("tests", "-1")) == len(out)
    return out


def outcome(tc: ET.Element) -> str:
    for kind in ("failure", "error", "skipped"):
        if tc.find(kind) is not None:
            return kind
    return "passed"


def no_temp_files(d: Path) -> bool:
    return not [f for f in os.listdir(d) if f.startswith(".")]


def test_check_junit_of_a_mutant_has_a_failure_with_the_counterexample(tmp_path: Path) -> None:
    out = tmp_path / "check.xml"
    assert main(["check", "--table", "check.mutants:no-generation-bump", *SMALL,
                 "--junit", str(out)]) == 1
    tcs = cases(out)
    assert set(tcs) == set(INVARIANTS) | {LIVENESS, WELL_FORMED}
    failure = tcs["generation-monotonic"].find("failure")
    assert failure is not None and failure.text is not None
    assert "InitialDelayedJoinExpire" in failure.text and "JoinGroup" in failure.text
    assert "generation 0 -> 0" in failure.get("message", "")
    # liveness is not checked on a run with a safety violation: an error, not a pass
    assert outcome(tcs[LIVENESS]) == "error"
    assert [n for n, tc in tcs.items() if outcome(tc) == "failure"] == ["generation-monotonic"]
    assert no_temp_files(tmp_path)


def test_check_junit_of_kafkas_table_passes_and_a_cut_short_run_never_passes(tmp_path: Path) -> None:
    ok = tmp_path / "ok.xml"
    assert main(["check", *SMALL, "--junit", str(ok)]) == 0
    assert {outcome(tc) for tc in cases(ok).values()} == {"passed"}
    cut = tmp_path / "cut.xml"
    assert main(["check", *SMALL, "--max-states", "30", "--junit", str(cut)]) != 1
    tcs = cases(cut)
    assert tcs and {outcome(tc) for tc in tcs.values()} == {"error"}
    err = tcs["leader-is-member"].find("error")
    assert err is not None and "incomplete" in err.get("message", "")


def test_check_junit_includes_the_refinement(tmp_path: Path) -> None:
    out = tmp_path / "r.xml"
    assert main(["check", "--table", "check.mutants:no-generation-bump", *SMALL, "--no-liveness",
                 "--invariant", "dead-is-absorbing", "--refines", "kafka-3.9",
                 "--junit", str(out)]) == 1
    tcs = cases(out)
    assert outcome(tcs["dead-is-absorbing"]) == "passed"
    f = tcs["refines kafka-3.9"].find("failure")
    assert f is not None and f.text is not None and '"generation": 0' in f.text


def test_prove_junit_of_a_mutant_has_a_failure_with_the_counterexample(tmp_path: Path) -> None:
    out = tmp_path / "prove.xml"
    assert main(["prove", "--table", "check.mutants:HEARTBEAT_EMPTY_ACCEPTED", "--invariant",
                 "only-members-served", "--depth", "1", "--ids", "1", "--junit", str(out)]) == 1
    tcs = cases(out)
    assert set(tcs) == {"well-formedness", "only-members-served"}
    assert outcome(tcs["well-formedness"]) == "passed"
    failure = tcs["only-members-served"].find("failure")
    assert failure is not None and failure.text and "Heartbeat" in failure.text
    assert no_temp_files(tmp_path)


def test_prove_junit_bad_directory_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--junit", "/no/such/dir/x.xml"]) == 2
    assert "does not exist" in capsys.readouterr().err


# -- fast first counterexample -------------------------------------------------------------------

def test_a_property_with_a_counterexample_stops_the_run_when_nothing_else_is_checked() -> None:
    table = MUTANTS["no-generation-bump"][0]
    b = Bounds(dynamic=2, max_generation=1, faults=frozenset({"session", "rebalance"}))
    only = frozenset({"generation-monotonic"})
    fast = explore(table, URGENT, b, invariants=only, liveness=False, progress=None,
                   all_counterexamples=False)
    full = explore(table, URGENT, b, invariants=only, liveness=False, progress=None)
    assert [v.invariant for v in fast.violations] == ["generation-monotonic"]
    assert fast.violations == full.violations[:1]
    assert fast.cut_short == "every checked property has a counterexample" and full.cut_short == ""
    assert fast.states < full.states / 4
    # with other properties still unviolated, the run keeps exploring for them
    more = explore(table, URGENT, b, invariants=only | {"leader-is-member"}, liveness=False,
                   progress=None, all_counterexamples=False)
    assert more.cut_short == "" and more.states == full.states


def test_a_plan_stops_checking_a_property_once_a_run_found_it(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "--table", "check.mutants:no-generation-bump", "--invariant",
            "generation-monotonic", "--no-liveness", "--quiet"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert out.count("VIOLATION generation-monotonic") == 1
    from check.plan import DEFAULT_PLAN  # generation-monotonic is native: the native plan runs
    assert out.count("skipped: not run: every checked property already has a counterexample") == \
        len(DEFAULT_PLAN) - 1
    assert "PARTIAL" in out  # coverage of a plan cut short is a lower bound and says so
    # asked for all: the run explores everything within its bounds (both engines stop inside a
    # run at its first counterexample when not asked for all)
    for engine in ("native", "python"):
        small = ["check", "--engine", engine, "--table", "check.mutants:no-generation-bump",
                 "--invariant", "generation-monotonic", "--no-liveness", *SMALL]
        assert main(small) == 1
        assert "cut short: every checked property has a counterexample" in capsys.readouterr().out
        assert main([*small, "--all-counterexamples"]) == 1
        out = capsys.readouterr().out
        assert "cut short" not in out and "PARTIAL" not in out


def test_the_default_plan_has_a_state_budget_per_run_and_a_cut_run_never_passes(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A table whose state space outgrows the plan's bounds is cut short at PLAN_MAX_STATES per run
    (exit 3 without a counterexample); --max-states sets another budget; Kafka's table fits."""
    from groupspec.commands import check
    from check.plan import DEFAULT_PLAN, PLAN_MAX_STATES
    assert PLAN_MAX_STATES > 2 * 723_779  # the largest run on Kafka's table
    monkeypatch.setattr(check, "PLAN_MAX_STATES", 5000)
    assert main(["check", "--quiet"]) == 3
    out = capsys.readouterr().out
    assert "INCOMPLETE: closed: 3 consumers, timeouts and a stalling client: --max-states 5000 reached" in out
    assert "the default plan explores at most 5,000 states per run" in out
    assert main(["check", "--quiet", "--max-states", "1000000"]) == 0
    out = capsys.readouterr().out
    assert "INCOMPLETE" not in out and "no invariant violated" in out
    assert out.count("\n== ") == len(DEFAULT_PLAN)


def test_stop_at_first_violation_skips_the_plans_later_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's negative control: the first run stops at its counterexample, the rest of the
    plan is not run (it says so), exit 1."""
    from check.plan import DEFAULT_PLAN
    argv = ["check", "--table", "check.mutants:no-generation-bump", "--stop-at-first-violation", "--quiet"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert out.count("VIOLATION ") == 1
    assert out.count("skipped: not run: stopped at the first violation") == len(DEFAULT_PLAN) - 1
    assert main(["check", "--stop-at-first-violation", "--quiet", "--max-states", "20000"]) == 3  # nothing found: not skipped
    out = capsys.readouterr().out
    assert "skipped" not in out and out.count("\n== ") == len(DEFAULT_PLAN)

"""Every scenario file, over real sockets, against `groupspec serve`: same outcomes as the reference.

The wire target (wire.KafkaTarget, the scenario runner's `kafka://` target) drives a served
reference whose clock is manual (served.py), so virtual time is exact and outcomes must be equal,
except for what a black-box wire target cannot do at all: backdoor/unit steps, unload/load and
append-error injection, configs a broker cannot be told (the runner reports SKIP for those), and
`check_group` keys DescribeGroups does not carry (generation, leader, pending members, ...: the
runner runs every step and reports SKIP naming the unperformed checks, never PASS).
"""

from __future__ import annotations

import glob
import os
from collections import Counter

import pytest

from served import ServedFactory

from conformance.parse import load
from conformance.runner import Outcome, ScenarioResult, run_file
from conformance.targets import resolve_target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# kafka-coordinator-test/known-differences.json is left out: its scenarios disagree with the reference on
# purpose (strict xfails in tests/conformance/test_conformance_targets.py).
FILES = sorted(glob.glob(os.path.join(ROOT, "tests", "scenarios", "*.json"))
               + [f for f in glob.glob(os.path.join(ROOT, "tests", "scenarios", "kafka-coordinator-test", "*.json"))
                  if not f.endswith("known-differences.json")])
WIRE_SKIPS = (
    "target has no backdoor/unit test hooks",
    "target cannot unload/load or inject append errors",
    "target cannot run this config",
    "checks the target cannot perform: ",
)


def _run(bug: str | None = None) -> list[tuple[ScenarioResult, ScenarioResult]]:
    reference = resolve_target("reference", False)
    served = ServedFactory(bug)
    pairs: list[tuple[ScenarioResult, ScenarioResult]] = []
    for path in FILES:
        f = load(path)
        pairs.extend(zip(run_file(f, reference), run_file(f, served)))
    return pairs


def test_every_scenario_file_has_the_reference_outcome_over_the_wire() -> None:
    pairs = _run()
    assert len(pairs) >= 70
    counts: Counter[str] = Counter()
    for ref, srv in pairs:
        if srv.outcome is Outcome.SKIP and ref.outcome is not Outcome.FAIL:
            assert srv.reason.startswith(WIRE_SKIPS), srv.describe()
            kind = "all steps run, some check_group keys not performable" if srv.reason.startswith(
                WIRE_SKIPS[3]) else "not runnable on a wire target"
            counts[f"SKIP ({kind})"] += 1
        else:
            assert srv.outcome is ref.outcome, (ref.describe(), srv.describe())
            if ref.failure is not None:  # a scenario the reference fails must fail at the same step
                assert srv.failure is not None and srv.failure.step_index == ref.failure.step_index
            counts[srv.outcome.value] += 1
    print(f"\nserve vs reference over {len(pairs)} scenarios: {dict(counts)}")
    # On the scenario files of 2026-11-23: 10 PASS, 55 SKIP with every step run, 12 SKIP not
    # runnable (benchmarks/serve_results.md). Not pinned exactly: other branches add scenario files.
    assert counts["PASS"] >= 10 and counts["SKIP (all steps run, some check_group keys not performable)"] >= 55


@pytest.mark.parametrize(("bug", "at_least"), [("no-generation-bump", 50), ("leave-no-rebalance", 3),
                                               ("describe-protocol-outside-stable", 1)])
def test_a_seeded_bug_fails_scenarios_over_the_wire(bug: str, at_least: int) -> None:
    """Negative control: the same comparison fails once the served coordinator has a seeded bug."""
    failed = [srv for ref, srv in _run(bug) if srv.outcome is Outcome.FAIL]
    assert len(failed) >= at_least, [r.describe() for r in failed]

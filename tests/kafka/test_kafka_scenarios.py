"""A representative subset of the scenario files against real Kafka 3.9 (one broker per config).

At least one scenario per API (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, DescribeGroups, ListGroups, DeleteGroups) and per group state (Empty,
PreparingRebalance, CompletingRebalance, Stable, Dead), with little real waiting. A scenario
passes, or is skipped only because a check reads coordinator internals that the wire does not
show (generation, pending members): then every step that ran agreed with Kafka.
docs/kafka-fidelity.md has every scenario's outcome.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from kafka_testkit import require_kafka

from conformance.parse import load
from conformance.runner import Outcome, TargetFactory, run_scenario
from wire import kafka_broker_target_factory

pytestmark = require_kafka()

SCENARIOS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenarios")

SUBSET: dict[str, tuple[str, ...]] = {
    "offsets-and-admin.json": (
        "missing-group-answers-for-every-api",          # every API on a missing group; Dead
        "describe-group-in-each-state",                 # Empty, Preparing, Completing, Stable
        "delete-groups-per-state",                      # DeleteGroups, OffsetFetch
        "commit-in-completing-and-preparing-rebalance",  # OffsetCommit mid-rebalance
        "list-groups-with-state-filter",                # ListGroups
    ),
    "seeds.json": ("seed-leave-during-stable-and-empty",),            # LeaveGroup, Heartbeat
    "static-membership.json": ("static-member-fencing-on-every-api",),  # static members
    "limits-and-validation.json": ("sync-and-heartbeat-validation-order", "session-timeout-bounds"),
    "pending-members.json": ("pending-member-expires-strictly-after-its-session-timeout",),  # a timer
    "kafka-fidelity-regressions.json": ("chained-timers-inside-one-advance",),
}
CASES = [(f, n) for f, names in SUBSET.items() for n in names]


@pytest.fixture(scope="module")
def factory() -> Iterator[TargetFactory]:
    f = kafka_broker_target_factory("3.9")
    try:
        yield f
    finally:
        f.close()


@pytest.mark.parametrize(("file", "name"), CASES, ids=[n for _, n in CASES])
def test_scenario_agrees_with_kafka_3_9(factory: TargetFactory, file: str, name: str) -> None:
    parsed = load(os.path.join(SCENARIOS, file))
    [scenario] = [s for s in parsed.scenarios if s.name == name]
    result = run_scenario(parsed.path, scenario, factory)
    if result.outcome is Outcome.SKIP:
        assert result.reason.startswith("checks the target cannot perform"), result.reason
    else:
        assert result.outcome is Outcome.PASS, result.failure

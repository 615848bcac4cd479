"""Real-clock scenario runs against Apache Kafka 3.9 itself (one broker, default config).

The mechanisms are tested fast against serve on the real clock (tests/conformance/test_realclock.py);
here what only Kafka shows: KafkaApis refuses a commit to a topic it lacks (the runner creates every
topic a scenario names), and a documented Kafka 4 difference still FAILs on Kafka 3.9 with time
scaling, topics and the judge in force (the negative control of the measurement in
benchmarks/realclock_results.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
from kafka_testkit import require_kafka

from conformance.parse import load, parse_text
from conformance.realclock import RealClockOptions
from conformance.runner import Outcome, TargetFactory, run_scenario
from conformance.scenario import FORMAT
from fuzz.scenario_judge import judge_factory
from wire import kafka_broker_target_factory

pytestmark = require_kafka()

PROFILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "profiles",
                       "kafka4-profile.json")
CLOCK = RealClockOptions(latency_ms=5.0, judge=judge_factory("kafka-3.9"))


@pytest.fixture(scope="module")
def factory() -> Iterator[TargetFactory]:
    f = kafka_broker_target_factory("3.9")
    try:
        yield f
    finally:
        f.close()


def test_topics_a_scenario_names_are_created(factory: TargetFactory) -> None:
    steps = [{"op": "commit", "member": "", "generation": -1, "offsets": {"orders-5": 7, "audit-0": 1},
              "expect": {"errors": {"orders-5": "NONE", "audit-0": "NONE"}}},
             {"op": "fetch_offsets", "partitions": ["orders-5"], "expect": {"error": "NONE", "offsets": {"orders-5": 7}}}]
    body = {"name": "commit-to-new-topics", "source": "test", "steps": steps}
    [s] = parse_text(json.dumps({"format": FORMAT, "defaults": {"group": "g"}, "scenarios": [body]}), "t.json").scenarios
    without = run_scenario("t.json", s, factory)  # negative control: the broker has only topic t
    assert without.outcome is Outcome.FAIL and "UNKNOWN_TOPIC_OR_PARTITION" in without.describe()
    r = run_scenario("t.json", s, factory, clock=CLOCK)
    assert r.outcome is Outcome.PASS, r.describe()
    assert r.clock == "time scale 1 (auto: smallest timer 3000 ms, request cost 5.0 ms)"  # the initial delay


def test_a_documented_kafka_4_difference_still_fails_on_3_9(factory: TargetFactory) -> None:
    [s] = load(PROFILE).scenarios
    r = run_scenario(PROFILE, s, factory, clock=CLOCK)
    assert r.outcome is Outcome.FAIL, r.describe()
    assert r.failure is not None and r.failure.step_index == 0
    assert "ILLEGAL_GENERATION" in r.failure.describe()

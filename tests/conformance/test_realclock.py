"""Scenario files on a real-clock target (conformance/realclock.py, probes.py, fuzz/scenario_judge.py).

The target is `groupspec serve` on the real clock (the reference coordinator, in a thread, over
real sockets through wire.KafkaTarget): a real-clock broker that starts in milliseconds. Each
mechanism has its negative control: topics (a commit to a topic the broker lacks fails without
them), the judge (a seeded bug still FAILs; without the judge the same timing divergence FAILs),
the budget (SKIP, never FAIL), the probes (a seeded generation bug is caught only with them), the
auto time scale (chosen from the smallest timer and the latency, and reported).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from typing import Any, Callable, Optional

import pytest

from model.coordinator_api import CoordinatorConfig
from model.vocabulary import Error
from server import ServerHandle, start_in_thread
from wire import kafka_target_factory
from wire.target import MIN_PARTITIONS

from conformance.cli import run_files
from conformance.parse import parse_text
from conformance.realclock import (
    RealClockOptions, Verdict, budget_skip, choose_scale, scaled_config, scaled_ms, scenario_topics,
)
from conformance.runner import Outcome, ScenarioResult, run_scenario
from conformance.scenario import FORMAT, Scenario
from fuzz.scenario_judge import judge_factory

CONFIG = {"group_initial_rebalance_delay_ms": 0, "group_min_session_timeout_ms": 10}
SERVE_CONFIG = CoordinatorConfig(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=10)


def scenario(steps: list[Any], config: Optional[dict[str, Any]] = None, tags: tuple[str, ...] = ()) -> Scenario:
    body = {"name": "s", "source": "test", "config": CONFIG if config is None else config,
            "tags": list(tags), "steps": steps}
    text = json.dumps({"format": FORMAT, "defaults": {"group": "g"}, "scenarios": [body]})
    return parse_text(text, "t.json").scenarios[0]


@pytest.fixture
def serve(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    bug = getattr(request, "param", None)
    handle = start_in_thread(SERVE_CONFIG, bug, clock="real", auto_create_topics=False)
    try:
        yield handle
    finally:
        handle.stop()


def run(handle: ServerHandle, s: Scenario, clock: Optional[RealClockOptions]) -> ScenarioResult:
    factory = kafka_target_factory(handle.host, handle.port)
    try:
        return run_scenario("t.json", s, factory, clock=clock)
    finally:
        factory.close()


JUDGED = RealClockOptions(scale=1.0, judge=judge_factory("serve"))
# (the initial delay of 0 completes the join phase at the next tick: on the virtual clock, at an advance)
JOIN: list[dict[str, Any]] = [{"op": "join", "id": "j", "member": "", "require_known_member_id": False, "session_timeout_ms": 100,
         "await": "later"},
        {"op": "advance", "ms": 1}, {"op": "check_response", "id": "j", "bind": {"member_id": "A"},
                                     "expect": {"error": "NONE"}}]
SYNC = {"op": "sync", "member": "$A", "generation": "$gen:j", "assignments": {"$A": "01"},
        "expect": {"error": "NONE"}}

# ---------------------------------------------------------------- pure parts


def test_auto_scale_grows_with_latency_and_shrinks_to_the_budget() -> None:
    s = scenario([{**JOIN[0], "session_timeout_ms": 50}, {"op": "advance", "ms": 40}])
    assert choose_scale(s, latency_ms=1.0).scale == 1.0  # 1 ms * 10 < 50 ms
    chosen = choose_scale(s, latency_ms=20.0)  # 20 ms * 10 / 50 ms
    assert (chosen.scale, chosen.smallest_timer_ms, chosen.chosen) == (4.0, 50, True)
    assert "time scale 4 (auto: smallest timer 50 ms, request cost 20.0 ms)" == chosen.describe()
    capped = choose_scale(s, latency_ms=20.0, budget_s=0.08)  # 40 ms of advances in 80 ms: 2
    assert (capped.scale, capped.capped) == (2.0, True)


def test_scaled_timeouts_keep_their_order() -> None:
    for scale in (1.0, 1.3, 2.5, 7.0):
        for a in range(1, 40):
            for b in range(a, 40):
                assert (scaled_ms(a, scale) < scaled_ms(b, scale)) == (a < b)
    c = scaled_config(CoordinatorConfig(group_min_session_timeout_ms=10, group_initial_rebalance_delay_ms=50), 3.0)
    assert (c.group_min_session_timeout_ms, c.group_initial_rebalance_delay_ms, c.new_member_join_timeout_ms) == (
        30, 150, 300000)  # Kafka's new-member timeout is a constant: not scaled


def test_topics_are_every_topic_a_scenario_names() -> None:
    s = scenario([*JOIN, {"op": "commit", "member": "", "generation": -1, "offsets": {"orders-3": 1, "t-0": 2}},
                  {"op": "fetch_offsets", "partitions": ["audit-0", "orders-1"]}])
    assert scenario_topics(s) == {"orders": 4, "t": 1, "audit": 1}


def test_the_budget_names_kafkas_new_member_timeout() -> None:
    s = scenario([*JOIN, {"op": "advance", "ms": 300001}])
    why = budget_skip(s, 1.0, 120.0)
    assert why is not None and "step 3 (advance 300001)" in why and "NewMemberJoinTimeoutMs" in why
    assert budget_skip(scenario([*JOIN, {"op": "advance", "ms": 1000}]), 1.0, 120.0) is None


# ---------------------------------------------------------------- on a real-clock serve


def test_topics_are_created_before_the_scenario(serve: ServerHandle) -> None:
    # (serve takes commits to any topic: that a commit to a topic Kafka lacks fails without this is
    # tests/kafka/test_realclock_kafka.py; here: the topics exist on the broker after the run)
    commit = {"op": "commit", "member": "", "generation": -1, "offsets": {"orders-2": 7},
              "expect": {"errors": {"orders-2": "NONE"}}}
    s = scenario([commit, {"op": "fetch_offsets", "partitions": ["audit-0"]}])
    run(serve, s, None)
    assert serve.call(lambda g: sorted(g.log_store.topics)) == []  # negative control: none without it
    assert run(serve, s, JUDGED).outcome is Outcome.PASS
    made = serve.call(lambda g: {n: len(t.partitions) for n, t in g.log_store.topics.items()})
    assert made == {"orders": MIN_PARTITIONS, "audit": MIN_PARTITIONS}  # (room for a later scenario)


# a session deadline at the very end of an advance: the virtual clock has not fired it (strictly
# less), the real one has (the advance, then three requests' settling, are later than it)
LATE = [*JOIN, SYNC, {"op": "advance", "ms": 100}, {"op": "describe"}, {"op": "describe"},
        {"op": "describe"}, {"op": "heartbeat", "member": "$A", "generation": "$gen:j", "expect": {"error": "NONE"}}]


def test_an_answer_the_real_clock_allows_passes_judged(serve: ServerHandle) -> None:
    judged = run(serve, scenario(LATE), JUDGED)
    assert judged.outcome is Outcome.PASS, judged.describe()
    unjudged = run(serve, scenario(LATE), RealClockOptions(scale=1.0))  # negative control: no judge
    if "judged on the real clock" in judged.reason:  # the broker did expire A (it nearly always does)
        assert "step 8 (heartbeat)" in judged.reason and "UNKNOWN_MEMBER_ID" in judged.reason
        assert unjudged.outcome is Outcome.FAIL, unjudged.describe()


@pytest.mark.parametrize("serve", ["heartbeat-empty-accepted"], indirect=True)
def test_a_real_difference_still_fails_judged(serve: ServerHandle) -> None:
    s = scenario([*JOIN, SYNC, {"op": "leave", "members": [{"member_id": "$A"}]},
                  {"op": "heartbeat", "member": "$A", "generation": "$gen:j", "expect": {"error": "UNKNOWN_MEMBER_ID"}}])
    r = run(serve, s, JUDGED)
    assert r.outcome is Outcome.FAIL, r.describe()
    assert r.failure is not None and r.failure.step_index == 5
    assert "the model allows no such answer on the real clock either" in r.failure.message


PROBED = [{**JOIN[0], "session_timeout_ms": 10000}, *JOIN[1:], SYNC, {"op": "check_group", "expect": {"state": "Stable", "generation": 1, "members_count": 1}}]


def test_generation_is_checked_by_a_probe(serve: ServerHandle) -> None:
    r = run(serve, scenario(PROBED), JUDGED)
    assert r.outcome is Outcome.PASS, r.describe()
    assert "probe-4-heartbeat" in r.reason
    without = run(serve, scenario(PROBED), RealClockOptions(scale=1.0, probes=False))
    assert without.outcome is Outcome.SKIP and "check_group.generation" in without.reason


@pytest.mark.parametrize("serve", ["no-generation-bump"], indirect=True)
def test_a_wrong_generation_is_caught_by_the_probe(serve: ServerHandle) -> None:
    # without the judge (which sees the generation in the JoinGroup answer already), the probe
    r = run(serve, scenario(PROBED), RealClockOptions(scale=1.0))
    assert r.outcome is Outcome.FAIL, r.describe()
    assert r.failure is not None and "probe probe-4-heartbeat" in r.failure.message
    assert "ILLEGAL_GENERATION" in r.failure.describe()
    # negative control: without probes the generation goes unchecked (DescribeGroups has none)
    assert run(serve, scenario(PROBED), RealClockOptions(scale=1.0, probes=False)).outcome is Outcome.SKIP
    judged = run(serve, scenario(PROBED), JUDGED)
    assert judged.outcome is Outcome.FAIL and judged.failure is not None
    assert "the model allows no such answer on the real clock" in judged.failure.message


def test_a_step_beyond_the_budget_is_skipped_not_failed(serve: ServerHandle) -> None:
    s = scenario([{**JOIN[0], "session_timeout_ms": 10000}, {"op": "advance", "ms": 300001},
                  {"op": "check_group", "expect": {"state": "Missing"}}])
    r = run(serve, s, JUDGED)
    assert r.outcome is Outcome.SKIP and "NewMemberJoinTimeoutMs" in r.reason, r.describe()


def test_the_cli_measures_latency_and_reports_the_scale(serve: ServerHandle, tmp_path: Any) -> None:
    path = tmp_path / "s.json"
    body = {"name": "s", "source": "test", "config": CONFIG, "steps": [*JOIN, SYNC]}
    path.write_text(json.dumps({"format": FORMAT, "defaults": {"group": "g"}, "scenarios": [body]}))
    out = io.StringIO()
    code = run_files([str(path)], f"kafka://{serve.host}:{serve.port}", out=out, judge=judge_factory("serve"))
    text = out.getvalue()
    assert code == 0, text
    assert text.startswith("real clock: request cost ")
    assert "(auto: smallest timer 100 ms, request cost " in text


@pytest.mark.parametrize("steps", [LATE, PROBED], ids=["late", "probed"])
def test_the_scenarios_here_pass_on_the_model(steps: list[Any]) -> None:
    from model.concrete import ModelCoordinator
    r = run_scenario("t.json", scenario(steps), lambda config: ModelCoordinator(config))
    assert r.outcome is Outcome.PASS, r.describe()


def test_a_not_owned_group_no_step_names_does_not_skip_the_scenario(serve: ServerHandle) -> None:
    config = {**CONFIG, "not_owned_groups": ["otherGroup"]}  # GroupCoordinatorTest's setup
    assert run(serve, scenario([*JOIN, SYNC], config), JUDGED).outcome is Outcome.PASS
    named = scenario([*JOIN, SYNC, {"op": "heartbeat", "group": "otherGroup", "member": "x", "generation": 1}], config)
    r = run(serve, named, JUDGED)  # negative control: a step sends to it
    assert r.outcome is Outcome.SKIP and "not_owned_groups" in r.reason, r.describe()


# ---------------------------------------------------------------- the runner's use of a verdict


class ScriptedJudge:
    """Runner mechanics only (the judge itself is the fuzz judge, above against serve): FINDING
    for a run that includes request numbers in `differs`, else ALLOWED."""

    def __init__(self, differs: frozenset[int] = frozenset()) -> None:
        self.differs = differs

    def sent(self, number: int, request: Any, version: int, at_s: float, probe: bool = False) -> None:
        pass

    def received(self, number: int, response: Any, at_s: float) -> None:
        pass

    def verdict(self, numbers: Any, now_s: float) -> tuple[Verdict, str]:
        return (Verdict.FINDING, "scripted finding") if set(numbers) & self.differs else (Verdict.ALLOWED, "")


UNRUNNABLE = [{"op": "join", "member": "", "bind": {"member_id": "A"}},
              {"op": "heartbeat", "member": "$A", "generation": 1, "expect": {"error": "NONE"}},
              {"op": "join", "id": "k", "member": "x", "await": "later"},
              {"op": "heartbeat", "member": "$A", "generation": "$gen:k"}]


@pytest.mark.parametrize(("heartbeat_error", "differs", "outcome"), [
    (Error.UNKNOWN_MEMBER_ID, frozenset(), Outcome.SKIP),  # judged divergence, then a step it made unrunnable
    (Error.NONE, frozenset(), Outcome.FAIL),  # control: no divergence, the unrunnable step is a failure
    (Error.UNKNOWN_MEMBER_ID, frozenset({2}), Outcome.FAIL),  # control: the judge finds a difference
])
def test_a_step_a_judged_divergence_made_unrunnable_is_skipped(
        heartbeat_error: Error, differs: frozenset[int], outcome: Outcome) -> None:
    from conformance_fake_target import FakeCoordinator
    judge = ScriptedJudge(differs)
    clock = RealClockOptions(scale=1.0, judge=lambda s, c, cost: judge, probes=False)
    target = FakeCoordinator(CoordinatorConfig(), heartbeat_error)
    r = run_scenario("t.json", scenario(UNRUNNABLE, config={}), lambda config: target, clock=clock)
    assert r.outcome is outcome, r.describe()
    if outcome is Outcome.SKIP:
        assert "step 3" in r.reason and "judge allowed" in r.reason and "step 1 (heartbeat)" in r.reason


@pytest.mark.parametrize(("answer", "alone", "with_list_groups"), [
    (Error.UNKNOWN_MEMBER_ID, Verdict.ALLOWED, Verdict.UNJUDGED),  # what the model answers
    (Error.NONE, Verdict.FINDING, Verdict.FINDING),  # control: a finding outranks what cannot be judged
])
def test_the_scenario_judge_verdicts(answer: Error, alone: Verdict, with_list_groups: Verdict) -> None:
    from model.messages import HeartbeatRequest, HeartbeatResponse, ListGroupsRequest, ListGroupsResponse
    from fuzz.scenario_judge import ScenarioJudge
    judge = ScenarioJudge(CoordinatorConfig())
    judge.sent(1, ListGroupsRequest(), 4, 100.0)
    judge.received(1, ListGroupsResponse(Error.NONE, ()), 100.01)
    judge.sent(2, HeartbeatRequest("g", "x", 1), 4, 100.02)  # to a group that does not exist
    judge.received(2, HeartbeatResponse(answer), 100.03)
    assert judge.verdict([2], 100.04)[0] is alone
    assert judge.verdict([1, 2], 100.04)[0] is with_list_groups


@pytest.mark.parametrize(("target", "scale", "budget", "says"), [
    ("model", 2.0, 120.0, "--time-scale 2"),  # the model runs on the virtual clock
    ("kafka://127.0.0.1:1", 0.5, 120.0, "--time-scale 0.5"),  # below 1: timeouts would lose their order
    ("kafka://127.0.0.1:1", None, 400.0, "--budget 400"),  # beyond Kafka's new-member timeout
])
def test_bad_real_clock_options_are_bad_input(target: str, scale: Optional[float], budget: float, says: str) -> None:
    from model.errors import BadInput
    with pytest.raises(BadInput, match=says.replace(".", r"\.")):
        seeds = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenarios", "seeds.json")
        run_files([seeds], target, out=io.StringIO(), time_scale=scale, budget_s=budget)


@pytest.mark.parametrize(("request_cost_ms", "verdict"), [
    (50.0, Verdict.ALLOWED),  # B sent 20 ms after A, within one request cost: the broker may read B first
    (0.0, Verdict.FINDING),  # control: with no such window B overtaking A is a difference
])
def test_requests_sent_within_one_request_cost_may_be_read_in_either_order(
        request_cost_ms: float, verdict: Verdict) -> None:
    """The broker read B's JoinGroup before A's, though A's was sent 20 ms earlier on another
    connection (both parked in the initial delay, answered at about 800 ms): B leads. The judge allows that order when the
    two were sent within the request cost measured at the start, and only then."""
    from model.messages import JoinGroupRequest, ProtocolMetadata, Response
    from reference.coordinator import ReferenceCoordinator
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=300)

    def join(client: str) -> JoinGroupRequest:
        return JoinGroupRequest("g", "", "consumer", (ProtocolMetadata("range"),), 10000, 10000,
                                require_known_member_id=False, client_id=client)

    a, b = join("a"), join("b")
    broker = ReferenceCoordinator(config)  # the broker's answers when it reads B first
    answers: dict[str, Response] = {}
    def keep(client: str) -> Callable[[Response], None]:
        return lambda r: answers.__setitem__(client, r)

    for client, req in (("b", b), ("a", a)):
        broker.handle(req, keep(client))
    for _ in range(10):  # the initial delay, extended for the members that joined in it
        broker.advance(100)
    assert set(answers) == {"a", "b"}
    make = judge_factory("kafka-3.9")
    judge = make(Scenario("race", 0, "test", config, (), (), ""), config, request_cost_ms)
    assert judge is not None
    judge.sent(1, a, 3, 100.0)
    judge.sent(2, b, 3, 100.02)
    judge.received(2, answers["b"], 100.91)
    judge.received(1, answers["a"], 100.91)
    assert judge.verdict([1, 2], 100.92)[0] is verdict, judge.verdict([1, 2], 100.92)[1]


@pytest.mark.parametrize(("tags", "verdict"), [
    (("kafka-4",), Verdict.ALLOWED),  # Kafka 4 answers a v9 commit to a missing group so
    ((), Verdict.FINDING),  # control: by Kafka 3.9's table that answer is a difference
])
def test_a_scenario_is_judged_by_its_profiles_table(tags: tuple[str, ...], verdict: Verdict) -> None:
    """A scenario tagged with a profile (`kafka-4`) is judged by that profile's table, not skipped
    and not judged by Kafka 3.9's: an OffsetCommit v9 with a generation to a group that does not
    exist gets GROUP_ID_NOT_FOUND from Kafka 4 (check/profile_kafka4.py), ILLEGAL_GENERATION from
    3.9."""
    from check.profile_kafka4 import KAFKA4_TABLE
    from fuzz.scenario_judge import scenario_table
    from model.messages import OffsetCommitRequest, OffsetCommitResponse, TopicPartition
    from model.table import CLASSIC_TABLE
    config = CoordinatorConfig()
    s = Scenario("commit", 0, "test", config, tags, (), "")
    assert scenario_table(s) is (KAFKA4_TABLE if tags else CLASSIC_TABLE)
    judge = judge_factory("kafka-4")(s, config, 0.0)
    assert judge is not None
    tp = TopicPartition("t", 0)
    judge.sent(1, OffsetCommitRequest("g", "m", 1, ((tp, 5),)), 9, 100.0)
    judge.received(1, OffsetCommitResponse(((tp, Error.GROUP_ID_NOT_FOUND),)), 100.01)
    got, why = judge.verdict([1], 100.02)
    assert got is verdict, why


def test_table_on_a_real_clock_target_is_the_table_the_judge_reads() -> None:
    """`scenario run --table kafka-4` on a real-clock target judges an untagged scenario by the
    kafka-4 table (the test above's control, now allowed); on a target that is neither the model
    nor real-clock, --table is bad input."""
    from check.profile_kafka4 import KAFKA4_TABLE
    from model.errors import BadInput
    from model.messages import OffsetCommitRequest, OffsetCommitResponse, TopicPartition
    from model.table import URGENT
    config = CoordinatorConfig()
    judge = judge_factory("kafka-3.9", table=(KAFKA4_TABLE, URGENT))(
        Scenario("commit", 0, "test", config, (), (), ""), config, 0.0)
    assert judge is not None
    tp = TopicPartition("t", 0)
    judge.sent(1, OffsetCommitRequest("g", "m", 1, ((tp, 5),)), 9, 100.0)
    judge.received(1, OffsetCommitResponse(((tp, Error.GROUP_ID_NOT_FOUND),)), 100.01)
    assert judge.verdict([1], 100.02)[0] is Verdict.ALLOWED
    seeds = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenarios", "seeds.json")
    with pytest.raises(BadInput, match="--table kafka-4 needs --target model or a real-clock target"):
        run_files([seeds], "reference", out=io.StringIO(), table=("kafka-4", KAFKA4_TABLE, URGENT))

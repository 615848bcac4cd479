"""What keeps observe's judge sound and fast under real client traffic, each with its negative
control: members whose requests overlap make one hypothesis per order, and orders that lead to the
same state merge (new member ids are a function of the hypothesis); the judging budget is CPU time,
so a machine's load does not end a judge; a request queued behind an unanswered one of its
connection is dated from its write and need not be processed before its connection could read it."""

from __future__ import annotations

import time
from typing import Optional

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error

from fuzz.judge import Finding, GroupJudge, Inconclusive, Tolerance

PROTOCOLS = (m.ProtocolMetadata("range", b"\x00"),)


def join(client: str, member: str = "", instance: str | None = None) -> m.JoinGroupRequest:
    return m.JoinGroupRequest("g", member, "consumer", PROTOCOLS, 10000, 30000, group_instance_id=instance,
                              client_id=client)


def test_overlapping_joins_in_either_order_are_one_hypothesis() -> None:
    # two new members' first JoinGroups sent 1 ms apart (inside the overtaking window): either
    # order is admissible, and both lead to the same group, with the same model ids
    judge = GroupJudge("g", CoordinatorConfig(), Tolerance(min_overtake_ms=50))
    judge.send(1, ApiKey.JoinGroup, 5, join("a"), 0)
    judge.send(2, ApiKey.JoinGroup, 5, join("b"), 1)
    assert judge.receive(1, 3, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, member_id="a-1")) is None
    assert judge.receive(2, 4, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, member_id="b-1")) is None
    # every order named each member alike (a counter shared by the branches named them apart); the
    # orders still differ in what the model keeps of them (the pending ids' order and deadlines)
    assert len({frozenset(h.to_model.items()) for h in judge.hyps}) == 1 and len(judge.hyps) <= 2
    # they rejoin with their ids, overlapping again (processed or not yet, in either order): one naming
    judge.send(3, ApiKey.JoinGroup, 5, join("a", "a-1"), 10)
    judge.send(4, ApiKey.JoinGroup, 5, join("b", "b-1"), 11)
    judge.silence(20)
    assert len({frozenset(h.to_model.items()) for h in judge.hyps}) == 1


def test_negative_control_merged_hypotheses_still_judge_a_wrong_answer() -> None:
    judge = GroupJudge("g", CoordinatorConfig(), Tolerance(min_overtake_ms=50))
    judge.send(1, ApiKey.JoinGroup, 5, join("a"), 0)
    judge.send(2, ApiKey.JoinGroup, 5, join("b"), 1)
    assert judge.receive(1, 3, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, member_id="a-1")) is None
    finding = judge.receive(2, 4, m.JoinGroupResponse(Error.UNKNOWN_MEMBER_ID, member_id=""))
    assert finding is not None and finding.api == "JoinGroup"


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_the_budget_is_cpu_time_not_the_wall_clock() -> None:
    judge = GroupJudge("g", CoordinatorConfig(), Tolerance(max_observation_ms=100))
    judge._start(0)
    time.sleep(0.3)  # a loaded machine: the wall clock runs on, the judge computes nothing
    judge._check_budget()
    # negative control: 0.2 s of the judge's own computing is over its budget
    _spin(0.2)
    try:
        judge._check_budget()
    except Inconclusive as e:
        assert "CPU" in str(e)
    else:
        raise AssertionError("a judge over its CPU budget went on")


DESCRIBE = m.DescribeGroupsRequest(("g",))


def _describe_after_queued_join(ready_ms: int) -> Optional[Finding]:
    """A static member's JoinGroup written at 0 but queued on its connection behind an unanswered
    request until `ready_ms`; at 2,500 ms another connection's DescribeGroups sees no group."""
    judge = GroupJudge("g", CoordinatorConfig())
    judge.send(1, ApiKey.JoinGroup, 5, join("s", instance="s1"), 0, ready_ms=ready_ms)
    judge.send(2, ApiKey.DescribeGroups, 5, DESCRIBE, 2500)
    dead = m.DescribeGroupsResponse((m.DescribedGroup(Error.NONE, "g", "Dead", "", ""),))
    return judge.receive(2, 2510, dead)


def test_a_queued_request_need_not_be_processed_before_its_connection_could_read_it() -> None:
    assert _describe_after_queued_join(ready_ms=4000) is None
    # negative control: the same request not queued (ready at its write) must have been processed
    # within process_ms (2 s): a group that is still Dead at 2.5 s is a finding
    finding = _describe_after_queued_join(ready_ms=-1)
    assert finding is not None and finding.api == "DescribeGroups"


def test_a_queued_request_arms_its_timers_from_its_write() -> None:
    # dated from its write (0), the static join's initial delay (3 s) may end at 3 s, although the
    # proxy let the judge know of it only at 500 ms; dated from 500 ms, ending at 3 s is too early
    for at, ready, ok in ((0, 500, True), (500, -1, False)):
        judge = GroupJudge("g", CoordinatorConfig(), Tolerance(late_ms=50))
        judge.send(1, ApiKey.JoinGroup, 5, join("s", instance="s1"), at, ready_ms=ready)
        answer = m.JoinGroupResponse(Error.NONE, 1, "consumer", "range", leader="s1-1", member_id="s1-1",
                                     members=(m.JoinGroupMember("s1-1", "s1", PROTOCOLS[0].metadata),))
        finding = judge.receive(1, 3010, answer)
        assert (finding is None) == ok, finding


def _first_join_phase(delay_ms: int, answered_ms: int) -> Optional[Finding]:
    """The exchange of the old serve x librdkafka false finding (docs/clients, before the fix): a
    static member joins at 0, two dynamic ones (MEMBER_ID_REQUIRED, rejoin) at 30-158 ms; serve
    (initial delay 3,000 ms, extended once) answers the join phase at `answered_ms`."""
    j = GroupJudge("g", CoordinatorConfig(group_initial_rebalance_delay_ms=delay_ms), Tolerance(min_overtake_ms=2))
    j.send(1, ApiKey.JoinGroup, 5, join("s1-1", instance="s1"), 0)
    j.send(2, ApiKey.JoinGroup, 5, join("m2-1"), 30)
    assert j.receive(2, 95, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, member_id="M2")) is None
    j.send(3, ApiKey.JoinGroup, 5, join("m2-1", "M2"), 105)
    j.send(4, ApiKey.JoinGroup, 5, join("m3-1"), 157)
    assert j.receive(4, 158, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, member_id="M3")) is None
    j.send(5, ApiKey.JoinGroup, 5, join("m3-1", "M3"), 158)
    return j.receive(3, answered_ms, m.JoinGroupResponse(Error.NONE, 1, "consumer", "range", leader="S1",
                                                         member_id="M2"))


def test_judged_with_the_settings_serve_runs_the_first_join_phase_is_no_finding() -> None:
    # observe was given serve's settings by `groupspec clients` (3,000 ms): no finding
    assert _first_join_phase(3000, 6030) is None
    # negative control, the old false finding's cause: the delay timed by observe's probe on a
    # loaded machine (3,050 ms) makes the model end the phase at 6,100 ms, after serve did
    f = _first_join_phase(3050, 6030)
    assert f is not None and f.class_key().endswith("pending-member-joins|expected parked (no answer yet) actual NONE")

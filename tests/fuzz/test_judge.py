"""The judge on hand-fed observations: wrong answers are findings, every allowed answer is not."""

from __future__ import annotations

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error

from fuzz.allowances import GROUP_CLEANUP
from fuzz.judge import NO_RESPONSE, GroupJudge, Tolerance

CFG = CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=60000,
                        group_initial_rebalance_delay_ms=0)
PROTOS = (m.ProtocolMetadata("range", b"\x01"),)


def join(mid: str = "", inst: str | None = None, session: int = 1000) -> m.JoinGroupRequest:
    return m.JoinGroupRequest("g", mid, "consumer", PROTOS, session, 2000, inst)


def joined(mid: str, leader: str, gen: int = 1, members: tuple[m.JoinGroupMember, ...] = ()
           ) -> m.JoinGroupResponse:
    return m.JoinGroupResponse(Error.NONE, gen, "consumer", "range", leader, mid, False, members)


def one_member(j: GroupJudge, t: int = 0) -> str:
    """A dynamic member joins (MEMBER_ID_REQUIRED, then the join): generation 1, its leader."""
    j.send(1, ApiKey.JoinGroup, 9, join(), t)
    assert j.receive(1, t + 1, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, -1, None, None, "", "c-1")) is None
    j.send(2, ApiKey.JoinGroup, 9, join("c-1"), t + 2)
    me = (m.JoinGroupMember("c-1", None, b"\x01"),)
    assert j.receive(2, t + 3, joined("c-1", "c-1", 1, me)) is None
    return "c-1"


def test_valid_join_is_no_finding_and_wrong_generation_is() -> None:
    j = GroupJudge("g", CFG)
    one_member(j)
    j.send(3, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), 10)
    assert j.receive(3, 11, m.HeartbeatResponse(Error.NONE)) is None  # CompletingRebalance (2.6.1+)
    pre = GroupJudge("g", CFG)
    one_member(pre)
    pre.send(3, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), 10)
    assert pre.receive(3, 11, m.HeartbeatResponse(Error.REBALANCE_IN_PROGRESS)) is not None

    bad = GroupJudge("g", CFG)
    bad.send(1, ApiKey.JoinGroup, 9, join(), 0)
    bad.receive(1, 1, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, -1, None, None, "", "c-1"))
    bad.send(2, ApiKey.JoinGroup, 9, join("c-1"), 2)
    me = (m.JoinGroupMember("c-1", None, b"\x01"),)
    f = bad.receive(2, 3, joined("c-1", "c-1", 0, me))  # Tansu's generation 0
    assert f is not None and f.api == "JoinGroup" and "generation" in f.shape
    assert any(e.get("generation") == 1 for e in f.expected)
    assert f.actual["generation"] == 0  # type: ignore[index]


def test_member_ids_are_a_bijection() -> None:
    j = GroupJudge("g", CFG)
    one_member(j)
    # the target now claims a different member id for the same member: no hypothesis allows it
    j.send(3, ApiKey.SyncGroup, 5, m.SyncGroupRequest("g", "c-1", 1, None, "consumer", "range",
                                                      (("c-1", b"\x07"),)), 10)
    assert j.receive(3, 11, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x07")) is None
    j.send(4, ApiKey.JoinGroup, 9, join("c-1"), 20)
    f = j.receive(4, 21, joined("c-2", "c-2", 2, (m.JoinGroupMember("c-2", None, b"\x01"),)))
    assert f is not None


def test_timer_within_tolerance_may_or_may_not_have_fired() -> None:
    """A session expiring around the observation: both answers are allowed; long after, only one."""
    for answer in (Error.NONE, Error.UNKNOWN_MEMBER_ID):
        j = GroupJudge("g", CFG, Tolerance(late_ms=500))
        one_member(j)
        j.send(3, ApiKey.SyncGroup, 5, m.SyncGroupRequest("g", "c-1", 1, None, "consumer", "range",
                                                          (("c-1", b"\x07"),)), 10)
        assert j.receive(3, 11, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x07")) is None
        # session 1000 ms armed at ~10 ms: at 1100 ms it may have expired (late tolerance 500)
        j.send(4, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), 1100)
        assert j.receive(4, 1101, m.HeartbeatResponse(answer)) is None, answer
    j = GroupJudge("g", CFG, Tolerance(late_ms=500))
    one_member(j)
    j.send(3, ApiKey.SyncGroup, 5, m.SyncGroupRequest("g", "c-1", 1, None, "consumer", "range",
                                                      (("c-1", b"\x07"),)), 10)
    j.receive(3, 11, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x07"))
    j.send(4, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), 3000)  # long expired
    f = j.receive(4, 3001, m.HeartbeatResponse(Error.NONE))
    assert f is not None and f.expected == ({"error": "UNKNOWN_MEMBER_ID"},)
    # and a timer cannot fire before its deadline: at 200 ms the member is certainly alive
    j = GroupJudge("g", CFG, Tolerance(late_ms=500))
    one_member(j)
    j.send(3, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), 200)
    assert j.receive(3, 201, m.HeartbeatResponse(Error.UNKNOWN_MEMBER_ID)) is not None


def v3(mid: str = "") -> m.JoinGroupRequest:
    return m.JoinGroupRequest("g", mid, "consumer", PROTOS, 1000, 2000, None,
                              require_known_member_id=False, supports_skip_assignment=False)


def test_member_order_is_free_and_members_must_match() -> None:
    """The leader's member list is in Kafka's hash order: any order is allowed, other ids are not."""
    def two_members(order: tuple[str, ...]) -> object:
        j = GroupJudge("g", CFG)
        j.send(1, ApiKey.JoinGroup, 3, v3(), 0)
        a = (m.JoinGroupMember("a", None, b"\x01"),)
        assert j.receive(1, 1, m.JoinGroupResponse(Error.NONE, 1, None, "range", "a", "a", members=a)) is None
        j.send(2, ApiKey.SyncGroup, 2, m.SyncGroupRequest("g", "a", 1, assignments=(("a", b"\x01"),)), 2)
        assert j.receive(2, 3, m.SyncGroupResponse(Error.NONE, assignment=b"\x01")) is None
        j.send(3, ApiKey.JoinGroup, 3, v3(), 4)  # parks: PreparingRebalance
        j.send(4, ApiKey.JoinGroup, 3, v3("a"), 300)  # the rejoin completes the join phase
        both = tuple(m.JoinGroupMember(x, None, b"\x01") for x in order)
        got = j.receive(4, 301, m.JoinGroupResponse(Error.NONE, 2, None, "range", "a", "a", members=both))
        if got is not None:
            return got
        return j.receive(3, 302, m.JoinGroupResponse(Error.NONE, 2, None, "range", "a", "b"))
    assert two_members(("a", "b")) is None
    assert two_members(("b", "a")) is None
    assert two_members(("a", "a")) is not None  # "a" twice: not the model's members


def test_no_response_is_judged() -> None:
    j = GroupJudge("g", CFG, Tolerance(response_bound_ms=1000, process_ms=500))
    one_member(j)
    j.send(3, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), 10)
    assert j.silence(500) is None  # still within the bound
    f = j.silence(2000)
    assert f is not None and f.actual == NO_RESPONSE and f.api == "Heartbeat"


def test_parked_join_must_not_be_answered_early() -> None:
    """Member c-1 is Stable; a second member's join parks until c-1 rejoins: answering it at once
    is a finding, and answering the superseded one is too."""
    j = GroupJudge("g", CFG)
    one_member(j)
    j.send(3, ApiKey.SyncGroup, 5, m.SyncGroupRequest("g", "c-1", 1, None, "consumer", "range",
                                                      (("c-1", b"\x07"),)), 10)
    j.receive(3, 11, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x07"))
    j.send(4, ApiKey.JoinGroup, 3, v3(), 20)  # v3 new member: parks in PreparingRebalance
    assert j.may_be_parked(4, 30)
    f = j.receive(4, 40, joined("d-1", "d-1", 2, (m.JoinGroupMember("d-1", None, b"\x01"),)))
    assert f is not None and f.expected == ({"response": "parked (no answer yet)"},)


def test_out_of_order_reads_only_for_a_slow_target() -> None:
    """A new member's join parks (the group rebalances), then the leader heartbeats: in send order
    the heartbeat gets REBALANCE_IN_PROGRESS; NONE means the heartbeat was read first, which the
    judge allows only if this target has been seen answering as slowly as the gap between them."""
    def run(sync_latency: int) -> object:
        j = GroupJudge("g", CFG)
        one_member(j)
        j.send(3, ApiKey.SyncGroup, 5, m.SyncGroupRequest("g", "c-1", 1, None, "consumer", "range",
                                                          (("c-1", b"\x07"),)), 10)
        assert j.receive(3, 10 + sync_latency,
                         m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x07")) is None
        t = 20 + sync_latency
        j.send(4, ApiKey.JoinGroup, 3, v3(), t)  # parks: PreparingRebalance
        j.send(5, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), t + 250)
        return j.receive(5, t + 251, m.HeartbeatResponse(Error.NONE))
    assert run(sync_latency=5) is not None  # responsive target: order kept, NONE is a finding
    assert run(sync_latency=400) is None  # slow target: the heartbeat may have been read first


def test_empty_group_without_offsets_may_be_cleaned_up() -> None:
    """Kafka's periodic cleanupGroupMetadata removes an Empty group with no offsets at an unknown
    moment: DescribeGroups may then say Dead. A group with offsets is kept: Dead is a finding."""
    def after_leave(commit: bool) -> GroupJudge:
        j = GroupJudge("g", CFG, Tolerance(allowances=frozenset({GROUP_CLEANUP})))
        one_member(j)
        j.send(3, ApiKey.SyncGroup, 5, m.SyncGroupRequest("g", "c-1", 1, None, "consumer", "range",
                                                          (("c-1", b"\x07"),)), 10)
        j.receive(3, 11, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x07"))
        if commit:
            tp = m.TopicPartition("t", 0)
            j.send(4, ApiKey.OffsetCommit, 8, m.OffsetCommitRequest("g", "c-1", 1, ((tp, 5),)), 12)
            assert j.receive(4, 13, m.OffsetCommitResponse(((tp, Error.NONE),))) is None
        j.send(5, ApiKey.LeaveGroup, 5, m.LeaveGroupRequest("g", (m.MemberIdentity("c-1"),)), 14)
        assert j.receive(5, 15, m.LeaveGroupResponse(
            Error.NONE, (m.MemberLeaveResult("c-1", None, Error.NONE),))) is None
        j.send(6, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), 20)
        return j
    dead = m.DescribeGroupsResponse((m.DescribedGroup(Error.NONE, "g", "Dead", "", ""),))
    empty = m.DescribeGroupsResponse((m.DescribedGroup(Error.NONE, "g", "Empty", "consumer", ""),))
    assert after_leave(False).receive(6, 21, dead) is None
    assert after_leave(False).receive(6, 21, empty) is None
    assert after_leave(True).receive(6, 21, empty) is None
    assert after_leave(True).receive(6, 21, dead) is not None


def test_read_barrier_makes_the_order_known() -> None:
    """The slow target of the test above: the heartbeat sent 250 ms after the parked join may be
    read first, unless a read barrier (a DescribeGroups probe answered in between) showed the join
    processed: then NONE is a finding. Negative controls: a probe that still shows the group
    before the join proves nothing (NONE stays allowed), and REBALANCE_IN_PROGRESS after the
    barrier is no finding."""
    def run(probe_state: str | None, answer: Error) -> object:
        j = GroupJudge("g", CFG)
        one_member(j)
        j.send(3, ApiKey.SyncGroup, 5, m.SyncGroupRequest("g", "c-1", 1, None, "consumer", "range",
                                                          (("c-1", b"\x07"),)), 10)
        assert j.receive(3, 410, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x07")) is None
        j.send(4, ApiKey.JoinGroup, 3, v3(), 420)  # parks: PreparingRebalance
        assert not j.processed(4)
        if probe_state is not None:
            j.send(5, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), 430, probe=True)
            if probe_state == "PreparingRebalance":  # the join was read: both members, no metadata
                members = tuple(m.DescribedMember(x, None, "consumer", b"", b"") for x in ("c-1", "d-1"))
                described = m.DescribedGroup(Error.NONE, "g", probe_state, "consumer", "", members)
            else:  # not read yet: the Stable group of one member
                described = m.DescribedGroup(Error.NONE, "g", "Stable", "consumer", "range", (
                    m.DescribedMember("c-1", None, "consumer", b"\x01", b"\x07"),))
            assert j.receive(5, 431, m.DescribeGroupsResponse((described,))) is None
            assert j.processed(4) == (probe_state == "PreparingRebalance")
        j.send(6, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), 670)
        return j.receive(6, 671, m.HeartbeatResponse(answer))
    assert run(None, Error.NONE) is None  # no barrier: the heartbeat may have been read first
    assert run("Stable", Error.NONE) is None  # the probe came before the join: nothing known
    f = run("PreparingRebalance", Error.NONE)  # barrier held: the order is known
    assert f is not None and f.expected == ({"error": "REBALANCE_IN_PROGRESS"},)  # type: ignore[attr-defined]
    assert run("PreparingRebalance", Error.REBALANCE_IN_PROGRESS) is None


def test_a_probe_no_hypothesis_explains_is_ignored() -> None:
    """A target whose DescribeGroups differs from the model's: the probe is no finding and the
    barrier does not hold (the parked join stays unprocessed in some hypothesis)."""
    j = GroupJudge("g", CFG)
    one_member(j)
    j.send(3, ApiKey.JoinGroup, 3, v3(), 20)
    j.send(4, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), 30, probe=True)
    odd = m.DescribedGroup(Error.NONE, "g", "Rebalancing", "consumer", "", ())
    assert j.receive(4, 31, m.DescribeGroupsResponse((odd,))) is None
    assert not j.processed(3) and j.finding is None
    late = j.silence(20000)  # the parked join is overdue by now, the probe never
    assert late is not None and late.api == "JoinGroup"


def test_may_be_answered_tells_a_due_answer_from_a_parked_one() -> None:
    """The driver waits for a join the model may already have answered (the initial join phase,
    delay 0, ends on a timer that may or may not have fired), and does not wait for one the model
    keeps parked until another member rejoins (negative control)."""
    j = GroupJudge("g", CFG)
    j.send(1, ApiKey.JoinGroup, 9, join(), 0)
    j.receive(1, 1, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, -1, None, None, "", "c-1"))
    j.send(2, ApiKey.JoinGroup, 9, join("c-1"), 2)
    assert j.may_be_parked(2, 30) and j.may_be_answered(2, 30)  # the timer may have fired by now

    k = GroupJudge("g", CFG)
    one_member(k)
    k.send(3, ApiKey.SyncGroup, 5, m.SyncGroupRequest("g", "c-1", 1, None, "consumer", "range",
                                                      (("c-1", b"\x07"),)), 10)
    k.receive(3, 11, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x07"))
    k.send(4, ApiKey.JoinGroup, 3, v3(), 20)  # parks in PreparingRebalance until c-1 rejoins
    assert k.may_be_parked(4, 30) and not k.may_be_answered(4, 30)

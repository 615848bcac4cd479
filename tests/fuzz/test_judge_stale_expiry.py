"""Kafka 3.9's late session expiry: a member parked in JoinGroup when its old session deadline
passes is removed right after its join is answered (the DelayedHeartbeat was force-completed at
the deadline and evaluated after the join phase completed). The timeline is Kafka 3.9.2's, from
a probe run (benchmarks/fuzz_results.md, "late session expiry"): the judge must allow it, and
must still find a coordinator that expires a member that stays parked."""

from __future__ import annotations

from typing import Optional

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error

from fuzz.allowances import PROFILES
from fuzz.judge import Finding, GroupJudge, Tolerance

CFG = CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=60000,
                        group_initial_rebalance_delay_ms=0)
PROTOS = (m.ProtocolMetadata("range", b"\x01"),)

# the races are Kafka 3.9's: judged with its profile (fuzz/allowances.py; strict: test_allowances.py)
K39 = Tolerance(allowances=PROFILES["kafka-3.9"].allowances)

def join(mid: str = "") -> m.JoinGroupRequest:
    return m.JoinGroupRequest("g", mid, "consumer", PROTOS, 600, 2000)


def joined(mid: str, gen: int, members: tuple[str, ...] = ()) -> m.JoinGroupResponse:
    return m.JoinGroupResponse(Error.NONE, gen, "consumer", "range", "A", mid, False,
                               tuple(m.JoinGroupMember(x, None, b"\x01") for x in members))


def sync(mid: str, gen: int, assignments: tuple[tuple[str, bytes], ...] = ()) -> m.SyncGroupRequest:
    return m.SyncGroupRequest("g", mid, gen, None, "consumer", "range", assignments)


def stable_pair(j: GroupJudge) -> None:
    """A leads generation 2 with B (A joins alone, B joins, A rejoins; both sync); A heartbeats
    at 59 ms: its session deadline is 659 ms."""
    j.send(1, ApiKey.JoinGroup, 9, join(), 0)
    assert j.receive(1, 1, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, -1, None, None, "", "A")) is None
    j.send(2, ApiKey.JoinGroup, 9, join(), 3)
    assert j.receive(2, 4, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, -1, None, None, "", "B")) is None
    j.send(3, ApiKey.JoinGroup, 9, join("A"), 7)
    assert j.receive(3, 9, joined("A", 1, ("A",))) is None
    j.send(4, ApiKey.SyncGroup, 5, sync("A", 1, (("A", b"\x01"),)), 12)
    assert j.receive(4, 14, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x01")) is None
    j.send(5, ApiKey.JoinGroup, 9, join("B"), 18)  # parks: PreparingRebalance
    j.send(6, ApiKey.JoinGroup, 9, join("A"), 38)  # completes generation 2
    assert j.receive(6, 44, joined("A", 2, ("A", "B"))) is None
    assert j.receive(5, 45, joined("B", 2)) is None
    j.send(7, ApiKey.SyncGroup, 5, sync("A", 2, (("A", b"\x01"), ("B", b"\x02"))), 50)
    assert j.receive(7, 52, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x01")) is None
    j.send(8, ApiKey.SyncGroup, 5, sync("B", 2), 53)
    assert j.receive(8, 54, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x02")) is None
    j.send(9, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "A", 2), 59)
    assert j.receive(9, 60, m.HeartbeatResponse(Error.NONE)) is None


def race(j: GroupJudge, b_joins_at: int) -> Optional[Finding]:
    """A rejoins at 159 ms (parks), B heartbeats at 360 ms and rejoins at `b_joins_at`, which
    completes generation 3 for both; 50 ms later A is gone (DescribeGroups, then the leave)."""
    stable_pair(j)
    j.send(10, ApiKey.JoinGroup, 9, join("A"), 159)  # the leader rejoins: a rebalance, A parks
    j.send(11, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "B", 2), 360)
    assert j.receive(11, 361, m.HeartbeatResponse(Error.REBALANCE_IN_PROGRESS)) is None
    t = b_joins_at
    j.send(12, ApiKey.JoinGroup, 9, join("B"), t)
    for n, resp in ((12, joined("B", 3)), (10, joined("A", 3, ("A", "B")))):
        f = j.receive(n, t + 1, resp)
        if f is not None:
            return f
    j.send(13, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), t + 50)
    f = j.receive(13, t + 51, m.DescribeGroupsResponse((m.DescribedGroup(
        Error.NONE, "g", "PreparingRebalance", "consumer", "",
        (m.DescribedMember("B", None, "consumer", b"", b""),)),)))
    if f is not None:
        return f
    j.send(14, ApiKey.LeaveGroup, 5, m.LeaveGroupRequest("g", (m.MemberIdentity("A", None),
                                                               m.MemberIdentity("B", None))), t + 60)
    return j.receive(14, t + 61, m.LeaveGroupResponse(Error.NONE, (
        m.MemberLeaveResult("A", None, Error.UNKNOWN_MEMBER_ID),
        m.MemberLeaveResult("B", None, Error.NONE))))


def test_kafka_removes_a_member_whose_old_session_expired_while_it_was_parked() -> None:
    assert race(GroupJudge("g", CFG, K39), 663) is None  # 3 ms after A's deadline, as Kafka did


def test_an_atomic_session_expiry_would_call_it_a_finding() -> None:
    """Negative control: the model's own expiry (evaluated when it fires) does not allow it."""
    f = race(GroupJudge("g", CFG, Tolerance(stale_expiry_ms=0, allowances=K39.allowances)), 663)
    assert f is not None and f.api == "DescribeGroups"


def test_the_race_needs_the_old_deadline_near_the_completion() -> None:
    """Long before A's deadline (659 ms) nothing is committed: removing A is a finding; long after
    it, the expiry was evaluated while A was still parked, and ignored."""
    early = race(GroupJudge("g", CFG, K39), 400)
    assert early is not None and early.api == "DescribeGroups"
    late = race(GroupJudge("g", CFG, Tolerance(late_ms=300, allowances=K39.allowances)), 900)
    assert late is not None and late.api == "DescribeGroups"


def test_a_member_that_stays_parked_is_never_expired() -> None:
    """The seeded bug session-expiry-while-parked: A, parked in JoinGroup, answered
    UNKNOWN_MEMBER_ID when its old session deadline passes, is still a finding."""
    j = GroupJudge("g", CFG, K39)
    stable_pair(j)
    j.send(10, ApiKey.JoinGroup, 9, join("A"), 159)
    # a read barrier: the rebalance A's rejoin started shows, so A is parked from here on
    j.send(11, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), 170, probe=True)
    assert j.receive(11, 171, m.DescribeGroupsResponse((m.DescribedGroup(
        Error.NONE, "g", "PreparingRebalance", "consumer", "",
        tuple(m.DescribedMember(x, None, "consumer", b"", b"") for x in ("A", "B"))),))) is None
    assert j.processed(10)
    f = j.receive(10, 700, m.JoinGroupResponse(Error.UNKNOWN_MEMBER_ID, -1, None, None, "", "A"))
    assert f is not None and f.api == "JoinGroup"


def pending_join(j: GroupJudge, joins_at: int) -> Optional[Finding]:
    """X gets a MEMBER_ID_REQUIRED id at 0 ms (pending for its 600 ms session) and joins with it
    at `joins_at`; Kafka never answers that JoinGroup, and the group is Empty 100 ms later."""
    j.send(1, ApiKey.JoinGroup, 9, join(), 0)
    assert j.receive(1, 1, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, -1, None, None, "", "X")) is None
    j.send(2, ApiKey.JoinGroup, 9, join("X"), joins_at)
    j.send(3, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), joins_at + 100)
    f = j.receive(3, joins_at + 101, m.DescribeGroupsResponse((m.DescribedGroup(
        Error.NONE, "g", "Empty", "consumer", ""),)))
    return f if f is not None else j.silence(joins_at + 8000)


def test_kafka_drops_a_join_whose_pending_id_expired_while_it_joined() -> None:
    """Kafka 3.9.2 (benchmarks/fuzz_results.md): `Adding new member X` at 2305 ms, `Pending
    member X ... has been removed after session timeout expiration` at 2308 ms, the group empty
    at 2332 ms, and X's JoinGroup never answered."""
    assert pending_join(GroupJudge("g", CFG, K39), 603) is None


def test_a_dropped_join_far_from_the_pending_deadline_is_a_finding() -> None:
    # the model's atomic expiry: either X's id expired first (its join answered UNKNOWN_MEMBER_ID,
    # the group never had a member: no protocol type) or X joined and stays until answered
    f = pending_join(GroupJudge("g", CFG, Tolerance(stale_expiry_ms=0, allowances=K39.allowances)), 603)
    assert f is not None and f.api == "DescribeGroups"
    f = pending_join(GroupJudge("g", CFG, K39), 300)
    assert f is not None and f.api == "DescribeGroups"


def heartbeat_at_deadline(j: GroupJudge, beat_at: int) -> Optional[Finding]:
    """A's session is due at 659 ms; A heartbeats at `beat_at` and is answered NONE, yet 40 ms
    later A is gone (the expiry committed before the heartbeat, evaluated after its re-arm)."""
    stable_pair(j)
    j.send(10, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "B", 2), 400)
    assert j.receive(10, 401, m.HeartbeatResponse(Error.NONE)) is None
    j.send(11, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "A", 2), beat_at)
    f = j.receive(11, beat_at + 1, m.HeartbeatResponse(Error.NONE))
    if f is not None:
        return f
    j.send(12, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), beat_at + 40)
    return j.receive(12, beat_at + 41, m.DescribeGroupsResponse((m.DescribedGroup(
        Error.NONE, "g", "PreparingRebalance", "consumer", "",
        (m.DescribedMember("B", None, "consumer", b"", b""),)),)))


def test_a_heartbeat_at_the_deadline_may_be_answered_and_its_member_removed_after_it() -> None:
    """The same two steps with a heartbeat holding the lock (from Kafka's code path; the probe
    shows the JoinGroup case)."""
    assert heartbeat_at_deadline(GroupJudge("g", CFG, K39), 661) is None
    f = heartbeat_at_deadline(GroupJudge("g", CFG, Tolerance(stale_expiry_ms=0, allowances=K39.allowances)), 661)
    assert f is not None and f.api == "DescribeGroups"
    f = heartbeat_at_deadline(GroupJudge("g", CFG, K39), 450)  # long before the deadline
    assert f is not None and f.api == "DescribeGroups"

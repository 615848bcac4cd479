"""Join-phase completion, InitialDelayedJoin, DelayedSync and timers (semantics §2.4, §2.10)."""

from __future__ import annotations

from model.messages import JoinGroupMember, MemberIdentity
from model.vocabulary import Error, GroupState

from ref_harness import H


def test_initial_delayed_join_waits_and_completes_at_delay() -> None:
    h = H(group_initial_rebalance_delay_ms=3000)
    _, call = h.new_member()
    h.advance(3000)
    assert not call.done, "fires only when the deadline is strictly less than the clock"
    h.advance(1)
    r = call.join
    assert (r.error, r.generation_id, r.protocol_name, r.leader, r.skip_assignment) == (
        Error.NONE, 1, "range", r.member_id, False)
    assert r.members == (JoinGroupMember(r.member_id, None, b"\x01"),)
    assert h.state() == GroupState.CompletingRebalance


def test_initial_delay_extends_while_new_members_arrive_in_generation_zero() -> None:
    h = H(group_initial_rebalance_delay_ms=3000)
    _, first = h.new_member(rebalance=10000)
    h.advance(1000)
    _, second = h.new_member(rebalance=10000)  # sets newMemberAdded
    h.advance(2001)  # t=3001: first InitialDelayedJoin expires and extends by 3000 (remaining 7000)
    assert not first.done and h.state() == GroupState.PreparingRebalance
    h.advance(3000)  # t=6001: deadline 6001 not < 6001
    assert not first.done
    h.advance(1)
    assert first.join.generation_id == 1 and second.join.generation_id == 1


def test_initial_delay_does_not_complete_early_even_if_all_joined() -> None:
    h = H(group_initial_rebalance_delay_ms=3000)
    _, call = h.new_member()
    h.advance(100)
    assert not call.done


def test_join_completes_early_when_all_members_rejoin() -> None:
    h = H()
    a, b = h.stable(2)
    ja = h.join(a)
    assert not ja.done
    jb = h.join(b)
    assert ja.join.generation_id == 2 and jb.join.generation_id == 2
    assert ja.join.leader == a and len(ja.join.members) == 2 and jb.join.members == ()


def test_rebalance_timeout_removes_dynamic_members_that_did_not_rejoin() -> None:
    h = H()
    a, b = h.stable(2, rebalance=20000, session=30000)
    ja = h.join(a, rebalance=20000, session=30000)
    h.advance(20000)
    assert not ja.done
    h.advance(1)
    r = ja.join
    assert (r.generation_id, r.leader, [m.member_id for m in r.members]) == (2, a, [a])
    assert h.view().member(b) is None


def test_new_leader_elected_when_leader_does_not_rejoin() -> None:
    h = H()
    a, b = h.stable(2, rebalance=20000, session=30000)
    h.join(a, rebalance=20000, session=30000)
    h.leave(MemberIdentity(a))  # remove the leader while PreparingRebalance: b becomes leader
    assert h.view().leader == b
    jb = h.join(b)
    assert jb.join.leader == b and jb.join.generation_id == 2


def test_static_member_not_removed_and_leader_moves_to_joined_member() -> None:
    h = H()
    s1, s2 = h.static_stable(("i1", "i2"), rebalance=20000, session=60000)
    h.c.setup_prepare_rebalance("g")
    j2 = h.join(s2, instance="i2", rebalance=20000, session=60000)
    j2b = h.join(s2, instance="i2", rebalance=20000, session=60000)  # replaces j2's callback
    h.advance(20001)
    v = h.view()
    assert v.state == GroupState.CompletingRebalance and v.leader == s2 and v.generation_id == 2
    assert {m.member_id for m in v.members} == {s1, s2}, "static s1 kept (KAFKA-8220)"
    assert not j2.done
    r = j2b.join
    assert r.leader == s2 and {m.member_id for m in r.members} == {s1, s2}


def test_no_member_rejoined_rearms_delayed_join() -> None:
    h = H()
    s1, s2 = h.static_stable(("i1", "i2"), rebalance=20000, session=60000)
    h.c.setup_prepare_rebalance("g")
    h.advance(20001)
    v = h.view()
    assert (v.state, v.generation_id, len(v.members)) == (GroupState.PreparingRebalance, 1, 2)
    h.advance(40000)  # t≈60001: session timeouts (armed at sync, 60000) remove both
    v = h.view()
    assert v.members == ()
    h.advance(20001)
    assert h.state() == GroupState.Empty and h.view().generation_id == 2


def test_all_members_leave_during_rebalance_group_becomes_empty() -> None:
    h = H()
    a, b = h.stable(2)
    ja = h.join(a)
    h.leave(MemberIdentity(b))
    assert ja.join.generation_id == 2  # b's leave completed the join phase
    h.leave(MemberIdentity(a))  # CompletingRebalance -> PreparingRebalance -> (all joined) Empty
    v = h.view()
    assert (v.state, v.generation_id, v.protocol_name, v.leader) == (GroupState.Empty, 3, None, None)


def test_delayed_sync_removes_members_that_never_sync() -> None:
    h = H()
    a, b = h.stable(2, rebalance=20000, session=30000)
    h.join(a, rebalance=20000, session=30000)
    h.join(b, rebalance=20000, session=30000)
    sa = h.sync(a, 2, assignments=((a, b"x"), (b, b"y")))
    assert sa.sync.error == Error.NONE and h.state() == GroupState.Stable
    h.advance(9000)
    h.heartbeat(b, 2)  # heartbeats do not cancel the DelayedSync
    h.heartbeat(a, 2)
    h.advance(11001)
    assert h.rebalances_without(b)


def test_delayed_sync_with_parked_follower_when_leader_never_syncs() -> None:
    h = H()
    a, b = h.stable(2, rebalance=20000)
    h.join(a, rebalance=20000)
    h.join(b, rebalance=20000)
    sb = h.sync(b, 2)
    assert not sb.done
    h.advance(20001)
    assert sb.sync.error == Error.REBALANCE_IN_PROGRESS
    v = h.view()
    assert v.member(a) is None and v.state == GroupState.PreparingRebalance and v.leader == b


def test_member_session_expiry_in_stable_triggers_rebalance() -> None:
    h = H()
    a, b = h.stable(2, session=10000)
    h.advance(9000)
    assert h.heartbeat(a, 1).heartbeat.error == Error.NONE
    h.advance(1001)  # t=10001: b (last re-armed at t=0) expires
    assert h.rebalances_without(b)


def test_session_deadline_is_strict() -> None:
    h = H()
    (a,) = h.stable(1, session=10000)
    h.advance(10000)
    assert h.view().member(a) is not None
    h.advance(1)
    assert h.view().member(a) is None


def test_parked_member_is_not_expired_but_new_member_is_after_join_timeout() -> None:
    h = H(new_member_join_timeout_ms=300000)
    a, b = h.stable(2, session=10000, rebalance=600000)
    ja = h.join(a, session=10000, rebalance=600000)
    newcomer = h.join(require_known=False, session=10000, rebalance=600000)
    for _ in range(29):
        h.advance(10000)
        h.heartbeat(b, 1)
    assert h.view().member(a) is not None, "parked a survives its session timeout"
    h.advance(5000)
    h.heartbeat(b, 1)
    h.advance(5001)  # t0+300001: the new member's join timeout
    assert newcomer.join.error == Error.UNKNOWN_MEMBER_ID and newcomer.join.member_id == ""
    assert len(h.view().members) == 2 and not ja.done


def test_pending_member_expires_after_its_session_timeout_and_unblocks_join() -> None:
    h = H()
    a, b = h.stable(2, session=10000)
    pending = h.join(session=7000).join.member_id
    ja = h.join(a)
    jb = h.join(b)
    assert not ja.done
    h.advance(7001)
    assert h.view().pending_members == ()
    assert pending not in [m.member_id for m in ja.join.members]
    assert jb.join.generation_id == 2


def test_heartbeat_in_preparing_rebalance_keeps_member_alive() -> None:
    h = H()
    a, b = h.stable(2, session=10000, rebalance=60000)
    h.join(a, session=10000, rebalance=60000)
    for _ in range(5):
        h.advance(9000)
        assert h.heartbeat(b, 1).heartbeat.error == Error.REBALANCE_IN_PROGRESS
    assert h.view().member(b) is not None


def test_equal_deadlines_fire_in_arming_order() -> None:
    h = H()
    a, b = h.stable(2, session=10000)  # both re-armed at sync time t=6002 -> same deadline
    h.advance(10001 + 6002)
    v = h.view()
    # a expires first (armed first): rebalance; then b expires during PreparingRebalance: join check -> Empty
    assert v.state == GroupState.Empty and v.generation_id == 2

"""SyncGroup, Heartbeat, LeaveGroup (semantics §2.5-§2.7 and their §2.13 rows)."""

from __future__ import annotations

from model.coordinator_api import MemberSpec
from model.messages import MemberIdentity, MemberLeaveResult
from model.vocabulary import Error, GroupState

from ref_harness import H


def _completing(h: H) -> tuple[str, str]:
    a, b = h.stable(2)
    h.join(a)
    h.join(b)
    assert h.state() == GroupState.CompletingRebalance
    return a, b


# --- SyncGroup ------------------------------------------------------------------------------


def test_sync_missing_group_and_common_checks() -> None:
    h = H(not_owned_groups=frozenset({"x"}))
    assert h.sync("m", 1).sync == h.sync("m", 1).sync
    r = h.sync("m", 1).sync
    assert (r.error, r.assignment, r.protocol_type, r.protocol_name) == (Error.UNKNOWN_MEMBER_ID, b"", None, None)
    assert h.sync("m", 1, group="").sync.error == Error.INVALID_GROUP_ID
    assert h.sync("m", 1, group="x").sync.error == Error.NOT_COORDINATOR


def test_sync_validation_order() -> None:
    h = H()
    a, b = h.static_stable(("i1", "i2"))
    assert h.sync("zombie", 99, instance="i1").sync.error == Error.FENCED_INSTANCE_ID
    assert h.sync("nobody", 99).sync.error == Error.UNKNOWN_MEMBER_ID
    assert h.sync(a, 99, protocol_type="bad").sync.error == Error.ILLEGAL_GENERATION
    assert h.sync(a, 1, protocol_type="bad").sync.error == Error.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(a, 1, protocol_name="bad").sync.error == Error.INCONSISTENT_GROUP_PROTOCOL
    r = h.sync(a, 1, protocol_type="consumer", protocol_name="range").sync
    assert (r.error, r.assignment, r.protocol_type, r.protocol_name) == (Error.NONE, a.encode(), "consumer", "range")


def test_sync_in_empty_group_with_members_is_unknown_member() -> None:
    h = H()
    h.c.setup_add_group("g", GroupState.Empty, (MemberSpec("m"),), "consumer")
    assert h.sync("m", 0).sync.error == Error.UNKNOWN_MEMBER_ID


def test_sync_in_preparing_rebalance_is_rebalance_in_progress() -> None:
    h = H()
    a, b = h.stable(2)
    h.join(a)
    assert h.sync(a, 1, assignments=((a, b"z"),)).sync.error == Error.REBALANCE_IN_PROGRESS
    assert h.sync(b, 1).sync.error == Error.REBALANCE_IN_PROGRESS
    assert h.view().member(a).assignment == a.encode()  # type: ignore[union-attr]


def test_follower_parks_until_leader_assignment_is_persisted() -> None:
    h = H()
    a, b = _completing(h)
    sb = h.sync(b, 2)
    assert not sb.done and h.view().member(b).awaiting_sync  # type: ignore[union-attr]
    sa = h.sync(a, 2, assignments=((b, b"B"),))  # a missing from the assignment -> empty bytes
    assert sa.sync.assignment == b"" and sa.sync.error == Error.NONE
    assert (sb.sync.error, sb.sync.assignment, sb.sync.protocol_name) == (Error.NONE, b"B", "range")
    assert h.state() == GroupState.Stable


def test_leader_sync_persistence_failure_answers_mapped_error_and_rebalances() -> None:
    h = H()
    a, b = _completing(h)
    sb = h.sync(b, 2)
    h.c.set_append_result(Error.REQUEST_TIMED_OUT)
    sa = h.sync(a, 2, assignments=((a, b"A"), (b, b"B")))
    assert sa.sync.error == Error.REBALANCE_IN_PROGRESS  # REQUEST_TIMED_OUT mapped (GMM:250)
    assert (sb.sync.error, sb.sync.assignment, sb.sync.protocol_type) == (Error.REBALANCE_IN_PROGRESS, b"", None)
    v = h.view()
    assert v.state == GroupState.PreparingRebalance and all(m.assignment == b"" for m in v.members)


def test_leader_sync_message_too_large_is_unknown_server_error() -> None:
    h = H()
    a, _ = _completing(h)
    h.c.set_append_result(Error.MESSAGE_TOO_LARGE)
    assert h.sync(a, 2).sync.error == Error.UNKNOWN_SERVER_ERROR


def test_sync_in_stable_returns_stored_assignment_and_ignores_request() -> None:
    h = H()
    a, b = h.stable(2)
    r = h.sync(b, 1, assignments=((b, b"other"),)).sync
    assert r.assignment == b.encode()


# --- Heartbeat ------------------------------------------------------------------------------


def test_heartbeat_matrix() -> None:
    h = H(not_owned_groups=frozenset({"x"}))
    assert h.heartbeat("m", 0, group="x").heartbeat.error == Error.NOT_COORDINATOR
    assert h.heartbeat("m", 0, group="").heartbeat.error == Error.INVALID_GROUP_ID
    assert h.heartbeat("m", 0).heartbeat.error == Error.UNKNOWN_MEMBER_ID  # missing group
    a, b = h.stable(2)
    assert h.heartbeat(a, 1).heartbeat.error == Error.NONE
    assert h.heartbeat(a, 0).heartbeat.error == Error.ILLEGAL_GENERATION
    assert h.heartbeat("zz", 1).heartbeat.error == Error.UNKNOWN_MEMBER_ID
    h.join(a)
    assert h.heartbeat(b, 1).heartbeat.error == Error.REBALANCE_IN_PROGRESS
    assert h.heartbeat(b, 2).heartbeat.error == Error.ILLEGAL_GENERATION
    h.join(b)
    assert h.state() == GroupState.CompletingRebalance
    assert h.heartbeat(b, 2).heartbeat.error == Error.NONE
    assert h.heartbeat(b, 1).heartbeat.error == Error.ILLEGAL_GENERATION


def test_heartbeat_empty_group_and_dead_group() -> None:
    h = H()
    (a,) = h.stable(1)
    h.leave(MemberIdentity(a))
    assert h.state() == GroupState.Empty
    assert h.heartbeat(a, 1).heartbeat.error == Error.UNKNOWN_MEMBER_ID
    h2 = H()
    h2.c.setup_add_group("g", GroupState.Empty, (MemberSpec("m"),), "consumer")
    assert h2.heartbeat("m", 0).heartbeat.error == Error.UNKNOWN_MEMBER_ID  # Empty with members
    h3 = H()
    h3.c.setup_add_group("g", GroupState.Dead, (), "consumer")
    assert h3.heartbeat("m", 0).heartbeat.error == Error.COORDINATOR_NOT_AVAILABLE


def test_heartbeat_fenced_static_member() -> None:
    h = H()
    h.static_stable(("i1",))
    assert h.heartbeat("old", 1, instance="i1").heartbeat.error == Error.FENCED_INSTANCE_ID
    assert h.heartbeat("old", 1, instance="i9").heartbeat.error == Error.UNKNOWN_MEMBER_ID


# --- LeaveGroup -----------------------------------------------------------------------------


def test_leave_missing_group_and_dead_group() -> None:
    h = H()
    r = h.leave(MemberIdentity("a"), MemberIdentity("", "i")).leave
    assert r.error == Error.NONE
    assert r.members == (
        MemberLeaveResult("a", None, Error.UNKNOWN_MEMBER_ID),
        MemberLeaveResult("", "i", Error.UNKNOWN_MEMBER_ID),
    )
    h.c.setup_add_group("g", GroupState.Dead, (), "consumer")
    r = h.leave(MemberIdentity("a")).leave
    assert (r.error, r.members) == (Error.COORDINATOR_NOT_AVAILABLE, ())


def test_leave_in_stable_rebalances_and_batch_results_in_request_order() -> None:
    h = H()
    _, _, c = h.stable(3)
    r = h.leave(MemberIdentity("zz"), MemberIdentity(c), MemberIdentity("", "nope")).leave
    assert [m.error for m in r.members] == [Error.UNKNOWN_MEMBER_ID, Error.NONE, Error.UNKNOWN_MEMBER_ID]
    v = h.view()
    assert v.state == GroupState.PreparingRebalance and v.member(c) is None


def test_leave_by_instance_id_and_fencing() -> None:
    h = H()
    s1, s2 = h.static_stable(("i1", "i2"))
    r = h.leave(MemberIdentity("stale", "i1"), MemberIdentity("", "i2")).leave
    assert [m.error for m in r.members] == [Error.FENCED_INSTANCE_ID, Error.NONE]
    assert h.view().member(s2) is None and h.view().member(s1) is not None


def test_leave_of_parked_member_answers_its_join_unknown_member() -> None:
    h = H()
    a, b = h.stable(2)
    ja = h.join(a)
    h.leave(MemberIdentity(a))
    assert (ja.join.error, ja.join.member_id, ja.join.generation_id) == (Error.UNKNOWN_MEMBER_ID, "", -1)


def test_leave_in_completing_rebalance_fails_parked_syncs() -> None:
    h = H()
    a, b = _completing(h)
    sb = h.sync(b, 2)
    h.leave(MemberIdentity(a))
    assert sb.sync.error == Error.REBALANCE_IN_PROGRESS
    assert h.state() == GroupState.PreparingRebalance and h.view().leader == b


def test_leave_of_pending_member() -> None:
    h = H()
    a, b = h.stable(2)
    pending = h.join().join.member_id
    ja, jb = h.join(a), h.join(b)
    assert not ja.done
    r = h.leave(MemberIdentity(pending)).leave
    assert r.members[0].error == Error.NONE and h.view().pending_members == ()
    assert ja.join.generation_id == 2 and jb.done
    # pending id in Empty: dropped without state change
    h2 = H()
    p2 = h2.join().join.member_id
    assert h2.leave(MemberIdentity(p2)).leave.members[0].error == Error.NONE
    assert h2.view().pending_members == () and h2.state() == GroupState.Empty

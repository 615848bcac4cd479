"""JoinGroup (semantics §2.0-§2.3 and the Join rows of the §2.13 matrix)."""

from __future__ import annotations

from model.coordinator_api import MemberSpec
from model.messages import JoinGroupMember, ProtocolMetadata
from model.vocabulary import NO_GENERATION, Error, GroupState

from ref_harness import RANGE, H


def test_common_checks_invalid_group_id_and_not_coordinator() -> None:
    h = H(not_owned_groups=frozenset({"other"}))
    r = h.join("m", group="").join
    assert (r.error, r.member_id, r.generation_id, r.leader) == (Error.INVALID_GROUP_ID, "m", NO_GENERATION, "")
    r = h.join("m", group="other").join
    assert (r.error, r.member_id) == (Error.NOT_COORDINATOR, "m")
    assert h.c.group_view("other") is None


def test_invalid_session_timeout_before_group_lookup() -> None:
    h = H(group_min_session_timeout_ms=6000, group_max_session_timeout_ms=30000)
    for session in (5999, 30001):
        r = h.join(session=session).join
        assert (r.error, r.member_id, r.generation_id) == (Error.INVALID_SESSION_TIMEOUT, "", -1)
    assert h.c.group_view("g") is None  # rejected before getOrMaybeCreateGroup


def test_missing_group_with_member_id_is_unknown_member() -> None:
    h = H()
    r = h.join("ghost").join
    assert (r.error, r.member_id, r.protocol_type, r.protocol_name) == (Error.UNKNOWN_MEMBER_ID, "ghost", None, None)
    assert h.c.group_view("g") is None


def test_member_id_required_in_every_live_state() -> None:
    h = H()
    r = h.join().join  # Empty (new group)
    assert (r.error, r.member_id, r.generation_id, r.leader, r.members) == (
        Error.MEMBER_ID_REQUIRED, "c-u1", -1, "", ())
    v = h.view()
    assert (v.state, v.pending_members, v.members) == (GroupState.Empty, ("c-u1",), ())
    ids = h.stable(2)
    assert h.join().join.error == Error.MEMBER_ID_REQUIRED  # Stable: no rebalance yet
    assert h.state() == GroupState.Stable
    h.join(ids[0])  # leader rejoin -> PreparingRebalance
    assert h.state() == GroupState.PreparingRebalance
    r = h.join().join
    assert r.error == Error.MEMBER_ID_REQUIRED and r.member_id in h.view().pending_members


def test_dynamic_v3_join_creates_member_and_starts_initial_rebalance() -> None:
    h = H()
    call = h.join(require_known=False)
    assert not call.done
    v = h.view()
    assert v.state == GroupState.PreparingRebalance and v.leader == "c-u1"
    m = v.member("c-u1")
    assert m is not None and m.awaiting_join and m.is_new


def test_inconsistent_protocol_for_new_and_current_members() -> None:
    h = H()
    r = h.join(protocol_type="").join  # Empty: protocol type must be non-empty
    assert (r.error, r.member_id) == (Error.INCONSISTENT_GROUP_PROTOCOL, "")
    r = h.join(protocols=()).join
    assert r.error == Error.INCONSISTENT_GROUP_PROTOCOL
    ids = h.stable(1)
    r = h.join(protocol_type="connect").join
    assert (r.error, r.member_id) == (Error.INCONSISTENT_GROUP_PROTOCOL, "")
    r = h.join(protocols=(ProtocolMetadata("roundrobin"),)).join
    assert r.error == Error.INCONSISTENT_GROUP_PROTOCOL
    r = h.join(ids[0], protocol_type="connect").join
    assert (r.error, r.member_id) == (Error.INCONSISTENT_GROUP_PROTOCOL, ids[0])


def test_pending_member_second_phase_joins_and_blocks_completion() -> None:
    h = H(group_initial_rebalance_delay_ms=0)
    ids = h.stable(1)
    h.join(ids[0])  # leader rejoins: Stable -> PreparingRebalance, all joined -> completes at once
    assert h.state() == GroupState.CompletingRebalance
    h2 = H(group_initial_rebalance_delay_ms=0)
    a, b = h2.stable(2)
    pending = h2.join().join.member_id
    ja = h2.join(a)
    jb = h2.join(b)
    assert not ja.done and not jb.done, "pending id blocks completion (KAFKA-7909)"
    jp = h2.join(pending)
    assert all(c.done for c in (ja, jb, jp))
    assert jp.join.generation_id == 2 and len(ja.join.members) == 3


def test_pending_member_joining_with_instance_id_is_unknown_server_error() -> None:
    h = H()
    pending = h.join().join.member_id
    r = h.join(pending, instance="i").join
    assert (r.error, r.member_id, r.generation_id) == (Error.UNKNOWN_SERVER_ERROR, "", -1)
    assert h.view().pending_members == (pending,)


def test_validate_current_member_errors() -> None:
    h = H()
    ids = h.static_stable(("i1",))
    r = h.join("wrong", instance="i1").join
    assert (r.error, r.member_id) == (Error.FENCED_INSTANCE_ID, "wrong")
    r = h.join(ids[0], instance="nope").join
    assert r.error == Error.UNKNOWN_MEMBER_ID
    r = h.join("nobody").join
    assert (r.error, r.member_id) == (Error.UNKNOWN_MEMBER_ID, "nobody")


def test_follower_same_metadata_in_stable_gets_current_generation() -> None:
    h = H()
    leader, follower = h.stable(2)
    r = h.join(follower).join
    assert (r.error, r.generation_id, r.leader, r.member_id, r.members, r.protocol_name, r.protocol_type) == (
        Error.NONE, 1, leader, follower, (), "range", "consumer")
    assert h.state() == GroupState.Stable


def test_leader_join_in_stable_always_rebalances() -> None:
    h = H()
    leader, follower = h.stable(2)
    call = h.join(leader)
    assert not call.done and h.state() == GroupState.PreparingRebalance
    assert h.heartbeat(follower, 1).heartbeat.error == Error.REBALANCE_IN_PROGRESS


def test_follower_changed_metadata_in_stable_rebalances() -> None:
    h = H()
    _, follower = h.stable(2)
    call = h.join(follower, protocols=(ProtocolMetadata("range", b"\x02"),))
    assert not call.done and h.state() == GroupState.PreparingRebalance


def test_completing_rebalance_rejoin_same_and_changed_metadata() -> None:
    h = H(group_initial_rebalance_delay_ms=0)
    leader, follower = h.stable(2)
    h.join(leader)
    h.join(follower)
    assert h.state() == GroupState.CompletingRebalance
    parked = h.sync(follower, 2)
    r = h.join(leader).join  # identical metadata: answer now, with members
    assert (r.error, r.generation_id, r.leader) == (Error.NONE, 2, leader)
    assert r.members == (JoinGroupMember(leader, None, b"\x01"), JoinGroupMember(follower, None, b"\x01"))
    r = h.join(follower).join
    assert (r.error, r.members) == (Error.NONE, ())
    assert not parked.done
    call = h.join(follower, protocols=(ProtocolMetadata("range", b"\x09"),))
    assert not call.done and h.state() == GroupState.PreparingRebalance
    assert parked.sync.error == Error.REBALANCE_IN_PROGRESS and parked.sync.protocol_type is None


def test_preparing_rebalance_second_join_replaces_parked_callback_silently() -> None:
    h = H()
    leader, follower = h.stable(2)
    first = h.join(leader)
    second = h.join(leader)
    assert h.view().member(leader).awaiting_join  # type: ignore[union-attr]
    h.join(follower)
    assert not first.done, "the replaced callback is never answered"
    assert second.join.error == Error.NONE


def test_group_max_size_rejects_new_member_in_stable() -> None:
    h = H(group_max_size=2)
    h.stable(2)
    r = h.join(require_known=False).join
    assert (r.error, r.member_id, r.generation_id, r.leader) == (Error.GROUP_MAX_SIZE_REACHED, "", -1, "")
    assert h.state() == GroupState.Stable and len(h.view().members) == 2


def test_group_max_size_counts_parked_members_in_preparing_rebalance() -> None:
    h = H(group_max_size=2)
    a, b = h.stable(2)
    h.join(a)  # PreparingRebalance, 1 parked
    newcomer = h.join(require_known=False)  # 1 parked < 2: accepted and parked
    assert not newcomer.done
    rb = h.join(b).join  # b exists but is not parked; 2 parked == limit: rejected and removed (KAFKA-9885)
    assert (rb.error, rb.member_id) == (Error.GROUP_MAX_SIZE_REACHED, "")
    assert newcomer.join.error == Error.NONE and newcomer.join.generation_id == 2
    assert [m.member_id for m in h.view().members] == [a, newcomer.join.member_id]


def test_dead_group_join_answers_coordinator_not_available() -> None:
    h = H()
    h.c.setup_add_group("g", GroupState.Dead, (), "consumer")
    r = h.join().join
    assert (r.error, r.member_id) == (Error.COORDINATOR_NOT_AVAILABLE, "")
    r = h.join("m").join
    assert (r.error, r.member_id) == (Error.COORDINATOR_NOT_AVAILABLE, "m")


def test_known_member_in_empty_group_is_unknown_member() -> None:
    h = H()
    h.c.setup_add_group("g", GroupState.Empty, (MemberSpec("m"),), "consumer")
    r = h.join("m", protocols=(ProtocolMetadata("range", b""),)).join
    assert (r.error, r.member_id) == (Error.UNKNOWN_MEMBER_ID, "m")


def test_new_group_from_rejected_join_stays_empty_in_cache() -> None:
    h = H()
    h.join(protocol_type="")
    v = h.view()
    assert (v.state, v.generation_id, v.members, v.protocol_type) == (GroupState.Empty, 0, (), None)


def test_uses_insertion_order_for_leader_member_list() -> None:
    h = H(group_initial_rebalance_delay_ms=0)
    ids = h.stable(3)
    assert h.view().leader == ids[0]
    assert [m.member_id for m in h.view().members] == sorted(ids, key=lambda m: int(m.split("u")[1]))
    assert RANGE[0].name == "range"

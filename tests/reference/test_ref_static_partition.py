"""Static membership (KIP-345, KIP-814) and partition unload/load (§2.2 static column, §2.11)."""

from __future__ import annotations

from model.messages import JoinGroupMember, MemberIdentity, ProtocolMetadata
from model.vocabulary import Error, GroupState

from ref_harness import TP0, H


def test_static_member_gets_instance_prefixed_id_and_never_member_id_required() -> None:
    h = H()
    call = h.join(instance="i1")
    assert not call.done
    assert h.view().members[0].member_id == "i1-u1"


def test_static_restart_in_stable_keeps_generation_and_answers_old_leader_pre_v9() -> None:
    h = H()
    s1, s2 = h.static_stable(("i1", "i2"))
    r = h.join(instance="i1", skip=False).join
    assert (r.error, r.generation_id, r.leader, r.members, r.skip_assignment) == (Error.NONE, 1, s1, (), False)
    new_id = r.member_id
    assert new_id != s1 and new_id.startswith("i1-")
    v = h.view()
    assert v.state == GroupState.Stable and v.leader == new_id and v.member(s1) is None
    assert v.members[0].member_id == new_id, "re-keyed in place"
    assert h.heartbeat(s1, 1, instance="i1").heartbeat.error == Error.FENCED_INSTANCE_ID
    assert h.sync(new_id, 1, instance="i1").sync.assignment == s1.encode(), "assignment kept"


def test_static_leader_restart_v9_gets_skip_assignment_and_member_list() -> None:
    h = H()
    s1, s2 = h.static_stable(("i1", "i2"))
    r = h.join(instance="i1", skip=True).join
    assert (r.error, r.leader, r.skip_assignment) == (Error.NONE, r.member_id, True)
    assert r.members == (JoinGroupMember(r.member_id, "i1", b"\x01"), JoinGroupMember(s2, "i2", b"\x01"))
    r2 = h.join(instance="i2", skip=True).join
    assert (r2.leader, r2.skip_assignment, r2.members) == (r.member_id, False, ())


def test_static_restart_with_protocol_change_rebalances() -> None:
    h = H()
    h.static_stable(("i1",))
    call = h.join(instance="i1", protocols=(ProtocolMetadata("roundrobin"), ProtocolMetadata("range")))
    assert h.state() == GroupState.CompletingRebalance  # single member: join completes at once
    assert call.join.protocol_name == "roundrobin" and call.join.generation_id == 2


def test_static_restart_persistence_failure_reverts_id_but_keeps_protocols() -> None:
    h = H()
    s1, s2 = h.static_stable(("i1", "i2"), session=10000)
    h.c.set_append_result(Error.MESSAGE_TOO_LARGE)
    newp = (ProtocolMetadata("range", b"\x07"),)
    r = h.join(instance="i2", protocols=newp, session=20000).join
    assert (r.error, r.member_id, r.generation_id, r.leader, r.protocol_name) == (
        Error.UNKNOWN_SERVER_ERROR, "", 1, s1, "range")
    v = h.view()
    m = v.member(s2)
    assert m is not None and m.session_timeout_ms == 10000
    h.c.set_append_result(Error.NONE)
    # the kept new protocol list makes the old id's identical rejoin an immediate answer (semantics §8.14)
    r = h.join(s2, instance="i2", protocols=newp).join
    assert (r.error, r.generation_id) == (Error.NONE, 1) and h.state() == GroupState.Stable


def test_static_restart_in_preparing_fences_old_parked_join() -> None:
    h = H()
    s1, s2 = h.static_stable(("i1", "i2"))
    h.c.setup_prepare_rebalance("g")
    old = h.join(s2, instance="i2")
    new = h.join(instance="i2")
    assert (old.join.error, old.join.member_id) == (Error.FENCED_INSTANCE_ID, s2)
    assert not new.done
    h.join(s1, instance="i1")
    assert new.join.error == Error.NONE and new.join.generation_id == 2


def test_static_restart_in_completing_fences_parked_sync_and_rebalances() -> None:
    h = H()
    s1, s2 = h.static_stable(("i1", "i2"))
    h.join(s1, instance="i1")
    h.join(s2, instance="i2")
    assert h.state() == GroupState.CompletingRebalance
    parked = h.sync(s2, 2, instance="i2")
    new = h.join(instance="i2")
    assert parked.sync.error == Error.FENCED_INSTANCE_ID
    assert h.state() == GroupState.PreparingRebalance and not new.done


def test_leave_by_instance_in_stable() -> None:
    h = H()
    s1, _ = h.static_stable(("i1", "i2"))
    assert h.leave(MemberIdentity("", "i1")).leave.members[0].error == Error.NONE
    assert h.view().member(s1) is None and h.state() == GroupState.PreparingRebalance


# --- unload / load ----------------------------------------------------------------------------


def test_unload_preparing_answers_parked_joins_not_coordinator() -> None:
    h = H()
    a, b = h.stable(2)
    ja = h.join(a)
    h.c.unload("g")
    assert (ja.join.error, ja.join.member_id) == (Error.NOT_COORDINATOR, a)
    assert h.c.group_view("g") is None
    assert h.join().join.error == Error.NOT_COORDINATOR
    assert h.heartbeat(b, 1).heartbeat.error == Error.NOT_COORDINATOR
    assert h.describe().error == Error.NOT_COORDINATOR


def test_unload_completing_answers_parked_syncs_and_load_resumes_last_persisted_generation() -> None:
    h = H()
    a, b = h.stable(2)
    h.commit(a, 1)
    h.join(a)
    h.join(b)
    sb = h.sync(b, 2)
    h.c.unload("g")
    assert sb.sync.error == Error.NOT_COORDINATOR
    h.c.load("g")
    v = h.view()
    assert (v.state, v.generation_id, v.leader, v.protocol_name) == (GroupState.Stable, 1, a, "range")
    assert [(m.member_id, m.assignment) for m in v.members] == [(a, a.encode()), (b, b.encode())]
    assert h.c.offsets("g") == {TP0: 5}
    assert h.heartbeat(b, 1).heartbeat.error == Error.NONE


def test_loaded_members_have_session_timers() -> None:
    h = H()
    a, b = h.stable(2, session=10000)
    h.c.unload("g")
    h.advance(50000)
    h.c.load("g")
    h.advance(5000)
    h.heartbeat(a, 1)
    h.advance(5001)
    assert h.rebalances_without(b)


def test_load_empty_group_record_and_offsets_only_group() -> None:
    h = H()
    (a,) = h.stable(1)
    h.leave(MemberIdentity(a))
    h.c.unload("g")
    h.c.load("g")
    v = h.view()
    assert (v.state, v.generation_id, v.members, v.protocol_type) == (GroupState.Empty, 2, (), "consumer")
    h2 = H()
    h2.commit("", -1, group="o")
    h2.c.unload("o")
    h2.c.load("o")
    assert h2.view("o").state == GroupState.Empty and h2.c.offsets("o") == {TP0: 5}
    h3 = H()
    h3.join()  # MEMBER_ID_REQUIRED only: nothing persisted
    h3.c.unload("g")
    h3.c.load("g")
    assert h3.c.group_view("g") is None


def test_load_of_not_owned_config_group_makes_it_owned() -> None:
    h = H(not_owned_groups=frozenset({"g"}))
    assert h.join().join.error == Error.NOT_COORDINATOR
    h.c.load("g")
    assert h.join().join.error == Error.MEMBER_ID_REQUIRED


def test_load_over_capacity_rebalances() -> None:
    h = H(group_max_size=3)
    h.stable(3)
    h2_ids = h.view().members
    h.c.unload("g")
    h.c._config = type(h.config)(group_max_size=2)  # the new leader's broker has a lower limit
    h.c.load("g")
    assert h.state() == GroupState.PreparingRebalance and len(h2_ids) == 3


def test_static_restart_persisted_before_answer_survives_failover() -> None:
    h = H()
    s1, s2 = h.static_stable(("i1", "i2"))
    new_id = h.join(instance="i2").join.member_id
    h.c.unload("g")
    h.c.load("g")
    v = h.view()
    assert [m.member_id for m in v.members] == [s1, new_id]
    assert h.heartbeat(new_id, 1, instance="i2").heartbeat.error == Error.NONE

"""The recording hook, the transition check, protocol selection, and usage errors."""

from __future__ import annotations

import pytest

from model.coordinator_api import BackdoorCoordinator, CoordinatorConfig, MemberSpec
from model.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    MemberIdentity,
    ProtocolMetadata,
    Response,
)
from model.vocabulary import Error, GroupState, TimerEvent

from reference import IllegalStateTransition, ReferenceCoordinator, ReferenceUsageError
from ref_harness import EventLog, H

S = GroupState


def test_reference_implements_backdoor_protocol() -> None:
    assert isinstance(ReferenceCoordinator(CoordinatorConfig()), BackdoorCoordinator)


def test_recorder_sees_requests_later_responses_timers_and_transitions() -> None:
    log = EventLog()
    h = H(recorder=log)
    mid, call = h.new_member()
    h.advance(3001)
    assert call.done
    kinds = [e[0] for e in log.events]
    assert kinds == ["request", "response", "request", "transition", "timer", "transition", "response"]
    assert log.of("timer") == [("timer", 3001, "g", TimerEvent.InitialDelayedJoinExpire, None)]
    assert log.of("transition") == [
        ("transition", 0, "g", S.Empty, S.PreparingRebalance, 0),
        ("transition", 3001, "g", S.PreparingRebalance, S.CompletingRebalance, 1),
    ]
    second_request_id = log.of("request")[1][2]
    late = log.of("response")[1]
    assert late[1:4] == (3001, second_request_id, "g") and isinstance(late[4], JoinGroupResponse)


def test_recorder_session_expiry_pending_expiry_and_admin_events() -> None:
    log = EventLog()
    h = H(recorder=log)
    (a,) = h.stable(1, session=10000)
    h.join(session=7000)
    log.events.clear()
    h.advance(10001)
    timers = [(e[3], e[4]) for e in log.of("timer")]
    assert (TimerEvent.PendingMemberExpire, "c-u2") in timers
    assert (TimerEvent.MemberSessionExpire, a) in timers
    h.c.unload("g")
    h.c.load("g")
    h.c.expire_offsets("g")
    assert [e[3] for e in log.of("timer")][-3:] == [
        TimerEvent.PartitionUnload, TimerEvent.PartitionLoad, TimerEvent.OffsetsExpire]


def test_recorder_delayed_join_complete_and_sync_events() -> None:
    log = EventLog()
    h = H(recorder=log)
    a, b = h.stable(2)
    log.events.clear()
    h.join(a)
    h.join(b)
    h.sync(a, 2)
    h.sync(b, 2)
    events = [e[3] for e in log.of("timer")]
    assert events == [TimerEvent.DelayedJoinComplete, TimerEvent.DelayedSyncComplete]


def test_responses_delivered_after_processing_so_callbacks_may_send_requests() -> None:
    h = H()
    a, b = h.stable(2)
    seen: list[Error] = []

    def on_join(response: Response) -> None:
        assert isinstance(response, JoinGroupResponse)
        h.c.handle(
            HeartbeatRequest("g", a, response.generation_id),
            lambda r: seen.append(r.error) if isinstance(r, HeartbeatResponse) else None,
        )

    h.c.handle(JoinGroupRequest("g", a, "consumer", (ProtocolMetadata("range", b"\x01"),)), on_join)
    h.join(b)  # completes the join phase; a's callback sends a Heartbeat from inside
    assert seen == [Error.NONE]


@pytest.mark.parametrize(
    "start,path,ok",
    [
        (S.Empty, (S.PreparingRebalance, S.CompletingRebalance, S.Stable), True),
        (S.Stable, (S.Stable,), False),
        (S.PreparingRebalance, (S.PreparingRebalance,), False),
        (S.Empty, (S.Stable,), False),
        (S.Empty, (S.CompletingRebalance,), False),
        (S.Dead, (S.Dead,), True),
        (S.Dead, (S.Empty,), False),
        (S.PreparingRebalance, (S.Empty, S.Dead), True),
        (S.CompletingRebalance, (S.PreparingRebalance,), True),
        (S.Stable, (S.Empty,), False),
    ],
)
def test_transition_table(start: GroupState, path: tuple[GroupState, ...], ok: bool) -> None:
    assert ReferenceCoordinator(CoordinatorConfig()).can_transition(start, path) is ok


def test_forced_illegal_transition_raises_typed_exception() -> None:
    h = H()
    h.stable(1)
    with pytest.raises(IllegalStateTransition) as info:
        h.c.setup_force_transition("g", S.Stable)
    assert (info.value.source, info.value.target, info.value.group_id) == (S.Stable, S.Stable, "g")
    h.c.setup_force_transition("g", S.Dead)
    assert h.state() == S.Dead


@pytest.mark.parametrize(
    "prefs,expected",
    [
        ((("range", "roundrobin"), ("roundrobin", "range"), ("roundrobin",)), "roundrobin"),
        ((("a", "b"), ("b", "a")), "a"),  # tie: the earliest first vote wins
        ((("b", "a"), ("a", "b")), "b"),
        ((("a",), ("b",)), None),
        ((), None),
    ],
)
def test_select_protocol(prefs: tuple[tuple[str, ...], ...], expected: str | None) -> None:
    assert ReferenceCoordinator(CoordinatorConfig()).select_protocol(prefs, "consumer") == expected


def test_setup_add_group_states() -> None:
    h = H()
    h.c.setup_add_group("g", S.Stable, (MemberSpec("l"), MemberSpec("f")), "consumer")
    v = h.view()
    assert (v.state, v.leader, v.generation_id, v.protocol_name) == (S.Stable, "l", 0, "range")
    assert h.heartbeat("f", 0).heartbeat.error == Error.NONE
    h.c.setup_add_group("p", S.PreparingRebalance, (MemberSpec("x", rebalance_timeout_ms=1000),), "consumer")
    h.advance(1001)
    assert h.view("p").state == S.Empty, "its DelayedJoin expires and drops the non-rejoined member"
    with pytest.raises(ReferenceUsageError):
        h.c.setup_add_group("g", S.Empty, (), "consumer")


def test_usage_errors() -> None:
    with pytest.raises(ReferenceUsageError, match="unknown seeded bug"):
        ReferenceCoordinator(CoordinatorConfig(), bugs=frozenset({"nope"}))
    h = H()
    with pytest.raises(ReferenceUsageError):
        h.advance(-1)
    with pytest.raises(ReferenceUsageError):
        h.c.setup_prepare_rebalance("missing")
    with pytest.raises(ReferenceUsageError):
        h.c.handle(MemberIdentity("x"), lambda r: None)  # type: ignore[arg-type]


def test_default_member_ids_use_uuid4() -> None:
    c = ReferenceCoordinator(CoordinatorConfig())
    got: list[object] = []
    c.handle(JoinGroupRequest("g", "", "consumer", (ProtocolMetadata("range"),), client_id="cli"), got.append)
    r = got[0]
    assert isinstance(r, JoinGroupResponse) and r.member_id.startswith("cli-") and len(r.member_id) == 4 + 36

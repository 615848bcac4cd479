"""Connection semantics: one request at a time per connection (Kafka mutes a channel until its
response is sent), idle connections closed, and the clock driver's next-deadline query."""

from __future__ import annotations

import struct
import time

from served import call, raw_connect, read_frame, request_frame, wait_for

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error
from reference.coordinator import ReferenceCoordinator
from server import start_in_thread
from wire import codec


def _join_v3(group: str) -> bytes:
    return request_frame(ApiKey.JoinGroup, 3, {
        "group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 30000, "member_id": "",
        "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]}, correlation_id=1)


def test_pipelined_requests_are_served_one_at_a_time_in_order() -> None:
    """A DescribeGroups pipelined behind a parked JoinGroup on the same connection is read only after
    the join is answered (300 ms initial delay), so it sees the group after the join phase."""
    with start_in_thread(CoordinatorConfig(group_initial_rebalance_delay_ms=300)) as handle:
        with raw_connect(handle.port) as sock:
            sent = time.monotonic()
            sock.sendall(_join_v3("p"))
            sock.sendall(request_frame(ApiKey.DescribeGroups, 0, {"groups": ["p"]}, correlation_id=2))
            first = read_frame(sock)
            second = read_frame(sock)
            assert first is not None and second is not None
            assert struct.unpack_from(">i", first)[0] == 1 and struct.unpack_from(">i", second)[0] == 2
            assert time.monotonic() - sent >= 0.29
            _, described = codec.decode_response(ApiKey.DescribeGroups, 0, second)
            # served after the join completed: the group is CompletingRebalance, not PreparingRebalance
            assert described["groups"][0]["group_state"] == "CompletingRebalance"


def test_idle_connections_are_closed_with_one_line() -> None:
    log: list[str] = []
    with start_in_thread(CoordinatorConfig(), idle_timeout_s=0.3, log=log.append) as handle:
        with raw_connect(handle.port) as sock:
            sock.settimeout(5)
            assert read_frame(sock) is None  # closed by the server
        assert wait_for(lambda: len(log) == 1, 5) and "idle for 0.3 s" in log[0]


def test_next_deadline_is_the_earliest_armed_timer() -> None:
    ref = ReferenceCoordinator(CoordinatorConfig(group_initial_rebalance_delay_ms=3000))
    assert ref.next_deadline_ms() is None
    got: list[m.Response] = []
    join = m.JoinGroupRequest("g", "", "consumer", (m.ProtocolMetadata("range"),), session_timeout_ms=10000)
    ref.handle(join, got.append)
    assert got[0].error is Error.MEMBER_ID_REQUIRED  # type: ignore[union-attr]
    assert ref.next_deadline_ms() == 10000  # the pending member's session
    ref.advance(100)
    member = got[0].member_id  # type: ignore[union-attr]
    ref.handle(m.JoinGroupRequest("g", member, "consumer", (m.ProtocolMetadata("range"),),
                                  session_timeout_ms=10000), got.append)
    assert ref.next_deadline_ms() == 100 + 3000  # the InitialDelayedJoin now comes first
    ref.advance(3000)
    assert len(got) == 1  # not yet: the deadline must be strictly passed
    ref.advance(1)
    assert len(got) == 2 and got[1].error is Error.NONE  # type: ignore[union-attr]
    assert ref.next_deadline_ms() == 3101 + 10000  # the member's session, re-armed at completion


def test_api_versions_and_find_coordinator_error_answers() -> None:
    """ApiVersions v3 with an invalid client software name is INVALID_REQUEST (KafkaApis checks
    ApiVersionsRequest.isValid); FindCoordinator for a transaction id is COORDINATOR_NOT_AVAILABLE
    (no transaction coordinator here), an unknown key type INVALID_REQUEST; the connection stays open."""
    with start_in_thread(CoordinatorConfig()) as handle:
        with raw_connect(handle.port) as sock:
            bad = call(sock, ApiKey.ApiVersions, 3, {"client_software_name": "bad name!",
                                                     "client_software_version": "1"}, 1)
            assert bad["error_code"] == 42 and bad["api_keys"] == []
            found = call(sock, ApiKey.FindCoordinator, 4, {"key_type": 1, "coordinator_keys": ["tx"]}, 2)
            assert [(c["key"], c["error_code"]) for c in found["coordinators"]] == [("tx", 15)]
            old = call(sock, ApiKey.FindCoordinator, 1, {"key": "x", "key_type": 7}, 3)
            assert old["error_code"] == 42
            good = call(sock, ApiKey.FindCoordinator, 1, {"key": "g", "key_type": 0}, 4)
            assert (good["error_code"], good["node_id"], good["port"]) == (0, 0, handle.port)

"""The pieces of observe that need no broker: the Metadata and FindCoordinator rewrite, and the two
things observe tells the fuzz judge that the fuzzer never does (a connection closed with requests
unanswered; forgetting what a long-lived group no longer needs), each with its negative control."""

from __future__ import annotations

import asyncio

import pytest

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error
from wire import apis, codec
from wire.data_apis import METADATA_RESPONSE, METADATA_RESPONSE_KAFKA_4
from wire.errors import WireError

from fuzz.judge import GroupJudge
from observe.addresses import FIND_COORDINATOR, METADATA, rewrite

LISTENERS = {("127.0.0.1", 9092): 40001, ("broker-2", 9093): 40002}


async def port_for(host: str, port: int) -> int:
    return LISTENERS[(host, port)]


def metadata_answer(version: int) -> bytes:
    body = {"throttle_time_ms": 0, "cluster_id": "c", "controller_id": 1, "cluster_authorized_operations": -2147483648,
            "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None},
                        {"node_id": 2, "host": "broker-2", "port": 9093, "rack": None}],
            "topics": [{"error_code": 0, "name": "orders", "topic_id": b"\x00" * 16, "is_internal": False,
                        "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 2, "leader_epoch": 0,
                                        "replica_nodes": [2], "isr_nodes": [2], "offline_replicas": []}],
                        "topic_authorized_operations": -2147483648}]}
    if version >= 13:
        body["error_code"] = 0  # (v13's top-level error, KIP-1102)
    return codec.encode_response_with(METADATA_RESPONSE_KAFKA_4, version, 17, body)


@pytest.mark.parametrize("version", [0, 1, 9, 12, 13])
def test_metadata_brokers_become_the_proxy_listeners(version: int) -> None:
    out = asyncio.run(rewrite(METADATA, version, metadata_answer(version), "127.0.0.1", port_for))
    cid, body = codec.decode_response_with(METADATA_RESPONSE_KAFKA_4, version, out)
    _, before = codec.decode_response_with(METADATA_RESPONSE_KAFKA_4, version, metadata_answer(version))
    assert cid == 17
    assert [(b["node_id"], b["host"], b["port"]) for b in body["brokers"]] == [
        (1, "127.0.0.1", 40001), (2, "127.0.0.1", 40002)]
    # nothing else changes
    assert body["topics"] == before["topics"] and len(out) == len(metadata_answer(version)) - len("broker-2") + len("127.0.0.1")


@pytest.mark.parametrize("version", [0, 3, 4, 5, 6])
def test_find_coordinator_points_at_the_proxy_except_on_an_error(version: int) -> None:
    schema = apis.FIND_COORDINATOR_RESPONSE
    found = {"error_code": 0, "error_message": None, "node_id": 2, "host": "broker-2", "port": 9093}
    failed = {"error_code": Error.COORDINATOR_NOT_AVAILABLE.code, "error_message": None, "node_id": -1,
              "host": "", "port": -1}
    if version >= 4:
        body = {"throttle_time_ms": 0, "coordinators": [{"key": "g", **found}, {"key": "h", **failed}]}
    else:
        body = {"throttle_time_ms": 0, **found}
    wire_version = min(version, 4)  # v5, v6 only add error codes and key types: the v4 layout
    data = codec.encode_response_with(schema, wire_version, 5, body)
    out = asyncio.run(rewrite(FIND_COORDINATOR, version, data, "127.0.0.1", port_for))
    _, got = codec.decode_response_with(schema, wire_version, out)
    first = got["coordinators"][0] if version >= 4 else got
    assert (first["host"], first["port"], first["node_id"]) == ("127.0.0.1", 40002, 2)
    if version >= 4:
        assert (got["coordinators"][1]["host"], got["coordinators"][1]["port"]) == ("", -1)


def test_an_answer_the_codec_cannot_read_is_an_error_not_a_guess() -> None:
    with pytest.raises(WireError):
        asyncio.run(rewrite(METADATA, 12, metadata_answer(12)[:-3], "127.0.0.1", port_for))
    with pytest.raises(WireError):
        asyncio.run(rewrite(METADATA, 14, metadata_answer(13), "127.0.0.1", port_for))
    # v13 is v12 plus a trailing error code: read as v12, it is a frame with bytes left over
    with pytest.raises(WireError):
        codec.decode_response_with(METADATA_RESPONSE, 12, metadata_answer(13))


def test_serve_still_serves_kafka_39s_metadata_range() -> None:
    # v13 is read and written for observe only; ApiVersions of serve advertises what it serves
    assert (METADATA_RESPONSE.valid.hi, METADATA_RESPONSE_KAFKA_4.valid.hi) == (12, 13)
    with pytest.raises(WireError):
        codec.encode_response_with(METADATA_RESPONSE, 13, 1, {"brokers": [], "topics": []})


JOIN = m.JoinGroupRequest("g", "", "consumer", (m.ProtocolMetadata("range", b"\x00"),), 10000, 30000)


def test_a_closed_connection_expects_no_answer_and_without_it_silence_is_a_finding() -> None:
    for told in (True, False):
        judge = GroupJudge("g", CoordinatorConfig())
        judge.send(1, ApiKey.JoinGroup, 5, JOIN, 0)  # answered at once (MEMBER_ID_REQUIRED) by the model
        if told:
            judge.closed(frozenset({1}))
        finding = judge.silence(10_000)
        if told:
            assert finding is None
        else:
            assert finding is not None and finding.actual == "no-response"


def _describe_dead(judge: GroupJudge, n: int, state: str) -> object:
    judge.send(n, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), n)
    return judge.receive(n, n + 1, m.DescribeGroupsResponse((m.DescribedGroup(Error.NONE, "g", state, "", ""),)))


def test_forgetting_answered_requests_keeps_the_verdicts() -> None:
    judge = GroupJudge("g", CoordinatorConfig())
    for n in range(1, 301):
        assert _describe_dead(judge, n, "Dead") is None
    assert len(judge.sent) == 300
    judge.forget()
    assert judge.sent == {} and all(not h.produced and not h.answered for h in judge.hyps)
    assert _describe_dead(judge, 301, "Dead") is None
    # negative control: after forgetting, a wrong answer is still a finding
    assert _describe_dead(judge, 302, "Stable") is not None

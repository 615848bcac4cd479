"""Records <-> wire bodies: a record survives encode + decode at every version that can carry it."""

from __future__ import annotations

import dataclasses

import pytest

from model import messages as m
from model.vocabulary import ApiKey, Error
from wire import apis, codec, convert

TP = m.TopicPartition

REQUESTS: list[m.Request] = [
    m.JoinGroupRequest("g", "", "consumer", (m.ProtocolMetadata("range", b"\x01"),
                                             m.ProtocolMetadata("roundrobin", b"")),
                       session_timeout_ms=6000, rebalance_timeout_ms=6000,
                       require_known_member_id=False, supports_skip_assignment=False),
    m.SyncGroupRequest("g", "a", 3, assignments=(("a", b"\x00\x01"), ("b", b""))),
    m.HeartbeatRequest("g", "a", 3),
    m.LeaveGroupRequest("g", (m.MemberIdentity("a"),)),
    m.OffsetCommitRequest("g", "a", 3, ((TP("t", 0), 12), (TP("t", 1), 13), (TP("u", 0), 1))),
    m.OffsetFetchRequest("g", (TP("t", 0), TP("u", 2))),
    m.DescribeGroupsRequest(("g", "h")),
    m.ListGroupsRequest(),
    m.DeleteGroupsRequest(("g",)),
]

RESPONSES: list[m.Response] = [
    m.JoinGroupResponse(Error.NONE, 1, None, "range", "a", "a", False,
                        (m.JoinGroupMember("a", None, b"\x01"),)),
    m.SyncGroupResponse(Error.REBALANCE_IN_PROGRESS, assignment=b"\x02"),
    m.HeartbeatResponse(Error.ILLEGAL_GENERATION),
    m.LeaveGroupResponse(Error.NONE),
    m.OffsetCommitResponse(((TP("t", 0), Error.NONE), (TP("u", 1), Error.UNKNOWN_MEMBER_ID))),
    m.OffsetFetchResponse(Error.NONE, ((TP("t", 0), 12, Error.NONE),)),
    m.DescribeGroupsResponse((m.DescribedGroup(Error.NONE, "g", "Stable", "consumer", "range", (
        m.DescribedMember("a", None, "client", b"\x01", b"\x02"),)),)),
    m.ListGroupsResponse(Error.NONE, (m.ListedGroup("g", "consumer", ""),)),
    m.DeleteGroupsResponse((("g", Error.NON_EMPTY_GROUP),)),
]


def _versions(api: ApiKey) -> range:
    v = apis.SUPPORTED_VERSIONS[api]
    return range(v.lo, v.hi + 1)


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_request_round_trip_at_every_version(request_: m.Request) -> None:
    for version in _versions(request_.api_key):
        api, body = convert.request_body(request_, version)
        header, decoded = codec.decode_request(codec.encode_request(api, version, 1, "c", body))
        back = convert.request_record(api, version, decoded)
        if isinstance(request_, m.JoinGroupRequest):
            expected = type(request_)(**{  # flags are carried by the version itself
                **{f: getattr(request_, f) for f in request_.__dataclass_fields__},
                "require_known_member_id": version >= 4, "supports_skip_assignment": version >= 9})
            assert back == expected, version
        else:
            assert back == request_, version


@pytest.mark.parametrize("response", RESPONSES, ids=lambda r: type(r).__name__)
def test_response_round_trip_at_every_version(response: m.Response) -> None:
    api = convert.response_body(response, 0 if not isinstance(response, m.OffsetCommitResponse) else 2)[0]
    for version in _versions(api):
        if api is ApiKey.OffsetFetch and version >= 8:
            continue  # the record does not name its group; covered below
        _, body = convert.response_body(response, version)
        _, decoded = codec.decode_response(api, version, codec.encode_response(api, version, 1, body))
        assert convert.response_record(api, version, decoded) == response, version


def test_offset_fetch_v8_batched_layout() -> None:
    api, body = convert.request_body(m.OffsetFetchRequest("g", None), 8)
    assert body == {"groups": [{"group_id": "g", "topics": None}]}
    reply = {"groups": [{"group_id": "g", "error_code": 0, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5, "error_code": 0}]}]}]}
    _, decoded = codec.decode_response(api, 8, codec.encode_response(api, 8, 1, reply))
    assert convert.response_record(api, 8, decoded) == m.OffsetFetchResponse(
        Error.NONE, ((TP("t", 0), 5, Error.NONE),))


def test_join_group_version_follows_the_request_flags() -> None:
    base = REQUESTS[0]
    assert isinstance(base, m.JoinGroupRequest)
    import dataclasses
    assert convert.join_group_version(base, 9) == 3
    assert convert.join_group_version(dataclasses.replace(base, require_known_member_id=True), 9) == 8
    assert convert.join_group_version(dataclasses.replace(
        base, require_known_member_id=True, supports_skip_assignment=True), 9) == 9
    static = dataclasses.replace(base, group_instance_id="i")
    assert convert.join_group_version(static, 9) == 8


def test_protocol_name_empty_below_v7_reads_as_none() -> None:
    body = {"error_code": Error.UNKNOWN_MEMBER_ID.code, "protocol_name": ""}
    _, decoded = codec.decode_response(ApiKey.JoinGroup, 6, codec.encode_response(ApiKey.JoinGroup, 6, 1, body))
    rec = convert.response_record(ApiKey.JoinGroup, 6, decoded)
    assert isinstance(rec, m.JoinGroupResponse) and rec.protocol_name is None


def test_sync_group_version_drops_to_v4_without_protocol_type_and_name() -> None:
    base = m.SyncGroupRequest("g", "m", 1)
    assert convert.sync_group_version(base, 5) == 4
    assert convert.sync_group_version(base, 3) == 3
    assert convert.sync_group_version(dataclasses.replace(base, protocol_type="consumer"), 5) == 4
    full = dataclasses.replace(base, protocol_type="consumer", protocol_name="range")
    assert convert.sync_group_version(full, 5) == 5

"""Malformed frames: every fault is a DecodeError naming the API, version, offset and reason."""

from __future__ import annotations

import pytest

from model import messages as m
from model.vocabulary import ApiKey
from wire import codec, convert
from wire.errors import DecodeError, EncodeError

HEARTBEAT_V0 = codec.encode_request(
    ApiKey.Heartbeat, 0, 1, "c", {"group_id": "g", "generation_id": 5, "member_id": "m"})
JOIN_V9_RESPONSE = codec.encode_response(ApiKey.JoinGroup, 9, 3, {
    "error_code": 0, "generation_id": 1, "protocol_type": "consumer", "protocol_name": "range",
    "leader": "a", "member_id": "a",
    "members": [{"member_id": "a", "metadata": b"xyz"}, {"member_id": "b", "metadata": b""}]})


@pytest.mark.parametrize("cut", range(len(JOIN_V9_RESPONSE)))
def test_every_truncation_is_a_decode_error(cut: int) -> None:
    with pytest.raises(DecodeError) as info:
        codec.decode_response(ApiKey.JoinGroup, 9, JOIN_V9_RESPONSE[:cut])
    assert info.value.api == "JoinGroupResponse" and info.value.version == 9
    assert 0 <= info.value.offset <= cut


def test_truncated_request_names_the_field() -> None:
    with pytest.raises(DecodeError, match=r"HeartbeatRequest v0 at offset 18: length 1 of HeartbeatRequest.MemberId exceeds"):
        codec.decode_request(HEARTBEAT_V0[:-1])


def test_negative_string_length() -> None:
    bad = HEARTBEAT_V0[:11] + bytes.fromhex("fffe")  # group id length -2
    with pytest.raises(DecodeError, match="negative length -2") as info:
        codec.decode_request(bad)
    assert info.value.offset == 11


def test_null_in_a_non_nullable_string() -> None:
    bad = HEARTBEAT_V0[:11] + bytes.fromhex("ffff") + HEARTBEAT_V0[14:]
    with pytest.raises(DecodeError, match="not nullable"):
        codec.decode_request(bad)


def test_oversized_array_length_is_refused_before_allocating() -> None:
    frame = bytes.fromhex("00000001" "7fffffff")  # DescribeGroups v0 response, 2^31-1 groups
    with pytest.raises(DecodeError, match="exceeds the 0 bytes that remain") as info:
        codec.decode_response(ApiKey.DescribeGroups, 0, frame)
    assert info.value.offset == 4


def test_bad_varint_too_long() -> None:
    # Heartbeat v4 request: header v2 then a compact string whose length varint never ends.
    frame = bytes.fromhex("000c" "0004" "00000001" "0001" "63" "00") + b"\xff" * 6
    with pytest.raises(DecodeError, match="bad varint") as info:
        codec.decode_request(frame)
    assert info.value.offset == 12


def test_varint_over_32_bits() -> None:
    frame = bytes.fromhex("000c" "0004" "00000001" "0001" "63" "00" "ffffffff7f")
    with pytest.raises(DecodeError, match="exceeds 32 bits"):
        codec.decode_request(frame)


def test_unknown_api_key() -> None:
    with pytest.raises(DecodeError, match="unknown API key 999") as info:
        codec.decode_request(bytes.fromhex("03e7" "0000" "00000001" "0000"))
    assert info.value.api is None


def test_unsupported_version() -> None:
    with pytest.raises(DecodeError, match=r"JoinGroupRequest v10 .*unsupported version"):
        codec.decode_request(bytes.fromhex("000b" "000a" "00000001" "0000"))


def test_trailing_bytes() -> None:
    with pytest.raises(DecodeError, match="1 trailing bytes") as info:
        codec.decode_request(HEARTBEAT_V0 + b"\x00")
    assert info.value.offset == len(HEARTBEAT_V0)


def test_bad_boolean_and_bad_utf8() -> None:
    good = codec.encode_response(ApiKey.JoinGroup, 9, 3, {"member_id": "é"})
    at = good.index(b"\xc3\xa9")
    with pytest.raises(DecodeError, match="invalid UTF-8"):
        codec.decode_response(ApiKey.JoinGroup, 9, good[:at] + b"\xff\xff" + good[at + 2:])
    skip_at = at - 2  # skip_assignment byte precedes the member id length
    with pytest.raises(DecodeError, match="bad boolean"):
        codec.decode_response(ApiKey.JoinGroup, 9, good[:skip_at] + b"\x07" + good[skip_at + 1:])


def test_duplicate_and_oversized_tagged_fields() -> None:
    header_and_body = bytes.fromhex("00000007" "0000" "01" "00000000")  # ApiVersions v3, no keys
    with pytest.raises(DecodeError, match="duplicate tag 3"):
        codec.decode_response(ApiKey.ApiVersions, 3, header_and_body + bytes.fromhex("02" "030101" "030101"))
    with pytest.raises(DecodeError, match="truncated tagged field"):
        codec.decode_response(ApiKey.ApiVersions, 3, header_and_body + bytes.fromhex("01" "0309" "01"))


def test_frame_buffer_reassembles_and_rejects_bad_sizes() -> None:
    fb = codec.FrameBuffer(max_frame_bytes=1000)
    framed = codec.frame(HEARTBEAT_V0) * 2
    assert fb.feed(framed[:5]) == []
    assert fb.feed(framed[5:]) == [HEARTBEAT_V0, HEARTBEAT_V0]
    with pytest.raises(DecodeError, match="frame size -1"):
        codec.FrameBuffer().feed(bytes.fromhex("ffffffff"))
    with pytest.raises(DecodeError, match="frame size 1001"):
        fb.feed((1001).to_bytes(4, "big"))


def test_unknown_error_code_from_a_broker() -> None:
    body = {"error_code": 12345}
    with pytest.raises(DecodeError, match="unknown error code 12345"):
        convert.response_record(ApiKey.Heartbeat, 0, body)


def test_encode_refuses_values_a_version_cannot_carry() -> None:
    with pytest.raises(EncodeError, match=r"JoinGroupRequest v4 field JoinGroupRequest.GroupInstanceId"):
        codec.encode_request(ApiKey.JoinGroup, 4, 1, "c", {"group_id": "g", "group_instance_id": "i"})
    with pytest.raises(EncodeError, match="nullable only in versions 7"):
        codec.encode_response(ApiKey.JoinGroup, 6, 1, {"protocol_name": None})
    with pytest.raises(EncodeError, match="is not an int16"):
        codec.encode_response(ApiKey.Heartbeat, 0, 1, {"error_code": 40000})
    leave = m.LeaveGroupRequest("g", (m.MemberIdentity("a"), m.MemberIdentity("b")))
    with pytest.raises(EncodeError, match="exactly one dynamic member"):
        convert.request_body(leave, 2)

"""Hand-checked bytes, independent of both this codec and kafka-python.

Each expected frame is written out field by field from the Kafka protocol guide
(https://kafka.apache.org/protocol): classic strings are int16 length + UTF-8, compact strings
uvarint(length + 1), flexible structs end with a tagged-field section.
"""

from __future__ import annotations

from model.vocabulary import ApiKey
from wire import codec

HEADER_V1 = bytes.fromhex("000c" "0000" "00000001" "0001" "63")  # Heartbeat v0, corr 1, "c"


def test_heartbeat_v0_request() -> None:
    body = {"group_id": "g", "generation_id": 5, "member_id": "m"}
    expected = HEADER_V1 + bytes.fromhex("0001" "67" "00000005" "0001" "6d")
    assert codec.encode_request(ApiKey.Heartbeat, 0, 1, "c", body) == expected


def test_heartbeat_v4_request_is_flexible() -> None:
    body = {"group_id": "g", "generation_id": 5, "member_id": "m", "group_instance_id": None}
    expected = bytes.fromhex(
        "000c" "0004" "00000001" "0001" "63" "00"  # header v2: classic client id, no tags
        "0267" "00000005" "026d" "00" "00"  # compact "g", gen, compact "m", null instance, no tags
    )
    assert codec.encode_request(ApiKey.Heartbeat, 4, 1, "c", body) == expected


def test_join_group_v9_response() -> None:
    body = {
        "throttle_time_ms": 0, "error_code": 0, "generation_id": 1, "protocol_type": "consumer",
        "protocol_name": "range", "leader": "m", "skip_assignment": False, "member_id": "m",
        "members": [{"member_id": "m", "group_instance_id": None, "metadata": b"\x01"}],
    }
    expected = bytes.fromhex(
        "00000007" "00"  # response header v1
        "00000000" "0000" "00000001"  # throttle, error, generation
        "09" + b"consumer".hex() + "06" + b"range".hex() +  # compact strings
        "026d" "00" "026d"  # leader, skip_assignment=false, member id
        "02" "026d" "00" "0201" "00"  # one member: id, null instance, metadata 0x01, no tags
        "00"  # no tagged fields
    )
    assert codec.encode_response(ApiKey.JoinGroup, 9, 7, body) == expected
    assert codec.decode_response(ApiKey.JoinGroup, 9, expected) == (7, body)


def test_api_versions_v3_response_header_v0_and_tagged_field() -> None:
    body = {"error_code": 0, "api_keys": [{"api_key": 12, "min_version": 0, "max_version": 4}],
            "throttle_time_ms": 0, "zk_migration_ready": True}
    expected = bytes.fromhex(
        "00000007"  # header v0 even though v3 is flexible
        "0000" "02" "000c" "0000" "0004" "00"  # error, compact array of 1, entry, entry tags
        "00000000"  # throttle
        "01" "03" "01" "01"  # one tagged field: tag 3 (ZkMigrationReady), size 1, true
    )
    assert codec.encode_response(ApiKey.ApiVersions, 3, 7, body) == expected
    _, decoded = codec.decode_response(ApiKey.ApiVersions, 3, expected)
    assert decoded["zk_migration_ready"] is True
    assert decoded["finalized_features_epoch"] == -1  # absent tagged field -> default


def test_leave_group_v0_vs_v3_layout() -> None:
    v0 = codec.encode_request(ApiKey.LeaveGroup, 0, 1, "c", {"group_id": "g", "member_id": "m"})
    assert v0 == bytes.fromhex("000d" "0000" "00000001" "000163" "000167" "00016d")
    v3 = codec.encode_request(ApiKey.LeaveGroup, 3, 1, "c", {
        "group_id": "g", "members": [{"member_id": "m", "group_instance_id": "i"}]})
    assert v3 == bytes.fromhex("000d" "0003" "00000001" "000163" "000167" "00000001" "00016d" "000169")

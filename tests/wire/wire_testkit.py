"""Test helpers: values drawn from a schema at one version, and the kafka-python bridge.

kafka-python 3 (`kafka.protocol`) builds its encoders from Kafka's own message JSON; it is the
independent encoder the codec is compared with byte for byte. It is used only in tests.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from kafka.protocol.admin.groups import (
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    ListGroupsRequest, ListGroupsResponse,
)
from kafka.protocol.consumer.group import (
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest, ApiVersionsResponse, FindCoordinatorRequest, FindCoordinatorResponse,
)
from model.vocabulary import ApiKey
from wire.schema import ArrayType, Field, MessageSchema, Prim, StructType, Struct

KP_CLASSES: dict[ApiKey, tuple[Any, Any]] = {
    ApiKey.ApiVersions: (ApiVersionsRequest, ApiVersionsResponse),
    ApiKey.FindCoordinator: (FindCoordinatorRequest, FindCoordinatorResponse),
    ApiKey.JoinGroup: (JoinGroupRequest, JoinGroupResponse),
    ApiKey.SyncGroup: (SyncGroupRequest, SyncGroupResponse),
    ApiKey.Heartbeat: (HeartbeatRequest, HeartbeatResponse),
    ApiKey.LeaveGroup: (LeaveGroupRequest, LeaveGroupResponse),
    ApiKey.OffsetCommit: (OffsetCommitRequest, OffsetCommitResponse),
    ApiKey.OffsetFetch: (OffsetFetchRequest, OffsetFetchResponse),
    ApiKey.DescribeGroups: (DescribeGroupsRequest, DescribeGroupsResponse),
    ApiKey.ListGroups: (ListGroupsRequest, ListGroupsResponse),
    ApiKey.DeleteGroups: (DeleteGroupsRequest, DeleteGroupsResponse),
}

_INT_RANGES = {
    Prim.INT8: (-(2**7), 2**7 - 1), Prim.INT16: (-(2**15), 2**15 - 1),
    Prim.INT32: (-(2**31), 2**31 - 1), Prim.INT64: (-(2**63), 2**63 - 1),
}
_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)


def _prim(t: Prim) -> st.SearchStrategy[Any]:
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return st.integers(lo, hi)
    if t is Prim.BOOL:
        return st.booleans()
    if t is Prim.STRING:
        return _TEXT
    if t is Prim.UUID:
        return st.binary(min_size=16, max_size=16)
    return st.binary(max_size=16)


def _present(f: Field, version: int, flexible: bool) -> bool:
    if version not in f.versions:
        return False
    return not (f.tag is not None and version in f.tagged and not flexible)


def value_of(f: Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    t = f.type
    if isinstance(t, ArrayType):
        elem = t.element
        inner: st.SearchStrategy[Any] = (
            struct_of(elem, version, flexible) if isinstance(elem, StructType) else _prim(elem)
        )
        base: st.SearchStrategy[Any] = st.lists(inner, max_size=3)
    elif isinstance(t, StructType):
        base = struct_of(t, version, flexible)
    else:
        base = _prim(t)
    if version in f.nullable:
        return st.one_of(st.none(), base)
    return base


def struct_of(s: StructType, version: int, flexible: bool) -> st.SearchStrategy[Struct]:
    fields = [f for f in s.fields if _present(f, version, flexible)]
    return st.fixed_dictionaries({f.key: value_of(f, version, flexible) for f in fields})


def message_of(schema: MessageSchema, version: int) -> st.SearchStrategy[Struct]:
    return struct_of(schema.body, version, schema.is_flexible(version))


# kafka-python's names where they are not the JSON's field name in snake case
_KP_NAMES = {"cluster_authorized_operations": "authorized_operations",
             "topic_authorized_operations": "authorized_operations"}


def _kp_struct(field_map: Any, value: Struct, schema: StructType, version: int) -> dict[str, Any]:
    """kwargs for a kafka-python container; tagged fields only when they differ from default."""
    out: dict[str, Any] = {}
    by_key = {f.key: f for f in schema.fields}
    for key, v in value.items():
        f = by_key[key]
        kp_key = key if key in field_map else _KP_NAMES[key]
        kp_field = field_map[kp_key]
        if f.tag is not None and v == f.default_value():
            continue
        if isinstance(f.type, ArrayType) and isinstance(f.type.element, StructType) and v is not None:
            cls = kp_field.data_class
            v = [cls(**_kp_struct(cls.fields, item, f.type.element, version)) for item in v]
        if f.type is Prim.UUID:
            v = uuid.UUID(bytes=v)
        if kp_key == "authorized_operations" and isinstance(v, int):
            # kafka-python models this int32 as a set of bit positions ("bitfield").
            v = {i for i in range(32) if (v & 0xFFFFFFFF) >> i & 1}
        out[kp_key] = v
    return out


def kp_encode_request(api: ApiKey, version: int, correlation_id: int, client_id: str, body: Struct,
                      schema: MessageSchema) -> bytes:
    return kp_encode_request_with(KP_CLASSES[api][0], version, correlation_id, client_id, body, schema)


def kp_encode_response(api: ApiKey, version: int, correlation_id: int, body: Struct,
                       schema: MessageSchema) -> bytes:
    return kp_encode_response_with(KP_CLASSES[api][1], version, correlation_id, body, schema)


def kp_encode_request_with(cls: Any, version: int, correlation_id: int, client_id: str, body: Struct,
                           schema: MessageSchema) -> bytes:
    """A request of kafka-python's class `cls` (any API it has), as kafka-python encodes it."""
    msg = cls[version](**_kp_struct(cls.fields, body, schema.body, version))
    msg.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(msg.encode(header=True))


def kp_encode_response_with(cls: Any, version: int, correlation_id: int, body: Struct,
                            schema: MessageSchema) -> bytes:
    msg = cls[version](**_kp_struct(cls.fields, body, schema.body, version))
    msg.with_header(correlation_id=correlation_id)
    return bytes(msg.encode(header=True))


def kp_decode_response(api: ApiKey, version: int, data: bytes) -> dict[str, Any]:
    cls = KP_CLASSES[api][1]
    return dict(cls.decode(data, version=version, header=True).to_dict(json=False))


def project(decoded: Any, like: Any) -> Any:
    """`decoded` cut down to the keys present in `like` (decoding fills absent fields with defaults)."""
    if isinstance(like, dict) and isinstance(decoded, dict):
        return {k: project(decoded[k], v) for k, v in like.items()}
    if isinstance(like, list) and isinstance(decoded, list) and len(like) == len(decoded):
        return [project(d, v) for d, v in zip(decoded, like)]
    return decoded

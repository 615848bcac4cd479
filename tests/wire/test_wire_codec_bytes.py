"""Byte-for-byte agreement with kafka-python's encoder, for every API and every supported version,
and for the two answers observe rewrites at every version a Kafka 4 broker answers (Metadata 0-13,
FindCoordinator 5-6 beyond the codec's 0-4)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.vocabulary import ApiKey
from kafka.protocol.metadata import (
    FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest, MetadataResponse,
)
from wire_testkit import (
    kp_encode_request, kp_encode_request_with, kp_encode_response, kp_encode_response_with, message_of, project,
)
from wire import apis, codec, data_apis
from wire.schema import MessageSchema

CASES = [(api, v) for api, versions in apis.SUPPORTED_VERSIONS.items()
         for v in range(versions.lo, versions.hi + 1)]
IDS = [f"{api.name}-v{v}" for api, v in CASES]


@pytest.mark.parametrize("side", ["request", "response"])
@pytest.mark.parametrize(("api", "version"), CASES, ids=IDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_bytes_match_kafka_python(side: str, api: ApiKey, version: int, data: st.DataObject) -> None:
    schema = codec.request_schema(api) if side == "request" else codec.response_schema(api)
    body = data.draw(message_of(schema, version))
    if side == "request":
        ours = codec.encode_request(api, version, 42, "groupspec", body)
        assert ours == kp_encode_request(api, version, 42, "groupspec", body, schema)
        header, decoded = codec.decode_request(ours)
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
            api.value, version, 42, "groupspec")
    else:
        ours = codec.encode_response(api, version, 7, body)
        assert ours == kp_encode_response(api, version, 7, body, schema)
        correlation_id, decoded = codec.decode_response(api, version, ours)
        assert correlation_id == 7
    assert project(decoded, body) == body


# (kafka-python's class, our schema) of each side of the answers observe rewrites, Kafka 4's ranges
KAFKA_4: dict[str, tuple[tuple[object, MessageSchema], tuple[object, MessageSchema]]] = {
    "Metadata": ((MetadataRequest, data_apis.METADATA_REQUEST_KAFKA_4),
                 (MetadataResponse, data_apis.METADATA_RESPONSE_KAFKA_4)),
    "FindCoordinator": ((FindCoordinatorRequest, apis.FIND_COORDINATOR_REQUEST_KAFKA_4),
                        (FindCoordinatorResponse, apis.FIND_COORDINATOR_RESPONSE_KAFKA_4)),
}
# (FindCoordinator 0-4 are the codec's own group API versions, compared above)
KAFKA_4_CASES = [(name, v) for name, (_, (_, schema)) in KAFKA_4.items()
                 for v in range(schema.valid.lo, schema.valid.hi + 1)
                 if name != "FindCoordinator" or v not in apis.SUPPORTED_VERSIONS[ApiKey.FindCoordinator]]


@pytest.mark.parametrize("side", ["request", "response"])
@pytest.mark.parametrize(("name", "version"), KAFKA_4_CASES, ids=[f"{n}-v{v}" for n, v in KAFKA_4_CASES])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kafka_4_ranges_match_kafka_python(side: str, name: str, version: int, data: st.DataObject) -> None:
    (kp_request, request_schema), (kp_response, response_schema) = KAFKA_4[name]
    if side == "request":
        body = data.draw(message_of(request_schema, version))
        ours = codec.encode_request_with(request_schema, version, 42, "groupspec", body)
        assert ours == kp_encode_request_with(kp_request, version, 42, "groupspec", body, request_schema)
        header, decoded = codec.decode_request_with(ours, lambda code: request_schema)
        assert (header.api_version, header.correlation_id) == (version, 42) and project(decoded, body) == body
    else:
        body = data.draw(message_of(response_schema, version))
        ours = codec.encode_response_with(response_schema, version, 7, body)
        assert ours == kp_encode_response_with(kp_response, version, 7, body, response_schema)
        correlation_id, decoded = codec.decode_response_with(response_schema, version, ours)
        assert correlation_id == 7 and project(decoded, body) == body


def test_negative_control_metadata_v13_read_with_v12s_fields_differs_from_kafka_python() -> None:
    schema = data_apis.METADATA_RESPONSE_KAFKA_4
    assert schema.body.fields[-1].key == "error_code"
    v12_fields = dataclasses.replace(schema, body=dataclasses.replace(schema.body, fields=schema.body.fields[:-1]))
    body = {"throttle_time_ms": 0, "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}],
            "cluster_id": None, "controller_id": 1, "topics": [], "error_code": 0}
    theirs = kp_encode_response_with(MetadataResponse, 13, 7, body, schema)
    assert codec.encode_response_with(schema, 13, 7, body) == theirs
    without = {k: v for k, v in body.items() if k != "error_code"}
    assert codec.encode_response_with(v12_fields, 13, 7, without) != theirs

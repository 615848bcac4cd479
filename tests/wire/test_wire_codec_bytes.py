"""Byte-for-byte agreement with kafka-python's encoder, for every API and every supported version."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.vocabulary import ApiKey
from wire_testkit import kp_encode_request, kp_encode_response, message_of, project
from wire import apis, codec

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

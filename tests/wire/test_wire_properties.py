"""Property tests: random and mutated frames never hang, never raise anything but DecodeError, and
never allocate more than a small multiple of their own size."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.vocabulary import ApiKey
from wire import apis, codec
from wire.errors import DecodeError
from wire_testkit import message_of

CASES = [(api, v) for api, versions in apis.SUPPORTED_VERSIONS.items()
         for v in range(versions.lo, versions.hi + 1)]
FAST = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


def _decode_response_or_error(api: ApiKey, version: int, data: bytes) -> None:
    try:
        codec.decode_response(api, version, data)
    except DecodeError:
        pass


def _decode_request_or_error(data: bytes) -> None:
    try:
        codec.decode_request(data)
    except DecodeError:
        pass


@FAST
@given(data=st.binary(max_size=200))
def test_random_bytes_as_any_request(data: bytes) -> None:
    _decode_request_or_error(data)


@FAST
@given(api_version=st.sampled_from(CASES), data=st.binary(max_size=200))
def test_random_bytes_as_any_response(api_version: tuple[ApiKey, int], data: bytes) -> None:
    _decode_response_or_error(*api_version, data)


def _mutate(frame: bytes, how: str, at: int, value: int) -> bytes:
    if not frame:
        return frame
    i = at % len(frame)
    if how == "flip":
        return frame[:i] + bytes([frame[i] ^ (value or 1)]) + frame[i + 1:]
    if how == "truncate":
        return frame[:i]
    if how == "insert":
        return frame[:i] + bytes([value]) + frame[i:]
    if how == "delete":
        return frame[:i] + frame[i + 1:]
    return frame[:i] + b"\x7f\xff\xff\xff" + frame[i + 4:]  # "big": a huge length anywhere


MUTATION = st.tuples(st.sampled_from(["flip", "truncate", "insert", "delete", "big"]),
                     st.integers(0, 10_000), st.integers(0, 255))


@FAST
@given(api_version=st.sampled_from(CASES), data=st.data(), mutations=st.lists(MUTATION, min_size=1, max_size=3))
def test_mutated_valid_responses(api_version: tuple[ApiKey, int], data: st.DataObject,
                                 mutations: list[tuple[str, int, int]]) -> None:
    api, version = api_version
    body = data.draw(message_of(codec.response_schema(api), version))
    frame = codec.encode_response(api, version, 1, body)
    for how, at, value in mutations:
        frame = _mutate(frame, how, at, value)
    _decode_response_or_error(api, version, frame)


@FAST
@given(api_version=st.sampled_from(CASES), data=st.data(), mutations=st.lists(MUTATION, min_size=1, max_size=3))
def test_mutated_valid_requests(api_version: tuple[ApiKey, int], data: st.DataObject,
                                mutations: list[tuple[str, int, int]]) -> None:
    api, version = api_version
    body = data.draw(message_of(codec.request_schema(api), version))
    frame = codec.encode_request(api, version, 1, "c", body)
    for how, at, value in mutations:
        frame = _mutate(frame, how, at, value)
    _decode_request_or_error(frame)


@pytest.mark.parametrize(("api", "version"), [(ApiKey.DescribeGroups, 0), (ApiKey.JoinGroup, 9),
                                              (ApiKey.OffsetFetch, 9), (ApiKey.ApiVersions, 3)])
def test_hostile_lengths_do_not_allocate(api: ApiKey, version: int) -> None:
    # Every 4-byte window set to a huge length, in a 64-byte frame: peak memory stays tiny.
    base = codec.encode_response(api, version, 1, {}) + bytes(48)
    tracemalloc.start()
    try:
        for i in range(len(base) - 4):
            _decode_response_or_error(api, version, base[:i] + b"\x7f\xff\xff\xff" + base[i + 4:])
            _decode_response_or_error(api, version, base[:i] + b"\xff\xff\xff\xff\x0f" + base[i + 5:])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024


def test_the_allocation_check_can_fail() -> None:
    # Negative control: an allocation proportional to a hostile length is seen by the same probe.
    tracemalloc.start()
    try:
        blob = bytearray(0x7FFF * 64)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del blob
    assert peak >= 256 * 1024


def test_the_exception_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    # Negative control: a Reader without its bounds check lets struct.error escape, and the same
    # helper the properties use lets it through (it only swallows DecodeError).
    import struct

    from wire.primitives import Reader

    def unchecked_take(self: Reader, n: int, what: str) -> bytes:
        start = self.pos
        self.pos += n
        return self.data[start:self.pos]

    monkeypatch.setattr(Reader, "take", unchecked_take)
    with pytest.raises(struct.error):
        _decode_response_or_error(ApiKey.Heartbeat, 0, b"\x00\x00")

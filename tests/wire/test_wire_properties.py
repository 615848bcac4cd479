"""Property tests: random and mutated frames never hang, never raise anything but DecodeError, and
never allocate more than a small multiple of their own size.

"Never hang" is checked, not hoped for: every decode runs under `assert_returns_within`, a real-time
alarm that fails the test from inside a decode still running after DECODE_DEADLINE_S. (Hypothesis'
own `deadline=` only measures an example after it returns, so it cannot stop a decoder that loops;
it stays off, since it fails flakily on a loaded machine.)"""

from __future__ import annotations

import signal
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Optional

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

# One decode of a frame of at most a few hundred bytes takes well under a millisecond; two seconds
# leaves room for a machine shared with other test runs and still fails a loop within the test.
DECODE_DEADLINE_S = 2.0


@contextmanager
def assert_returns_within(seconds: Optional[float] = None) -> Iterator[None]:
    """Fail the test (pytest.fail, from a SIGALRM handler) if the body runs longer than `seconds`
    (DECODE_DEADLINE_S by default)."""
    limit = DECODE_DEADLINE_S if seconds is None else seconds
    assert threading.current_thread() is threading.main_thread(), "SIGALRM needs the main thread"

    def expired(signum: int, frame: Optional[FrameType]) -> None:
        pytest.fail(f"decode still running after {limit} s: it hangs")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_decode_response(api: ApiKey, version: int, data: bytes) -> None:
    """The frame decodes or raises DecodeError (anything else escapes), within the deadline."""
    with assert_returns_within():
        try:
            codec.decode_response(api, version, data)
        except DecodeError:
            pass


def check_decode_request(data: bytes) -> None:
    """The frame decodes or raises DecodeError (anything else escapes), within the deadline."""
    with assert_returns_within():
        try:
            codec.decode_request(data)
        except DecodeError:
            pass


@FAST
@given(data=st.binary(max_size=200))
def test_random_bytes_as_any_request(data: bytes) -> None:
    check_decode_request(data)


@FAST
@given(api_version=st.sampled_from(CASES), data=st.binary(max_size=200))
def test_random_bytes_as_any_response(api_version: tuple[ApiKey, int], data: bytes) -> None:
    check_decode_response(*api_version, data)


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
    check_decode_response(api, version, frame)


@FAST
@given(api_version=st.sampled_from(CASES), data=st.data(), mutations=st.lists(MUTATION, min_size=1, max_size=3))
def test_mutated_valid_requests(api_version: tuple[ApiKey, int], data: st.DataObject,
                                mutations: list[tuple[str, int, int]]) -> None:
    api, version = api_version
    body = data.draw(message_of(codec.request_schema(api), version))
    frame = codec.encode_request(api, version, 1, "c", body)
    for how, at, value in mutations:
        frame = _mutate(frame, how, at, value)
    check_decode_request(frame)


@pytest.mark.parametrize(("api", "version"), [(ApiKey.DescribeGroups, 0), (ApiKey.JoinGroup, 9),
                                              (ApiKey.OffsetFetch, 9), (ApiKey.ApiVersions, 3)])
def test_hostile_lengths_do_not_allocate(api: ApiKey, version: int) -> None:
    # Every 4-byte window set to a huge length, in a 64-byte frame: peak memory stays tiny.
    base = codec.encode_response(api, version, 1, {}) + bytes(48)
    tracemalloc.start()
    try:
        for i in range(len(base) - 4):
            check_decode_response(api, version, base[:i] + b"\x7f\xff\xff\xff" + base[i + 4:])
            check_decode_response(api, version, base[:i] + b"\xff\xff\xff\xff\x0f" + base[i + 5:])
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
        check_decode_response(ApiKey.Heartbeat, 0, b"\x00\x00")


def test_the_deadline_check_can_fail() -> None:
    # Negative control: a body that never returns is stopped by the same deadline and fails the test.
    with pytest.raises(pytest.fail.Exception, match="hangs"):
        with assert_returns_within(0.2):
            while True:
                time.sleep(0.01)


def test_the_deadline_check_can_fail_inside_a_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    # Negative control through the helper the properties use: a decoder that loops forever.
    def looping(*_: object) -> None:
        while True:
            pass

    monkeypatch.setattr(codec, "decode_request", looping)
    monkeypatch.setattr(sys.modules[__name__], "DECODE_DEADLINE_S", 0.2)
    with pytest.raises(pytest.fail.Exception, match="hangs"):
        check_decode_request(b"\x00\x00\x00\x00")

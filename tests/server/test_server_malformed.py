"""Malformed frames: the connection is closed with one log line naming the peer and the reason; the
server stays up, answers valid requests afterwards, and other connections are unaffected."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from served import api_versions_ok, call, raw_connect, read_frame, request_frame, wait_for

from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey
from server import ServerHandle, start_in_thread
from wire.data_apis import METADATA_REQUEST
from wire import codec
from wire.schema import encode

READ_TIMEOUT_S = 0.3
MAX_FRAME = 64 * 1024


class Log(list[str]):
    def __call__(self, line: str) -> None:
        self.append(line)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ServerHandle, Log]]:
    log = Log()
    with start_in_thread(CoordinatorConfig(group_initial_rebalance_delay_ms=0), log=log,
                         read_timeout_s=READ_TIMEOUT_S, max_frame_bytes=MAX_FRAME) as handle:
        yield handle, log


def _join_body(member: str = "") -> dict[str, object]:
    return {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 30000, "member_id": member,
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x01"}], "reason": None}


VALID_FRAMES = [
    request_frame(ApiKey.ApiVersions, 3, {"client_software_name": "x", "client_software_version": "1"}),
    request_frame(ApiKey.JoinGroup, 9, _join_body()),
    request_frame(ApiKey.JoinGroup, 3, _join_body()),
    request_frame(ApiKey.SyncGroup, 5, {"group_id": "g", "generation_id": 1, "member_id": "m",
                                        "group_instance_id": None, "protocol_type": None,
                                        "protocol_name": None, "assignments": []}),
    request_frame(ApiKey.Heartbeat, 0, {"group_id": "g", "generation_id": 1, "member_id": "m"}),
    request_frame(ApiKey.OffsetCommit, 9, {"group_id": "h", "generation_id_or_member_epoch": -1, "member_id": "",
                                           "group_instance_id": None, "topics": [{"name": "t", "partitions": [
                                               {"partition_index": 0, "committed_offset": 5,
                                                "committed_metadata": ""}]}]}),
    request_frame(ApiKey.DescribeGroups, 5, {"groups": ["g", "h"], "include_authorized_operations": False}),
    request_frame(ApiKey.FindCoordinator, 4, {"key_type": 0, "coordinator_keys": ["g"]}),
    codec.frame(struct.pack(">hhih", 3, 8, 1, -1) + encode(METADATA_REQUEST, 8, {  # Metadata v8
        "topics": [{"name": "t"}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False})),
]


def test_every_valid_frame_is_answered(served: tuple[ServerHandle, Log]) -> None:
    """The frames the mutations start from are valid: each gets a response (a JoinGroup v3 to a new
    group parks only until the 0 ms initial delay ends)."""
    handle, log = served
    before = len(log)
    for frame in VALID_FRAMES:
        with raw_connect(handle.port) as sock:
            sock.sendall(frame)
            assert _outcome(sock) == "answered", frame
    assert log[before:] == []


def _outcome(sock: socket.socket) -> str:
    """'closed' if the server closed the connection, 'answered' if a frame came back."""
    sock.settimeout(READ_TIMEOUT_S + 5)
    try:
        data = read_frame(sock)
    except socket.timeout:
        return "silent"
    return "closed" if data is None else "answered"


def _expect_closed(served: tuple[ServerHandle, Log], payload: bytes, reason: str) -> None:
    handle, log = served
    before = len(log)
    with raw_connect(handle.port) as sock:
        peer = "%s:%d" % sock.getsockname()[:2]
        sock.sendall(payload)
        assert _outcome(sock) == "closed"
    assert wait_for(lambda: len(log) > before, 5)
    lines = log[before:]
    assert len(lines) == 1, lines
    assert peer in lines[0] and reason in lines[0], lines[0]
    assert api_versions_ok(handle.port)


def test_negative_frame_size(served: tuple[ServerHandle, Log]) -> None:
    _expect_closed(served, struct.pack(">i", -5) + b"xxxx", "bad frame size -5")


def test_frame_larger_than_the_bound(served: tuple[ServerHandle, Log]) -> None:
    _expect_closed(served, struct.pack(">i", MAX_FRAME + 1), f"bad frame size {MAX_FRAME + 1}")


def _expect_unsupported_and_open(served: tuple[ServerHandle, Log], code: int, version: int) -> None:
    """An API key or version not served: correlation id + UNSUPPORTED_VERSION (35), one log line,
    and the connection keeps serving (a Heartbeat on it afterwards is answered)."""
    handle, log = served
    before = len(log)
    with raw_connect(handle.port) as sock:
        sock.sendall(codec.frame(struct.pack(">hhih", code, version, 41, -1) + b"\x00" * 6))
        data = read_frame(sock)
        assert data == struct.pack(">ih", 41, 35)
        body = call(sock, ApiKey.Heartbeat, 0, {"group_id": "g", "generation_id": 1, "member_id": "m"}, 42)
        assert body["error_code"] == 25  # UNKNOWN_MEMBER_ID: the coordinator answered on the same connection
    assert wait_for(lambda: len(log) > before, 5)
    assert f"API key {code} v{version} is not served" in log[before]


def test_unknown_api_key(served: tuple[ServerHandle, Log]) -> None:
    _expect_unsupported_and_open(served, 999, 0)


def test_unsupported_version(served: tuple[ServerHandle, Log]) -> None:
    _expect_unsupported_and_open(served, ApiKey.Heartbeat.value, 77)


def test_unsupported_version_of_a_data_api(served: tuple[ServerHandle, Log]) -> None:
    _expect_unsupported_and_open(served, 1, 3)  # Fetch v3: message format v1, not served


def test_an_api_not_served_at_all(served: tuple[ServerHandle, Log]) -> None:
    _expect_unsupported_and_open(served, 32, 0)  # DescribeConfigs


def test_truncated_body(served: tuple[ServerHandle, Log]) -> None:
    whole = codec.encode_request(ApiKey.JoinGroup, 5, 1, "c", _join_body())
    _expect_closed(served, codec.frame(whole[:-6]), "malformed request")


def test_trailing_bytes(served: tuple[ServerHandle, Log]) -> None:
    whole = codec.encode_request(ApiKey.Heartbeat, 2, 1, "c", {"group_id": "g", "generation_id": 1,
                                                                "member_id": "m", "group_instance_id": None})
    _expect_closed(served, codec.frame(whole + b"\x00\x00"), "trailing bytes")


def test_half_sent_frame_times_out(served: tuple[ServerHandle, Log]) -> None:
    frame = VALID_FRAMES[1]
    _expect_closed(served, frame[: len(frame) // 2], "incomplete frame after")


def test_peer_closing_inside_a_frame_is_logged(served: tuple[ServerHandle, Log]) -> None:
    handle, log = served
    before = len(log)
    with raw_connect(handle.port) as sock:
        sock.sendall(VALID_FRAMES[2][:9])
    assert wait_for(lambda: len(log) > before, 5)
    assert "truncated frame" in log[before]
    assert api_versions_ok(handle.port)


def test_apiversions_above_the_highest_version_gets_unsupported_version_v0(
        served: tuple[ServerHandle, Log]) -> None:
    handle, _ = served
    with raw_connect(handle.port) as sock:
        sock.sendall(codec.frame(struct.pack(">hhih", ApiKey.ApiVersions.value, 9, 5, -1) + b"\x00\x00"))
        data = read_frame(sock)
        assert data is not None
        cid, body = codec.decode_response(ApiKey.ApiVersions, 0, data)
        assert cid == 5 and body["error_code"] == 35
        assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]
        # KIP-511: the client falls back and the connection keeps working
        again = call(sock, ApiKey.ApiVersions, 0, {}, 6)
        assert again["error_code"] == 0


def test_a_bad_frame_does_not_disturb_a_parked_request_on_another_connection() -> None:
    """A member parked in JoinGroup keeps its connection and gets its answer after another
    connection sends garbage and is closed."""
    log = Log()
    with start_in_thread(CoordinatorConfig(group_initial_rebalance_delay_ms=400), log=log) as handle:
        with raw_connect(handle.port) as member:
            member.sendall(request_frame(ApiKey.JoinGroup, 3, _join_body()))  # v3: joins at once, parked
            with raw_connect(handle.port) as bad:
                bad.sendall(struct.pack(">i", -1))
                assert _outcome(bad) == "closed"
            member.settimeout(10)
            data = read_frame(member)
            assert data is not None
            _, body = codec.decode_response(ApiKey.JoinGroup, 3, data)
            assert body["error_code"] == 0 and body["generation_id"] == 1
        assert len(log) == 1 and "bad frame size -1" in log[0]


# ------------------------------------------------------------------ Hypothesis: mutated valid frames

@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    frame = bytearray(draw(st.sampled_from(VALID_FRAMES)))
    kind = draw(st.sampled_from(["truncate", "flip", "size", "splice"]))
    if kind == "truncate":
        cut = draw(st.integers(0, len(frame) - 1))
        body = bytes(frame[4:cut]) if cut > 4 else b""
        return struct.pack(">i", len(body)) + body if draw(st.booleans()) else bytes(frame[:cut])
    if kind == "flip":
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(4, len(frame) - 1))
            frame[i] ^= draw(st.integers(1, 255))
        return bytes(frame)
    if kind == "size":
        size = draw(st.one_of(st.integers(-(2**31), -1), st.integers(MAX_FRAME + 1, 2**31 - 1),
                              st.integers(0, len(frame) - 5)))
        return struct.pack(">i", size) + bytes(frame[4:])
    i = draw(st.integers(4, len(frame)))
    return bytes(frame[:i]) + draw(st.binary(min_size=1, max_size=16)) + bytes(frame[i:])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=mutated())
def test_mutated_frames_never_take_the_server_down(served: tuple[ServerHandle, Log], data: bytes) -> None:
    handle, log = served
    with raw_connect(handle.port) as sock:
        sock.sendall(data)
        sock.settimeout(0.05)
        try:
            while sock.recv(65536):  # drain whatever is answered until the server closes or goes quiet
                pass
        except (socket.timeout, ConnectionResetError):
            pass
    assert api_versions_ok(handle.port)
    assert all("internal" not in line for line in log), [x for x in log if "internal" in x]
    assert handle.server.connections is not None
    time.sleep(0)


def test_an_exception_inside_the_coordinator_closes_only_that_connection() -> None:
    """A coordinator bug (here: an injected exception) is logged and closes the requesting
    connection; the server keeps answering."""
    log = Log()
    with start_in_thread(CoordinatorConfig(), log=log) as handle:
        original = handle.server.coordinator.handle

        def broken(request: object, callback: object) -> None:
            raise RuntimeError("injected")

        handle.call(lambda s: setattr(s.dispatcher.coordinator, "handle", broken))
        with raw_connect(handle.port) as sock:
            sock.sendall(VALID_FRAMES[4])  # Heartbeat
            assert _outcome(sock) == "closed"
        assert wait_for(lambda: len(log) == 1, 5)
        assert "internal error: RuntimeError: injected" in log[0]
        handle.call(lambda s: setattr(s.dispatcher.coordinator, "handle", original))
        assert api_versions_ok(handle.port)
        with raw_connect(handle.port) as sock:
            sock.sendall(VALID_FRAMES[4])
            assert _outcome(sock) == "answered"

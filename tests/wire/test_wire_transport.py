"""Transport failures and the loopback safety check, against small local socket peers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Callable, Optional

import pytest

from model.vocabulary import ApiKey
from wire import KafkaTarget, kafka_target, parse_address
from wire.errors import (
    BrokerTimeoutError, DecodeError, RemoteHostRefused, TransportError, UnsupportedVersionError,
)
from wire.transport import Connection, check_loopback, negotiate

HEARTBEAT = {"group_id": "g", "generation_id": 1, "member_id": "m"}


@contextmanager
def peer(behaviour: Callable[[socket.socket], None]) -> Iterator[int]:
    """A one-connection TCP peer on 127.0.0.1 that runs `behaviour` on the accepted socket."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            behaviour(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        server.close()
        thread.join(timeout=5)


def _read_request(conn: socket.socket) -> bytes:
    size = int.from_bytes(conn.recv(4), "big")
    data = b""
    while len(data) < size:
        data += conn.recv(size - len(data))
    return data


# How a peer answers the Heartbeat it reads (None: it closes the connection), and what the call
# then raises. A peer that answers stays connected until the client closes.
BROKEN_PEERS = [
    pytest.param(None, TransportError, "closed the connection", 5, id="closes-the-connection"),
    pytest.param(lambda request: b"\x00\x00\x00\x05" + request[4:8] + b"\xff",  # right id, int16 cut short
                 DecodeError, "HeartbeatResponse v0 at offset 4: truncated", 5, id="garbage-answer"),
    pytest.param(lambda request: b"\x00\x00\x00\x06" + b"\x00\x00\x01\x00" + b"\x00\x00",
                 DecodeError, "unknown correlation id 256", 5, id="unknown-correlation-id"),
    pytest.param(lambda request: b"\x7f\xff\xff\xff", DecodeError, "frame size 2147483647", 5,
                 id="oversized-frame-size"),
    pytest.param(lambda request: b"", BrokerTimeoutError, "no response within 0.2s", 0.2, id="silent"),
]


@pytest.mark.parametrize(("answer", "error", "message", "timeout_s"), BROKEN_PEERS)
def test_a_broken_peer_is_a_typed_error(answer: Optional[Callable[[bytes], bytes]], error: type[Exception],
                                        message: str, timeout_s: float) -> None:
    def behaviour(c: socket.socket) -> None:
        request = _read_request(c)
        if answer is not None:
            c.sendall(answer(request))
            c.recv(1)

    with peer(behaviour) as port:
        conn = Connection("127.0.0.1", port)
        with pytest.raises(error, match=message):
            conn.call(ApiKey.Heartbeat, 0, HEARTBEAT, timeout_s=timeout_s)
        if error is DecodeError:
            assert conn.closed  # a connection that read something undecodable is not used again
        conn.close()


def test_target_against_a_garbage_broker_raises_a_typed_error() -> None:
    def short_frame(c: socket.socket) -> None:
        _read_request(c)
        c.sendall(b"\x00\x00\x00\x01\x00")
        c.recv(1)

    with peer(short_frame) as port:
        with pytest.raises(DecodeError):
            KafkaTarget("127.0.0.1", port, request_timeout_s=5)


def test_refused_connection_is_a_transport_error() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(TransportError, match="cannot connect"):
        Connection("127.0.0.1", port, connect_timeout_s=1)


@pytest.mark.parametrize("address", ["kafka://10.1.2.3:9092", "kafka://192.0.2.1:9092",
                                     "kafka://[2001:db8::1]:9092", "8.8.8.8:9092"])
def test_remote_hosts_are_refused(address: str) -> None:
    with pytest.raises(RemoteHostRefused, match="outside the loopback range.*allow_remote=True"):
        kafka_target(address)


def test_loopback_names_pass_and_remote_passes_when_allowed() -> None:
    check_loopback("127.0.0.1", 9092, False)
    check_loopback("127.8.9.10", 9092, False)
    check_loopback("::1", 9092, False)
    check_loopback("localhost", 9092, False)
    # Negative control: with allow_remote the same remote address gets as far as connecting.
    with pytest.raises(TransportError, match="cannot connect to 192.0.2.1:9092"):
        kafka_target("kafka://192.0.2.1:9092", allow_remote=True, request_timeout_s=0.2)


def test_parse_address() -> None:
    assert parse_address("kafka://127.0.0.1:9092") == ("127.0.0.1", 9092)
    assert parse_address("localhost:1") == ("localhost", 1)
    assert parse_address("kafka://[::1]:9092") == ("::1", 9092)
    for bad in ["kafka://host", "host:0", "host:99999", ":9092", "kafka://h:x"]:
        with pytest.raises(ValueError, match="expected kafka://HOST:PORT"):
            parse_address(bad)


def test_negotiate_picks_the_highest_common_version_or_the_pin() -> None:
    broker = {ApiKey.JoinGroup: (0, 7), ApiKey.Heartbeat: (0, 9), ApiKey.ApiVersions: (0, 2)}
    chosen = negotiate(broker)
    assert chosen == {ApiKey.JoinGroup: 7, ApiKey.Heartbeat: 4, ApiKey.ApiVersions: 2}
    assert negotiate(broker, {ApiKey.JoinGroup: 5})[ApiKey.JoinGroup] == 5
    with pytest.raises(UnsupportedVersionError, match="JoinGroup v8 is pinned"):
        negotiate(broker, {ApiKey.JoinGroup: 8})
    with pytest.raises(UnsupportedVersionError, match="SyncGroup v0 is pinned"):
        negotiate(broker, {ApiKey.SyncGroup: 0})

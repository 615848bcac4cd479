"""Test helpers: `groupspec serve` (in a thread) driven through the real wire target (wire.KafkaTarget).

`ServedTarget` is what the scenario runner gets: requests go through KafkaTarget over real sockets
to a server whose clock is `manual`, and `advance(ms)` moves the server's clock by exactly `ms`.
So a scenario sees the same virtual time as on the in-process reference and outcomes can be
compared exactly. Instead of KafkaTarget's fixed real-time waits, `handle`/`advance` wait until the
server has processed every request sent and the client has received every response the server
wrote (the server counts both), so "no response" means "parked", never "slow machine".
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any, Optional

from model import messages as m
from model.coordinator_api import CoordinatorConfig, ResponseCallback
from model.vocabulary import ApiKey
from server import ServerHandle, start_in_thread
from wire import codec
from wire.target import KafkaTarget
from wire.schema import Struct

SYNC_LIMIT_S = 20.0


class ServedTarget:
    """A Coordinator: KafkaTarget -> sockets -> `groupspec serve` with a manual clock."""

    def __init__(self, config: CoordinatorConfig, bug: Optional[str] = None) -> None:
        self.logs: list[str] = []
        self.server: ServerHandle = start_in_thread(config, bug, clock="manual", log=self.logs.append)
        self.target = KafkaTarget(self.server.host, self.server.port, config, time_scale=0.0,
                                  immediate_wait_s=0.0, settle_s=0.002)
        self.sent = 0

    def handle(self, request: m.Request, callback: ResponseCallback) -> None:
        self.sent += 1
        self.target.handle(request, callback)
        self._sync()

    def advance(self, ms: int) -> None:
        self.server.advance(ms)
        self._sync()

    def now_ms(self) -> int:
        return self.server.call(lambda s: s.coordinator.now_ms())

    def skip_reason(self) -> Optional[str]:
        return self.target.skip_reason()

    def close(self) -> None:
        try:
            self.target.close()
        finally:
            self.server.stop()

    def _sync(self) -> None:
        stats = self.server.stats
        deadline = time.monotonic() + SYNC_LIMIT_S
        while stats.group_requests < self.sent:
            if time.monotonic() > deadline:
                raise AssertionError(f"server processed {stats.group_requests} of {self.sent} requests")
            time.sleep(0.0005)
        while self.sent - self.target.pending_count() < stats.group_responses:
            if time.monotonic() > deadline:
                raise AssertionError("responses written by the server did not arrive")
            self.target.advance(0)  # delivers what has arrived (settle_s of real waiting, no virtual time)
        if self.logs:
            raise AssertionError(f"server logged connection problems: {self.logs}")


class ServedFactory:
    """The runner's TargetFactory: one fresh server + wire target per scenario (with its config)."""

    def __init__(self, bug: Optional[str] = None) -> None:
        self.bug = bug

    def __call__(self, config: CoordinatorConfig) -> ServedTarget:
        from wire.target import unsupported_config

        reason = unsupported_config(config)
        if reason is not None:
            raise NotImplementedError(reason)
        return ServedTarget(config, self.bug)


# ------------------------------------------------------------------ raw frames


def raw_connect(port: int, timeout_s: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_frame(sock: socket.socket) -> Optional[bytes]:
    """One response frame, or None when the server closed the connection first."""
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return _read_exactly(sock, size)


def _read_exactly(sock: socket.socket, n: int) -> Optional[bytes]:
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def request_frame(api: ApiKey, version: int, body: Struct, correlation_id: int = 1,
                  client_id: str = "raw") -> bytes:
    return codec.frame(codec.encode_request(api, version, correlation_id, client_id, body))


def call(sock: socket.socket, api: ApiKey, version: int, body: Struct, correlation_id: int = 1) -> Struct:
    sock.sendall(request_frame(api, version, body, correlation_id))
    data = read_frame(sock)
    assert data is not None, f"{api.name} v{version}: connection closed instead of a response"
    cid, decoded = codec.decode_response(api, version, data)
    assert cid == correlation_id
    return decoded


def api_versions_ok(port: int) -> bool:
    """A fresh connection gets a valid ApiVersions v3 answer listing JoinGroup (the server is up)."""
    with raw_connect(port) as sock:
        body = call(sock, ApiKey.ApiVersions, 3,
                    {"client_software_name": "probe", "client_software_version": "1"}, 99)
    return body["error_code"] == 0 and any(k["api_key"] == ApiKey.JoinGroup.value for k in body["api_keys"])


def wait_for(predicate: Any, timeout_s: float, step_s: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step_s)
    return bool(predicate())

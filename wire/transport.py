"""Sockets: one Connection per TCP stream, a reader thread each, version negotiation, coordinator lookup.

The codec stays sans-IO; this module is the only one that touches sockets. Every blocking step has
a timeout; a broker that closes the stream or sends bytes that do not decode fails the waiting
requests with a TransportError / DecodeError (delivered to their callbacks, never raised in the
reader thread) and closes the connection.
"""

from __future__ import annotations

import ipaddress
import itertools
import socket
import threading
from dataclasses import dataclass
from typing import Callable, Optional, TypeVar

from model.vocabulary import ApiKey, Error
from wire import apis, codec
from wire.errors import (
    BrokerTimeoutError, DecodeError, RemoteHostRefused, TransportError, UnsupportedVersionError,
    WireError,
)
from wire.schema import Struct

CLIENT_SOFTWARE_NAME = "groupspec-wire"
CLIENT_SOFTWARE_VERSION = "0.1.0"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a request ended with: a decoded body, or the error that prevented one."""

    api: ApiKey
    version: int
    body: Optional[Struct] = None
    error: Optional[WireError] = None


OutcomeCallback = Callable[[Outcome], None]
_P = TypeVar("_P")


def take_pending(pending: dict[int, _P], correlation_id: int) -> _P:
    """The request a response answers, taken from those waiting (by correlation id); a response to
    none of them is a DecodeError (the connection cannot be trusted after it)."""
    entry = pending.pop(correlation_id, None)
    if entry is None:
        raise DecodeError(None, None, 0, f"response with unknown correlation id {correlation_id}")
    return entry


def check_loopback(host: str, port: int, allow_remote: bool) -> None:
    """Refuse hosts that resolve outside 127.0.0.0/8 and ::1, unless `allow_remote`."""
    if allow_remote:
        return
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise TransportError(f"cannot resolve {host!r}: {exc}") from None
    outside = sorted({str(info[4][0]) for info in infos
                      if not ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback})
    if outside or not infos:
        raise RemoteHostRefused(
            f"refusing to connect to {host}:{port}: it resolves to {', '.join(outside) or 'nothing'}, "
            "outside the loopback range (127.0.0.0/8, ::1). Pass allow_remote=True to talk to a "
            "remote broker on purpose.")


class Connection:
    """One TCP connection to a broker; requests are pipelined, responses matched by correlation id."""

    def __init__(self, host: str, port: int, *, client_id: str = "groupspec",
                 connect_timeout_s: float = 5.0, allow_remote: bool = False) -> None:
        check_loopback(host, port, allow_remote)
        self.host, self.port, self.client_id = host, port, client_id
        try:
            self._sock = socket.create_connection((host, port), timeout=connect_timeout_s)
        except OSError as exc:
            raise TransportError(f"cannot connect to {host}:{port}: {exc}") from None
        self._sock.settimeout(None)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[ApiKey, int, OutcomeCallback]] = {}
        self._ids = itertools.count(1)
        self._closed: Optional[str] = None
        self._reader = threading.Thread(target=self._read_loop, daemon=True,
                                        name=f"wire-reader-{host}:{port}")
        self._reader.start()

    @property
    def busy(self) -> bool:
        with self._lock:
            return bool(self._pending)

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def send(self, api: ApiKey, version: int, body: Struct, callback: OutcomeCallback,
             client_id: Optional[str] = None) -> int:
        """Encode and send; `callback` runs once, on the reader thread, with the Outcome.

        `client_id` overrides the connection's client id in this request's header (Kafka derives
        dynamic member ids from it: `<client id>-<uuid>`)."""
        correlation_id = next(self._ids)
        header_client = self.client_id if client_id is None else client_id
        data = codec.frame(codec.encode_request(api, version, correlation_id, header_client, body))
        with self._lock:
            if self._closed is not None:
                raise TransportError(f"{self.host}:{self.port}: connection closed ({self._closed})")
            self._pending[correlation_id] = (api, version, callback)
        try:
            self._sock.sendall(data)
        except OSError as exc:
            self._fail_all(f"send failed: {exc}")
            raise TransportError(f"{self.host}:{self.port}: send failed: {exc}") from None
        return correlation_id

    def call(self, api: ApiKey, version: int, body: Struct, timeout_s: float) -> Struct:
        """Send and wait for the response body; raises the typed error on failure or timeout."""
        done = threading.Event()
        box: list[Outcome] = []

        def on_outcome(outcome: Outcome) -> None:
            box.append(outcome)
            done.set()

        self.send(api, version, body, on_outcome)
        if not done.wait(timeout_s):
            raise BrokerTimeoutError(
                f"{api.name} v{version} to {self.host}:{self.port}: no response within {timeout_s}s")
        outcome = box[0]
        if outcome.error is not None:
            raise outcome.error
        assert outcome.body is not None
        return outcome.body

    def close(self) -> None:
        self._fail_all("closed by the client")
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._reader.join(timeout=5.0)

    def _fail_all(self, reason: str, error: Optional[WireError] = None) -> None:
        with self._lock:
            if self._closed is None:
                self._closed = reason
            pending, self._pending = self._pending, {}
        for api, version, callback in pending.values():
            callback(Outcome(api, version, error=error or TransportError(
                f"{api.name} v{version} to {self.host}:{self.port}: {reason}")))

    def _read_loop(self) -> None:
        frames = codec.FrameBuffer()
        while True:
            try:
                chunk = self._sock.recv(65536)
            except OSError as exc:
                self._fail_all(f"receive failed: {exc}")
                return
            if not chunk:
                self._fail_all("the broker closed the connection")
                return
            try:
                for data in frames.feed(chunk):
                    self._dispatch(data)
            except DecodeError as exc:
                self._fail_all(f"undecodable response: {exc}", exc)
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return

    def _dispatch(self, data: bytes) -> None:
        with self._lock:
            api, version, callback = take_pending(self._pending, codec.peek_correlation_id(data))
        try:
            _, body = codec.decode_response(api, version, data)
        except DecodeError as exc:
            callback(Outcome(api, version, error=exc))
            raise
        callback(Outcome(api, version, body=body))


def api_versions(conn: Connection, timeout_s: float) -> dict[ApiKey, tuple[int, int]]:
    """The broker's (min, max) per API we know; asks with v3 first, then v0 (KIP-511 fallback)."""
    body: Struct = {"client_software_name": CLIENT_SOFTWARE_NAME,
                    "client_software_version": CLIENT_SOFTWARE_VERSION}
    reply = conn.call(ApiKey.ApiVersions, 3, body, timeout_s)
    if reply["error_code"] == Error.UNSUPPORTED_VERSION.code:
        raise UnsupportedVersionError(f"{conn.host}:{conn.port} does not support ApiVersions v3")
    if reply["error_code"] != 0:
        raise TransportError(f"ApiVersions failed with error code {reply['error_code']}")
    out: dict[ApiKey, tuple[int, int]] = {}
    for entry in reply["api_keys"]:
        api = codec.api_key_of(entry["api_key"])
        if api is not None:
            out[api] = (entry["min_version"], entry["max_version"])
    return out


def negotiate(broker: dict[ApiKey, tuple[int, int]],
              pinned: Optional[dict[ApiKey, int]] = None) -> dict[ApiKey, int]:
    """Per API: the pinned version (checked), or the highest version both sides support."""
    pinned = pinned or {}
    chosen: dict[ApiKey, int] = {}
    for api, ours in apis.SUPPORTED_VERSIONS.items():
        theirs = broker.get(api)
        lo, hi = (max(ours.lo, theirs[0]), min(ours.hi, theirs[1])) if theirs else (1, 0)
        if api in pinned:
            v = pinned[api]
            if not lo <= v <= hi:
                raise UnsupportedVersionError(
                    f"{api.name} v{v} is pinned, but codec supports {ours} and broker "
                    f"{'%d-%d' % theirs if theirs else 'none'}")
            chosen[api] = v
        elif lo <= hi:
            chosen[api] = hi
    for api in pinned:
        if api not in apis.SUPPORTED_VERSIONS:
            raise UnsupportedVersionError(f"{api.name} is not spoken by this codec")
    return chosen


@dataclass(frozen=True, slots=True)
class CoordinatorAddress:
    node_id: int
    host: str
    port: int


def find_coordinator(conn: Connection, group_id: str, version: int,
                     timeout_s: float) -> CoordinatorAddress:
    """FindCoordinator for a group (key type 0); raises TransportError on an error code."""
    if version >= 4:
        reply = conn.call(ApiKey.FindCoordinator, version,
                          {"key_type": 0, "coordinator_keys": [group_id]}, timeout_s)
        if len(reply["coordinators"]) != 1:
            raise TransportError(f"FindCoordinator v{version}: expected one coordinator, got "
                                 f"{len(reply['coordinators'])}")
        c = reply["coordinators"][0]
        code, node, host, port = c["error_code"], c["node_id"], c["host"], c["port"]
    else:
        reply = conn.call(ApiKey.FindCoordinator, version, {"key": group_id, "key_type": 0},
                          timeout_s)
        code, node, host, port = reply["error_code"], reply["node_id"], reply["host"], reply["port"]
    if code != 0:
        raise TransportError(f"FindCoordinator for {group_id!r} failed with error code {code}")
    return CoordinatorAddress(node, host, port)

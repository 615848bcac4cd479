"""Asyncio Kafka clients for the fuzzer: many connections in one thread, one request at a time each.

`Broker` holds the bootstrap address, the negotiated version ranges (ApiVersions) and the
coordinator of each group (FindCoordinator). `AsyncConnection` pipelines requests over one socket
and matches responses by correlation id; a reader task decodes frames with the sans-IO codec of
`wire.codec`. A fuzzed group owns its connections (one per simulated client, as a Kafka client
has), so a parked JoinGroup never blocks another member's request.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass
from typing import Callable, Optional

from model import messages as m
from model.vocabulary import ApiKey, Error
from wire import apis, codec, convert
from wire.errors import DecodeError, TransportError, WireError
from wire.schema import Struct
from wire.transport import check_loopback, take_pending

CLIENT_ID = "consumer"


@dataclass(frozen=True, slots=True)
class Received:
    """A response (or the error that prevented one) and the monotonic time it was read."""

    at: float
    response: Optional[m.Response]
    error: Optional[str] = None


ResponseHook = Callable[[Received], None]


class AsyncConnection:
    """One TCP connection; `send` returns at once, the hook runs on the event loop when answered."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[ApiKey, int, ResponseHook]] = {}
        self._raw: dict[int, Callable[[bytes], None]] = {}
        self.closed: Optional[str] = None
        self._task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def open(cls, host: str, port: int, timeout_s: float) -> "AsyncConnection":
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            raise TransportError(f"cannot connect to {host}:{port}: {exc or 'timeout'}") from None
        return cls(reader, writer)

    @property
    def busy(self) -> bool:
        return bool(self._pending) or bool(self._raw)

    def send(self, api: ApiKey, version: int, body: Struct, hook: ResponseHook) -> None:
        if self.closed is not None:
            raise TransportError(f"connection closed ({self.closed})")
        cid = next(self._ids)
        self._pending[cid] = (api, version, hook)
        self._writer.write(codec.frame(codec.encode_request(api, version, cid, CLIENT_ID, body)))

    async def call(self, api: ApiKey, version: int, body: Struct, timeout_s: float) -> Struct:
        """Send and wait for the raw response body (bootstrap requests: ApiVersions, FindCoordinator)."""
        fut: asyncio.Future[Struct] = asyncio.get_running_loop().create_future()
        cid = next(self._ids)

        def on_frame(data: bytes) -> None:
            if not fut.done():
                fut.set_result(codec.decode_response(api, version, data)[1])

        self._raw[cid] = on_frame
        self._writer.write(codec.frame(codec.encode_request(api, version, cid, CLIENT_ID, body)))
        try:
            return await asyncio.wait_for(fut, timeout_s)
        except asyncio.TimeoutError:
            raise TransportError(f"{api.name} v{version}: no response within {timeout_s}s") from None

    async def _read_loop(self) -> None:
        frames = codec.FrameBuffer()
        try:
            while True:
                chunk = await self._reader.read(65536)
                if not chunk:
                    self._fail("the broker closed the connection")
                    return
                for data in frames.feed(chunk):
                    self._dispatch(data)
        except (OSError, DecodeError) as exc:
            self._fail(f"{type(exc).__name__}: {exc}")
        except asyncio.CancelledError:
            self._fail("closed by the client")

    def _dispatch(self, data: bytes) -> None:
        at = time.monotonic()
        cid = codec.peek_correlation_id(data)
        raw = self._raw.pop(cid, None)
        if raw is not None:
            raw(data)
            return
        api, version, hook = take_pending(self._pending, cid)
        try:
            _, body = codec.decode_response(api, version, data)
            record = convert.response_record(api, version, body)
        except WireError as exc:
            hook(Received(at, None, f"undecodable {api.name} v{version} response: {exc}"))
            return
        hook(Received(at, record))

    def _fail(self, reason: str) -> None:
        if self.closed is None:
            self.closed = reason
        pending, self._pending = self._pending, {}
        at = time.monotonic()
        for api, version, hook in pending.values():
            hook(Received(at, None, f"{api.name} v{version}: {reason}"))

    def close(self) -> None:
        self._task.cancel()
        try:
            self._writer.close()
        except Exception:  # already broken: nothing to release
            pass


async def open_connection(host: str, port: int, timeout_s: float) -> AsyncConnection:
    return await AsyncConnection.open(host, port, timeout_s)


class Broker:
    """Bootstrap state shared by every fuzzed group: versions and coordinator addresses."""

    def __init__(self, host: str, port: int, *, allow_remote: bool = False,
                 timeout_s: float = 10.0) -> None:
        check_loopback(host, port, allow_remote)
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self.versions: dict[ApiKey, tuple[int, int]] = {}
        self._bootstrap: Optional[AsyncConnection] = None
        self._coordinators: dict[str, tuple[str, int]] = {}
        self._allow_remote = allow_remote

    async def start(self) -> None:
        """ApiVersions: the version range of every API both this codec and the broker speak."""
        self._bootstrap = await open_connection(self.host, self.port, self.timeout_s)
        body: Struct = {"client_software_name": "groupspec-fuzz", "client_software_version": "0.1"}
        reply = await self._bootstrap.call(ApiKey.ApiVersions, 3, body, self.timeout_s)
        if reply["error_code"] != 0:
            raise TransportError(f"ApiVersions failed with error code {reply['error_code']}")
        for entry in reply["api_keys"]:
            api = codec.api_key_of(entry["api_key"])
            if api is None or api not in apis.SUPPORTED_VERSIONS:
                continue
            ours = apis.SUPPORTED_VERSIONS[api]
            lo, hi = max(ours.lo, entry["min_version"]), min(ours.hi, entry["max_version"])
            if lo <= hi:
                self.versions[api] = (lo, hi)

    async def coordinator(self, group_id: str) -> tuple[str, int]:
        found = self._coordinators.get(group_id)
        if found is not None:
            return found
        assert self._bootstrap is not None
        lo, hi = self.versions.get(ApiKey.FindCoordinator, (0, -1))
        if hi < lo:
            return self.host, self.port
        if hi >= 4:
            reply = await self._bootstrap.call(
                ApiKey.FindCoordinator, hi, {"key_type": 0, "coordinator_keys": [group_id]},
                self.timeout_s)
            c = reply["coordinators"][0]
            code, host, port = c["error_code"], c["host"], c["port"]
        else:
            reply = await self._bootstrap.call(ApiKey.FindCoordinator, hi,
                                               {"key": group_id, "key_type": 0}, self.timeout_s)
            code, host, port = reply["error_code"], reply["host"], reply["port"]
        if code != Error.NONE.code:
            raise TransportError(f"FindCoordinator for {group_id!r}: error code {code}")
        check_loopback(host, port, self._allow_remote)
        self._coordinators[group_id] = (host, port)
        return host, port

    async def connect(self, group_id: str) -> AsyncConnection:
        host, port = await self.coordinator(group_id)
        return await open_connection(host, port, self.timeout_s)

    def close(self) -> None:
        if self._bootstrap is not None:
            self._bootstrap.close()
            self._bootstrap = None


def wire_request(request: m.Request, version: int) -> tuple[ApiKey, Struct, m.Request]:
    """The body sent for `request` at `version`, and the record a broker decodes from it (so the
    model judges exactly what went over the wire: fields a version lacks are gone, JoinGroup's
    KIP-394/KIP-814 flags follow the version)."""
    api, body = convert.request_body(request, version)
    data = codec.encode_request(api, version, 0, CLIENT_ID, body)
    _, decoded = codec.decode_request(data)
    return api, body, convert.request_record(api, version, decoded)

"""The proxy itself (asyncio): listeners, one upstream connection per client connection, frames
forwarded as they are read.

Every request frame goes upstream exactly as the client sent it, every answer back exactly as the
upstream sent it, except Metadata and FindCoordinator answers (observe/addresses.py). A frame is
forwarded before it is judged, so judging delays no answer of its own connection. Group API
requests and their answers are decoded (wire codec) and handed to `Judging`; a frame that cannot be
decoded is forwarded unchanged and counted, and a byte stream that stops being frames (a size
outside Kafka's bounds) is forwarded unchanged from there on, unparsed.

When a client closes its connection, the upstream connection stays open until every judged
request on it is answered, at most `grace_s` after the last request (the judge assumes a broker
processes every request it was sent within `process_ms`: it must still have it to process); then
it is closed and the judge is told which answers it will never see.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import time
from dataclasses import dataclass, replace
from typing import Callable, Final, Optional

from model import messages as m
from model.vocabulary import ApiKey
from wire import codec, convert
from wire.data_apis import DataApi
from wire.errors import DecodeError, WireError

from observe.addresses import FIND_COORDINATOR, METADATA, rewrite
from observe.judging import GROUP_APIS
from observe.report import Counts
from observe.worker import JudgeProcess

CONNECT_TIMEOUT_S = 10.0
READ_BYTES = 1 << 16


@dataclass
class _Pending:
    """A request forwarded and not answered yet (every request but Produce, which acks=0 leaves
    unanswered). A group API request sent while an earlier request of its connection is
    unanswered is `held`: Kafka reads a connection's next request only once it has answered the
    one before (the channel is muted meanwhile), so the judge is told of it only when the proxy
    reads that answer (the order in which the broker may have read it), dated from when it was
    `written` upstream (the broker answered the one before, and may have read it, before the
    proxy read that answer: the earliest moment it may have been read is the write) and `ready`
    from that answer on (processed within the judge's `process_ms` of it)."""

    api_key: int
    version: int
    written: float = 0.0  # monotonic time the proxy wrote it upstream
    rid: Optional[int] = None  # the judged request's id (JudgingThread.request)
    rewrite: bool = False
    record: Optional[m.Request] = None
    held: bool = False


PRODUCE: Final = 0


class Proxy:
    """Listeners on `listen_host` forwarding to the upstream brokers, the first to `upstream`."""

    def __init__(self, upstream: tuple[str, int], listen_host: str, judging: JudgeProcess, *,
                 grace_s: float, on_refused: Callable[[str], None] = lambda why: None) -> None:
        self.upstream, self.listen_host, self.judging = upstream, listen_host, judging
        self.grace_s, self.on_refused = grace_s, on_refused
        self.counts = Counts()
        self.listeners: dict[tuple[str, int], tuple[asyncio.Server, int]] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()

    async def start(self, port: int) -> int:
        """Listen for the bootstrap upstream on `port` (0: a free port); the port bound."""
        return await self._listen(self.upstream, port)

    async def port_for(self, host: str, port: int) -> int:
        """The listener forwarding to upstream broker host:port (opened on first sight)."""
        key = (host, port)
        if key not in self.listeners:
            async with self._lock:
                if key not in self.listeners:
                    await self._listen(key, 0)
        return self.listeners[key][1]

    async def _listen(self, upstream: tuple[str, int], port: int) -> int:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._tasks.add(task)
            try:
                await self._connection(upstream, reader, writer)
            except asyncio.CancelledError:
                # `close` ended it: the task returns, since asyncio prints the traceback of a
                # connection handler's task that ends cancelled (Python 3.11)
                pass
            finally:
                self._tasks.discard(task)

        server = await asyncio.start_server(serve, self.listen_host, port)
        bound = int(server.sockets[0].getsockname()[1])
        self.listeners[upstream] = (server, bound)
        return bound

    async def close(self) -> None:
        for server, _ in self.listeners.values():
            server.close()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)

    # ------------------------------------------------------------------ one connection

    async def _connection(self, upstream: tuple[str, int], reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        conn = next(self._ids)
        self.counts.connections += 1
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*upstream), CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError) as e:
            self.counts.upstream_refused += 1
            self.on_refused(f"cannot connect to {upstream[0]}:{upstream[1]}: {e or 'timeout'}")
            writer.close()
            return
        pending: dict[int, _Pending] = {}  # in the order sent
        link = _Link(writer)
        answers = asyncio.get_running_loop().create_task(self._answers(conn, up_reader, link, pending))
        try:
            last = await self._requests(conn, reader, up_writer, pending, answers)
            # the client is gone: let the upstream answer (and the judge see) what it was sent
            link.client_gone = True
            end = last + self.grace_s
            while (any(p.rid is not None or p.held for p in pending.values()) and not answers.done()
                   and time.monotonic() < end):
                await asyncio.sleep(0.02)
        finally:
            answers.cancel()
            up_writer.close()
            writer.close()
            # (requests still held were never read by the broker: closed, they never will be)
            self.judging.connection_closed(conn, time.monotonic())

    async def _requests(self, conn: int, reader: asyncio.StreamReader, up: asyncio.StreamWriter,
                        pending: dict[int, _Pending], answers: "asyncio.Task[None]") -> float:
        """Forward the client's bytes until it closes; returns the time of its last request."""
        stream = _Frames(self, f"request stream of connection {conn}")
        last = time.monotonic()
        while not answers.done():
            try:
                chunk = await reader.read(READ_BYTES)
            except OSError:
                break
            if not chunk:
                break
            payloads, raw = stream.feed(chunk)
            if raw:
                up.write(raw)
                self.counts.bytes_up += len(raw)
            for payload in payloads:
                last = time.monotonic()
                up.write(codec.frame(payload))
                self.counts.request(_api_name(payload))
                self.counts.bytes_up += len(payload) + 4
                self._request(conn, payload, last, pending)
        return last

    def _unframed(self, why: str) -> None:
        self.counts.unframed_streams += 1
        self.counts.unparsed(why)

    def _request(self, conn: int, payload: bytes, at: float, pending: dict[int, _Pending]) -> None:
        if len(payload) < 8:
            self.counts.unparsed_requests += 1
            self.counts.unparsed(f"request of {len(payload)} bytes: no header")
            return
        key, version, cid = struct.unpack_from(">hhi", payload)
        api = codec.api_key_of(key)
        if api not in GROUP_APIS:
            if key != PRODUCE:
                pending[cid] = _Pending(key, version, rewrite=key in (METADATA, FIND_COORDINATOR))
            return
        assert api is not None
        try:
            header, body = codec.decode_request(payload)
            if api is ApiKey.OffsetFetch and version >= 8 and len(body["groups"]) != 1:
                raise DecodeError("OffsetFetchRequest", version, 0,
                                  f"{len(body['groups'])} groups in one request (judged: one)")
            record = convert.request_record(api, version, body)
        except (WireError, KeyError, TypeError) as e:
            self.counts.unparsed_requests += 1
            self.counts.unparsed(f"{api.name} v{version} request: {e}")
            self.judging.undecodable_request(conn, f"{api.name} v{version}")
            pending[cid] = _Pending(key, version)
            return
        if isinstance(record, m.JoinGroupRequest):
            # DescribeGroups answers each member's client id: the one its JoinGroup came with
            record = replace(record, client_id=header.client_id or "")
        p = pending[cid] = _Pending(key, version, written=at, record=record, held=len(pending) > 0)
        if not p.held:
            self._release(conn, p, at)

    def _release(self, conn: int, p: _Pending, at: float) -> None:
        """The broker surely may read request `p` from `at` on (and may have from its write on):
        the judge is told of it now, sent when written, ready at `at`."""
        api = codec.api_key_of(p.api_key)
        assert api is not None and p.record is not None
        ready = at if p.held else None
        p.held = False
        p.rid = self.judging.request(conn, api, p.version, p.record, p.written, ready)

    async def _answers(self, conn: int, reader: asyncio.StreamReader, link: "_Link",
                       pending: dict[int, _Pending]) -> None:
        stream = _Frames(self, f"answer stream of connection {conn}")
        why: Optional[str] = "the broker closed the connection"
        try:
            while True:
                try:
                    chunk = await reader.read(READ_BYTES)
                except OSError as e:
                    why = f"{type(e).__name__}: {e}"
                    break
                if not chunk:
                    break
                payloads, raw = stream.feed(chunk)
                if raw:
                    link.write(raw)
                    self.counts.bytes_down += len(raw)
                for payload in payloads:
                    await self._answer(conn, payload, time.monotonic(), link, pending)
        except asyncio.CancelledError:
            why = None  # the client went away first: what is open is never answered (connection_closed)
            raise
        finally:
            if why is not None:  # the broker dropped the connection: requests open are answered so
                at = time.monotonic()
                for p in pending.values():
                    if p.rid is not None:
                        self.judging.answer(p.rid, f"connection-error: {why}", at)
                pending.clear()
            link.close()

    async def _answer(self, conn: int, payload: bytes, at: float, link: "_Link",
                      pending: dict[int, _Pending]) -> None:
        self.counts.answers += 1
        self.counts.bytes_down += len(payload) + 4
        p = pending.pop(codec.peek_correlation_id(payload), None) if len(payload) >= 4 else None
        if p is not None and p.rewrite:
            name = "Metadata" if p.api_key == METADATA else "FindCoordinator"
            try:
                payload = await rewrite(p.api_key, p.version, payload, self.listen_host, self.port_for)
                self.counts.rewritten[name] += 1
            except (WireError, KeyError, TypeError) as e:
                self.counts.unparsed_answers += 1
                self.counts.unparsed(f"{name} v{p.version} answer (not rewritten): {e}")
        link.write(codec.frame(payload))
        if p is not None and p.held:  # (a broker answering out of order: it read it by now)
            self._release(conn, p, at)
        if p is not None and p.rid is not None:
            self._judge_answer(p.rid, p, payload, at)
        head = next(iter(pending.values()), None)
        if head is not None and head.held:
            self._release(conn, head, at)  # the request after the answered one may be read now

    def _judge_answer(self, rid: int, p: _Pending, payload: bytes, at: float) -> None:
        api = codec.api_key_of(p.api_key)
        assert api is not None
        try:
            _, body = codec.decode_response(api, p.version, payload)
            record = convert.response_record(api, p.version, body)
        except (WireError, KeyError, TypeError) as e:
            self.counts.unparsed_answers += 1
            self.counts.unparsed(f"{api.name} v{p.version} answer: {e}")
            self.judging.unobservable(rid, at, f"an answer could not be decoded ({api.name} v{p.version})")
            return
        self.judging.answer(rid, record, at)


def _api_name(payload: bytes) -> str:
    """The API of a request frame, by Kafka's name where the codec or the data plane knows it."""
    if len(payload) < 2:
        return "no header"
    key = struct.unpack_from(">h", payload)[0]
    api = codec.api_key_of(key)
    if api is not None:
        return api.name
    try:
        return DataApi(key).name
    except ValueError:
        return f"key {key}"


class _Frames:
    """A byte stream cut into frames (`codec.FrameBuffer`) until it stops being frames (a size
    outside Kafka's bounds): from then on, every byte not yet forwarded as a frame, and every later
    byte, is handed back raw, to be forwarded as is."""

    def __init__(self, proxy: Proxy, what: str) -> None:
        self.proxy, self.what = proxy, what
        self.frames: Optional[codec.FrameBuffer] = codec.FrameBuffer()
        self.tail = bytearray()  # bytes read and not yet handed back as a frame

    def feed(self, chunk: bytes) -> tuple[list[bytes], bytes]:
        if self.frames is None:
            return [], chunk
        self.tail += chunk
        try:
            payloads = self.frames.feed(chunk)
        except DecodeError as e:
            self.proxy._unframed(f"{self.what}: {e}")
            self.frames = None
            raw, self.tail = bytes(self.tail), bytearray()
            return [], raw
        del self.tail[:sum(4 + len(p) for p in payloads)]
        return payloads, b""


class _Link:
    """The client side of a connection, as the answer pump writes to it."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.client_gone = False

    def write(self, data: bytes) -> None:
        if not self.client_gone and not self.writer.is_closing():
            self.writer.write(data)

    def close(self) -> None:
        self.writer.close()


__all__ = ["Counts", "Proxy"]

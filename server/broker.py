"""The asyncio server: connections, bounded reads, and the clock that drives the reference's timers.

Connections. One `asyncio.Protocol` per TCP connection. Like Kafka's SocketServer, a connection is
muted (reading paused) from the moment a whole request has arrived until its response is written,
so requests on one connection are served strictly one at a time, and a parked JoinGroup holds its
connection until it is answered (a parked Fetch too, as in Kafka). Reads are bounded: a frame
size outside 0..max_frame_bytes, a frame that stays incomplete for `read_timeout_s`, a truncated
body or trailing bytes close that connection with one log line naming the peer and the reason;
every other connection is unaffected. An API key or version that is not served is answered
UNSUPPORTED_VERSION with one log line, and the connection stays open (server/protocol.py). A
connection with nothing in flight and no bytes for `idle_timeout_s` is closed (Kafka's
connections.max.idle.ms, 10 minutes by default).

Time. With `clock="real"` the reference's virtual clock follows the event loop's monotonic clock
(1 virtual ms = 1 real ms from the server's start): it is advanced to "now" before every request,
and a loop timer wakes the server just after the earliest armed deadline (the reference fires a
timer once the clock is strictly past it), so delayed joins, session expiry and rebalance timeouts
fire in real time and answer parked requests asynchronously. With `clock="manual"` only
`GroupServer.advance` moves the clock (tests that need exact virtual time over real sockets).
"""

from __future__ import annotations

import asyncio
from typing import Callable, Final, Literal, Optional, Sequence

from model.coordinator_api import CoordinatorConfig
from reference.coordinator import ReferenceCoordinator

from server.data import DEFAULT_NUM_PARTITIONS, DataPlane
from server.log import DEFAULT_RETENTION_BYTES, Log
from server.protocol import Dispatcher, FrameError, Stats, describe_peer

Clock = Literal["real", "manual"]
DEFAULT_MAX_FRAME_BYTES: Final = 8 * 1024 * 1024  # group requests are small; Kafka's cap is 100 MiB
DEFAULT_READ_TIMEOUT_S: Final = 30.0
DEFAULT_IDLE_TIMEOUT_S: Final = 600.0  # connections.max.idle.ms


class GroupServer:
    """The reference coordinator behind a listener on `host:port` (port 0: a free port)."""

    def __init__(
        self,
        config: CoordinatorConfig = CoordinatorConfig(),
        bugs: frozenset[str] = frozenset(),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock = "real",
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
        log: Callable[[str], None] = lambda line: None,
        topics: Sequence[tuple[str, int]] = (),
        auto_create_topics: bool = True,
        num_partitions: int = DEFAULT_NUM_PARTITIONS,
        retention_bytes: int = DEFAULT_RETENTION_BYTES,
    ) -> None:
        if clock not in ("real", "manual"):
            raise ValueError(f"clock must be 'real' or 'manual', got {clock!r}")
        self.coordinator = ReferenceCoordinator(config, bugs=bugs)  # ReferenceUsageError on a bad bug
        self.bugs = frozenset(bugs)
        self.config = config
        self.host, self.port, self.clock = host, port, clock
        self.max_frame_bytes = max_frame_bytes
        self.read_timeout_s = read_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.log = log
        self.stats = Stats()
        self.connections: set[_Connection] = set()
        self._server: Optional[asyncio.AbstractServer] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._t0 = 0.0
        self._timer: Optional[asyncio.TimerHandle] = None
        self.log_store = Log(retention_bytes)
        for name, partitions in topics:
            self.log_store.create(name, partitions)  # ValueError for a bad name, a duplicate or < 1 partition
        self.data = DataPlane(self.log_store, self._call_later, auto_create=auto_create_topics,
                              num_partitions=num_partitions)
        self.dispatcher = Dispatcher(self.coordinator, host, port, self.stats, self.data, log)

    def _call_later(self, delay_s: float, fn: Callable[[], None]) -> asyncio.TimerHandle:
        assert self._loop is not None
        return self._loop.call_later(delay_s, fn)

    async def start(self) -> int:
        """Bind and listen; returns the port (OSError if it cannot bind)."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._t0 = loop.time()
        self._server = await loop.create_server(lambda: _Connection(self), self.host, self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        self.dispatcher.port = self.port
        return self.port

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.abort()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    # ------------------------------------------------------------------ time

    def elapsed_ms(self) -> int:
        assert self._loop is not None
        return int((self._loop.time() - self._t0) * 1000)

    def _sync_clock(self) -> None:
        if self.clock != "real":
            return
        behind = self.elapsed_ms() - self.coordinator.now_ms()
        if behind > 0:
            self.coordinator.advance(behind)

    def _rearm(self) -> None:
        if self.clock != "real" or self._loop is None:
            return
        deadline = self.coordinator.next_deadline_ms()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if deadline is not None:
            # fires once the clock is strictly past the deadline: at deadline + 1 ms (+ rounding slack)
            self._timer = self._loop.call_at(self._t0 + (deadline + 1) / 1000 + 0.0005, self._tick)

    def _tick(self) -> None:
        self._timer = None
        try:
            self._sync_clock()
        except Exception as exc:  # a reference bug: log it, keep serving
            self.log(f"groupspec serve: internal error while firing timers: {type(exc).__name__}: {exc}")
        self._rearm()

    def advance(self, ms: int) -> None:
        """Manual clock: move the coordinator's clock by `ms` (call on the loop thread)."""
        if self.clock != "manual":
            raise RuntimeError("advance() is for clock='manual'; the real clock moves by itself")
        self.coordinator.advance(ms)

    # ------------------------------------------------------------------ requests

    def serve(self, conn: "_Connection", payload: bytes) -> None:
        try:
            self._sync_clock()  # fire what is due before the request, as Kafka's timers would have
        except Exception as exc:  # a reference bug in a timer: log it, still serve the request
            self.log(f"groupspec serve: internal error while firing timers: {type(exc).__name__}: {exc}")
        try:
            self.dispatcher.handle_frame(payload, conn.reply, conn.fail, conn.host)
        except FrameError as exc:
            conn.fail(str(exc))
        except Exception as exc:  # a reference bug must not take the server down
            conn.fail(f"internal error: {type(exc).__name__}: {exc}")
        finally:
            self._rearm()


class _Connection(asyncio.Protocol):
    def __init__(self, server: GroupServer) -> None:
        self.server = server
        self.buf = bytearray()
        self.busy = False  # a request is in flight (reading paused), as Kafka mutes the channel
        self.closed = False
        self.peer = "?"
        self.host = ""
        self.transport: Optional[asyncio.Transport] = None
        self._frame_timer: Optional[asyncio.TimerHandle] = None
        self._idle_timer: Optional[asyncio.TimerHandle] = None

    # asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peername = transport.get_extra_info("peername")
        self.peer = describe_peer(peername)
        self.host = str(peername[0]) if isinstance(peername, tuple) and peername else ""
        self.server.connections.add(self)
        self._arm_idle()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.buf += data
        self._process()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        was_closed, self.closed = self.closed, True
        self._cancel_timers()
        self.server.connections.discard(self)
        if not was_closed and self.buf:
            self.server.stats.closed_bad_frames += 1
            self.server.log(f"groupspec serve: {self.peer}: truncated frame: the peer closed the connection "
                            f"with {len(self.buf)} bytes of an incomplete frame")

    # frames

    def _process(self) -> None:
        while not self.busy and not self.closed:
            if len(self.buf) < 4:
                if self.buf:
                    self._arm_frame_timer()
                return
            size = int.from_bytes(self.buf[:4], "big", signed=True)
            limit = self.server.max_frame_bytes
            if size < 0 or size > limit:
                self.fail(f"bad frame size {size} (allowed 0..{limit})")
                return
            if len(self.buf) < 4 + size:
                self._arm_frame_timer()
                return
            payload = bytes(self.buf[4 : 4 + size])
            del self.buf[: 4 + size]
            self._cancel_timers()
            self.busy = True
            assert self.transport is not None
            self.transport.pause_reading()
            self.server.serve(self, payload)

    def reply(self, payload: Optional[bytes]) -> None:
        """The response to the request in flight (maybe called during another connection's request);
        None: the request has no response (Produce with acks=0), the connection reads on."""
        if self.closed or self.transport is None:
            return
        if payload is not None:
            self.transport.write(len(payload).to_bytes(4, "big") + payload)
        self.busy = False
        self.transport.resume_reading()
        loop = self.server._loop
        assert loop is not None
        loop.call_soon(self._resume)

    def _resume(self) -> None:
        if self.closed or self.busy:
            return
        if self.buf:
            self._process()
        if not self.busy and not self.buf:
            self._arm_idle()

    def fail(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        self.server.stats.closed_bad_frames += 1
        self.server.log(f"groupspec serve: {self.peer}: {reason}; connection closed")
        self._cancel_timers()
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.closed = True
        self._cancel_timers()
        if self.transport is not None:
            self.transport.abort()

    # timers

    def _arm_frame_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self._frame_timer is None and self.server._loop is not None:
            have = len(self.buf)
            self._frame_timer = self.server._loop.call_later(
                self.server.read_timeout_s, self._frame_timeout, have)

    def _frame_timeout(self, had: int) -> None:
        self._frame_timer = None
        want = int.from_bytes(self.buf[:4], "big", signed=True) + 4 if len(self.buf) >= 4 else 4
        self.fail(f"incomplete frame after {self.server.read_timeout_s:g} s "
                  f"({len(self.buf)} of {want} bytes)")

    def _arm_idle(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        if self.server._loop is not None:
            self._idle_timer = self.server._loop.call_later(self.server.idle_timeout_s, self._idle)

    def _idle(self) -> None:
        self._idle_timer = None
        if not self.busy and not self.buf:
            self.fail(f"idle for {self.server.idle_timeout_s:g} s")

    def _cancel_timers(self) -> None:
        for timer in (self._frame_timer, self._idle_timer):
            if timer is not None:
                timer.cancel()
        self._frame_timer = self._idle_timer = None

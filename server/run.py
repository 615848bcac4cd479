"""Running the server: `start_in_thread` for tests and the fuzzer, `serve` for `groupspec serve`.

Python API:

    handle = start_in_thread(CoordinatorConfig(), bug="no-generation-bump")   # port 0: a free port
    handle = start_in_thread(topics=[("orders", 3)], auto_create_topics=False)  # the data plane
    handle.port, handle.address        # 40123, "kafka://127.0.0.1:40123"
    handle.stats                       # frames, group requests/responses, closed bad frames
    handle.call(lambda server: server.coordinator.group_view("g"))   # run on the server's thread
    handle.advance(500)                # clock="manual" only
    handle.stop()                      # or `with start_in_thread(...) as handle:`

`serve(config, bugs, port=...)` runs `groupspec serve` (groupspec/commands/serve.py parses its
arguments; exit codes: 0 stopped by SIGTERM, 2 bad arguments or the port cannot be bound, 130 Ctrl-C):

    groupspec serve [--port N] [--config KEY=VALUE]... [--bug NAME]... [--max-frame-bytes N]
                    [--read-timeout S] [--idle-timeout S] [--topic NAME:PARTITIONS]...
                    [--num-partitions N] [--no-auto-create-topics]

The first stdout line, flushed, is exactly `groupspec serve: listening on 127.0.0.1:PORT`; each
connection problem is one line on stderr; stopping prints one line on stderr.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import sys
import threading
from types import TracebackType
from typing import Callable, Iterable, Optional, Sequence, TextIO, TypeVar, Union

from model.coordinator_api import CoordinatorConfig
from model.errors import EXIT_INTERRUPTED, EXIT_OK, BadInput
from reference.bugs import BUGS

from server.broker import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_READ_TIMEOUT_S,
    Clock,
    GroupServer,
)
from server.data import DEFAULT_NUM_PARTITIONS
from server.protocol import Stats

HOST = "127.0.0.1"
T = TypeVar("T")


class UnknownBug(BadInput, ValueError):
    """A seeded bug name that reference/bugs.py does not define."""


def _bug_set(bug: Union[None, str, Iterable[str]]) -> frozenset[str]:
    if bug is None:
        return frozenset()
    names = frozenset({bug} if isinstance(bug, str) else bug)
    unknown = sorted(names - BUGS.keys())
    if unknown:
        raise UnknownBug(f"unknown seeded bug(s) {unknown}; known: {', '.join(sorted(BUGS))}")
    return names


class ServerHandle:
    """A server running on its own event-loop thread."""

    def __init__(self, server: GroupServer, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self.server = server
        self._loop = loop
        self._thread = thread
        self.host = server.host
        self.port = server.port

    @property
    def address(self) -> str:
        return f"kafka://{self.host}:{self.port}"

    @property
    def stats(self) -> Stats:
        return self.server.stats

    def call(self, fn: Callable[[GroupServer], T], timeout_s: float = 10.0) -> T:
        """Run `fn(server)` on the server's thread (the coordinator is not thread-safe) and return it."""
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(fn(self.server))
            except BaseException as exc:  # handed to the caller
                done.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return done.result(timeout_s)

    def advance(self, ms: int) -> None:
        """Manual clock only: advance the coordinator's clock by `ms` and fire what is due."""
        self.call(lambda server: server.advance(ms))

    def stop(self, timeout_s: float = 10.0) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout_s)

    def __enter__(self) -> "ServerHandle":
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.stop()


def start_in_thread(
    config: CoordinatorConfig = CoordinatorConfig(),
    bug: Union[None, str, Iterable[str]] = None,
    *,
    port: int = 0,
    clock: Clock = "real",
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    log: Optional[Callable[[str], None]] = None,
    topics: Sequence[tuple[str, int]] = (),
    auto_create_topics: bool = True,
    num_partitions: int = DEFAULT_NUM_PARTITIONS,
) -> ServerHandle:
    """Start a server on 127.0.0.1:`port` in a daemon thread; returns once it listens.

    `bug`: a seeded bug name (or several) from reference.bugs (ValueError if unknown). `log` gets
    one line per connection problem (default: discarded). OSError if the port cannot be bound.
    `topics`: (name, partitions) created at start (ValueError if one is illegal); a missing topic a
    client asks Metadata for is created with `num_partitions` unless `auto_create_topics` is off."""
    server = GroupServer(config, _bug_set(bug), host=HOST, port=port, clock=clock,
                         max_frame_bytes=max_frame_bytes, read_timeout_s=read_timeout_s,
                         idle_timeout_s=idle_timeout_s, log=log if log is not None else (lambda line: None),
                         topics=topics, auto_create_topics=auto_create_topics, num_partitions=num_partitions)
    ready: concurrent.futures.Future[asyncio.AbstractEventLoop] = concurrent.futures.Future()

    def main() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.start())
        except BaseException as exc:
            ready.set_exception(exc)
            loop.close()
            return
        ready.set_result(loop)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(server.stop())
            loop.close()

    thread = threading.Thread(target=main, name=f"groupspec-serve-{port}", daemon=True)
    thread.start()
    loop = ready.result(30)
    return ServerHandle(server, loop, thread)


# ------------------------------------------------------------------------------ groupspec serve


def serve(config: CoordinatorConfig, bugs: frozenset[str], *, port: int = 0,
          max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
          idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S, out: Optional[TextIO] = None,
          err: Optional[TextIO] = None, topics: Sequence[tuple[str, int]] = (),
          auto_create_topics: bool = True, num_partitions: int = DEFAULT_NUM_PARTITIONS) -> int:
    """Serve until SIGTERM (returns 0) or Ctrl-C (returns 130); BadInput if the port cannot be bound.
    The first line on `out` is `groupspec serve: listening on 127.0.0.1:PORT`; connection problems
    go to `err`, one line each."""
    err_stream = err if err is not None else sys.stderr

    def log(line: str) -> None:
        err_stream.write(line + "\n")
        err_stream.flush()

    server = GroupServer(config, _bug_set(bugs), host=HOST, port=port, max_frame_bytes=max_frame_bytes,
                         read_timeout_s=read_timeout_s, idle_timeout_s=idle_timeout_s, log=log,
                         topics=topics, auto_create_topics=auto_create_topics, num_partitions=num_partitions)
    return asyncio.run(_serve(server, out if out is not None else sys.stdout, log))


async def _serve(server: GroupServer, out: TextIO, log: Callable[[str], None]) -> int:
    try:
        port = await server.start()
    except OSError as e:
        raise BadInput(f"cannot listen on {server.host}:{server.port}: {e.strerror or e}") from None
    loop = asyncio.get_running_loop()
    stopped: asyncio.Future[int] = loop.create_future()

    def on_signal(status: int) -> None:
        if not stopped.done():
            stopped.set_result(status)

    loop.add_signal_handler(signal.SIGINT, on_signal, EXIT_INTERRUPTED)
    loop.add_signal_handler(signal.SIGTERM, on_signal, EXIT_OK)
    out.write(f"groupspec serve: listening on {server.host}:{port}\n")
    out.flush()
    if server.bugs:
        log(f"groupspec serve: seeded bug(s) on: {', '.join(sorted(server.bugs))}")
    status = await stopped
    await server.stop()
    log("groupspec serve: interrupted, stopped" if status == EXIT_INTERRUPTED else "groupspec serve: stopped (SIGTERM)")
    return status

"""Running the server: `start_in_thread` for tests and the fuzzer, `serve_main` for `groupspec serve`.

Python API:

    handle = start_in_thread(CoordinatorConfig(), bug="no-generation-bump")   # port 0: a free port
    handle.port, handle.address        # 40123, "kafka://127.0.0.1:40123"
    handle.stats                       # frames, group requests/responses, closed bad frames
    handle.call(lambda server: server.coordinator.group_view("g"))   # run on the server's thread
    handle.advance(500)                # clock="manual" only
    handle.stop()                      # or `with start_in_thread(...) as handle:`

CLI (exit codes: 0 stopped by SIGTERM, 2 bad arguments or the port cannot be bound, 130 Ctrl-C):

    groupspec serve [--port N] [--config KEY=VALUE]... [--bug NAME]... [--max-frame-bytes N]
                    [--read-timeout S] [--idle-timeout S]

The first stdout line, flushed, is exactly `groupspec serve: listening on 127.0.0.1:PORT`; each
connection problem is one line on stderr; stopping prints one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import signal
import sys
import threading
from types import TracebackType
from typing import Callable, Iterable, Optional, TextIO, TypeVar, Union

from model.coordinator_api import CoordinatorConfig
from reference.bugs import BUGS

from server.broker import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_READ_TIMEOUT_S,
    Clock,
    GroupServer,
)
from server.config import KAFKA_PROPERTIES, ConfigError, parse_properties
from server.protocol import Stats

HOST = "127.0.0.1"
T = TypeVar("T")


def _bug_set(bug: Union[None, str, Iterable[str]]) -> frozenset[str]:
    if bug is None:
        return frozenset()
    names = frozenset({bug} if isinstance(bug, str) else bug)
    unknown = sorted(names - BUGS.keys())
    if unknown:
        raise ValueError(f"unknown seeded bug(s) {unknown}; known: {', '.join(sorted(BUGS))}")
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
) -> ServerHandle:
    """Start a server on 127.0.0.1:`port` in a daemon thread; returns once it listens.

    `bug`: a seeded bug name (or several) from reference.bugs (ValueError if unknown). `log` gets
    one line per connection problem (default: discarded). OSError if the port cannot be bound."""
    server = GroupServer(config, _bug_set(bug), host=HOST, port=port, clock=clock,
                         max_frame_bytes=max_frame_bytes, read_timeout_s=read_timeout_s,
                         idle_timeout_s=idle_timeout_s, log=log if log is not None else (lambda line: None))
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


# ---------------------------------------------------------------------------------------- CLI

USAGE_LINE = "groupspec serve [--port N] [--config KEY=VALUE]... [--bug NAME]...   the reference as a Kafka broker"


class _BadArguments(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _BadArguments(message)


def _parser() -> _Parser:
    p = _Parser(
        prog="groupspec serve",
        description="Serve the reference coordinator (Kafka 3.9's classic GroupCoordinator) as a Kafka "
                    "broker on 127.0.0.1: ApiVersions, FindCoordinator and the nine group APIs at every "
                    "version the codec speaks, plus Metadata v0-8 (one broker, no topics) for clients' "
                    "bootstrap; timers run in real time.",
        epilog="The first stdout line is 'groupspec serve: listening on 127.0.0.1:PORT'; connection "
               "problems are one stderr line each. Exit status: 0 after SIGTERM, 130 after Ctrl-C, 2 for "
               "bad arguments or a port that cannot be bound.")
    p.add_argument("--port", type=int, default=0, help="TCP port (default 0: a free port, printed)")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a Kafka broker property: " + ", ".join(sorted(KAFKA_PROPERTIES)) + " (repeatable)")
    p.add_argument("--bug", action="append", default=[], metavar="NAME",
                   help="run with a seeded bug from reference/bugs.py (repeatable)")
    p.add_argument("--max-frame-bytes", type=int, default=DEFAULT_MAX_FRAME_BYTES,
                   help=f"largest request frame accepted (default {DEFAULT_MAX_FRAME_BYTES})")
    p.add_argument("--read-timeout", type=float, default=DEFAULT_READ_TIMEOUT_S, metavar="S",
                   help=f"seconds a frame may stay incomplete (default {DEFAULT_READ_TIMEOUT_S:g})")
    p.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S, metavar="S",
                   help=f"close connections idle this long (default {DEFAULT_IDLE_TIMEOUT_S:g}, "
                        "Kafka's connections.max.idle.ms)")
    return p


def serve_main(argv: list[str], out: Optional[TextIO] = None, err: Optional[TextIO] = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    parser = _parser()
    try:
        a = parser.parse_args(argv)
        if not 0 <= a.port <= 65535:
            raise _BadArguments(f"--port must be in 0..65535, got {a.port}")
        if a.max_frame_bytes < 8:
            raise _BadArguments(f"--max-frame-bytes must be >= 8, got {a.max_frame_bytes}")
        if not a.read_timeout > 0 or not a.idle_timeout > 0:
            raise _BadArguments("--read-timeout and --idle-timeout must be > 0")
        config = parse_properties(a.config)
        bugs = _bug_set(a.bug)
    except SystemExit as e:  # --help
        return int(e.code or 0)
    except (_BadArguments, ConfigError, ValueError) as e:
        err.write(f"groupspec serve: error: {e}\n")
        return 2

    def log(line: str) -> None:
        err.write(line + "\n")
        err.flush()

    server = GroupServer(config, bugs, host=HOST, port=a.port, max_frame_bytes=a.max_frame_bytes,
                         read_timeout_s=a.read_timeout, idle_timeout_s=a.idle_timeout, log=log)
    return asyncio.run(_serve(server, out, log))


async def _serve(server: GroupServer, out: TextIO, log: Callable[[str], None]) -> int:
    try:
        port = await server.start()
    except OSError as e:
        log(f"groupspec serve: error: cannot listen on {server.host}:{server.port}: {e.strerror or e}")
        return 2
    loop = asyncio.get_running_loop()
    stopped: asyncio.Future[int] = loop.create_future()

    def on_signal(status: int) -> None:
        if not stopped.done():
            stopped.set_result(status)

    loop.add_signal_handler(signal.SIGINT, on_signal, 130)
    loop.add_signal_handler(signal.SIGTERM, on_signal, 0)
    out.write(f"groupspec serve: listening on {server.host}:{port}\n")
    out.flush()
    if server.bugs:
        log(f"groupspec serve: seeded bug(s) on: {', '.join(sorted(server.bugs))}")
    status = await stopped
    await server.stop()
    log("groupspec serve: interrupted, stopped" if status == 130 else "groupspec serve: stopped (SIGTERM)")
    return status

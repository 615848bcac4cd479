"""The judge in a process of its own: forwarding never waits for judging, and the two do not share
one interpreter lock (a judge with many hypotheses computes for a while; the proxy meanwhile forwards
and dates what it reads).

The proxy hands every observation over (`JudgeProcess.request` returns a request id at once) and
moves on; the process judges them in the order handed over, with the moments the proxy read them
(time.monotonic is one clock for both processes). `finish` judges what is queued (for at most
`DRAIN_S`; what is left is counted unjudged, and the report says so), writes the report there
(observe/report.py) and returns it. The process ignores SIGINT and SIGTERM: the proxy decides
when to stop.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable, Optional, Union

from check.user_code import user_fault
from model import messages as m
from model.errors import BadInput
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey

from fuzz.accept import load_accept
from fuzz.judge import Tolerance
from observe.judging import Judging, Token
from observe.report import report, write_report


DRAIN_S = 60.0  # after the stop, how long the judge may go on judging what is queued
FAULT = "fault"  # the judge's message for a definition of the user's table that raised


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    config: CoordinatorConfig
    tol: Tolerance
    target: str
    report: str
    accept: Optional[str] = None  # accept file path
    quiet: bool = False
    started: float = 0.0  # monotonic start of the run
    # the table the target is judged by, by name: its profile's, or --table's (a profile or
    # package.module:NAME: the judge's process imports it, with the command's sys.path)
    table: str = "kafka-3.9"


class JudgeProcess:
    def __init__(self, settings: JudgeSettings) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._queue: "multiprocessing.Queue[tuple[Any, ...]]" = ctx.Queue()
        self._results, results = ctx.Pipe(duplex=False)
        self._stopping = ctx.Event()
        self._proc = ctx.Process(target=_work, args=(self._queue, results, self._stopping, settings),
                                 name="observe-judge", daemon=True)
        self._proc.start()
        self._rid = 0
        self._fault: Optional[str] = None
        self._gone = False
        self.max_backlog = 0  # the most observations waiting at once (how far judging fell behind)

    def _put(self, *message: Any) -> None:
        self._queue.put(message)

    def request(self, conn: int, api: ApiKey, version: int, request: m.Request, at: float,
                ready: Optional[float] = None) -> int:
        self._rid += 1
        self._put("request", self._rid, conn, api, version, request, at, ready)
        return self._rid

    def answer(self, rid: int, response: Union[m.Response, str], at: float) -> None:
        self._put("answer", rid, response, at)

    def unobservable(self, rid: int, at: float, why: str) -> None:
        self._put("unobservable", rid, at, why)

    def connection_closed(self, conn: int, at: float) -> None:
        self._put("closed", conn, at)

    def undecodable_request(self, conn: int, reason: str) -> None:
        self._put("undecodable", conn, reason)

    def tick(self, at: float) -> None:
        self.max_backlog = max(self.max_backlog, self._queue.qsize())
        self._put("tick", at)

    def fault(self) -> Optional[str]:
        """Without waiting: the line of a definition of the user's table that raised in the judge
        (check.user_code), which ended the judging; None while it judges."""
        if self._fault is None and not self._gone:
            try:
                if self._results.poll():
                    self._fault = self._read_fault(self._results.recv())
            except (EOFError, OSError):  # the process ended without a word: `finish` says so
                self._gone = True
        return self._fault

    def ended(self) -> bool:
        """Whether the judging has ended before `finish` (a fault, or the process gone)."""
        return self.fault() is not None or self._gone

    def finish(self, **report_args: Any) -> dict[str, Any]:
        """Judge what is queued, write the report (`report_args`: observe/report.py `report`'s
        keywords but the judging) and return it; BadInput when a definition of the user's table
        raised (nothing is reported: the judging ended there)."""
        if not self.ended():
            self._put("finish", {**report_args, "backlog": self.max_backlog})
            self._stopping.set()
            try:
                doc: Union[dict[str, Any], tuple[str, str]] = self._results.recv()
            finally:
                self._proc.join(30)
            self._fault = self._read_fault(doc)
            if isinstance(doc, dict):
                return doc
        self._proc.join(30)
        if self._fault is None:  # a defect of groupspec's judge: its traceback is above
            raise RuntimeError(f"observe's judge ended without a report (exit {self._proc.exitcode})")
        raise BadInput(self._fault)

    @staticmethod
    def _read_fault(message: Any) -> Optional[str]:
        return str(message[1]) if isinstance(message, tuple) and message[:1] == (FAULT,) else None


def _work(queue: "multiprocessing.Queue[tuple[Any, ...]]", results: Connection, stopping: Any,
          s: JudgeSettings) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def log(line: str) -> None:
        if not s.quiet:
            print(f"groupspec observe: {line}", file=sys.stderr, flush=True)

    judging = Judging(s.config, s.tol, target=s.target, accept=load_accept(s.accept) if s.accept else None,
                      report=s.report, log=log, started=s.started, table=s.table)
    try:
        _judge_all(queue, results, stopping, s, judging, log)
    except Exception as e:
        fault = user_fault(e)
        if fault is None:
            raise
        results.send((FAULT, fault))  # the proxy stops the run and reports it


def _judge_all(queue: "multiprocessing.Queue[tuple[Any, ...]]", results: Connection, stopping: Any,
               s: JudgeSettings, judging: Judging, log: Callable[[str], None]) -> None:
    tokens: dict[int, list[Token]] = {}
    cpu0 = time.process_time()
    stop_seen: Optional[float] = None
    unjudged = 0  # observations left unjudged: still queued DRAIN_S after the stop
    while True:
        kind, *args = queue.get()
        if stop_seen is None and stopping.is_set():
            stop_seen = time.monotonic()
            log("stopping: judging what is still queued")
        if kind != "finish" and stop_seen is not None and time.monotonic() - stop_seen > DRAIN_S:
            if not unjudged:
                judging.end_all(f"stopped: still behind {DRAIN_S:g} s after the stop")
            unjudged += 1
            continue
        if kind == "request":
            rid, conn, api, version, request, at, ready = args
            tokens[rid] = judging.request(conn, api, version, request, at, ready)
        elif kind == "answer":
            rid, response, at = args
            judging.answer(tokens.pop(rid, []), response, at)
        elif kind == "unobservable":
            rid, at, why = args
            judging.unobservable(tokens.pop(rid, []), at, why)
        elif kind == "closed":
            judging.connection_closed(*args)
        elif kind == "undecodable":
            judging.undecodable_request(*args)
        elif kind == "tick":
            judging.tick(*args)
        elif kind == "finish":
            (report_args,) = args
            judging.tick(time.monotonic())
            doc = report(judging, judge_cpu_s=time.process_time() - cpu0, unjudged=unjudged, **report_args)
            write_report(s.report, doc)
            results.send(doc)
            return


__all__ = ["JudgeProcess", "JudgeSettings"]

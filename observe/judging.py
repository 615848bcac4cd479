"""Every group API exchange that passes the proxy, judged in real time by the fuzzer's judge.

One `fuzz.judge.GroupJudge` per group id, created when the group's first request passes, its clock
starting then (groups observe sees for the first time are assumed unknown to the broker: start
observe before the clients). A request for several groups (DescribeGroups, DeleteGroups) is judged
by each group's judge as a request for that group alone, with its part of the answer; ListGroups by
every group being judged, with the answer's entry for that group. The judge is told when a
connection closes with requests unanswered (`GroupJudge.closed`), and `tick` judges missing
answers (`GroupJudge.silence`) and lets long-lived judges forget what no longer matters.

A group's judging ends at its first finding, or when it becomes inconclusive (too many
hypotheses), or when one of its requests could not be decoded (the judge would miss it); the group
is then listed with why. A finding is recorded in the fuzz report's classes, and the group's
exchange up to it is written as a scenario file at once (fuzz/shrink.py `scenario_document`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Final, Optional, Union

from model import messages as m
from model.atomic import write_text_atomic
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey

from check.profiles import table_or_profile

from fuzz.accept import AcceptList
from fuzz.engine import Event, SequenceResult
from fuzz.judge import CONTEXT_SEP, Finding, GroupJudge, Inconclusive, Tolerance
from fuzz.shrink import scenario_document
from observe.event_log import EventLog

GROUP_APIS: Final = frozenset({ApiKey.JoinGroup, ApiKey.SyncGroup, ApiKey.Heartbeat, ApiKey.LeaveGroup,
                               ApiKey.OffsetCommit, ApiKey.OffsetFetch, ApiKey.DescribeGroups,
                               ApiKey.ListGroups, ApiKey.DeleteGroups})
TICK_S: Final = 0.5  # how often missing answers are judged
# requests of different connections the proxy read this close together may reach the broker in
# either order (its clock is not the broker's): the judge's overtaking window never goes below it
PROXY_OVERTAKE_MS: Final = 2
# the CPU time (the judge's thread, not the wall clock: a loaded machine does not shorten it) one
# observation may take to judge (fuzz: 500 ms, as its judge shares the event loop that reads
# answers): observe judges in a process of its own, and a group's judge may take longer
OBSERVATION_MS: Final = 3000
# hypotheses a group may hold (fuzz: 400): a real group lives long, its members act at once, and a
# loaded broker's latency widens the window in which their requests may be read in either order
MAX_HYPOTHESES: Final = 2000
FORGET_EVERY: Final = 200  # requests of a group between two `GroupJudge.forget`
MIN_WAIT_MS: Final = 20  # a gap between two events of a group written as an `advance` step
MAX_WAIT_MS: Final = 500
# (group, request number) pairs a request was split into
Token = tuple[str, int]


@dataclass
class GroupRecord:
    group_id: str
    judge: GroupJudge
    t0: float  # monotonic time of its first request: the judge's 0 ms
    events: EventLog = field(default_factory=lambda: EventLog())  # for the scenario file; bounded memory
    open: dict[int, int] = field(default_factory=dict)  # request number -> connection
    requests: int = 0
    closed: int = 0  # requests whose connection closed before their answer (never answered)
    ended: str = ""  # why judging ended ("" while it goes on)
    finding: Optional[Finding] = None
    accepted_seen: int = 0
    forgot_at: int = 0  # `requests` at the last `GroupJudge.forget`

    def ms(self, at: float) -> int:
        return int((at - self.t0) * 1000)


@dataclass
class ClassRecord:
    key: str
    finding: Finding
    group_id: str
    count: int
    first_seen_s: float
    requests: int  # requests of the group up to the finding
    scenario: Optional[str] = None


@dataclass
class AcceptedRecord:
    entry: str
    finding: Finding
    count: int = 0
    continued: int = 0


class Judging:
    """The judges of every group seen, and what they found."""

    def __init__(self, config: CoordinatorConfig, tol: Tolerance, *, target: str,
                 accept: Optional[AcceptList] = None, report: Optional[str] = None,
                 log: Callable[[str], None] = lambda line: None, started: Optional[float] = None,
                 table: str = "kafka-3.9") -> None:
        self.config, self.tol, self.target = config, tol, target
        # the table the target is judged by: its profile's (kafka-4's for Kafka 4) or --table's (a
        # profile or package.module:NAME, resolved here: the judge runs in a process of its own)
        self.table_name = table
        self.table, self.urgent = table_or_profile(table, "--table")
        self.accept, self.report, self.log = accept, report, log
        self.started = time.monotonic() if started is None else started
        self.groups: dict[str, GroupRecord] = {}
        self.numbers = itertools.count(1)
        self.classes: dict[str, ClassRecord] = {}
        self.accepted: dict[str, AcceptedRecord] = {}
        self.inconclusive_reasons: dict[str, int] = {}
        self.findings = 0
        self.requests = 0  # group API requests judged (one per group a request names)
        self.rows: set[str] = set()
        self.judge_seconds = 0.0  # CPU spent judging (the judging thread's time)

    # ------------------------------------------------------------------ observations

    def request(self, conn: int, api: ApiKey, version: int, request: m.Request, at: float,
                ready: Optional[float] = None) -> list[Token]:
        """Request `request` passed towards the upstream at `at` on connection `conn`: one judged
        request per group it names (a ListGroups: per group being judged). `ready`: it was queued
        behind an unanswered request of its connection, whose answer came then (the broker read
        it between `at` and some moment after `ready`)."""
        t = time.thread_time()
        tokens: list[Token] = []
        for gid, part in self._split(request):
            rec = self._group(gid, at)
            if rec.ended:
                continue
            n = next(self.numbers)
            rec.judge.send(n, api, version, part, rec.ms(at), ready_ms=-1 if ready is None else rec.ms(ready))
            rec.events.append(Event("send", n, rec.ms(at), part, version))
            rec.open[n] = conn
            rec.requests += 1
            self.requests += 1
            tokens.append((gid, n))
        self.judge_seconds += time.thread_time() - t
        return tokens

    def answer(self, tokens: list[Token], response: Union[m.Response, str], at: float) -> None:
        """The upstream answered the request behind `tokens` at `at` (a string: the connection
        failed before an answer)."""
        t = time.thread_time()
        for gid, n in tokens:
            rec = self.groups[gid]
            if rec.open.pop(n, None) is None or rec.ended:
                continue
            part = response if isinstance(response, str) else _part(response, gid)
            rec.events.append(Event("recv", n, rec.ms(at), response=part))
            self._judge(rec, lambda: rec.judge.receive(n, rec.ms(at), part))
        self.judge_seconds += time.thread_time() - t

    def unobservable(self, tokens: list[Token], at: float, why: str) -> None:
        """The answers behind `tokens` will never be judged: their connection closed before they
        came (`why` "closed"), or the answer could not be decoded (judging of that group ends)."""
        for gid, n in tokens:
            rec = self.groups[gid]
            if rec.open.pop(n, None) is None or rec.ended:
                continue
            if why == "closed":
                rec.judge.closed(frozenset({n}))
                rec.closed += 1
            else:
                self._end(rec, why)

    def connection_closed(self, conn: int, at: float) -> None:
        """Connection `conn` closed: whatever it still had open is never answered."""
        for rec in self.groups.values():
            gone = [n for n, c in rec.open.items() if c == conn]
            if gone:
                self.unobservable([(rec.group_id, n) for n in gone], at, "closed")

    def undecodable_request(self, conn: int, reason: str) -> None:
        """A group API request on `conn` could not be decoded: its group's judge would miss it, so
        judging ends for every group with a request open on that connection or seen on it."""
        for rec in self.groups.values():
            if any(c == conn for c in rec.open.values()):
                self._end(rec, f"a request on its connection could not be decoded ({reason})")

    def end_all(self, why: str) -> None:
        """Judging ends for every group still judged (observe stops before the judge caught up)."""
        for rec in self.groups.values():
            self._end(rec, why)

    def tick(self, at: float) -> None:
        """Judge the answers still missing at `at`; let judges of long-lived groups forget."""
        t = time.thread_time()
        for rec in list(self.groups.values()):
            if rec.ended:
                continue
            if rec.open:
                self._judge(rec, lambda: rec.judge.silence(rec.ms(at)))
            if not rec.ended and rec.requests - rec.forgot_at >= FORGET_EVERY:
                rec.forgot_at = rec.requests
                rec.judge.forget()
        self.judge_seconds += time.thread_time() - t

    # ------------------------------------------------------------------ internals

    def _split(self, request: m.Request) -> list[tuple[str, m.Request]]:
        if isinstance(request, m.DescribeGroupsRequest):
            return [(g, m.DescribeGroupsRequest((g,))) for g in dict.fromkeys(request.group_ids)]
        if isinstance(request, m.DeleteGroupsRequest):
            return [(g, m.DeleteGroupsRequest((g,))) for g in dict.fromkeys(request.group_ids)]
        if isinstance(request, m.ListGroupsRequest):
            return [(g, request) for g, rec in self.groups.items() if not rec.ended]
        return [(request.group_id, request)]

    def _group(self, gid: str, at: float) -> GroupRecord:
        rec = self.groups.get(gid)
        if rec is None:
            judge = GroupJudge(gid, self.config, self.tol, table=self.table, urgent=self.urgent)
            if self.accept is not None:
                accept = self.accept
                judge.accept = lambda f: (e.key() if (e := accept.match(f)) is not None else None)
            rec = self.groups[gid] = GroupRecord(gid, judge, at)
        return rec

    def _judge(self, rec: GroupRecord, observe: Callable[[], Optional[Finding]]) -> None:
        try:
            finding = observe()
        except Inconclusive as e:
            why = re.sub(r"\d+", "N", str(e))
            self.inconclusive_reasons[why] = self.inconclusive_reasons.get(why, 0) + 1
            self._end(rec, f"inconclusive: {e}")
            return
        self._note_accepted(rec)
        if rec.judge.ended is not None:
            self._end(rec, f"an accepted difference no model state explains ({rec.judge.ended.entry})")
        if finding is not None and rec.finding is None:
            rec.finding = finding
            self._end(rec, f"finding: {finding.class_key()}")
            self._classify(rec, finding)

    def _end(self, rec: GroupRecord, why: str) -> None:
        if not rec.ended:
            rec.ended = why
            self.rows |= {k for k in rec.judge.covered_keys() if CONTEXT_SEP not in k}
            self.log(f"group {rec.group_id!r}: judging ended: {why}")

    def _note_accepted(self, rec: GroupRecord) -> None:
        for a in rec.judge.accepted[rec.accepted_seen:]:
            r = self.accepted.setdefault(a.finding.class_key(), AcceptedRecord(a.entry, a.finding))
            r.count += 1
            r.continued += a.continued
        rec.accepted_seen = len(rec.judge.accepted)

    def _classify(self, rec: GroupRecord, f: Finding) -> None:
        self.findings += 1
        key = f.class_key()
        known = self.classes.get(key)
        if known is not None:
            known.count += 1
            return
        c = self.classes[key] = ClassRecord(key, f, rec.group_id, 1, time.monotonic() - self.started,
                                            rec.requests)
        self.log(f"FINDING in group {rec.group_id!r}: {key}")
        if self.report:
            c.scenario = self._write_scenario(rec, f, len(self.classes))

    def _write_scenario(self, rec: GroupRecord, f: Finding, n: int) -> str:
        """The group's exchange up to the finding, its pauses (between requests and before answers)
        as `advance` steps, as a scenario."""
        events: list[Event] = []
        last = 0
        for ev in rec.events:
            if ev.at_ms - last >= MIN_WAIT_MS:  # (before an answer too: the model's timers run then)
                # in steps of at most MAX_WAIT_MS: one long `advance` of the scenario runner does
                # not fire a timer armed by a timer it fired (InitialDelayedJoin's extension)
                for at in range(last, ev.at_ms, MAX_WAIT_MS):
                    events.append(Event("wait", ms=min(MAX_WAIT_MS, ev.at_ms - at), at_ms=at))
                last = ev.at_ms
            events.append(ev)
        result = SequenceResult(0, rec.group_id, [], finding=f, events=events)
        name = f"observe-class-{n:02d}"
        doc = scenario_document(result, f, self.config, name, self.target, self.table_name, tool="groupspec observe")
        assert self.report is not None
        directory = os.path.join(self.report, "scenarios")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"{name}.json")
        write_text_atomic(path, json.dumps(doc, indent=1) + "\n")
        return path

    # ------------------------------------------------------------------ for the report

    def covered_rows(self) -> set[str]:
        rows = set(self.rows)
        for rec in self.groups.values():
            if not rec.ended:
                rows |= {k for k in rec.judge.covered_keys() if CONTEXT_SEP not in k}
        return rows

    def judged(self) -> int:
        return sum(rec.judge.judged for rec in self.groups.values())


def _part(response: m.Response, gid: str) -> m.Response:
    """The part of a several-group answer that concerns group `gid`."""
    if isinstance(response, m.DescribeGroupsResponse):
        return m.DescribeGroupsResponse(tuple(g for g in response.groups if g.group_id == gid))
    if isinstance(response, m.DeleteGroupsResponse):
        return m.DeleteGroupsResponse(tuple(r for r in response.results if r[0] == gid))
    if isinstance(response, m.ListGroupsResponse):
        return dataclasses.replace(response, groups=tuple(g for g in response.groups if g.group_id == gid))
    return response


def accepted_json(records: dict[str, AcceptedRecord]) -> list[dict[str, Any]]:
    out = []
    for key, rec in sorted(records.items(), key=lambda kv: -kv[1].count):
        f = rec.finding
        out.append({"class": key, "entry": rec.entry, "count": rec.count, "continued": rec.continued,
                    "ended": rec.count - rec.continued, "expected": list(f.expected), "actual": f.actual})
    return out


__all__ = ["GROUP_APIS", "Judging", "Token", "accepted_json"]

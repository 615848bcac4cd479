"""The judge: the set of model states consistent with everything a target did to one group.

A real coordinator runs its own timers on a real clock, and Kafka leaves some choices open (which
member becomes leader, hash-map order). So a response is never compared with one expected answer:
the judge keeps every *hypothesis* (a model group state plus what the model has answered so far)
that explains the observations, and a response is a finding only when no hypothesis allows it.

Time. Real time since the group's first request is the model's clock (1 ms = 1 ms). The target
arms a timer when it processes a request, which is after we sent it and before it answered, so a
timer the model arms at deadline `d` (from the send) is due on the target up to that request's
latency later (`Hyp.uncertain`: the arming request; a timer armed by a timer's firing inherits its
uncertainty plus one slack). No timer fires before its deadline (`early_ms` is clock granularity
only). The slack is measured, never accumulated: `late_ms` plus the slowest answer among the
observation's neighbours (answers within `neighbour_ms` before it) and the judged answer itself
when it is one that comes at once; never the group's history. At an observation at time `T`:

- a timer with `d > T + early_ms` cannot have fired;
- a timer with `d + its uncertainty + slack < T` must have fired;
- anything in between may or may not have fired: both branches are kept.

Timers fire in deadline order, except that timers within `reorder_ms` (plus the neighbours'
latency) of each other may fire in either order.

Allowances (fuzz/allowances.py: the target's profile and `--allow`) admit what some brokers do
beyond the model's atomic timers. `late-session-expiry` and `late-pending-expiry`, Kafka 3.9's
races: a member's session timer is two steps there: at its deadline the DelayedHeartbeat is
force-completed on the heartbeat executor thread (from then on a re-arm no longer completes it),
and only then does `onExpireHeartbeat` take the group lock and ask `hasSatisfiedHeartbeat` of the
member *as it is at that moment* (for a MEMBER_ID_REQUIRED id: remove it, even if it has just
joined with it; the member then goes without an answer to that JoinGroup). A request holding the
lock in between changes the answer: a member parked in JoinGroup at its old deadline is removed
right after the JoinGroup that completes the join phase re-arms it (seen on Kafka 3.9.2:
benchmarks/fuzz_results.md), a heartbeat at the deadline is answered NONE and its member removed
after it (the same code path; not probed). So, with those allowances, when a request re-arms a
member whose session deadline lies in the request's own processing window (from `stale_expiry_ms`
before its send to its answer), the old expiry may also be evaluated right after the request,
through the table's MemberSessionExpire rows on the group as it is then; and a JoinGroup with a
MEMBER_ID_REQUIRED id due in that window may be followed by that new member's removal, its
JoinGroup never answered. `group-cleanup`: Kafka's periodic cleanupGroupMetadata (every
`offsets.retention.check.interval.ms`, phase unknown) may remove an Empty group without offsets at
any moment (the table's OffsetsExpire row). Without them (`strict`), none of this is allowed.

Requests. A request was processed by the target at some moment between its send and its answer,
and within `process_ms` of its send; it may even be processed after a request of the same group
sent later on another connection (a parked JoinGroup's connection and a heartbeat's, read in either
order by a loaded broker) if the gap between the two sends is shorter than the slowest answer among
the observation's neighbours (at most `overtake_ms`): a broker that stalls long enough to read out
of order also answers that late. Each hypothesis keeps the requests it has not processed yet, and every admissible order branches, with timers firing in between. Kafka's
choices branch through `model.step.step_all`.

Read barriers make that order known. The driver does not send a group's next request while an
earlier one may be unread: an answer proves it was read; for a request the model lets park, it
sends DescribeGroups probes (`send(..., probe=True)`). A probe is read-only, so it may be
processed before any pending request (a probe read first proves nothing); an answer no hypothesis
explains is ignored, not a finding (explicit DescribeGroups actions test DescribeGroups); an
answer that only hypotheses having processed the parked request
explain drops every other one (`processed`), and the next request is then judged strictly. This
is sound for Kafka: GroupCoordinator adds or updates the member and moves the state under the
group lock before it parks the JoinGroup, and handleDescribeGroup reads the summary under that
lock. When the effect is invisible to DescribeGroups (a rejoin during PreparingRebalance: no
metadata outside Stable), the barrier does not hold and the overtaking above still applies.

Responses. A response must equal one the hypothesis produced, field by field as far as the API
version carries the field; member ids are compared through a per-hypothesis bijection between the
target's ids and the model's (learned at first sight, branching over equal-looking members). A
answer the model made at `t` must come by `t + response_bound_ms + late_ms +` the neighbours'
latency: missing after that, it is judged "no-response"; the right answer after that is a finding
"answered too late". A request the model drops without an answer (superseded) must never be
answered.

A group whose hypothesis set exceeds `max_hypotheses` is declared inconclusive (never a finding).

The table. Hypotheses step through the table the target is judged by (`table`, its profile's:
kafka-4's for Kafka 4, fuzz/allowances.py `judged_table`; Kafka 3.9's by default). ListGroups lists
every group of the target: a judge judges its own group's entry (`own_listing`).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Final, Optional, Union

from check.profiles import Urgent
from model import messages as m
from model.concrete import armed_timers, settings_from
from model.coordinator_api import CoordinatorConfig
from model.dsl import Superseded, Table
from model.state import Group, Input, Settings
from model.step import Transition, step_all
from model.table import CLASSIC_TABLE, URGENT
from model.vocabulary import ApiKey, Error, GroupState, TimerEvent

from fuzz.allowances import GROUP_CLEANUP, LATE_PENDING_EXPIRY, LATE_SESSION_EXPIRY

NO_RESPONSE: Final = "no-response"
# requests the model may park: their answer's latency is no measure of the target's speed
_PARKABLE: Final = frozenset({ApiKey.JoinGroup, ApiKey.SyncGroup})
# requests that change no state on any coordinator
_READ_ONLY: Final = frozenset({ApiKey.DescribeGroups, ApiKey.ListGroups, ApiKey.OffsetFetch})
_OFFSETS_EXPIRE: Final = TimerEvent.OffsetsExpire.value
_SESSION_EXPIRE: Final = TimerEvent.MemberSessionExpire.value


class Inconclusive(Exception):
    """The hypothesis set grew beyond its bound: this group can no longer be judged."""


class IdMode:
    """Model member ids `base-UUID`, the UUID the smallest number no id in use in the hypothesis
    (`in_use`) has: unique within the hypothesis, never a target's, and a function of the
    hypothesis, so that two orders of requests that lead to the same state name its new members
    alike and are one hypothesis (a counter shared by every branch gave each branch's new member
    another name: hypotheses equal up to renaming that were never merged)."""

    def __init__(self, in_use: Callable[[], set[str]] = set) -> None:
        self._in_use = in_use

    def deadline(self, now_ms: int, timeout_ms: int) -> int:
        return now_ms + timeout_ms

    def new_member_id(self, group: Group, base: str) -> str:
        used = self._in_use() | {x.member_id for x in group.members} | {p.member_id for p in group.pending}
        for k in itertools.count(1):
            mid = f"{base}-{uuid.UUID(int=(0xF022 << 112) | k, version=4)}"
            if mid not in used:
                return mid
        raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class Tolerance:
    # clock granularity only: the driver's clock floors to whole ms and Kafka's timing wheel ticks
    # in 1 ms; no timer fires before its deadline
    early_ms: int = 1
    # the constant part of the slack: a timer must have fired by its deadline + the latency of the
    # request that armed it + this + the latency of the observation's neighbours (`_slack`)
    late_ms: int = 200
    reorder_ms: int = 100
    # an answer the model made at `t` must come by t + this + the slack (neighbours' latency)
    response_bound_ms: int = 2000
    # answers that came this long before an observation are its neighbours (their latency is the
    # slack); never the group's whole history
    neighbour_ms: int = 5000
    max_hypotheses: int = 400
    max_firings: int = 4000  # timer firings explored per observation
    # CPU time (of the judging thread: time.thread_time, so that a loaded machine, which slows
    # every thread alike, does not shorten it) one observation may take: the driver runs every
    # group on one event loop, and a judge that computes for seconds delays reading every other
    # group's answers
    max_observation_ms: int = 500
    overtake_ms: int = 1500  # a request may be processed after one sent up to this much later
    # ... and after one sent up to this much later whatever the target's latency (observe/: the
    # proxy reads requests of different connections at moments the broker does not see)
    min_overtake_ms: int = 0
    process_ms: int = 2000  # every request has been processed this long after it was sent
    # with the late-expiry allowances: a session expiry due from this long before a request that
    # re-arms the member to that request's answer may be evaluated after it
    stale_expiry_ms: int = 100
    # fuzz/allowances.py: the departures from the model's timers this target is allowed
    allowances: frozenset[str] = frozenset()


# a timer's identity in a hypothesis: (deadline, event, member)
TimerKey = tuple[int, str, Optional[str]]


@dataclass(slots=True)
class Hyp:
    group: Group
    now: int
    # how much later than its model deadline a timer may be due on the target: (the request that
    # armed it, -1 for none; the lateness its chain of timer firings adds, in `UNCERTAINTY_STEP`s)
    # for timers armed by a firing or by a request (absent: 0)
    uncertain: dict[TimerKey, tuple[int, int]]
    to_model: dict[str, str]
    to_target: dict[str, str]
    # request number -> (answer or None = superseded, latest moment the target made it, rows)
    produced: dict[int, tuple[Union[m.Response, None], int, tuple[str, ...]]]
    req_rows: dict[int, tuple[str, ...]]
    answered: frozenset[int]
    fired: frozenset[str]
    pending: tuple["Sent", ...] = ()  # sent, not yet processed in this hypothesis (send order)
    # the periodic cleanup caught in its Dead moment (`group-cleanup`): the group it leaves once
    # removed from the cache, and the latest model time by which that has happened
    removing: Optional[tuple[Group, int]] = None

    def copy(self) -> "Hyp":
        return Hyp(self.group, self.now, dict(self.uncertain), dict(self.to_model), dict(self.to_target),
                   dict(self.produced), dict(self.req_rows), self.answered, self.fired, self.pending,
                   self.removing)

    def key(self) -> tuple[object, ...]:
        group = self.group
        if len(group.pending) > 1:  # (Kafka's pendingMembers is a set: their order tells nothing)
            group = dataclasses.replace(group, pending=tuple(sorted(group.pending, key=lambda p: p.member_id)))
        return (group, frozenset(self.to_model.items()),
                frozenset((k, v[0]) for k, v in self.produced.items()), self.answered,
                tuple(p.number for p in self.pending), frozenset(self.uncertain.items()), self.removing)


@dataclass(frozen=True, slots=True)
class Sent:
    number: int
    api: ApiKey
    version: int
    request: m.Request  # as the target decodes it (target member ids)
    at_ms: int
    probe: bool = False  # a read barrier's DescribeGroups: read-only, may be read in any order
    # from when the target surely could read it (`process_ms` counts from then): later than
    # `at_ms` for a request queued behind an unanswered one of its connection (observe/)
    ready_ms: int = -1

    def ready(self) -> int:
        return max(self.at_ms, self.ready_ms)


@dataclass(frozen=True, slots=True)
class Finding:
    """No hypothesis allows what the target did with request `number`."""

    number: int
    api: str
    api_version: int
    state: tuple[str, ...]  # the model's group states before the request (one per hypothesis kind)
    rows: tuple[str, ...]
    expected: tuple[dict[str, Any], ...]
    actual: Union[dict[str, Any], str]
    at_ms: int
    shape: str

    primary: str = ""  # the row that decided the request in most hypotheses

    def class_key(self) -> str:
        return f"{self.api}|{self.primary}|{self.shape}"


@dataclass(frozen=True, slots=True)
class Accepted:
    """A finding an accept entry (`entry`, its key) accepted; `continued`: some model state
    explained the target's answer and the judge went on from there (else judging ended)."""

    finding: Finding
    entry: str
    continued: bool


class GroupJudge:
    """Judges one group of one target (groups are independent: one judge each)."""

    def __init__(self, group_id: str, config: CoordinatorConfig, tol: Tolerance = Tolerance(), *,
                 table: Table = CLASSIC_TABLE, urgent: Urgent = URGENT) -> None:
        self.group_id = group_id
        # the transition table the target is judged by (its profile's: kafka-4's for Kafka 4)
        self.table, self.urgent = table, urgent
        self.settings: Settings = settings_from(config, Error.NONE)
        self.tol = tol
        self.mode = IdMode()
        self.hyps: list[Hyp] = [Hyp(Group(group_id=group_id), 0, {}, {}, {}, {}, {}, frozenset(),
                                    frozenset())]
        self.sent: dict[int, Sent] = {}
        self.states_before: dict[int, tuple[str, ...]] = {}
        # (answer moment, latency) of the requests the target answered by their own processing
        # (not parked): the neighbours an observation's slack is measured on
        self.latencies: list[tuple[int, int]] = []
        self.answered_at: dict[int, int] = {}
        self.processed_at: dict[int, int] = {}  # when a read barrier proved a request processed
        self.judged = 0  # answers judged, and answers judged missing
        self._own_ms = 0
        self._obs_ms = 0  # the observation being judged
        self._recent_ms = 0  # the slowest answer among its neighbours (`_start`)
        self.finding: Optional[Finding] = None
        self._budget_end = float("inf")
        # accepted divergences (`--accept`): which entry accepts a finding (None: it is a finding),
        # each accepted one with whether the judge went on, and the one that ended the judging
        self.accept: Optional[Callable[[Finding], Optional[str]]] = None
        self.accepted: list[Accepted] = []
        self.ended: Optional[Accepted] = None

    # ---------------------------------------------------------------- observations

    def send(self, number: int, api: ApiKey, version: int, request: m.Request, at_ms: int,
             probe: bool = False, ready_ms: int = -1) -> None:
        """Request `number` went out at `at_ms` (processed by the target at some later moment).
        A `probe` (a read barrier's DescribeGroups, which changes nothing) may be processed before
        any request still pending, however long before it that one was sent. `ready_ms`: the
        target may not have been able to read it before then (queued on its connection behind an
        unanswered request): it is processed within `process_ms` of that moment, not of `at_ms`
        (which stays the earliest moment it may have been read: the timers it arms are dated from
        there, their lateness covered by its latency)."""
        s = Sent(number, api, version, request, at_ms, probe, ready_ms)
        self.sent[number] = s
        for h in self.hyps:
            h.pending = h.pending + (s,)

    def receive(self, number: int, at_ms: int, actual: Union[m.Response, str]) -> Optional[Finding]:
        """The target answered request `number` at `at_ms` (`actual` a string: no usable answer)."""
        if self.finding is not None or self.ended is not None:
            return self.finding
        s = self.sent[number]
        if isinstance(actual, m.ListGroupsResponse):
            actual = own_listing(actual, self.group_id)  # other groups are other judges' business
        self.judged += 1
        self.answered_at.setdefault(number, at_ms)
        self._start(at_ms, own=None if s.api in _PARKABLE else at_ms - s.at_ms)
        before = self.hyps
        survivors: list[Hyp] = []
        expected: list[tuple[Hyp, Union[m.Response, None]]] = []
        too_late: list[Hyp] = []  # the right answer, but later than the model made it + the bound
        for h in before:
            if number in h.produced:
                branches = [h]
            else:
                branches = [e for b in self._settle(h, at_ms, must=number) for e in self._expand(b, at_ms)]
            for b in branches:
                made = b.produced.get(number)
                if made is None:
                    continue
                expected.append((b, made[0]))
                if isinstance(actual, str) or made[0] is None:
                    continue
                matches = match(s.api, s.version, made[0], actual, b.to_model, b.to_target)
                if matches and at_ms > made[1] + self._answer_bound():
                    too_late.append(b)
                    continue
                for maps in matches:
                    y = b.copy()
                    y.to_model, y.to_target = maps
                    y.answered = b.answered | {number}
                    survivors.append(y)
        if survivors:
            self.hyps = self._dedupe(survivors)
            if all(h.produced[number][2] == h.req_rows.get(number) for h in self.hyps):
                # answered by its own processing (not parked): how slowly this target answers
                self.latencies.append((at_ms, at_ms - s.at_ms))
            self._note_processed(at_ms)
            return None
        if s.probe:
            self.latencies.append((at_ms, at_ms - s.at_ms))  # answered at once, whatever it says
            # a probe serves the order, not the verdict: an answer no hypothesis explains (a
            # target whose DescribeGroups differs) teaches nothing; the barrier does not hold
            for h in before:
                h.pending = tuple(p for p in h.pending if p.number != number)
                if number in h.produced:
                    h.answered = h.answered | {number}
            self.hyps = before
            return None
        finding = self._finding(s, before, expected, actual, at_ms)
        if too_late and isinstance(finding.actual, dict):
            # the answer the model made, but later than any slack allows (a target answering late)
            finding = dataclasses.replace(
                finding, shape=finding.shape.split(" differing")[0] + " answered too late",
                actual={**finding.actual, "answered_after_ms": at_ms - s.at_ms})
        if self._accepted(finding, s, before, expected, actual):
            return None
        self.finding = finding
        return self.finding

    def silence(self, at_ms: int) -> Optional[Finding]:
        """No answer arrived for the requests still open at `at_ms`: drop every hypothesis that
        made an answer more than `response_bound_ms` ago; none left is a no-response finding."""
        if self.finding is not None or self.ended is not None:
            return self.finding
        self._start(at_ms)
        survivors: list[Hyp] = []
        overdue: dict[int, list[tuple[Hyp, Union[m.Response, None]]]] = {}
        bound = self._answer_bound()
        for h in self.hyps:
            for b in (e for x in self._settle(h, at_ms) for e in self._expand(x, at_ms)):
                late = [n for n, (resp, latest, _) in b.produced.items()
                        if resp is not None and n not in b.answered and latest + bound < at_ms]
                if late:
                    for n in late:
                        overdue.setdefault(n, []).append((b, b.produced[n][0]))
                else:
                    survivors.append(b)
        if survivors:
            self.hyps = self._dedupe(survivors)
            self._note_processed(at_ms)
            return None
        number = min(overdue)
        self.judged += 1
        finding = self._finding(self.sent[number], self.hyps, overdue[number], NO_RESPONSE, at_ms)
        if self._accepted(finding, self.sent[number], self.hyps, overdue[number], NO_RESPONSE):
            return None
        self.finding = finding
        return self.finding

    def closed(self, numbers: frozenset[int]) -> None:
        """The connection that carried requests `numbers` closed before they were answered (a
        client went away; observe/): their answers are never seen, so none is expected (Kafka
        processes a request it has read whether or not its connection stays open)."""
        for h in self.hyps:
            h.answered = h.answered | numbers

    def forget(self) -> None:
        """Drop what is kept for requests every hypothesis has answered and processed (a judge of
        a long-lived group, observe/): their answers can no longer tell hypotheses apart."""
        armers = {req for h in self.hyps for req, _ in h.uncertain.values()}  # (timers' latency)
        done = [n for n in self.sent if n not in armers
                and all(n in h.answered and n in h.produced for h in self.hyps)
                and all(p.number != n for h in self.hyps for p in h.pending)]
        if not done:
            return
        gone = frozenset(done)
        for h in self.hyps:
            h.answered = h.answered - gone
            for n in done:
                h.produced.pop(n, None)
                h.req_rows.pop(n, None)
        for n in done:
            for d in (self.sent, self.states_before, self.answered_at, self.processed_at):
                d.pop(n, None)
        self.hyps = self._dedupe(self.hyps)

    def processed(self, number: int) -> bool:
        """Whether every hypothesis has processed request `number` (a read barrier holds: a
        request sent from now on is processed after it, with no overtaking to consider)."""
        return all(p.number != number for h in self.hyps for p in h.pending)

    def may_be_parked(self, number: int, at_ms: int) -> bool:
        """Whether, once every request sent so far is processed, some hypothesis has not answered
        `number` (the driver may then move on without waiting for it)."""
        self._start(at_ms)
        return any(number not in b.produced
                   for h in self.hyps for b in self._settle(h, at_ms, everything=True))

    def may_be_answered(self, number: int, at_ms: int) -> bool:
        """Whether some hypothesis has answered `number` by `at_ms` (a timer that may or may not
        have fired by now, such as a join phase ending, decides whether the answer is due)."""
        self._start(at_ms)
        return any(number in e.produced and e.produced[number][0] is not None
                   for h in self.hyps for b in self._settle(h, at_ms, everything=True)
                   for e in self._expand(b, at_ms))

    def quiescent(self, at_ms: int) -> bool:
        """No hypothesis has a request to process, an answer still to come or a timer armed."""
        return all(not h.pending and not armed_timers(h.group) and all(
            n in h.answered or v[0] is None for n, v in h.produced.items()) for h in self.hyps)

    def covered_keys(self) -> frozenset[str]:
        """Coverage keys (rows, and rows in a context: `coverage_keys`) fired in every hypothesis
        still standing (what the target was seen to do)."""
        if not self.hyps:
            return frozenset()
        common = self.hyps[0].fired
        for h in self.hyps[1:]:
            common = common & h.fired
        return common

    # ---------------------------------------------------------------- internals

    def overtake_window(self) -> int:
        """How much later a request may be sent and still be processed first: as long as the
        slowest answer among the observation's neighbours (a target that reads slowly answers
        slowly), at most `overtake_ms`; with a responsive target, requests are judged in the order
        sent."""
        return min(self.tol.overtake_ms, max(self.tol.min_overtake_ms, self._recent_ms))

    def _start(self, at_ms: int, own: Optional[int] = None) -> None:
        """Judging an observation at `at_ms` begins: its CPU budget, and its slack, measured on
        the answers of its neighbours (those within `neighbour_ms` before it) and on `own`, the
        latency of the answer being judged when it is one that comes at once."""
        self._budget_end = time.thread_time() + self.tol.max_observation_ms / 1000.0
        self._obs_ms = at_ms
        since = at_ms - self.tol.neighbour_ms
        self._recent_ms = max((lat for t, lat in self.latencies if t >= since), default=0)
        self._own_ms = own if own is not None else 0
        if len(self.latencies) > 64:
            self.latencies = [x for x in self.latencies if x[0] >= since]

    def _slack(self) -> int:
        """How late, beyond its deadline and its own arming's uncertainty, a timer may fire."""
        return self.tol.late_ms + max(self._recent_ms, self._own_ms)

    def _answer_bound(self) -> int:
        """How long after the model made an answer the target may deliver it (its neighbours'
        latency, never the judged answer's own)."""
        return self.tol.response_bound_ms + self.tol.late_ms + self._recent_ms

    def _latency(self, number: int) -> int:
        """How much later than sent request `number` may have been processed: until its answer,
        the read barrier that proved it processed, or now (at most `process_ms`)."""
        sent = self.sent.get(number)
        if sent is None:
            return 0
        until = self.processed_at.get(number, self.answered_at.get(number, self._obs_ms))
        return max(0, min(sent.ready() - sent.at_ms + self.tol.process_ms, until - sent.at_ms))

    def _uncertainty(self, h: Hyp, key: TimerKey) -> int:
        """How much later than its model deadline timer `key` may be due on the target."""
        req, firings = h.uncertain.get(key, (-1, 0))
        return (self._latency(req) if req >= 0 else 0) + firings * self._slack()

    def _note_processed(self, at_ms: int) -> None:
        """Record when each request became processed in every hypothesis (a read barrier)."""
        for n in [n for n in self.sent if n not in self.processed_at]:
            if all(p.number != n for h in self.hyps for p in h.pending):
                self.processed_at[n] = min(at_ms, self.answered_at.get(n, at_ms))

    @staticmethod
    def _arm(before: Hyp, after: Hyp, source: tuple[int, int]) -> None:
        """`after` follows `before` by a transition whose moment is uncertain by `source`: the
        timers it armed inherit that; timers no longer armed are forgotten."""
        old = {(d, e, mid) for d, _, e, mid in armed_timers(before.group)}
        now = {(d, e, mid) for d, _, e, mid in armed_timers(after.group)}
        kept = {k: v for k, v in after.uncertain.items() if k in now}
        if source != (-1, 0):
            for k in now - old:
                kept[k] = source
        after.uncertain = kept

    def _check_budget(self) -> None:
        if time.thread_time() > self._budget_end:
            raise Inconclusive(f"one observation took over {self.tol.max_observation_ms} ms of CPU to judge")

    def _settle(self, h: Hyp, at_ms: int, must: int = -1, everything: bool = False) -> list[Hyp]:
        """Every way the target may have processed the pending requests of `h` by `at_ms`: each
        request that must have been processed (`must`, those sent `process_ms` ago, all of them
        with `everything`) is applied; the others may be; a request may be processed before an
        earlier one sent at most `overtake_ms` before it; timers fire in between."""
        def required(x: Sent) -> bool:
            return everything or x.number == must or x.ready() < at_ms - self.tol.process_ms

        out: list[Hyp] = []
        stack = [h]
        # orders of requests that lead to the same state, at the same moment, are one: explored once
        seen: set[tuple[object, ...]] = set()
        while stack:
            self._check_budget()
            x = stack.pop()
            k = (*x.key(), x.now)
            if k in seen:
                continue
            seen.add(k)
            if not any(required(p) for p in x.pending):
                out.append(x)
            if not x.pending:
                continue
            window = self.overtake_window()
            first = x.pending[0].ready()  # the earliest moment a request before `p` was readable
            for i, p in enumerate(x.pending):
                if i > 0:
                    if p.at_ms - first >= window and not p.probe:
                        first = min(first, p.ready())
                        continue
                    first = min(first, p.ready())
                rest = x.pending[:i] + x.pending[i + 1:]
                if not p.probe and any(required(q) and q.ready() <= p.at_ms - window for q in rest):
                    continue
                states = self.states_before.setdefault(p.number, ())
                until = min(at_ms, p.ready() + self.tol.process_ms)  # p was processed by then
                for b in self._expand(x, until, must_before=p.at_ms):
                    if b.group.state.name not in states:
                        states = self.states_before[p.number] = tuple(sorted({*states, b.group.state.name}))
                    b = b.copy()
                    b.pending = rest
                    stack.extend(self._apply(b, p))
            if len(stack) + len(out) > self.tol.max_hypotheses * 4:
                raise Inconclusive(f"more than {self.tol.max_hypotheses * 4} orders of pending requests")
        return out

    def _dedupe(self, hyps: list[Hyp]) -> list[Hyp]:
        seen: dict[tuple[object, ...], Hyp] = {}
        for h in hyps:
            seen.setdefault(h.key(), h)  # (the timers' uncertainty is part of the key)
        if len(seen) > self.tol.max_hypotheses:
            raise Inconclusive(f"{len(seen)} hypotheses (bound {self.tol.max_hypotheses})")
        return list(seen.values())

    def _expand(self, h: Hyp, can_until: int, must_before: Optional[int] = None) -> list[Hyp]:
        """Every way the timers of `h` may have fired by `can_until`: a timer fires at its deadline
        `d` or later, never earlier (`early_ms`: clock granularity), and must have fired before
        `must_before` (default `can_until`) once `d` + its uncertainty + the slack has passed."""
        must_point = can_until if must_before is None else must_before
        can_t = can_until + self.tol.early_ms
        reorder = self.tol.reorder_ms + self._recent_ms
        slack = self._slack()
        cleanup = GROUP_CLEANUP in self.tol.allowances
        out: list[Hyp] = []
        stack = [h]
        firings = 0
        while stack:
            self._check_budget()
            x = stack.pop()
            if x.removing is not None:
                # the cleanup's Dead moment ends when it removes the group from the cache: it may
                # have by now, and must have by its deadline
                gone = x.copy()
                gone.group, gone.removing = x.removing[0], None
                self._arm(x, gone, (-1, 0))
                stack.append(gone)
                if can_until <= x.removing[1]:
                    out.append(x)  # (still Dead: its moment is too short for a timer to fire in it)
                continue
            if cleanup and x.group.state is GroupState.Empty and not x.group.offsets:
                # Kafka's periodic cleanupGroupMetadata (offsets.retention.check.interval.ms,
                # 10 min by default, phase unknown) removes an Empty group that has no offsets:
                # it may have run at any moment. It moves the group to Dead under the group's lock
                # and removes it from the cache only after (GMM:863): a request in between sees a
                # Dead group (COORDINATOR_NOT_AVAILABLE), for at most `late_ms`
                for tr in step_all(self.table, self.urgent, x.group, Input(_OFFSETS_EXPIRE),
                                   self.settings, x.now, self.mode):
                    y = self._record(x, tr, x.now, x.now)
                    self._arm(x, y, (-1, 0))
                    stack.append(y)
                    dead = x.copy()
                    dead.group = dataclasses.replace(x.group, state=GroupState.Dead)
                    dead.removing = (y.group, max(x.now, can_until) + self.tol.late_ms)  # (it may run just now)
                    dead.fired = y.fired
                    stack.append(dead)
            timers = armed_timers(x.group)
            if not timers:
                out.append(x)
                continue
            dmin = min(t[0] for t in timers)
            if dmin >= can_t:
                out.append(x)
                continue
            if not any(d + self._uncertainty(x, (d, e, mid)) + slack < must_point
                       for d, _, e, mid in timers):
                out.append(x)  # nothing more has fired yet
            for d, _, event, member in timers:
                if d > min(can_t, dmin + reorder):
                    continue
                at = max(x.now, d + 1)  # Kafka fires a timer once its deadline has passed
                firings += 1
                if firings > self.tol.max_firings:
                    raise Inconclusive(f"more than {self.tol.max_firings} timer firings per observation")
                key = (d, event, member)
                req, chain = x.uncertain.get(key, (-1, 0))
                # the target fired it by then: the answers it made come by then too
                fired_by = at + self._uncertainty(x, key) + slack
                for tr in step_all(self.table, self.urgent, x.group, Input(event, member_id=member),
                                   self.settings, at, self.mode):
                    y = self._record(x, tr, at, fired_by)
                    self._arm(x, y, (req, chain + 1))  # armed at a moment uncertain by one slack more
                    stack.append(y)
        return out

    def _apply(self, h: Hyp, s: Sent) -> list[Hyp]:
        request = translate(s.request, h.to_model)
        at = max(h.now, s.at_ms)
        out = []
        # with the late-expiry allowances (Kafka 3.9): sessions and MEMBER_ID_REQUIRED ids due
        # while this request held the group lock, from `stale_expiry_ms` before its send to its
        # answer (its own processing window): their expiry, committed before it, may be evaluated
        # after it
        start = s.at_ms - self.tol.stale_expiry_ms
        end = s.at_ms + self._latency(s.number) + self.tol.early_ms
        def near(deadline: int) -> bool:
            return self.tol.stale_expiry_ms > 0 and start <= deadline <= end
        due = [(x.member_id, x.session_deadline) for x in h.group.members
               if x.session_deadline is not None and near(x.session_deadline)
               ] if LATE_SESSION_EXPIRY in self.tol.allowances else []
        due_pending = [p.member_id for p in h.group.pending if near(p.deadline)
                       ] if LATE_PENDING_EXPIRY in self.tol.allowances else []
        ids = IdMode(lambda: ids_in_use(h))
        for tr in step_all(self.table, self.urgent, h.group, Input(s.api.name, request, request_id=s.number),
                           self.settings, at, ids):
            latest = at
            y = self._record(h, tr, at, latest)
            self._arm(h, y, (s.number, 0))
            y.req_rows[s.number] = tr.rows
            if tr.reply is not None:
                y.produced[s.number] = (tr.reply, latest, tr.rows)
            out.append(y)
            for member, deadline in due:
                after = y.group.member(member)
                if after is not None and after.session_deadline not in (None, deadline):
                    out.extend(self._late_expiry(y, member, at, latest, s.number))
            for member in due_pending:
                # a pending id that this JoinGroup made a member, the group still rebalancing:
                # Kafka's late pending expiry is GroupMetadata.remove (GC:1519), which drops the
                # member without answering the JoinGroup it is parked in, then the join check
                if y.group.has_member(member) and y.group.state is GroupState.PreparingRebalance:
                    out.extend(self._late_expiry(y, member, at, latest, s.number, unanswered=s.number))
        return out

    def _late_expiry(self, y: Hyp, member: str, at: int, latest: int, number: int,
                     unanswered: Optional[int] = None) -> list[Hyp]:
        """The expiry of `member`'s previous session, force-completed before the request that
        re-armed it and evaluated after it: Kafka's onExpireHeartbeat, i.e. the table's
        MemberSessionExpire on the group as it is now; a satisfied member ignores it (and keeps
        the session the request armed). For a late *pending* expiry the member's parked JoinGroup
        (`unanswered`) is never answered: Kafka forgets its callback with the member."""
        out: list[Hyp] = []
        for tr in step_all(self.table, self.urgent, y.group, Input(_SESSION_EXPIRE, member_id=member),
                           self.settings, at, self.mode):
            if tr.rows and tr.rows[0].endswith("/satisfied"):
                continue  # nothing happens: the hypothesis without the late expiry stands for it
            z = self._record(y, tr, at, latest)
            self._arm(y, z, (number, 0))  # evaluated right after request `number`
            if unanswered is not None and unanswered not in y.produced and unanswered in z.produced:
                z.produced[unanswered] = (None, latest, z.produced[unanswered][2])
            out.append(z)
        return out

    def _record(self, h: Hyp, tr: Transition, at: int, latest: int) -> Hyp:
        """`h` after `tr` at model time `at`; its answers were made on the target by `latest`."""
        y = h.copy()
        y.group = tr.after
        y.now = at
        y.fired = h.fired | coverage_keys(tr)
        for o in tr.outputs:
            y.produced[o.request_id] = (None if isinstance(o.response, Superseded) else o.response,
                                        latest, tr.rows)
        return y

    def _finding(self, s: Sent, hyps: list[Hyp], expected: list[tuple[Hyp, Union[m.Response, None]]],
                 actual: Union[m.Response, str], at_ms: int) -> Finding:
        rows: set[str] = set()
        shown: list[dict[str, Any]] = []
        votes: dict[str, int] = {}
        for h in hyps:
            own = h.req_rows.get(s.number, ())
            if own:
                votes[own[0]] = votes.get(own[0], 0) + 1
            rows.update(own)
            made = h.produced.get(s.number)
            if made is not None:
                rows.update(made[2])
        for h, resp in expected:
            made = h.produced.get(s.number)
            if made is not None:
                rows.update(made[2])
            own = h.req_rows.get(s.number, ())
            if own:
                votes[own[0]] = votes.get(own[0], 0) + 1
                rows.update(own)
            view = ({"response": "never answered (superseded)"} if resp is None
                    else render(s.api, s.version, resp, h.to_target))
            if view not in shown:
                shown.append(view)
        if not expected:
            shown.append({"response": "parked (no answer yet)"})
        actual_view: Union[dict[str, Any], str] = (
            actual if isinstance(actual, str) else render(s.api, s.version, actual, None))
        return Finding(s.number, s.api.name, s.version, self.states_before.get(s.number, ()),
                       tuple(sorted(rows)), tuple(shown), actual_view, at_ms,
                       shape(shown, actual_view),
                       max(sorted(votes), key=lambda r: votes[r]) if votes else "")

    # ---------------------------------------------------------------- accepted divergences

    def _accepted(self, f: Finding, s: Sent, before: list[Hyp],
                  expected: list[tuple[Hyp, Union[m.Response, None]]],
                  actual: Union[m.Response, str]) -> bool:
        """Whether an accept entry accepts `f`; if so the judge adopts the target's answer: its
        hypotheses become the model states that explain it (`_adopt`), or, where none does,
        judging ends here (`ended`)."""
        entry = self.accept(f) if self.accept is not None else None
        if entry is None:
            return False
        adopted = self._adopt(f, s, before, expected, actual)
        a = Accepted(f, entry, bool(adopted))
        self.accepted.append(a)
        if adopted:
            self.hyps = self._dedupe(adopted)
        else:
            self.ended = a
        return True

    def _adopt(self, f: Finding, s: Sent, before: list[Hyp],
               expected: list[tuple[Hyp, Union[m.Response, None]]],
               actual: Union[m.Response, str]) -> list[Hyp]:
        """The model states that explain the target's answer to request `s`, given that the
        difference `f` is accepted:

        - the same error, some fields differing: the states after the request whose answer equals
          the target's once those fields are taken as the target has them (a differing JoinGroup
          generation joins the id bijection: the target's generation stands for the model's);
        - a different error, a closed connection, or an answer to a request the model drops
          unanswered (superseded): the states after the model's answer, and, when the target
          rejected the request, the states before it with the request dropped (a rejection
          changes nothing);
        - a read-only request (DescribeGroups, ListGroups, OffsetFetch) whose answer no state
          explains even so (a field the answer cannot take over: a member's assignment in a
          DescribeGroups): the states after the model's answer, since such a request changes no
          state on any coordinator;
        - no answer at all, or an answer to a request every hypothesis still holds parked:
          nothing explains it."""
        number = s.number
        if actual == NO_RESPONSE or not expected:
            return []
        fields = differing_fields(f.shape)
        out: list[Hyp] = []
        for b, resp in expected:
            if fields:
                if resp is None or isinstance(actual, str):
                    continue
                for maps in match_accepting(s.api, s.version, resp, actual, b.to_model, b.to_target, fields):
                    y = b.copy()
                    y.to_model, y.to_target = maps
                    y.answered = b.answered | {number}
                    out.append(y)
            else:
                y = b.copy()
                y.answered = b.answered | {number}
                out.append(y)
        if not fields and rejects(actual):
            for h in before:
                if number in h.produced or all(p.number != number for p in h.pending):
                    continue
                y = h.copy()
                y.pending = tuple(p for p in h.pending if p.number != number)
                y.answered = h.answered | {number}
                out.append(y)
        if fields and not out and s.api in _READ_ONLY and not isinstance(actual, str):
            for b, resp in expected:
                if resp is not None:
                    y = b.copy()
                    y.answered = b.answered | {number}
                    out.append(y)
        for y in out:
            # answered: what the model would have answered no longer tells hypotheses apart (a
            # rejection that changed nothing and the model's own error answer are one state)
            y.produced.pop(number, None)
        return out


def ids_in_use(h: Hyp) -> set[str]:
    """The model member ids hypothesis `h` refers to beyond its group: those paired with a
    target's id, and those in answers it made (a new id may reuse none of them)."""
    used = set(h.to_target)
    for resp, _, _ in h.produced.values():
        if isinstance(resp, m.JoinGroupResponse):
            used.update((resp.member_id, resp.leader), (x.member_id for x in resp.members))
        elif isinstance(resp, m.LeaveGroupResponse):
            used.update(x.member_id for x in resp.members)
        elif isinstance(resp, m.DescribeGroupsResponse):
            used.update(x.member_id for g in resp.groups for x in g.members)
    return used


# -------------------------------------------------------------------- coverage

CONTEXT_SEP: Final = "#"


def coverage_keys(tr: Transition) -> frozenset[str]:
    """What a transition covers: its rows, and each row in the context it left the group in
    (pending members / every member or some waiting in JoinGroup / some in SyncGroup), so that
    the generator also steers towards a row fired at the moment a phase is about to complete or
    while a pending member holds the join phase open, not only towards rows never fired."""
    g = tr.after
    flags = ("p" if g.pending else "") + (
        ("J" if all(x.awaiting_join is not None for x in g.members) else "j")
        if any(x.awaiting_join is not None for x in g.members) else "") + (
        "s" if any(x.awaiting_sync is not None for x in g.members) else "")
    return frozenset(tr.rows) | frozenset(f"{r}{CONTEXT_SEP}{flags}" for r in tr.rows)


# -------------------------------------------------------------------- requests and responses


def translate(r: m.Request, ids: dict[str, str]) -> m.Request:
    """The request with the target's member ids replaced by the hypothesis's model ids."""
    def t(x: str) -> str:
        return ids.get(x, x)
    if isinstance(r, m.JoinGroupRequest):
        return dataclasses.replace(r, member_id=t(r.member_id))
    if isinstance(r, (m.HeartbeatRequest, m.OffsetCommitRequest)):
        return dataclasses.replace(r, member_id=t(r.member_id),
                                   generation_id=model_generation(ids, r.generation_id))
    if isinstance(r, m.SyncGroupRequest):
        return dataclasses.replace(r, member_id=t(r.member_id),
                                   generation_id=model_generation(ids, r.generation_id),
                                   assignments=tuple((t(k), v) for k, v in r.assignments))
    if isinstance(r, m.LeaveGroupRequest):
        return dataclasses.replace(r, members=tuple(
            m.MemberIdentity(t(x.member_id), x.group_instance_id) for x in r.members))
    return r


Maps = tuple[dict[str, str], dict[str, str]]

_FOREIGN_GENERATION: Final = 1 << 30
GENERATION: Final = "generation:"  # generations in the id bijection: "generation:0" -> "generation:1"


def model_generation(to_model: dict[str, str], generation: int) -> int:
    """The model's generation for a target's (the same unless an accepted difference paired them)."""
    key = f"{GENERATION}{generation}"
    known = to_model.get(key)
    if known is not None:
        return int(known[len(GENERATION):])
    # the model's generation of that number stands for another of the target's: this one is
    # none the model handed out
    return _FOREIGN_GENERATION + generation if key in to_model.values() else generation


def _pair_generation(maps: Maps, target: int, model: int) -> Maps:
    """`target`'s generation now stands for the model's `model` (a target that numbers its
    generations differently may hand out a number again: the newest pairing wins, and the
    generation an older pairing named is no longer the current one in either)."""
    a, b = f"{GENERATION}{target}", f"{GENERATION}{model}"
    if maps[0].get(a) == b or (target == model and a not in maps[0] and b not in maps[1]):
        return maps
    to_model = {k: v for k, v in maps[0].items() if k != a and v != b}
    to_target = {k: v for k, v in maps[1].items() if k != b and v != a}
    to_model[a], to_target[b] = b, a
    return to_model, to_target


def _pair(maps: Maps, target_id: str, model_id: str) -> Optional[Maps]:
    """Add target_id <-> model_id to the bijection (a copy), or None on a conflict."""
    to_model, to_target = maps
    known = to_model.get(target_id)
    if known is not None:
        return maps if known == model_id else None
    if model_id in to_target:
        return None
    if target_id == model_id:  # a literal id we sent, echoed by both (unknown-member answers)
        return maps
    if target_id == "" or model_id == "":
        return None
    a, b = dict(to_model), dict(to_target)
    a[target_id], b[model_id] = model_id, target_id
    return a, b


def _version_view(api: ApiKey, version: int, r: m.Response) -> m.Response:
    """The response as the API version can carry it (fields it lacks read back as defaults)."""
    if isinstance(r, m.JoinGroupResponse):
        name = r.protocol_name
        if version < 7 and name == "":
            name = None
        return dataclasses.replace(
            r, protocol_type=r.protocol_type if version >= 7 else None, protocol_name=name,
            skip_assignment=r.skip_assignment if version >= 9 else False,
            members=tuple(dataclasses.replace(x, group_instance_id=x.group_instance_id
                                              if version >= 5 else None) for x in r.members))
    if isinstance(r, m.SyncGroupResponse) and version < 5:
        return dataclasses.replace(r, protocol_type=None, protocol_name=None)
    if isinstance(r, m.LeaveGroupResponse) and version < 3:
        # one member, its error at top level (Kafka LeaveGroupResponse.getError below v3)
        error = r.error
        if error is Error.NONE:
            error = next((x.error for x in r.members if x.error is not Error.NONE), error)
        return m.LeaveGroupResponse(error, ())
    if isinstance(r, m.OffsetFetchResponse) and version < 2:
        return dataclasses.replace(r, error=Error.NONE)
    if isinstance(r, m.ListGroupsResponse) and version < 4:  # no GroupState below v4
        return m.ListGroupsResponse(r.error, tuple(dataclasses.replace(g, state="") for g in r.groups))
    if isinstance(r, m.DescribeGroupsResponse) and version < 4:
        return m.DescribeGroupsResponse(tuple(dataclasses.replace(g, members=tuple(
            dataclasses.replace(x, group_instance_id=None) for x in g.members)) for g in r.groups))
    return r


def match(api: ApiKey, version: int, model: m.Response, actual: m.Response,
          to_model: dict[str, str], to_target: dict[str, str]) -> list[Maps]:
    """Every extension of the id bijection under which `actual` equals `model` (empty: none)."""
    model = _version_view(api, version, model)
    actual = _version_view(api, version, actual)
    if type(model) is not type(actual):
        return []
    start: list[Maps] = [(to_model, to_target)]
    if isinstance(model, m.JoinGroupResponse) and isinstance(actual, m.JoinGroupResponse):
        actual = dataclasses.replace(actual, generation_id=model_generation(to_model, actual.generation_id))
        if (model.error, model.generation_id, model.protocol_type, model.protocol_name,
                model.skip_assignment, len(model.members)) != (
                actual.error, actual.generation_id, actual.protocol_type, actual.protocol_name,
                actual.skip_assignment, len(actual.members)):
            return []
        out = _pairs(start, [(actual.member_id, model.member_id)])
        if actual.leader or model.leader:
            out = _pairs(out, [(actual.leader, model.leader)])
        return _multiset(out, [(x.member_id, (x.group_instance_id, x.metadata)) for x in actual.members],
                         [(x.member_id, (x.group_instance_id, x.metadata)) for x in model.members])
    if isinstance(model, m.LeaveGroupResponse) and isinstance(actual, m.LeaveGroupResponse):
        if model.error != actual.error or len(model.members) != len(actual.members):
            return []
        if any((a.group_instance_id, a.error) != (b.group_instance_id, b.error)
               for a, b in zip(actual.members, model.members)):
            return []
        return _pairs(start, [(a.member_id, b.member_id) for a, b in zip(actual.members, model.members)])
    if isinstance(model, m.DescribeGroupsResponse) and isinstance(actual, m.DescribeGroupsResponse):
        if len(model.groups) != len(actual.groups):
            return []
        out = start
        for a, b in zip(actual.groups, model.groups):
            if (a.error, a.group_id, a.state, a.protocol_type, a.protocol, len(a.members)) != (
                    b.error, b.group_id, b.state, b.protocol_type, b.protocol, len(b.members)):
                return []
            out = _multiset(out, [(x.member_id, (x.group_instance_id, x.client_id, x.metadata, x.assignment))
                                  for x in a.members],
                            [(x.member_id, (x.group_instance_id, x.client_id, x.metadata, x.assignment))
                             for x in b.members])
        return out
    if isinstance(model, m.OffsetCommitResponse) and isinstance(actual, m.OffsetCommitResponse):
        return start if sorted(model.partitions) == sorted(actual.partitions) else []
    if isinstance(model, m.OffsetFetchResponse) and isinstance(actual, m.OffsetFetchResponse):
        same = model.error == actual.error and sorted(model.partitions) == sorted(actual.partitions)
        return start if same else []
    return start if model == actual else []


def differing_fields(shape_text: str) -> frozenset[str]:
    """The fields a class shape names as differing (`... differing in a,b`; none for an error
    pair; "member ids" when only the id bijection failed)."""
    _, sep, tail = shape_text.partition(" differing in ")
    return frozenset(tail.split(",")) if sep else frozenset()


def rejects(actual: Union[m.Response, str]) -> bool:
    """Whether the target refused the request: an error answer (every part of it) or a dropped
    connection."""
    if isinstance(actual, str):
        return True
    if isinstance(actual, m.OffsetCommitResponse):
        return bool(actual.partitions) and all(e is not Error.NONE for _, e in actual.partitions)
    if isinstance(actual, m.DeleteGroupsResponse):
        return bool(actual.results) and all(e is not Error.NONE for _, e in actual.results)
    if isinstance(actual, m.DescribeGroupsResponse):
        return bool(actual.groups) and all(g.error is not Error.NONE for g in actual.groups)
    error = getattr(actual, "error", Error.NONE)
    return isinstance(error, Error) and error is not Error.NONE


# render key -> the response attribute that carries it (per response type)
_OVERLAY: Final[dict[type, dict[str, str]]] = {
    m.JoinGroupResponse: {"protocol_name": "protocol_name", "protocol_type": "protocol_type",
                          "skip_assignment": "skip_assignment", "members_count": "members"},
    m.SyncGroupResponse: {"assignment": "assignment", "protocol_type": "protocol_type",
                          "protocol_name": "protocol_name"},
    m.LeaveGroupResponse: {"member_errors": "members"},
    m.OffsetCommitResponse: {"errors": "partitions"},
    m.OffsetFetchResponse: {"offsets": "partitions"},
    m.DeleteGroupsResponse: {"errors": "results"},
}
_LISTED: Final = frozenset({"state", "protocol_type"})  # ListGroups: render key = ListedGroup attribute
_DESCRIBED: Final = {"state": "state", "protocol_type": "protocol_type", "protocol": "protocol",
                     "members_count": "members"}


def _as_target(value: Any, to_target: dict[str, str]) -> Any:
    """A model value taken over into the target's answer: member records get the target's ids."""
    members = (m.JoinGroupMember, m.MemberLeaveResult, m.DescribedMember)
    if isinstance(value, tuple) and value and isinstance(value[0], members):
        return tuple(dataclasses.replace(x, member_id=to_target.get(x.member_id, x.member_id))
                     for x in value)
    return value


def match_accepting(api: ApiKey, version: int, model: m.Response, actual: m.Response,
                    to_model: dict[str, str], to_target: dict[str, str],
                    fields: frozenset[str]) -> list[Maps]:
    """`match`, with the accepted differing `fields` taken as the model has them: the target's
    JoinGroup generation is paired with the model's in the bijection (both >= 0, no error)."""
    if type(model) is not type(actual):
        return []
    maps: Maps = (to_model, to_target)
    if isinstance(model, m.ListGroupsResponse) and isinstance(actual, m.ListGroupsResponse):
        # listed both (or neither): the accepted fields of the entry taken as the model has them
        if len(model.groups) != len(actual.groups) or not fields <= _LISTED:
            return []
        actual = m.ListGroupsResponse(actual.error, tuple(
            dataclasses.replace(a, **{k: getattr(b, k) for k in fields})
            for a, b in zip(actual.groups, model.groups)))
        return match(api, version, model, actual, to_model, to_target)
    if isinstance(model, m.DescribeGroupsResponse) and isinstance(actual, m.DescribeGroupsResponse):
        if len(model.groups) != len(actual.groups) or not fields <= set(_DESCRIBED):
            return []
        actual = m.DescribeGroupsResponse(tuple(
            dataclasses.replace(a, **{_DESCRIBED[k]: _as_target(getattr(b, _DESCRIBED[k]), to_target)
                                      for k in fields})
            for a, b in zip(actual.groups, model.groups)))
        return match(api, version, model, actual, to_model, to_target)
    table = _OVERLAY.get(type(model), {})
    rest = set(fields) - set(table)
    if ("generation" in rest and isinstance(model, m.JoinGroupResponse)
            and isinstance(actual, m.JoinGroupResponse)):
        rest.discard("generation")
        if model.error is Error.NONE and model.generation_id >= 0 and actual.generation_id >= 0:
            maps = _pair_generation(maps, actual.generation_id, model.generation_id)
        actual = dataclasses.replace(actual, generation_id=model.generation_id)
    if rest:
        return []  # a field this response cannot take over (e.g. only the member ids differ)
    ids = dict(maps[1])
    if (isinstance(model, m.JoinGroupResponse) and isinstance(actual, m.JoinGroupResponse)
            and model.error not in (Error.NONE, Error.MEMBER_ID_REQUIRED) and actual.member_id == ""):
        # an error answer hands out no member id: the target's empty one is the model's echo of
        # the request's (a difference the accepted fields stand for; it changes no state)
        actual = dataclasses.replace(actual, member_id=maps[1].get(model.member_id, model.member_id))
    if isinstance(model, m.JoinGroupResponse) and isinstance(actual, m.JoinGroupResponse):
        # the ids this very answer pairs: the member's own and its leader's
        ids.setdefault(model.member_id, actual.member_id)
        if model.leader:
            ids.setdefault(model.leader, actual.leader)
    actual = dataclasses.replace(actual, **{table[k]: _as_target(getattr(model, table[k]), ids)
                                            for k in fields if k in table})
    # the generation is already the model's: match without translating it a second time
    gens = {k: v for k, v in maps[0].items() if k.startswith(GENERATION)}
    plain = {k: v for k, v in maps[0].items() if not k.startswith(GENERATION)}
    return [({**a, **gens}, b) for a, b in match(api, version, model, actual, plain, maps[1])]


def _pairs(options: list[Maps], pairs: list[tuple[str, str]]) -> list[Maps]:
    out = []
    for maps in options:
        cur: Optional[Maps] = maps
        for a, b in pairs:
            cur = _pair(cur, a, b) if cur is not None else None
        if cur is not None:
            out.append(cur)
    return out


def _multiset(options: list[Maps], actual: list[tuple[str, object]],
              model: list[tuple[str, object]]) -> list[Maps]:
    """Members in Kafka's hash order: every matching of equal-looking members is a branch."""
    if sorted(repr(k) for _, k in actual) != sorted(repr(k) for _, k in model):
        return []
    out: list[Maps] = []
    for maps in options:
        partial = [maps]
        for key in {repr(k) for _, k in actual}:
            a_ids = [i for i, k in actual if repr(k) == key]
            m_ids = [i for i, k in model if repr(k) == key]
            nxt: list[Maps] = []
            for perm in itertools.permutations(m_ids):
                nxt.extend(_pairs(partial, list(zip(a_ids, perm))))
                if len(nxt) > 24:
                    break
            partial = _unique(nxt)
        out.extend(partial)
    return _unique(out)


def _unique(options: list[Maps]) -> list[Maps]:
    seen: dict[frozenset[tuple[str, str]], Maps] = {}
    for maps in options:
        seen.setdefault(frozenset(maps[0].items()), maps)
    return list(seen.values())


def render(api: ApiKey, version: int, r: m.Response,
           to_target: Optional[dict[str, str]]) -> dict[str, Any]:
    """A response as JSON: the error codes and the fields the version carries (model ids shown as
    the target's where known, else `<new member id>`)."""
    r = _version_view(api, version, r)

    def mid(x: str) -> str:
        if to_target is None or x in to_target:
            return x if to_target is None else to_target[x]
        return "<new member id>" if x.count("-") >= 5 else x

    if isinstance(r, m.JoinGroupResponse):
        out: dict[str, Any] = {"error": r.error.name, "generation": r.generation_id,
                               "member_id": mid(r.member_id), "leader": mid(r.leader),
                               "protocol_name": r.protocol_name, "members_count": len(r.members)}
        if version >= 7:
            out["protocol_type"] = r.protocol_type
        if version >= 9:
            out["skip_assignment"] = r.skip_assignment
        return out
    if isinstance(r, m.SyncGroupResponse):
        out = {"error": r.error.name, "assignment": r.assignment.hex()}
        if version >= 5:
            out.update(protocol_type=r.protocol_type, protocol_name=r.protocol_name)
        return out
    if isinstance(r, m.HeartbeatResponse):
        return {"error": r.error.name}
    if isinstance(r, m.LeaveGroupResponse):
        return {"error": r.error.name,
                "member_errors": [x.error.name for x in r.members]}
    if isinstance(r, m.OffsetCommitResponse):
        return {"errors": {str(tp): e.name for tp, e in sorted(r.partitions)}}
    if isinstance(r, m.OffsetFetchResponse):
        return {"error": r.error.name,
                "offsets": {str(tp): [off, e.name] for tp, off, e in sorted(r.partitions)}}
    if isinstance(r, m.DescribeGroupsResponse):
        g = r.groups[0] if r.groups else None
        if g is None:
            return {"groups": 0}
        return {"error": g.error.name, "state": g.state, "protocol_type": g.protocol_type,
                "protocol": g.protocol, "members_count": len(g.members)}
    if isinstance(r, m.DeleteGroupsResponse):
        return {"errors": [e.name for _, e in r.results]}
    if isinstance(r, m.ListGroupsResponse):  # the judge's own group's entry (`own_listing`)
        listed = r.groups[0] if r.groups else None
        out = {"error": r.error.name, "listed": listed is not None}
        if listed is not None:
            out.update(state=listed.state, protocol_type=listed.protocol_type)
        return out
    return {"response": repr(r)}


def own_listing(r: m.ListGroupsResponse, group_id: str) -> m.ListGroupsResponse:
    """A ListGroups answer as one group's judge sees it: the entries of that group only (a
    target lists every group it has, the other judges' and other clients' too)."""
    return m.ListGroupsResponse(r.error, tuple(g for g in r.groups if g.group_id == group_id))


def shape(expected: list[dict[str, Any]], actual: Union[dict[str, Any], str]) -> str:
    """The class shape: expected errors vs the actual error (or no-response), and, when an
    expected answer has the actual's error, the fields that differ from the closest one."""
    def err(v: dict[str, Any]) -> str:
        if "error" in v:
            return str(v["error"])
        if "errors" in v:
            return str(v["errors"] if not isinstance(v["errors"], dict) else sorted(set(v["errors"].values())))
        return str(v.get("response", "?"))
    exp = sorted({err(e) for e in expected})
    if isinstance(actual, str):
        return f"expected {'/'.join(exp)} actual {actual.split(':')[0]}"
    a = err(actual)
    text = f"expected {'/'.join(exp)} actual {a}"
    same = [e for e in expected if err(e) == a]
    if same:
        diffs = min((sorted(k for k in set(e) | set(actual) if e.get(k) != actual.get(k)
                            and k not in ("member_id", "leader")) for e in same), key=len)
        text += f" differing in {','.join(diffs) or 'member ids'}"
    return text


__all__ = ["CONTEXT_SEP", "Finding", "GroupJudge", "coverage_keys", "Inconclusive", "NO_RESPONSE", "Tolerance", "match", "render"]

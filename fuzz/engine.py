"""Running action sequences: against the model (to generate them) and against a target (to judge).

`Simulation` drives `model.concrete.ModelCoordinator` with a virtual clock; `Generator` draws a
sequence action by action, trying a few candidates in the simulation and keeping the one that
fires table rows the target has not yet been seen to fire (coverage-guided), weighed by the chance
that judging goes on past it (`Hazards`: what the target's earlier sequences taught, per action kind
and model state). Both simulate the table the target is judged by. Sequence `i` of a run depends
only on the seed, `i`, the coverage and the hazards it was given.

`run_sequence` plays a sequence against a target over the wire, one group, one connection per
simulated client, and feeds every send and every response to a `GroupJudge`. A request the model
may already have answered is waited for (as a client waits for its answer) before the next action
is resolved from what the answers told; one the model keeps parked is not. After the last
action every known member leaves (judged too), open requests are drained, and the group is
deleted where the target allows it (not judged).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import itertools
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Final, Iterable, Iterator, Optional, Sequence, Union

from check.profiles import Urgent
from model import messages as m
from model.concrete import ModelCoordinator
from model.coordinator_api import CoordinatorConfig
from model.dsl import Table
from model.table import CLASSIC_TABLE, URGENT
from model.vocabulary import ApiKey
from wire.errors import EncodeError, WireError

from fuzz.actions import (
    Action, FUZZ, Hold, Join, Everyone, Knowledge, Timing, Versions, Wait, hold_heartbeats, random_action,
    resolve,
)
from fuzz.client import AsyncConnection, Broker, Received, wire_request
from fuzz.accept import AcceptList
from fuzz.judge import Accepted, CONTEXT_SEP, Finding, GroupJudge, Inconclusive, Tolerance, coverage_keys


def encodable(request: m.Request, version: int, versions: Versions) -> Optional[tuple[
        ApiKey, Any, m.Request, int]]:
    """(api, body, decoded record, version) at `version`, or at the highest version that can
    carry the request; None when no version can."""
    api = request.api_key
    lo, hi = versions.get(api, (0, -1))
    for v in [version] + list(range(hi, lo - 1, -1)):
        try:
            a, body, decoded = wire_request(request, v)
            return a, body, decoded, v
        except EncodeError:
            continue
    return None


def action_rng(seed: str, index: int) -> random.Random:
    """The generator that picks API versions for action `index` (string seeds hash slowly)."""
    if seed.lstrip("-").isdigit():
        return random.Random(int(seed) * 7919 + index)
    return random.Random(f"{seed}/{index}")


def signature(a: Action) -> str:
    """The kind of an action as far as a target's known differences go: its type and, for a
    JoinGroup, whether it is static and whether it is sent at the lowest version."""
    if isinstance(a, Join):
        return f"Join/{'static' if a.inst >= 2 else 'dynamic'}/{'lowest' if a.ver == 1 else 'v'}"
    return type(a).__name__


class Hazards:
    """How often each kind of action (`signature`) was where the target's sequences stopped being
    judged (a finding, an accepted answer no model state explains, an inconclusive group), overall
    and in each state the model's group was in when the action was drawn (`context`): against a
    target with known differences (Tansu's static members, its KIP-394 round trip at every
    JoinGroup version) some actions end most sequences they occur in, often only in some states (a
    static member joining a missing group), and every row behind them stays unreached. The
    generator draws such actions less often, in proportion to the share of their occurrences that
    did not end the sequence (never below `FLOOR`, so that a difference the judge learns to
    explain is still seen), and prefers, among candidates firing as much, the one least likely to
    end the sequence. Against a target that matches the model nothing ends and nothing changes."""

    FLOOR: Final = 0.05
    MIN_SEEN: Final = 20  # occurrences before a share is trusted

    def __init__(self) -> None:
        self.sent: dict[str, int] = {}
        self.ended: dict[str, int] = {}

    def copy(self) -> "Hazards":
        h = Hazards()
        h.sent, h.ended = dict(self.sent), dict(self.ended)
        return h

    @staticmethod
    def _keys(a: Action, context: Optional[str]) -> tuple[str, ...]:
        k = signature(a)
        return (k,) if context is None else (k, f"{k}@{context}")

    def observe(self, actions: list[Action], ended_action: int,
                contexts: Optional[Sequence[str]] = None) -> None:
        """One judged sequence: its actions, the one at which judging ended (-1: none), and the
        model state each was drawn in (`contexts`, as far as known)."""
        ctx = list(contexts or ())
        last = ended_action if 0 <= ended_action < len(actions) else len(actions) - 1
        for i, a in enumerate(actions[:last + 1]):
            for k in self._keys(a, ctx[i] if i < len(ctx) else None):
                self.sent[k] = self.sent.get(k, 0) + 1
        if 0 <= ended_action < len(actions):
            for k in self._keys(actions[ended_action], ctx[ended_action] if ended_action < len(ctx) else None):
                self.ended[k] = self.ended.get(k, 0) + 1

    def keep(self, a: Action, context: Optional[str] = None) -> float:
        """The chance that a drawn `a` is kept: the share of its occurrences (in `context` where
        that was seen often enough, else in any state) that did not end a sequence, once it has
        been seen enough to tell."""
        for k in reversed(self._keys(a, context)):
            n = self.sent.get(k, 0)
            if n >= self.MIN_SEEN:
                return max(self.FLOOR, 1.0 - self.ended.get(k, 0) / n)
        return 1.0


def follow_up(rng: random.Random, commits: bool) -> Action:
    """The second action of a two-action candidate: any action, or half the time a JoinGroup
    naming the id handed out last (the second half of a KIP-394 join, with any instance id,
    protocols, timeouts and version: a pending member rejoining, a static member taking a pending
    id, a member changing its metadata)."""
    if rng.random() < 0.5:
        return random_action(rng, commits)
    join = FUZZ.draw(rng, allowed=[Join])
    assert isinstance(join, Join)
    return dataclasses.replace(join, who=3)


# ------------------------------------------------------------------------------ model simulation


class Simulation:
    """The model as the target of an action sequence (virtual time)."""

    def __init__(self, group_id: str, config: CoordinatorConfig, timing: Timing,
                 versions: Versions, table: Table = CLASSIC_TABLE) -> None:
        self.model = ModelCoordinator(config, table=table)
        self.timing, self.versions = timing, versions
        self.k = Knowledge(group_id)
        self.rows: set[str] = set()
        self.model.listeners.append(lambda t: self.rows.update(coverage_keys(t)))

    def do(self, action: Action, rng: random.Random) -> None:
        if isinstance(action, Wait):
            self.model.advance(self.timing.waits_ms[action.ms])
            return
        if isinstance(action, Hold):
            step = max(1, self.timing.session_ms[0] // 3)
            for _ in range(self.timing.hold_ms(action) // step):
                for decoded, version in hold_heartbeats(self.k, self.versions, rng):
                    self._handle(decoded)
                self.model.advance(step)
            return
        for decoded, version in resolve(action, self.k, self.timing, self.versions, rng):
            # (no wire round trip here: `resolve` already sets the version-dependent JoinGroup
            # flags, and the simulation only steers the choice of actions)
            self._handle(decoded)

    def _handle(self, decoded: m.Request) -> None:
        def learn(response: m.Response, req: m.Request = decoded) -> None:
            self.k.learn(req, response)

        self.k.sent(decoded)
        self.model.handle(decoded, learn)
        self.model.advance(2)  # real requests take time: zero-delay timers fire between them

    def state(self) -> str:
        """The model's group state (`Missing` when there is none): an action's context."""
        return self.model.group(self.k.group_id).state.value

    def snapshot(self) -> tuple[object, ...]:
        k = self.k
        return (self.model.snapshot(), set(self.rows), list(k.ids), dict(k.instance_of),
                k.generation, k.last_members, k.protocol, k.leader, dict(k.joining))

    def restore(self, snap: tuple[object, ...]) -> None:
        model, rows, ids, inst, gen, last, proto, leader, joining = snap
        self.k.joining = dict(joining)  # type: ignore[call-overload]
        self.model.restore(model)  # type: ignore[arg-type]
        self.rows = set(rows)  # type: ignore[call-overload]
        self.k.ids, self.k.instance_of = list(ids), dict(inst)  # type: ignore[call-overload]
        self.k.generation, self.k.last_members = gen, last  # type: ignore[assignment]
        self.k.protocol, self.k.leader = proto, leader  # type: ignore[assignment]


class Generator:
    """Sequences drawn from the model, steered towards rows the target has not been seen to fire."""

    def __init__(self, seed: int, config: CoordinatorConfig, timing: Timing, versions: Versions,
                 *, commits: bool, candidates: int = 6, min_len: int = 4, max_len: int = 18,
                 table: Table = CLASSIC_TABLE) -> None:
        self.seed, self.config, self.timing, self.versions = seed, config, timing, versions
        self.table = table  # the table the target is judged by: sequences are drawn from it
        self.commits, self.candidates = commits, candidates
        self.min_len, self.max_len = min_len, max_len
        self.settle_fraction = 0.15
        self.guided = True  # False: each action is the first candidate drawn (measuring guidance)
        # sequence index -> the model's group state each action was drawn in (for `Hazards`;
        # the caller pops it when the sequence is over)
        self.contexts: dict[int, list[str]] = {}

    def sequence(self, index: int, covered: frozenset[str],
                 hazards: Optional[Hazards] = None) -> list[Action]:
        return list(self.stream(index, covered, hazards))

    def stream(self, index: int, covered: frozenset[str],
               hazards: Optional[Hazards] = None) -> Iterator[Action]:
        """Sequence `index`, action by action (computed only as far as it is consumed: a run
        that diverges early does not pay for the rest). `covered` (rows the target was seen to
        fire) and `hazards` (actions where its sequences ended) are what earlier sequences
        showed; the sequence is a function of the seed, `index` and these."""
        rng = random.Random(self.seed * 1_000_003 + index)
        sim = Simulation("g", self.config, self.timing, self.versions, self.table)
        contexts = self.contexts.setdefault(index, [])

        def draw(make: Callable[[], Action]) -> Action:
            a = make()
            if hazards is not None:
                while (keep := hazards.keep(a, sim.state())) < 1.0 and rng.random() > keep:
                    a = make()
            return a

        n = 0
        start: list[Action] = []
        # a scripted start most of the time, so deep states are reached in few actions
        started = rng.random() < 0.7
        if started:
            for _ in range(rng.randint(1, 3)):
                start += [draw(lambda: Join(inst=rng.choice((0, 0, 2, 3)))), Join(who=3)]
            start += [Everyone(what=0), Everyone(what=1)]
            for a in start:
                contexts.append(sim.state())
                sim.do(a, action_rng(str(self.seed), n))
                n += 1
                yield a
        length = rng.randint(self.min_len, self.max_len)
        while n < length + (len(start) if started else 0):
            best: list[Action] = []
            best_key: tuple[float, float, int] = (-1.0, 0.0, 0)
            for c in range(self.candidates if self.guided else 1):
                # a candidate is one action or, with guidance, sometimes two: many rows need a
                # set-up step that fires nothing new by itself (a member made pending by a
                # JoinGroup, then its id rejoining, leaving, committing; a rebalance begun, then a
                # member's request in it), and one-step scoring never picks that set-up
                move = [draw(lambda: random_action(rng, self.commits))]
                if self.guided and c % 2 == 1:
                    move.append(draw(lambda: follow_up(rng, self.commits)))
                snap = sim.snapshot()
                before = set(sim.rows)
                survive = 1.0  # the chance, as far as the hazards tell, that judging goes on past it
                for j, a in enumerate(move):
                    if hazards is not None:
                        survive *= hazards.keep(a, sim.state())
                    sim.do(a, action_rng(str(self.seed), n + j))
                new = sim.rows - before
                # rows the target has not been seen to fire count most, then rows fired in a
                # context not seen yet (`coverage_keys`); any new key a little (counting every
                # new key would favour the most chaotic action each time)
                fresh = new - covered
                rows = sum(1 for x in fresh if CONTEXT_SEP not in x)
                score = 3 * rows + (len(fresh) - rows) + (1 if new else 0)
                sim.restore(snap)
                # rows fired where judging ends count for nothing (nor does what follows): the
                # expected new rows, then the safer move, then the shorter
                key = (score * survive, survive, -len(move))
                if key > best_key:
                    best, best_key = move, key
            for a in best:
                contexts.append(sim.state())
                sim.do(a, action_rng(str(self.seed), n))
                n += 1
                yield a
        if rng.random() < self.settle_fraction:
            yield Wait(ms=4)  # a long wait: every timer due, its answers expected (DelayedSync...)


# ------------------------------------------------------------------------------ against a target


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in a run, for the scenario transcript."""

    kind: str  # "send", "recv", "wait"
    number: int = 0
    at_ms: int = 0
    request: Optional[m.Request] = None
    version: int = 0
    response: Union[m.Response, str, None] = None
    ms: int = 0
    action: int = -1


@dataclass(slots=True)
class SequenceResult:
    index: int
    group_id: str
    actions: list[Action]
    finding: Optional[Finding] = None
    finding_action: int = -1
    inconclusive: Optional[str] = None
    requests: int = 0
    judged: int = 0  # requests whose answer (or its absence) the judge ruled on
    covered: frozenset[str] = frozenset()
    events: list[Event] = field(default_factory=list)
    seconds: float = 0.0
    error: Optional[str] = None  # the target could not be driven (connection refused, ...)
    barriers: tuple[int, int] = (0, 0)  # read barriers tried, and held (the order became known)
    accepted: list[Accepted] = field(default_factory=list)  # accepted divergences (--accept)
    ended_action: int = -1  # the action at which judging ended early (finding, unexplained, inconclusive)


class Latency:
    """Recent response latency of the target (EWMA), shared by a run's groups: the park window (how
    long a request may take before the next one of its group is sent) grows with it, so that a
    loaded target still reads the requests of a group in the order they were sent."""

    def __init__(self, floor_s: float = 0.25, cap_s: float = 1.0) -> None:
        self.ewma_s = 0.0
        self.floor_s, self.cap_s = floor_s, cap_s

    def observe(self, seconds: float) -> None:
        self.ewma_s = 0.9 * self.ewma_s + 0.1 * seconds

    def park_window_s(self) -> float:
        return min(self.cap_s, max(self.floor_s, 4 * self.ewma_s))


class Budget:
    """Requests a whole run may still send (`--max-requests`), shared by its groups."""

    def __init__(self, requests: int = 1 << 62) -> None:
        self.left = requests


class Stalls:
    """When this process's own event loop stalled (judging many groups at once): answers that
    came in time sit unread in the sockets meanwhile, so a lateness seen across a stall is the
    observer's, not the target's. Shared by a run's groups; `cli` notes every stall it measures."""

    MIN_S: Final = 0.1  # shorter wake-up delays are the scheduler's ordinary jitter

    def __init__(self) -> None:
        self._seen: collections.deque[tuple[float, float]] = collections.deque(maxlen=256)

    def note(self, start: float, end: float) -> None:
        """The loop slept from `start` and woke at `end` (monotonic seconds), later than asked."""
        if end - start >= self.MIN_S:
            self._seen.append((start, end))

    def longest(self, since: float, until: float) -> float:
        """The longest stall overlapping [since, until], in seconds (0: none)."""
        return max((min(e, until) - max(b, since) for b, e in self._seen if b < until and e > since), default=0.0)


@dataclass(frozen=True, slots=True)
class RunSettings:
    config: CoordinatorConfig
    timing: Timing
    tolerance: Tolerance = Tolerance()
    latency: Latency = field(default_factory=Latency)
    budget: Budget = field(default_factory=Budget)
    request_timeout_s: float = 10.0
    cleanup: bool = True
    seed: str = "0"
    # read barriers: a request the model lets park is followed by DescribeGroups probes (the
    # first after `barrier_first_s`, then at doubling intervals) until the judge knows it was read
    barrier: bool = True
    barrier_first_s: float = 0.01
    barrier_probes: int = 4
    read_grace_s: float = 0.2  # readers' turn before answers are judged missing (`silence`)
    accept: Optional[AcceptList] = None  # accepted divergence classes (--accept)
    table: Table = CLASSIC_TABLE  # the transition table the target is judged by (its profile's)
    urgent: Urgent = URGENT
    stalls: Stalls = field(default_factory=Stalls)


class _Sequence:
    def __init__(self, broker: Broker, group_id: str, s: RunSettings, result: SequenceResult,
                 source: Iterable[Action]) -> None:
        self.broker, self.group_id, self.s, self.r = broker, group_id, s, result
        self.source = source
        self.judge = GroupJudge(group_id, s.config, s.tolerance, table=s.table, urgent=s.urgent)
        if s.accept is not None:
            self.judge.accept = _acceptor(s.accept)
        self.k = Knowledge(group_id)
        self.t0 = time.monotonic()
        self.numbers = itertools.count(1)
        self.pools: dict[str, list[AsyncConnection]] = {}
        self.all: list[AsyncConnection] = []
        self.open: dict[int, asyncio.Future[None]] = {}
        self.sent_ms: dict[int, int] = {}
        self.judging = True
        self.action_index = -1
        self.barriers_tried = self.barriers_held = 0

    def ms(self, t: Optional[float] = None) -> int:
        return int(((time.monotonic() if t is None else t) - self.t0) * 1000)

    async def _conn(self, request: m.Request) -> AsyncConnection:
        key = None
        if isinstance(request, (m.JoinGroupRequest, m.SyncGroupRequest, m.HeartbeatRequest,
                                m.OffsetCommitRequest)):
            key = request.member_id
        elif isinstance(request, m.LeaveGroupRequest) and len(request.members) == 1:
            key = request.members[0].member_id
        if key != "":
            for c in self.pools.get(key or "<admin>", []):
                if not c.busy and c.closed is None:
                    return c
        c = await self.broker.connect(self.group_id)
        self.all.append(c)
        if key != "":
            self.pools.setdefault(key or "<admin>", []).append(c)
        return c

    def _finish(self, finding: Optional[Finding]) -> None:
        if self.judge.ended is not None:
            self.judging = False  # an accepted divergence no model state explains: judging ends
        if finding is not None and self.r.finding is None and self._observer_stalled(finding):
            return
        if finding is not None and self.r.finding is None:
            self.r.finding = finding
            self.r.finding_action = self.action_index
            self.judging = False
        if not self.judging and self.r.ended_action < 0:
            self.r.ended_action = self.action_index

    def _observer_stalled(self, finding: Finding) -> bool:
        """An answer judged too late, read after this process's own loop stalled for at least the
        time by which it missed the response bound: it may have come in time and sat unread, so the
        group is inconclusive, never a finding. (A target later than any stall still is one.)"""
        if not finding.shape.endswith("answered too late") or not isinstance(finding.actual, dict):
            return False
        after_ms = finding.actual.get("answered_after_ms")
        if not isinstance(after_ms, int):
            return False
        sent = self.t0 + self.sent_ms.get(finding.number, 0) / 1000.0
        stalled = self.s.stalls.longest(sent, time.monotonic())
        if stalled <= 0 or stalled * 1000 < after_ms - self.s.tolerance.response_bound_ms:
            return False
        self.r.inconclusive = (f"request {finding.number} ({finding.api}) judged late while this process's own "
                               f"event loop stalled {stalled * 1000:.0f} ms: the lateness may be the observer's")
        self.judging = False
        if self.r.ended_action < 0:
            self.r.ended_action = self.action_index
        return True

    async def request(self, request: m.Request, version: int, judged: bool = True,
                      probe: bool = False) -> None:
        """Send `request` and return once the target has answered it, or, if the model lets it
        park, once a read barrier shows the target has processed it (or the park window ends:
        the judge then allows the next request of the group to be read first)."""
        enc = encodable(request, version, self.broker.versions)
        if enc is None:
            return
        if self.s.budget.left <= 0:
            self.judging = False  # the run's request budget is spent: stop here, unjudged
            return
        self.s.budget.left -= 1
        api, body, decoded, version = enc
        conn = await self._conn(decoded)
        n = next(self.numbers)
        self.r.requests += 1
        at = self.ms()
        if judged and self.judging:
            self.judge.send(n, api, version, decoded, at, probe=probe)
        self.r.events.append(Event("send", n, at, decoded, version, action=self.action_index))
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.open[n] = fut
        self.sent_ms[n] = at
        self.k.sent(decoded)
        on_answer = self._on_answer(n, decoded, conn, fut, judged)
        try:
            conn.send(api, version, body, on_answer)
        except WireError as exc:
            on_answer(Received(time.monotonic(), None, str(exc)))
            return
        await self._wait_for_answer(n, fut, time.monotonic(), judged, probe)

    def _on_answer(self, n: int, decoded: m.Request, conn: AsyncConnection, fut: "asyncio.Future[None]",
                   judged: bool) -> Callable[[Received], None]:
        """What the connection calls with request `n`'s answer (or its connection error)."""
        def on_answer(rec: Received) -> None:
            self.open.pop(n, None)
            if not fut.done():
                fut.set_result(None)
            actual: Union[m.Response, str] = rec.response if rec.response is not None else (
                f"connection-error: {rec.error}")
            self.r.events.append(Event("recv", n, self.ms(rec.at), response=actual,
                                       action=self.action_index))
            if rec.response is not None:
                self.k.learn(decoded, rec.response)
                if (isinstance(decoded, m.JoinGroupRequest) and decoded.member_id == ""
                        and isinstance(rec.response, m.JoinGroupResponse) and rec.response.member_id):
                    self.pools.setdefault(rec.response.member_id, []).insert(0, conn)
            else:
                self.k.answered(decoded)
            if judged and self.judging:
                try:
                    self._finish(self.judge.receive(n, self.ms(rec.at), actual))
                except Inconclusive as e:
                    # (raised here, in the connection's reader task, it would end that task:
                    # the group's later answers would go unread and be judged missing)
                    self.r.inconclusive = str(e)
                    self.judging = False
                    if self.r.ended_action < 0:
                        self.r.ended_action = self.action_index
        return on_answer

    async def _wait_for_answer(self, n: int, fut: "asyncio.Future[None]", sent_at: float,
                               judged: bool, probe: bool) -> None:
        """Wait for request `n`'s answer: up to the park window (or a first barrier pause); for
        a request the model lets park, through a read barrier and the rest of the window; then
        up to the response bound, after which the answers still missing are judged."""
        window = self.s.latency.park_window_s()
        barrier = judged and not probe and self.s.barrier and ApiKey.DescribeGroups in self.broker.versions
        if await self._answered_within(fut, self.s.barrier_first_s if barrier else window, sent_at):
            return
        if not judged or not self.judging or probe:
            return
        if self.judge.may_be_parked(n, self.ms()):
            if barrier and await self.barrier(n, fut, sent_at + window):
                return
            rest = sent_at + window - time.monotonic()
            if rest > 0 and not fut.done() and await self._answered_within(fut, rest, sent_at):
                return
            # where the model may already have answered it (a timer that may or may not have
            # fired yet), wait, as a client waits for its answer, until the model must have (the
            # answer is then due, and waited for below) or it comes: a target that answers late
            # (Tansu holds joins) is then driven on with what its answer told, not ahead of it
            limit = time.monotonic() + (self.s.tolerance.late_ms + self.s.tolerance.process_ms) / 1000.0
            while (self.judging and not fut.done() and time.monotonic() < limit
                   and self.judge.may_be_parked(n, self.ms()) and self.judge.may_be_answered(n, self.ms())):
                if await self._answered_within(fut, 0.05, sent_at):
                    return
            if not self.judging or fut.done() or self.judge.may_be_parked(n, self.ms()):
                return
        tol = self.s.tolerance
        bound = (tol.response_bound_ms + tol.late_ms + tol.process_ms) / 1000.0
        if not await self._answered_within(fut, bound, sent_at):
            await self.silence()

    async def _answered_within(self, fut: "asyncio.Future[None]", seconds: float, sent_at: float) -> bool:
        """Wait up to `seconds` for the answer; True (with its latency observed) if it came."""
        try:
            await asyncio.wait_for(asyncio.shield(fut), seconds)
        except asyncio.TimeoutError:
            return False
        self.s.latency.observe(time.monotonic() - sent_at)
        return True

    async def silence(self) -> None:
        """Judge the answers still missing now, after giving the connections' readers a turn:
        when this process's event loop has stalled (judging many groups), an answer that came
        in time may still sit unread in a socket, and must not be judged missing."""
        at = self.ms()
        bound = self.s.tolerance.response_bound_ms
        if any(at - self.sent_ms.get(n, at) > bound for n in self.open):
            await asyncio.sleep(self.s.read_grace_s)  # (only an answer that old can be missing)
        if self.judging:
            self._finish(self.judge.silence(at))

    async def barrier(self, n: int, fut: "asyncio.Future[None]", until: float) -> bool:
        """Read barrier for request `n`, which the model lets park: DescribeGroups (read-only,
        judged, answered at once) until its answer leaves no hypothesis in which `n` is still
        unprocessed (the target has read it: it shows the member, its metadata or the new state)
        or `n` is answered; False when neither happens before `until` (monotonic) or after
        `barrier_probes` probes (the effect may be invisible to DescribeGroups)."""
        self.barriers_tried += 1
        for i in range(self.s.barrier_probes):
            if fut.done() or not self.judging:
                return fut.done()
            await self.request(m.DescribeGroupsRequest((self.group_id,)), 99, probe=True)
            if not self.judging:
                return False
            if fut.done() or self.judge.processed(n):
                self.barriers_held += 1
                return True
            pause = min(until - time.monotonic(), self.s.barrier_first_s * (2 ** i))
            if pause <= 0:
                return False
            try:
                await asyncio.wait_for(asyncio.shield(fut), pause)
                return True
            except asyncio.TimeoutError:
                pass
        return False

    async def wait(self, ms: int) -> None:
        self.r.events.append(Event("wait", ms=ms, at_ms=self.ms(), action=self.action_index))
        await asyncio.sleep(ms / 1000.0)
        if self.judging:
            await self.silence()

    async def drain(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while self.open and time.monotonic() < end and self.judging:
            if self.judge.quiescent(self.ms()):
                break  # nothing can answer what is still open: the model says it stays parked
            await asyncio.sleep(0.1)
        if self.judging:
            await self.silence()

    async def run(self) -> None:
        versions = self.broker.versions
        for i, action in enumerate(self.source):
            self.r.actions.append(action)
            self.action_index = i
            if not self.judging:
                break
            if isinstance(action, Wait):
                await self.wait(self.s.timing.waits_ms[action.ms])
                continue
            if isinstance(action, Hold):
                step = max(1, self.s.timing.session_ms[0] // 3)
                end = time.monotonic() + self.s.timing.hold_ms(action) / 1000.0
                while self.judging and time.monotonic() < end:
                    rng = action_rng(self.s.seed, i)
                    for request, version in hold_heartbeats(self.k, versions, rng):
                        if self.judging:
                            await self.request(request, version)
                    await self.wait(step)
                continue
            rng = action_rng(self.s.seed, i)
            for request, version in resolve(action, self.k, self.s.timing, versions, rng):
                if not self.judging:
                    break
                await self.request(request, version)
        self.action_index = len(self.r.actions)
        if self.judging and self.k.ids:
            # every member leaves (judged): Kafka answers whatever they still have parked
            await self.request(m.LeaveGroupRequest(self.group_id, tuple(
                m.MemberIdentity(x, self.k.instance_of.get(x)) for x in self.k.ids)), 99)
        tol = self.s.tolerance
        await self.drain((tol.response_bound_ms + tol.late_ms + tol.process_ms) / 1000.0)

    async def cleanup(self) -> None:
        self.judging = False
        if self.s.cleanup:
            try:
                await self.request(m.DeleteGroupsRequest((self.group_id,)), 99, judged=False)
            except (WireError, OSError):
                pass
        for c in self.all:
            c.close()


async def run_sequence(broker: Broker, group_id: str, index: int, actions: Iterable[Action],
                       s: RunSettings) -> SequenceResult:
    """Play `actions` on group `group_id` of the target and judge every answer."""
    result = SequenceResult(index, group_id, [])  # the actions consumed, filled by run
    seq = _Sequence(broker, group_id, s, result, actions)
    start = time.monotonic()
    try:
        await seq.run()
    except Inconclusive as e:
        result.inconclusive = str(e)
    except (WireError, OSError) as e:
        result.error = f"{type(e).__name__}: {e}"
    finally:
        # (an inconclusive group too: the judge gave up on an observation without changing its
        # hypotheses, so the rows they all fired were seen on the target before that)
        result.covered = seq.judge.covered_keys()
        result.judged = seq.judge.judged
        try:
            await seq.cleanup()
        except (Inconclusive, WireError, OSError):
            pass
        result.seconds = time.monotonic() - start
        result.barriers = (seq.barriers_tried, seq.barriers_held)
        result.accepted = list(seq.judge.accepted)
    return result


def _acceptor(accept: AcceptList) -> Callable[[Finding], Optional[str]]:
    def entry_key(f: Finding) -> Optional[str]:
        e = accept.match(f)
        return None if e is None else e.key()
    return entry_key


def replace_actions(r: SequenceResult, actions: list[Action]) -> SequenceResult:
    return dataclasses.replace(r, actions=list(actions))


__all__ = ["Generator", "Hazards", "RunSettings", "SequenceResult", "Simulation", "run_sequence"]

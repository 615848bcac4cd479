"""Lockstep, model vs real Apache Kafka, judged by the fuzzer's branching judge.

The engine of `conformance.lockstep` is reused with the sides changed: the model's concrete mode
is the white-box side (requests are built from its view of the group); the other side is a
`wire.KafkaTarget` talking to a real Kafka (`wire.kafka_broker`) over the wire, or anything posing
as one (`groupspec serve --bug NAME` in the timer-mutant test). Member ids are paired through the
same bijection.

Two verdicts, one authority. Every request sent to the broker and every answer read from it (with
the moment it was read off the socket) also goes to a `fuzz.judge.GroupJudge` per group, with the
lockstep's table and the broker's timing allowances (`fuzz.allowances`, profile `kafka-VERSION`):
the set of model states consistent with what the broker did, timers firing in any order the real
clock allows. The single model run is compared with the broker as before (answers, member lists
as sets, the tolerances below), but it is only the steering wheel: where the two differ, the judge
decides.

- The judge allows no answer the broker gave (or one it failed to give): `Divergence`, with the
  judge's finding and the run of that group as a scenario file (`fuzz.shrink.scenario_document`:
  requests as sent, the diverging answer expected as the model allows it) that replays with
  `groupspec scenario run FILE --target kafka-3.9`.
- The judge allows the broker's answers, the single model run does not: the model's clock took
  another timer order than the broker's real clock (a session expiring just before or just after
  a request, within its latency). The run goes on *desynchronised* (`desynced`, the difference in
  `timing_notes`): the single run still builds the requests (a member id it made that the broker
  never paired goes out as it is), but it is no longer compared; every broker answer, and every
  answer it owes, is judged by the judge alone. No difference is dropped unjudged, and no run ends
  for it.
- The judge gives up (its hypothesis bound): the rest of the run cannot be judged, so it stops
  there: a *timing stop* (`timing_stops`, the reason in `timing_notes`), the only one left. (The
  lockstep before the judge stopped at every difference near a model deadline, uncounted.)

Time. The broker's timers run on the real clock. Before every action the model's clock is moved
on to the real time (`KafkaTarget`'s clock is aligned to the model's), so that a request reaches
both sides at the same moment up to its latency; an `advance` goes in pieces that end just after
each model timer deadline. Answers: one the model gave and the broker not yet is waited for up to
`tolerance_ms` of real time; one the broker gave and the model not yet is held that long.

Kafka cannot be configured with the model's short new-member join timeout: the model runs with
Kafka's constant (300000 ms), and the scenario's config says so.
"""

from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Final, Optional

from model.concrete import ModelCoordinator, armed_timers
from model.coordinator_api import CoordinatorConfig
from model.dsl import Table
from model.table import CLASSIC_TABLE
from model.messages import (
    DescribeGroupsResponse, JoinGroupRequest, JoinGroupResponse, OffsetCommitResponse,
    OffsetFetchResponse, Request, Response,
)
from model.vocabulary import NEW_MEMBER_JOIN_TIMEOUT_MS

from conformance.actions import Action, Wait, group_of
from conformance.lockstep import (
    LOCKSTEP, PROLOGUES, Divergence, IdMap, Lockstep, RunConfig,
    _Arrivals, _compare,
)
from fuzz.allowances import Profile, profile_for
from fuzz.engine import Event, SequenceResult
from fuzz.judge import Finding, GroupJudge, Inconclusive, Tolerance
from fuzz.shrink import scenario_document

TOLERANCE_MS: Final = 1500
FOUND_BY: Final = "fuzz.lockstep_kafka"


@dataclass(frozen=True, slots=True)
class KafkaRunConfig(RunConfig):
    """RunConfig with Kafka's constant new-member join timeout (not a broker setting)."""

    def coordinator_config(self) -> CoordinatorConfig:
        return dataclasses.replace(RunConfig.coordinator_config(self),
                                   new_member_join_timeout_ms=NEW_MEMBER_JOIN_TIMEOUT_MS)


class TimingStop(Exception):
    """A judge gave up on a group (more hypotheses than its bound): the run cannot go on judged."""


class _Ids(IdMap):
    """The id bijection; once the run is desynchronised, a model id the broker never paired is
    sent as it is (the broker answers it as an unknown member, and the judge judges that)."""

    lenient = False

    def model_id(self, ref_id: str) -> str:
        if self.lenient and ref_id not in self.to_model:
            return ref_id
        return super().model_id(ref_id)


def _sorted_members(r: Response, ids: IdMap, side: str) -> Response:
    """Member lists in an order independent of Kafka's HashMap (by the model-side id)."""
    def key(member: Any) -> tuple[bool, str, str]:
        """Static members by instance id; dynamic ones by paired id (model side), unpaired last."""
        mid: str = member.member_id
        paired = mid if side == "model" and mid in ids.to_model else ids.to_ref.get(mid, "")
        return (member.group_instance_id is None, member.group_instance_id or "", paired or "~")

    if isinstance(r, JoinGroupResponse):
        return dataclasses.replace(r, members=tuple(sorted(r.members, key=key)))
    if isinstance(r, OffsetCommitResponse):  # KafkaApis answers partitions in a map's order
        return OffsetCommitResponse(tuple(sorted(r.partitions, key=lambda p: (p[0].topic, p[0].partition))))
    if isinstance(r, OffsetFetchResponse):
        return dataclasses.replace(r, partitions=tuple(sorted(
            r.partitions, key=lambda p: (p[0].topic, p[0].partition))))
    if isinstance(r, DescribeGroupsResponse):
        return DescribeGroupsResponse(tuple(
            dataclasses.replace(g, members=tuple(sorted(g.members, key=key)))
            for g in r.groups))
    return r


class KafkaLockstep(Lockstep):
    """The model (white box, `self.reference` in the engine) and a Kafka broker (`self.model`),
    every broker answer judged by a GroupJudge per group."""

    def __init__(self, config: RunConfig, target: Any, *, seed: int = 0, groups: int = 2,
                 tolerance_ms: int = TOLERANCE_MS, table: Optional[Table] = None,
                 profile: Optional[Profile] = None, version: str = "3.9") -> None:
        config = KafkaRunConfig(config.initial_delay, config.max_size)
        super().__init__(config, seed=seed, groups=groups, known={})
        cc = config.coordinator_config()
        self.table = CLASSIC_TABLE if table is None else table
        self.reference = ModelCoordinator(cc, seed=seed, table=self.table)  # type: ignore[assignment]
        self.model = target
        self.kafka = target
        self.version = version
        self.profile = profile_for(f"kafka-{version}") if profile is None else profile
        self.tolerance_ms = tolerance_ms
        self.explore_tie_orders = False
        self.compared = 0
        tol = Tolerance(allowances=self.profile.allowances)
        self.judges = {gid: GroupJudge(gid, cc, tol, table=self.table) for gid in self.groups}
        self.events: dict[str, list[Event]] = {gid: [] for gid in self.groups}
        # request number -> aligned virtual time at which only one side had answered
        self._model_only: dict[int, int] = {}
        self._kafka_only: dict[int, int] = {}
        self._held = _Arrivals()  # answers of one side waiting for the other's
        self._sending: Optional[tuple[int, str, float]] = None  # (number, group, monotonic send)
        self._read: list[tuple[int, Response, float]] = []  # broker answers not judged yet
        self._finding: Optional[tuple[str, Finding]] = None
        self._ids = _Ids()
        self.ids = self._ids
        # the difference after which the single model run no longer steers in step (None: in step)
        self.desynced: Optional[str] = None
        self.judged_desynced = 0  # answers judged while desynchronised

    # -- the engine's hooks, for a black-box second side

    def _model_view_deadlines(self) -> list[int]:
        out: list[int] = []
        model: ModelCoordinator = self.reference  # type: ignore[assignment]
        for gid in self.groups:
            group = model.group(gid)
            if group is not None:
                out.extend(d for d, _, _, _ in armed_timers(group))
        return out

    def apply(self, action: Action) -> None:
        if not isinstance(action, Wait) and getattr(self.kafka, "_started", True):
            # the model's clock catches up with the real one: the request reaches both at once
            lag = self._aligned_now_ms() - self.reference.now_ms()
            if lag > 0:
                self._advance(lag)
        super().apply(action)

    def _callback(self, side: str, number: int) -> Callable[[Response], None]:
        deliver = super()._callback(side, number)
        if side == "ref":
            return deliver

        def from_broker(response: Response) -> None:
            at: Optional[float] = getattr(self.kafka, "arrived_at", None)
            self._read.append((number, response, time.monotonic() if at is None else at))
            deliver(response)
        return from_broker

    def _send(self, request: Request) -> None:
        self._sending = (self._number + 1, group_of(request), time.monotonic())
        setattr(self.kafka, "last_sent", None)
        super()._send(request)

    def _advance(self, ms: int) -> None:
        """Advance both sides by `ms`, in pieces that end just after each model timer deadline.

        The model's (and the scenario format's) clock fires the timers due in an advance at its
        end, and a timer armed while firing counts from the end; on the real clock a timer fires
        at its deadline and what it arms counts from then. Pieces that stop 1 ms after every
        deadline make the two agree (to that millisecond)."""
        left = ms
        while left > 0:
            now = self.reference.now_ms()
            due = [d for d in self._model_view_deadlines() if now <= d < now + left]
            piece = min(left, min(due) - now + 1) if due else left
            left -= piece
            ref_error = self._run(lambda: self.reference.advance(piece))
            kafka_error = self._run(lambda: self.kafka.advance(piece))
            self.transcript.advance(piece)
            for events in self.events.values():
                events.append(Event("wait", ms=piece, at_ms=self._aligned_now_ms(), action=len(self.actions) - 1))
            self._check(f"advance {piece} ms (of {ms})", ref_error, kafka_error, own=None)

    def _aligned_now_ms(self, t: Optional[float] = None) -> int:
        """Real time (now, or monotonic `t`) as the broker side's virtual time (its clock is
        aligned to the model's)."""
        t0: float = getattr(self.kafka, "_t0")
        scale: float = getattr(self.kafka, "time_scale", 1.0) or 1.0
        return max(0, int(((time.monotonic() if t is None else t) - t0) * 1000 / scale))

    # -- the judge

    def _judge_feed(self) -> None:
        """Hand the judges what the broker got and said since the last look: the request just
        sent (as sent, at the API version it went at), then the answers in the order read."""
        if self._sending is not None:
            number, gid, at = self._sending
            self._sending = None
            sent: Optional[tuple[Request, int]] = getattr(self.kafka, "last_sent", None)
            if sent is not None and gid in self.judges:
                request, version = sent
                at_ms = self._aligned_now_ms(at)
                self.events[gid].append(Event("send", number, at_ms, request, version, action=len(self.actions) - 1))
                self._judged(gid, lambda j: j.send(number, request.api_key, version, request, at_ms))
        read, self._read = self._read, []
        for number, response, at in read:
            gid = self._requests[number][0]
            if gid not in self.judges or number not in self.judges[gid].sent:
                continue
            if self.desynced is not None:
                self.judged_desynced += 1
            at_ms = self._aligned_now_ms(at)
            self.events[gid].append(Event("recv", number, at_ms, response=response, action=len(self.actions) - 1))
            self._judged(gid, lambda j: j.receive(number, at_ms, response))

    def _judge_silence(self) -> None:
        """Answers the broker owes and has not given: each judge rules on them now."""
        now = self._aligned_now_ms()
        for gid in self.groups:
            self._judged(gid, lambda j: j.silence(now))

    def _judged(self, gid: str, call: Callable[[GroupJudge], Optional[Finding]]) -> None:
        judge = self.judges[gid]
        if judge.finding is not None:
            return
        try:
            finding = call(judge)
        except Inconclusive as e:
            raise TimingStop(f"group {gid}: the judge gave up: {e}") from None
        if finding is not None and self._finding is None:
            self._finding = (gid, finding)

    def _check(self, what: str, ref_error: Optional[BaseException], model_error: Optional[BaseException],
               own: Optional[int], touched: Optional[str] = None) -> None:
        arrivals, self._arrivals = self._arrivals, _Arrivals()
        problems: list[tuple[str, str]] = []
        if ref_error is not None:
            problems.append(("model-raised", f"{type(ref_error).__name__}: {ref_error}"))
        if model_error is not None:
            problems.append(("kafka-raised", f"{type(model_error).__name__}: {model_error}"))
        if problems:
            self._fail(what, problems)
        for number, rs in arrivals.ref.items():
            self._held.ref.setdefault(number, []).extend(rs)
        for number, ks in arrivals.model.items():
            self._held.model.setdefault(number, []).extend(ks)
        now = self.reference.now_ms()
        self._wait_for_kafka(now)
        self._judge_feed()
        for n in list(self._held.model):
            if n not in self._held.ref:
                self._kafka_only.setdefault(n, self._aligned_now_ms())
        both = sorted(set(self._held.ref) & set(self._held.model))
        self._pair_join_ids(both)
        if self.desynced is None:
            for number in both:
                problems.extend(self._compare_answers(number, own))
            problems.extend(self._missing_answers(now))
        else:
            for number in both:  # no longer compared: the judge has had the broker's answer
                self._held.ref.pop(number)
                self._held.model.pop(number)
                self._model_only.pop(number, None)
                self._kafka_only.pop(number, None)
                self._parked.discard(number)
        for gid in self.groups:
            if touched is None or gid == touched:
                self.transcript.group(gid, self.reference.group_view(gid))
        if problems or self.desynced is not None:
            self._judge_silence()
        if self._finding is not None:
            self._judge_fail(what, problems)
        if problems:
            # the judge allows what the broker did: the model's clock took another timer order
            self.desynchronise(f"after {what}: " + "; ".join(m for _, m in problems))

    def desynchronise(self, why: str) -> None:
        """From now on the single model run steers but is no longer compared: the judge alone
        judges (`why`: the difference the judge allowed)."""
        self.desynced = why
        self._ids.lenient = True

    def _judge_fail(self, what: str, problems: list[tuple[str, str]]) -> None:
        """The judge allows nothing the broker did: a divergence, printed as the group's run."""
        assert self._finding is not None
        gid, f = self._finding
        result = SequenceResult(0, gid, list(self.actions), finding=f, events=list(self.events[gid]))
        cc = self.config.coordinator_config()
        target = f"kafka-{self.version}"
        doc = scenario_document(result, f, cc, f"lockstep-kafka-{f.api}", target)
        doc["conventions"]["generated_by"] = f"{FOUND_BY} against {target}"
        doc["scenarios"][0]["source"] = f"{FOUND_BY}, model vs Kafka {self.version}, seed {self.seed}"
        doc["finding"] = {
            "found_by": f"{FOUND_BY} (model vs Kafka {self.version}, judged with profile {self.profile.name})",
            "kind": "judge", "class": f.class_key(), "seed": self.seed,
            "actions": [LOCKSTEP.text(a) for a in self.actions],
            "single_model_run": "; ".join(m for _, m in problems) or "agreed",
            "desynchronised": self.desynced or "no",
        }
        message = (f"after {what} (action {len(self.actions)}), group {gid}: {f.api} v{f.api_version} "
                   f"r{f.number}: {f.shape}; the model allows {list(f.expected)}, Kafka answered {f.actual}")
        raise Divergence("judge", message, doc, tuple(self.actions))

    def _wait_for_kafka(self, now: int) -> None:
        """The model answered, Kafka not yet: wait for it (real time, up to the tolerance)."""
        waiting = [n for n in self._held.ref if n not in self._held.model]
        for n in waiting:
            self._model_only.setdefault(n, now)
        if not waiting:
            return
        until = max(self._model_only[n] for n in waiting) + self.tolerance_ms
        budget = max(0.0, (until - self._aligned_now_ms()) / 1000.0)
        wait: Callable[[float, Callable[[], bool]], None] = getattr(self.kafka, "wait_real")
        wait(budget, lambda: all(n in self._arrivals.model for n in waiting))
        for number, ks in self._arrivals.model.items():
            self._held.model.setdefault(number, []).extend(ks)
        self._arrivals = _Arrivals()

    def _pair_join_ids(self, both: list[int]) -> None:
        """Pair the member ids of JoinGroup answers first: the member lists of other answers in the
        same batch are then sorted by paired ids (Kafka's member order is a HashMap's)."""
        for number in both:
            r0, k0 = self._held.ref[number][0], self._held.model[number][0]
            if isinstance(r0, JoinGroupResponse) and isinstance(k0, JoinGroupResponse):
                if r0.member_id and k0.member_id and r0.member_id not in self.ids.to_model \
                        and k0.member_id not in self.ids.to_ref:
                    self.ids.pair(r0.member_id, k0.member_id, "pre-pairing")

    def _compare_answers(self, number: int, own: Optional[int]) -> list[tuple[str, str]]:
        """Compare the answers both sides gave to request `number` (then no longer held)."""
        rs, ks = self._held.ref.pop(number), self._held.model.pop(number)
        self._model_only.pop(number, None)
        self._kafka_only.pop(number, None)
        gid, op, request = self._requests[number]
        label = f"response to r{number} ({op})"
        self.compared += 1
        if len(rs) > 1 or len(ks) > 1:
            return [("answered-twice", f"{label}: model answered {len(rs)}x, Kafka {len(ks)}x")]
        diffs: list[str] = []
        model_answer = rs[0]
        if (isinstance(request, JoinGroupRequest) and isinstance(model_answer, JoinGroupResponse)
                and not request.require_known_member_id and request.group_instance_id is None):
            # Sent as JoinGroup v3 (wire.convert.join_group_version), whose member list has no
            # group instance ids (v5+): those of the model's answer are not on the wire.
            model_answer = dataclasses.replace(model_answer, members=tuple(
                dataclasses.replace(mm, group_instance_id=None) for mm in model_answer.members))
        _compare(_sorted_members(model_answer, self.ids, "model"), _sorted_members(ks[0], self.ids, "kafka"),
                 label, self.ids, diffs)
        if number != own and number in self._parked:
            self.transcript.later(number, rs[0], gid)
        self._parked.discard(number)
        return [("response-differs", d.replace("reference", "model").replace(", model ", ", Kafka "))
                for d in diffs]

    def _missing_answers(self, now: int) -> list[tuple[str, str]]:
        """Answers one side gave and the other has not, beyond the tolerance."""
        problems: list[tuple[str, str]] = []
        for n, since in list(self._model_only.items()):
            if n in self._held.ref and self._aligned_now_ms() > since + self.tolerance_ms:
                problems.append(("response-missing", f"response to r{n} ({self._requests[n][1]}): "
                                 f"the model answered at {since} ms, Kafka not within {self.tolerance_ms} ms"))
        for n, since in list(self._kafka_only.items()):
            if n in self._held.model and now > since + self.tolerance_ms:
                problems.append(("response-missing", f"response to r{n} ({self._requests[n][1]}): "
                                 f"Kafka answered at ~{since} ms, the model not by {now} ms"))
        return problems

    def _fail(self, what: str, problems: list[tuple[str, str]]) -> None:
        """A side raised (a transport error, a model exception): a divergence, printed as the
        lockstep transcript (the model's answers as expectations)."""
        try:
            super()._fail(what, problems)
        except Divergence as d:
            doc = d.scenario
            doc["finding"]["found_by"] = f"{FOUND_BY} (model vs Kafka {self.version})"
            s = doc["scenarios"][0]
            s["name"] = f"lockstep-kafka-{d.kind}"
            s["source"] = f"{FOUND_BY}, model vs Kafka {self.version}, seed {self.seed}"
            for step in s["steps"]:
                if step["op"] in ("check_response", "check_pending"):
                    step["tolerance_ms"] = self.tolerance_ms
                    step["tolerance_why"] = ("Kafka's timers run on the real clock, armed late by the "
                                             "real time requests take between advances")
            s["notes"] = (f"Expectations are the model's answers; the last action is where Kafka "
                          f"differed: {d.kind}: {d.message}")
            raise Divergence(d.kind, d.message, doc, d.actions) from None


@dataclass
class KafkaLockstepStats:
    runs: int = 0
    steps: int = 0
    compared: int = 0  # answers compared with the single model run
    judged: int = 0  # answers (and missing answers) the judges ruled on
    timing_stops: int = 0  # runs stopped before their end: a judge gave up (its hypothesis bound)
    desynced: int = 0  # runs that went on judged alone (the judge allowed what the single run did not)
    judged_desynced: int = 0  # answers judged in those runs after the difference
    divergences: list[Divergence] = dataclasses.field(default_factory=list)
    brokers_started: int = 0
    timing_notes: list[str] = dataclasses.field(default_factory=list)
    profile: str = ""

    def timing_stop_share(self) -> float:
        return self.timing_stops / self.runs if self.runs else 0.0


Brokers = Callable[[CoordinatorConfig], tuple[str, int]]


def run_kafka_lockstep(seed: int, *, runs: Optional[int] = None, budget_s: Optional[float] = None,
                       steps_per_run: int = 40, groups: int = 2, version: str = "3.9",
                       stop_at_first: bool = False, progress: Optional[Callable[[str], None]] = None,
                       tolerance_ms: int = TOLERANCE_MS, table: Optional[Table] = None,
                       prologues: Optional[tuple[int, ...]] = None,
                       brokers: Optional[Brokers] = None) -> KafkaLockstepStats:
    """Random runs (seeded: the same seed draws the same actions) against real Kafka `version`.

    Each run: a config, a prologue, then `steps_per_run` random actions, on fresh group ids of a
    broker shared by the runs of the same broker config. Stops after `runs` runs or `budget_s`
    seconds (at least one must be given). `table`: the model's table (default CLASSIC_TABLE; a
    profile or a mutant), which the judges use too. `prologues`: the PROLOGUES indices to draw
    from (default all). `brokers`: where the broker for a config listens (default: Kafka `version`
    started by wire.kafka_broker); anything posing as Kafka `version` is judged with its profile."""
    from wire.kafka_broker import KafkaBrokerPool
    from wire.target import KafkaTarget

    if runs is None and budget_s is None:
        raise ValueError("give runs or budget_s")
    rng = random.Random(seed)
    profile = profile_for(f"kafka-{version}")
    stats = KafkaLockstepStats(profile=profile.name)
    pool = KafkaBrokerPool(version, max_brokers=3) if brokers is None else None

    def address(cc: CoordinatorConfig) -> tuple[str, int]:
        if brokers is not None:
            return brokers(cc)
        assert pool is not None
        broker = pool.broker_for(cc)
        return broker.host, broker.port

    deadline = time.monotonic() + budget_s if budget_s is not None else None
    try:
        while (runs is None or stats.runs < runs) and (deadline is None or time.monotonic() < deadline):
            # Initial delay 1000 ms only: with 0, Kafka completes the first join phase at once
            # (a 0 ms purgatory timer), while every request of the client side takes real time.
            config = KafkaRunConfig(1, rng.randrange(3))
            choices = prologues if prologues is not None else tuple(range(len(PROLOGUES)))
            prologue = PROLOGUES[choices[rng.randrange(len(choices))]]
            kinds = [rng.choices(LOCKSTEP.types, LOCKSTEP.weights)[0] for _ in range(steps_per_run)]
            concrete = [LOCKSTEP.build(cls, lambda k, n: rng.randrange(groups if k == "group" else n))
                        for cls in kinds]
            cc = config.coordinator_config()
            host, port = address(cc)
            target = KafkaTarget(host, port, cc, 1.0, immediate_wait_s=0.1,
                                 max_real_wait_s=3600.0, align_clock=True)
            ls = KafkaLockstep(config, target, seed=seed * 100003 + stats.runs, groups=groups,
                               tolerance_ms=tolerance_ms, table=table, profile=profile, version=version)
            stats.runs += 1
            try:
                for a in (*prologue, *concrete):
                    ls.apply(a)
                    stats.steps += 1
            except TimingStop as e:
                stats.timing_stops += 1
                stats.timing_notes.append(f"timing stop: {e}")
                if progress is not None:
                    progress(f"timing stop in run {stats.runs}: {str(e)[:400]}")
            except Divergence as d:
                stats.divergences.append(d)
                if progress is not None:
                    progress(f"DIVERGENCE in run {stats.runs}: {d.kind}: {d.message[:300]}")
                if stop_at_first:
                    break
            finally:
                if ls.desynced is not None:
                    stats.desynced += 1
                    stats.judged_desynced += ls.judged_desynced
                    stats.timing_notes.append(f"desynchronised: {ls.desynced}")
                    if progress is not None:
                        progress(f"run {stats.runs} went on desynchronised, judged alone: {ls.desynced[:400]}")
                stats.compared += ls.compared
                stats.judged += sum(j.judged for j in ls.judges.values())
                target.close()
            if progress is not None:
                progress(f"kafka lockstep: {stats.runs} runs, {stats.steps} steps, {stats.compared} "
                         f"responses compared, {stats.judged} judged, {stats.timing_stops} timing stops, "
                         f"{stats.desynced} desynchronised, {len(stats.divergences)} divergences")
    finally:
        if pool is not None:
            stats.brokers_started = pool.started
            pool.close()
    return stats

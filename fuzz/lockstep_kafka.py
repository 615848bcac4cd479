"""Lockstep, model vs real Apache Kafka: the lockstep test's mode whose second side is a broker.

The engine of `conformance.lockstep` is reused with the sides changed: the model's concrete mode
is the white-box side (requests are built from its view of the group, and the printed scenario
has the model's answers as `expect`); the other side is a `wire.KafkaTarget` talking to a real
Kafka 3.9 (`wire.kafka_broker`) over the wire. Member ids are paired through the same bijection.

Time. The broker's timers run on the real clock. `KafkaTarget.advance` sleeps until real time has
caught up with the virtual clock, so the two clocks run close together; they drift apart by the
real time that requests take between advances. Hence tolerances (`tolerance_ms`):

- a response the model gave at virtual time V and the broker has not given yet is waited for until
  real time reaches V + tolerance (on the aligned clock); not given by then: `response-missing`;
- a response the broker gave (at aligned virtual time V) that the model has not given yet is
  deferred; if the model's clock passes V + tolerance without it: `response-missing`;
- a difference when a model timer deadline lies between the model's clock and the broker's (which
  runs ahead by what requests took since the last advance), give or take RACE_MARGIN_MS, is a
  timing race the real clock cannot settle: the run stops there (counted in `timing_stops`, the
  message kept in `timing_notes`); it is not a finding.

Kafka's arbitrary orders are not compared: the member lists of JoinGroup and DescribeGroups
responses are compared as sets (Kafka 3.9 keeps members in a HashMap). Everything else is
compared strictly, and the first difference raises `Divergence` with the run as a scenario file
that replays with `groupspec scenario run FILE --target kafka-3.9` (and `--target model`).

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
    OffsetFetchResponse, Response,
)
from model.vocabulary import NEW_MEMBER_JOIN_TIMEOUT_MS

from conformance.actions import Action
from conformance.lockstep import (
    LOCKSTEP, PROLOGUES, Divergence, IdMap, Lockstep, RunConfig,
    _Arrivals, _compare,
)

TOLERANCE_MS: Final = 1500
RACE_MARGIN_MS: Final = 300


@dataclass(frozen=True, slots=True)
class KafkaRunConfig(RunConfig):
    """RunConfig with Kafka's constant new-member join timeout (not a broker setting)."""

    def coordinator_config(self) -> CoordinatorConfig:
        return dataclasses.replace(RunConfig.coordinator_config(self),
                                   new_member_join_timeout_ms=NEW_MEMBER_JOIN_TIMEOUT_MS)


class TimingStop(Exception):
    """The sides differ where a timer deadline is within the tolerance: the run cannot go on."""


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
    """The model (white box, `self.reference` in the engine) and a Kafka broker (`self.model`)."""

    def __init__(self, config: RunConfig, target: Any, *, seed: int = 0, groups: int = 2,
                 tolerance_ms: int = TOLERANCE_MS, table: Optional[Table] = None) -> None:
        config = KafkaRunConfig(config.initial_delay, config.max_size)
        super().__init__(config, seed=seed, groups=groups, known={})
        cc = config.coordinator_config()
        self.reference = ModelCoordinator(  # type: ignore[assignment]
            cc, seed=seed, table=CLASSIC_TABLE if table is None else table)
        self.model = target
        self.kafka = target
        self.tolerance_ms = tolerance_ms
        self.explore_tie_orders = False
        self.compared = 0
        # request number -> aligned virtual time at which only one side had answered
        self._model_only: dict[int, int] = {}
        self._kafka_only: dict[int, int] = {}
        self._held = _Arrivals()  # answers of one side waiting for the other's
        self._deadlines: list[int] = []  # model timer deadlines seen around the last actions

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
        self._deadlines = self._model_view_deadlines()
        super().apply(action)

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
            self._check(f"advance {piece} ms (of {ms})", ref_error, kafka_error, own=None)

    def _near_timer(self) -> bool:
        """Whether a model timer deadline lies where the two clocks disagree: between the model's
        now and the broker's (the real clock runs ahead by what requests took since the last
        advance), widened by RACE_MARGIN_MS for scheduling jitter."""
        now = self.reference.now_ms()
        ahead = max(0, self._aligned_now_ms() - now)
        deadlines = self._deadlines + self._model_view_deadlines()
        return any(now - RACE_MARGIN_MS <= d <= now + ahead + RACE_MARGIN_MS for d in deadlines)

    def _aligned_now_ms(self) -> int:
        """The broker side's real time as a virtual time (its clock is aligned to the model's)."""
        t0: float = getattr(self.kafka, "_t0")
        scale: float = getattr(self.kafka, "time_scale", 1.0) or 1.0
        return int((time.monotonic() - t0) * 1000 / scale)

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
        for n in list(self._held.model):
            if n not in self._held.ref:
                self._kafka_only.setdefault(n, self._aligned_now_ms())
        both = sorted(set(self._held.ref) & set(self._held.model))
        self._pair_join_ids(both)
        for number in both:
            problems.extend(self._compare_answers(number, own))
        problems.extend(self._missing_answers(now))
        for gid in self.groups:
            if touched is None or gid == touched:
                self.transcript.group(gid, self.reference.group_view(gid))
        if problems:
            if self._near_timer():
                raise TimingStop(f"after {what}: " + "; ".join(m for _, m in problems))
            self._fail(what, problems)

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
        try:
            super()._fail(what, problems)
        except Divergence as d:
            doc = d.scenario
            doc["finding"]["found_by"] = "conformance.lockstep_kafka (model vs Kafka 3.9)"
            s = doc["scenarios"][0]
            s["name"] = f"lockstep-kafka-{d.kind}"
            s["source"] = f"conformance.lockstep_kafka, model vs Kafka 3.9, seed {self.seed}"
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
    compared: int = 0
    timing_stops: int = 0
    divergences: list[Divergence] = dataclasses.field(default_factory=list)
    brokers_started: int = 0
    timing_notes: list[str] = dataclasses.field(default_factory=list)


def run_kafka_lockstep(seed: int, *, runs: Optional[int] = None, budget_s: Optional[float] = None,
                       steps_per_run: int = 40, groups: int = 2, version: str = "3.9",
                       stop_at_first: bool = False, progress: Optional[Callable[[str], None]] = None,
                       tolerance_ms: int = TOLERANCE_MS, table: Optional[Table] = None,
                       prologues: Optional[tuple[int, ...]] = None) -> KafkaLockstepStats:
    """Random runs (seeded: the same seed draws the same actions) against real Kafka `version`.

    Each run: a config, a prologue, then `steps_per_run` random actions, on fresh group ids of a
    broker shared by the runs of the same broker config. Stops after `runs` runs or `budget_s`
    seconds (at least one must be given). `table`: the model's table (default CLASSIC_TABLE; a
    profile or a mutant). `prologues`: the PROLOGUES indices to draw from (default all)."""
    from wire.kafka_broker import KafkaBrokerPool
    from wire.target import KafkaTarget

    if runs is None and budget_s is None:
        raise ValueError("give runs or budget_s")
    rng = random.Random(seed)
    stats = KafkaLockstepStats()
    pool = KafkaBrokerPool(version, max_brokers=3)
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
            broker = pool.broker_for(cc)
            target = KafkaTarget(broker.host, broker.port, cc, 1.0, immediate_wait_s=0.1,
                                 max_real_wait_s=3600.0, align_clock=True)
            ls = KafkaLockstep(config, target, seed=seed * 100003 + stats.runs, groups=groups,
                               tolerance_ms=tolerance_ms, table=table)
            stats.runs += 1
            try:
                for a in (*prologue, *concrete):
                    ls.apply(a)
                    stats.steps += 1
            except TimingStop as e:
                stats.timing_stops += 1
                stats.timing_notes.append(str(e))
                if progress is not None:
                    progress(f"timing stop in run {stats.runs}: {str(e)[:400]}")
            except Divergence as d:
                stats.divergences.append(d)
                if progress is not None:
                    progress(f"DIVERGENCE in run {stats.runs}: {d.kind}: {d.message[:300]}")
                if stop_at_first:
                    break
            finally:
                stats.compared += ls.compared
                target.close()
            if progress is not None:
                progress(f"kafka lockstep: {stats.runs} runs, {stats.steps} steps, {stats.compared} "
                         f"responses compared, {stats.timing_stops} timing stops, "
                         f"{len(stats.divergences)} divergences")
    finally:
        stats.brokers_started = pool.started
        pool.close()
    return stats

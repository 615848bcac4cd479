"""Scenario files on a real-clock broker: topics, time scaling, the time budget, the judge's interface.

A scenario is written for a virtual clock; a broker runs its timers on the real one. Four things
make a real-clock run fail only for real differences (docs/realclock.md):

- **Topics.** KafkaApis refuses an OffsetCommit for a partition it lacks (UNKNOWN_TOPIC_OR_PARTITION)
  before the coordinator sees it: `scenario_topics` are created (`ensure_topics` on the target)
  before the first step.
- **Time scale.** Every timer the scenario sets (session and rebalance timeouts of its joins, the
  broker's initial delay and session bounds) is multiplied by `scale`, and so is every `advance`
  (the target sleeps `ms * scale`), so that a request's real latency is small beside the smallest
  timer and timers keep the order the scenario gives them. `choose_scale` picks it from the
  scenario's smallest timer and the latency measured at the start of the run (`measure_latency_ms`),
  bounded by the budget. Timeouts are scaled with floor(x * scale), scale >= 1: strict order and
  equality between them are kept.
- **Budget.** Real waiting is bounded (`budget_s` per scenario). A scenario whose advances need more
  (Kafka's new-member timeout is the constant 300 s, GroupCoordinator.NewMemberJoinTimeoutMs: no
  broker setting and no scale shortens it) is SKIP with its reason, never FAIL (`budget_skip`).
- **Judge.** An answer that differs from the scenario's virtual-clock expectation is asked of an
  `AnswerJudge` (fuzz/scenario_judge.py: the fuzz judge, every order the real clock allows): the
  answer is a FAIL only when the model allows no such answer on the real clock.
"""

from __future__ import annotations

import enum
import math
import time
from dataclasses import dataclass, replace
from typing import Callable, Optional, Protocol, Sequence

from model.coordinator_api import Coordinator, CoordinatorConfig
from model.messages import DescribeGroupsRequest, Request, Response

from conformance.scenario import AdvanceStep, CommitStep, FetchOffsetsStep, JoinStep, Scenario, step_index

# a request step's real cost may be at most this share of the smallest timer (scaled): 1/10
LATENCY_SHARE = 10
DEFAULT_BUDGET_S = 120.0
MAX_TIMEOUT_MS = (1 << 31) - 1  # the wire's int32


@dataclass(frozen=True, slots=True)
class TimeScale:
    """The scale a scenario runs at and why."""

    scale: float
    chosen: bool  # picked by choose_scale (False: given with --time-scale)
    smallest_timer_ms: int  # 0: the scenario sets no timer
    latency_ms: float
    capped: bool = False  # the budget kept it below what the latency asks for

    def describe(self) -> str:
        if not self.chosen:
            return f"time scale {self.scale:g} (given)"
        why = (f"smallest timer {self.smallest_timer_ms} ms, request cost {self.latency_ms:.1f} ms"
               if self.smallest_timer_ms else "no timer")
        return f"time scale {self.scale:g} (auto: {why}{'; capped by the budget' if self.capped else ''})"


@dataclass(frozen=True, slots=True)
class RealClockOptions:
    """How the runner drives a real-clock target (None scale: chosen per scenario)."""

    scale: Optional[float] = None
    latency_ms: float = 0.0
    budget_s: float = DEFAULT_BUDGET_S
    judge: Optional["JudgeFactory"] = None
    probes: bool = True  # insert wire probes for check_group's generation/leader (conformance/probes.py)


def smallest_timer_ms(scenario: Scenario) -> int:
    """The shortest timer the scenario sets: join session/rebalance timeouts, the initial delay."""
    timers = [t for s in scenario.steps if isinstance(s, JoinStep)
              for t in (s.session_timeout_ms, s.rebalance_timeout_ms) if t > 0]
    if scenario.config.group_initial_rebalance_delay_ms > 0:
        timers.append(scenario.config.group_initial_rebalance_delay_ms)
    return min(timers, default=0)


def total_advance_ms(scenario: Scenario) -> int:
    return sum(s.ms for s in scenario.steps if isinstance(s, AdvanceStep))


def choose_scale(scenario: Scenario, latency_ms: float, budget_s: float = DEFAULT_BUDGET_S) -> TimeScale:
    """The scale at which the measured latency is at most 1/LATENCY_SHARE of the smallest timer,
    at least 1, rounded up to a tenth; lowered (not below 1) so that the advances fit the budget."""
    smallest = smallest_timer_ms(scenario)
    if smallest == 0:
        return TimeScale(1.0, True, 0, latency_ms)
    want = max(1.0, math.ceil(latency_ms * LATENCY_SHARE / smallest * 10) / 10)
    total = total_advance_ms(scenario)
    cap = budget_s * 1000.0 / total if total else math.inf
    if want > cap:
        return TimeScale(max(1.0, math.floor(cap * 10) / 10), True, smallest, latency_ms, capped=True)
    return TimeScale(want, True, smallest, latency_ms)


def scaled_ms(ms: int, scale: float) -> int:
    """A timeout at `scale` (>= 1): floor keeps strict order and equality between timeouts."""
    return min(MAX_TIMEOUT_MS, int(math.floor(ms * scale))) if ms > 0 else ms


def scaled_config(config: CoordinatorConfig, scale: float) -> CoordinatorConfig:
    """The broker settings at `scale`. Kafka's new-member timeout is a constant and stays: the
    budget (< 300 s) keeps any step it could decide from running (`budget_skip`)."""
    if scale == 1.0:
        return config
    return replace(
        config,
        group_min_session_timeout_ms=scaled_ms(config.group_min_session_timeout_ms, scale),
        group_max_session_timeout_ms=scaled_ms(config.group_max_session_timeout_ms, scale),
        group_initial_rebalance_delay_ms=scaled_ms(config.group_initial_rebalance_delay_ms, scale))


def budget_skip(scenario: Scenario, scale: float, budget_s: float) -> Optional[str]:
    """Why the scenario cannot run within `budget_s` of real waiting at `scale` (None: it can)."""
    waited = 0.0
    for s in scenario.steps:
        if isinstance(s, AdvanceStep):
            waited += s.ms * scale / 1000.0
            if waited > budget_s:
                total = total_advance_ms(scenario)
                why = (f"step {step_index(s)} (advance {s.ms}): its advances ({total} ms in all) at time "
                       f"scale {scale:g} need {total * scale / 1000.0:.0f} s of real waiting, over the "
                       f"budget of {budget_s:g} s")
                nm = scenario.config.new_member_join_timeout_ms
                if total >= nm:
                    why += (f"; they wait for the new-member timeout ({nm} ms), Kafka's constant "
                            "GroupCoordinator.NewMemberJoinTimeoutMs: no broker setting or scale shortens it")
                return why
    return None


def scenario_topics(scenario: Scenario) -> dict[str, int]:
    """Every topic the scenario names (commits, offset fetches), with the partitions it needs."""
    out: dict[str, int] = {}
    for s in scenario.steps:
        parts = ([tp for tp, _ in s.offsets] if isinstance(s, CommitStep)
                 else list(s.partitions or ()) if isinstance(s, FetchOffsetsStep) else [])
        for tp in parts:
            out[tp.topic] = max(out.get(tp.topic, 0), tp.partition + 1)
    return out


def measure_latency_ms(target: Coordinator, samples: int = 10, warmup: int = 5) -> float:
    """What one request step costs in real time, in ms: the second slowest of `samples`
    DescribeGroups `handle` calls (one pause forgiven), each from the send until `handle` returns
    (the answer plus the wire target's settling for answers released elsewhere), after `warmup`
    more (a freshly started JVM answers its first requests slowly)."""
    def one() -> float:
        start = time.monotonic()
        target.handle(DescribeGroupsRequest(("groupspec-latency-probe",)), lambda _: None)
        return (time.monotonic() - start) * 1000.0

    for _ in range(warmup):
        one()
    got = sorted(one() for _ in range(samples))
    return got[max(0, len(got) - 2)]


# ------------------------------------------------------------------ the judge's interface

class Verdict(enum.Enum):
    ALLOWED = "allowed"  # some model state on the real clock explains every answer so far
    FINDING = "finding"  # none does: a real difference
    UNJUDGED = "unjudged"  # the judge cannot say (inconclusive, a request it does not follow)


class AnswerJudge(Protocol):
    """Follows one scenario's requests and answers on a real-clock target (times: time.monotonic())."""

    def sent(self, number: int, request: Request, version: int, at_s: float, probe: bool = False) -> None:
        """Request `number` went out at `at_s` at API `version`, as the broker got it."""

    def received(self, number: int, response: Response, at_s: float) -> None:
        """Its answer was read at `at_s`."""

    def verdict(self, numbers: Sequence[int], now_s: float) -> tuple[Verdict, str]:
        """Whether the model, on the real clock, allows what the target did so far, in particular
        with requests `numbers` (answered, or still unanswered at `now_s`); the text says why."""


# (the scenario, its config at the run's scale, the request cost measured at the start in ms) -> a
# judge, or None when it cannot judge it. Requests sent on different connections within one request
# cost of each other may reach the broker in either order: the judge must allow that much overtaking.
JudgeFactory = Callable[[Scenario, CoordinatorConfig, float], Optional[AnswerJudge]]


__all__ = [
    "AnswerJudge", "DEFAULT_BUDGET_S", "JudgeFactory", "RealClockOptions", "TimeScale", "Verdict",
    "budget_skip", "choose_scale", "measure_latency_ms", "scaled_config", "scaled_ms", "scenario_topics",
    "smallest_timer_ms", "total_advance_ms",
]

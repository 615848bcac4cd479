"""Churn: member processes stopped, killed, paused and restarted at random times from a seed.

    run = churn_run(workload, ChurnPlan(minutes=2, seed=7, kinds=("stop", "kill", "pause")),
                    static=False)
    run.result.verdict   # the end-to-end promise after the churn (clients/promise.py)
    run.actions          # what was done to whom, when

The group has `consumers` slots; each holds one member process at a time. Every `gap` seconds
(drawn from `gap_s`), one slot that is up is picked and one kind of churn done to it:

| kind | what is done | the slot afterwards |
|---|---|---|
| `stop` | SIGTERM: a clean close (a dynamic member sends LeaveGroup) | refilled by a new member after `down_s` |
| `kill` | SIGKILL: the broker finds out by session expiry | refilled by a new member after `down_s` |
| `pause` | SIGSTOP for the session timeout + 2 s, then SIGCONT | the same process, kicked out, rejoins |
| `restart` | SIGTERM, then a new member at once | a new member |
| `static-restart` | SIGKILL, then a new process with the same group.instance.id at once | the same static member (static runs only) |

With `static` = K, the first K slots are static: each such slot's members share the instance id
`s<slot>` (KIP-345), and a refilled slot is the same static member coming back; `static-restart` is
done to static slots only. The other slots hold dynamic members (a group may mix both). A member
that exits by itself (a fatal client error) is noted and its slot refilled after `down_s`. Each member produces at the workload's rate until the churn
phase ends; then paused members are resumed, empty slots refilled, and the run drains: it ends when
every live member shares one generation, has had all its records acknowledged, and every acknowledged
record has been consumed (or at the drain timeout), and every member is stopped cleanly.
"""

from __future__ import annotations

import heapq
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Final, Optional

from clients.group import Group, RunResult, Workload, summarize

KINDS: Final = ("stop", "kill", "pause", "restart", "static-restart")
DYNAMIC_KINDS: Final = ("stop", "kill", "pause", "restart")


@dataclass(frozen=True, slots=True)
class ChurnPlan:
    minutes: float
    seed: int = 0
    kinds: tuple[str, ...] = DYNAMIC_KINDS
    gap_s: tuple[float, float] = (4.0, 12.0)  # between two churn actions
    down_s: tuple[float, float] = (1.0, 5.0)  # a stopped or killed slot stays empty this long

    def __post_init__(self) -> None:
        unknown = sorted(set(self.kinds) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown churn kind(s) {unknown}; known: {', '.join(KINDS)}")


@dataclass(frozen=True, slots=True)
class Action:
    at_s: float
    kind: str
    member: str


@dataclass(slots=True)
class _Slot:
    index: int
    member: Optional[str] = None
    incarnation: int = 0
    paused: bool = False


@dataclass(frozen=True, slots=True)
class ChurnRun:
    result: RunResult
    actions: tuple[Action, ...]
    plan: ChurnPlan
    static: int  # static slots (the first ones)
    drain_completed: bool
    exits: tuple[Action, ...] = ()  # members that exited by themselves (kind: "exit CODE")


@dataclass(order=True)
class _Task:
    due: float
    seq: int
    run: Callable[[], None] = field(compare=False)


class _Churner:
    def __init__(self, w: Workload, plan: ChurnPlan, static: int,
                 stopped: Callable[[], bool] = lambda: False) -> None:
        self.w, self.plan, self.static, self.stopped = w, plan, static, stopped
        self.rng = random.Random(plan.seed)
        self.group = Group(w)
        self.slots = [_Slot(i + 1) for i in range(w.consumers)]
        self.actions: list[Action] = []
        self.exits: list[Action] = []
        self.t0 = time.monotonic()
        self.churn_end = self.t0 + plan.minutes * 60
        self.tasks: list[_Task] = []
        self._seq = 0

    def now(self) -> float:
        return time.monotonic() - self.t0

    def later(self, delay_s: float, run: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self.tasks, _Task(time.monotonic() + delay_s, self._seq, run))

    def fill(self, slot: _Slot) -> None:
        slot.incarnation += 1
        static = self.is_static(slot)
        name = f"{'s' if static else 'm'}{slot.index}-{slot.incarnation}"
        records = max(0, int(self.w.rate * (self.churn_end - time.monotonic())))
        self.group.start(name, records, instance_id=f"s{slot.index}" if static else None)
        slot.member = name

    def is_static(self, slot: _Slot) -> bool:
        return slot.index <= self.static

    def refill_exited(self) -> None:
        """Slots whose member exited by itself: noted, refilled after `down_s`."""
        for slot in self.slots:
            if slot.member is None or slot.paused:
                continue
            member = self.group.members[slot.member]
            if member.alive:
                continue
            code = member.wait(1)
            self.exits.append(Action(round(self.now(), 1), f"exit {code}", slot.member))
            self.group.note(f"{slot.member} exited by itself (exit {code})")
            slot.member = None
            self.later(self.rng.uniform(*self.plan.down_s), self.refill(slot))

    def refill(self, slot: _Slot) -> Callable[[], None]:
        """What fills `slot` later, if it is still empty then."""
        def run() -> None:
            if slot.member is None:
                self.fill(slot)
        return run

    def act(self, slot: _Slot, kind: str) -> None:
        assert slot.member is not None
        name = slot.member
        self.actions.append(Action(round(self.now(), 1), kind, name))
        if kind in ("stop", "restart"):
            self.group.stop(name)
        elif kind in ("kill", "static-restart"):
            self.group.kill(name)
        if kind == "pause":
            self.group.pause(name)
            slot.paused = True

            def resume() -> None:
                self.group.resume(name)
                slot.paused = False
            self.later(self.w.session_timeout_ms / 1000 + 2, resume)
            return
        slot.member = None
        if kind in ("restart", "static-restart"):
            self.fill(slot)
        else:
            self.later(self.rng.uniform(*self.plan.down_s), self.refill(slot))

    def churn(self) -> None:
        kinds = [k for k in self.plan.kinds if self.static or k != "static-restart"]
        next_action = time.monotonic() + self.rng.uniform(*self.plan.gap_s)
        while time.monotonic() < self.churn_end and not self.stopped():
            due = min([next_action, self.churn_end, time.monotonic() + 1.0]
                      + ([self.tasks[0].due] if self.tasks else []))
            time.sleep(max(0.0, due - time.monotonic()))
            self.run_due()
            if time.monotonic() >= next_action and time.monotonic() < self.churn_end:
                up = [s for s in self.slots if s.member is not None and not s.paused]
                if up and kinds:
                    kind = self.rng.choice(kinds)
                    eligible = [s for s in up if self.is_static(s)] if kind == "static-restart" else up
                    if eligible:
                        self.act(self.rng.choice(eligible), kind)
                next_action = time.monotonic() + self.rng.uniform(*self.plan.gap_s)

    def run_due(self) -> None:
        self.refill_exited()
        while self.tasks and self.tasks[0].due <= time.monotonic():
            heapq.heappop(self.tasks).run()

    def restore(self) -> None:
        """End of churn: run what is pending now (resume the paused, refill the empty slots)."""
        self.refill_exited()
        while self.tasks:
            heapq.heappop(self.tasks).run()
        for slot in self.slots:
            if slot.member is None:
                self.fill(slot)


def churn_run(w: Workload, plan: ChurnPlan, static: int = 0, drain_s: Optional[float] = None,
              stopped: Callable[[], bool] = lambda: False) -> ChurnRun:
    """Churn a group of `w.consumers` members (the first `static` of them static) for `plan.minutes`,
    drain, stop, check. `stopped`: asked about once a second; true ends the churn and the drain
    early (what the members are judged through has ended: going on would judge nothing)."""
    if not 0 <= static <= w.consumers:
        raise ValueError(f"static slots {static} not in 0..{w.consumers}")
    c = _Churner(w, plan, static, stopped)
    drain = drain_s if drain_s is not None else 3 * w.session_timeout_ms / 1000 + 60
    completed = False
    try:
        for slot in c.slots:
            c.fill(slot)
        c.churn()
        c.group.note("churn over: resuming paused members, refilling empty slots")
        c.restore()
        group = c.group

        def drained() -> bool:
            return (len(group.live()) == w.consumers and group.settled_above(-1) is not None
                    and group.done_producing() and group.all_consumed())

        end = time.monotonic() + drain
        while not completed and time.monotonic() < end and not stopped():
            completed = group.wait_until(drained, min(1.0, end - time.monotonic()))
            if not completed:  # a member that exits by itself while draining is replaced
                c.refill_exited()
                while c.tasks and c.tasks[0].due <= time.monotonic():
                    heapq.heappop(c.tasks).run()
        group.note("drained: every record consumed, the group settled" if completed else "drain timed out")
    finally:
        codes = c.group.close()
    return ChurnRun(summarize(c.group, w, completed, codes), tuple(c.actions), plan, static, completed,
                    tuple(c.exits))

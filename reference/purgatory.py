"""Delayed operations and their purgatory, driven by a virtual clock (Kafka's DelayedOperation.scala,
DelayedJoin.scala, DelayedHeartbeat.scala, DelayedSync.scala).

Semantics kept from Kafka:

* `try_complete_else_watch(op, keys)`: try once; if not complete, watch `op` under every key and arm
  its timer at `now + timeout`.
* `check_and_complete(key)`: call `try_complete` on every live operation watched under `key`;
  an operation completes at most once (`force_complete` returns False the second time).
* Expiry (`DelayedOperation.run`): `force_complete()` (which runs `on_complete`) then `on_expiration`.

Time (scenario-format.md "Time"): `fire_expired()` runs, in deadline order, every armed operation
whose deadline is **strictly less** than the clock; an operation armed while firing is based on the
current (new) time so it cannot fire in the same round. Equal deadlines fire in **arming order**
(a sequence number), a deterministic stand-in for the order of Kafka's timing wheel / MockTimer heap.
"""

from __future__ import annotations

import heapq
from typing import Callable, Hashable, Optional, Protocol

from model.vocabulary import TimerEvent

from reference.errors import ReferenceUsageError
from reference.group import GroupMetadata

Key = Hashable


class VirtualClock:
    """An injected clock: only `advance` moves it."""

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ReferenceUsageError(f"advance: ms must be >= 0, got {ms}")
        self._now += ms
        return self._now


class DelayedOperation:
    """DO: an operation that completes early (`try_complete`) or expires after `timeout_ms`."""

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self.completed = False
        self.expired = False
        self.keys: tuple[Key, ...] = ()

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expiration(self) -> None:
        pass

    def force_complete(self) -> bool:
        if self.completed:
            return False
        self.completed = True
        self.on_complete()
        return True

    def run_expired(self) -> None:
        self.expired = True
        if self.force_complete():
            self.on_expiration()


class Purgatory:
    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock
        self._watchers: dict[Key, list[DelayedOperation]] = {}
        self._timers: list[tuple[int, int, DelayedOperation]] = []
        self._seq = 0
        self._compact_at = 4096

    def try_complete_else_watch(self, op: DelayedOperation, keys: tuple[Key, ...]) -> bool:
        if op.try_complete():
            return True
        op.keys = keys
        for key in keys:
            self._watchers.setdefault(key, []).append(op)
        self._seq += 1
        heapq.heappush(self._timers, (self._clock.now_ms() + op.timeout_ms, self._seq, op))
        if len(self._timers) > self._compact_at:
            self._timers = [entry for entry in self._timers if not entry[2].completed]
            heapq.heapify(self._timers)
            self._compact_at = max(4096, 2 * len(self._timers))
        return False

    def check_and_complete(self, key: Key) -> int:
        watched = self._watchers.get(key)
        if not watched:
            return 0
        done = 0
        for op in list(watched):
            if not op.completed and op.try_complete():
                done += 1
        self._purge(key)
        return done

    def _purge(self, key: Key) -> None:
        watched = self._watchers.get(key)
        if watched is None:
            return
        live = [op for op in watched if not op.completed]
        if live:
            self._watchers[key] = live
        else:
            del self._watchers[key]

    def fire_expired(self) -> None:
        now = self._clock.now_ms()
        while self._timers and self._timers[0][0] < now:
            _, _, op = heapq.heappop(self._timers)
            if op.completed:
                continue
            op.run_expired()
            for key in op.keys:
                self._purge(key)

    def next_deadline_ms(self) -> Optional[int]:
        """The earliest deadline of a live operation (it fires once the clock is past it), or None."""
        while self._timers and self._timers[0][2].completed:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def watched(self, key: Key) -> int:
        """Number of live operations watched under `key` (tests and invariants)."""
        return sum(1 for op in self._watchers.get(key, ()) if not op.completed)


def join_key(group_id: str) -> Key:
    return ("join", group_id)


def sync_key(group_id: str) -> Key:
    return ("sync", group_id)


def member_key(group_id: str, member_id: str) -> Key:
    return ("member", group_id, member_id)


class CoordinatorHooks(Protocol):
    """What the delayed operations call back into (GroupCoordinator's tryComplete*/onComplete*/onExpire*)."""

    def try_complete_join(self, group: GroupMetadata, force_complete: Callable[[], bool]) -> bool: ...

    def on_complete_join(self, group: GroupMetadata, event: Optional[TimerEvent]) -> None: ...

    def record_timer(self, group: GroupMetadata, event: TimerEvent, member_id: Optional[str]) -> None: ...

    def try_complete_heartbeat(
        self, group: GroupMetadata, member_id: str, is_pending: bool, force_complete: Callable[[], bool]
    ) -> bool: ...

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None: ...

    def try_complete_pending_sync(
        self, group: GroupMetadata, generation_id: int, force_complete: Callable[[], bool]
    ) -> bool: ...

    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None: ...


class DelayedJoin(DelayedOperation):
    """DJ:34: completes when every member has rejoined; on expiry the join phase completes anyway."""

    def __init__(self, hooks: CoordinatorHooks, group: GroupMetadata, rebalance_timeout_ms: int) -> None:
        super().__init__(rebalance_timeout_ms)
        self.hooks = hooks
        self.group = group

    def try_complete(self) -> bool:
        return self.hooks.try_complete_join(self.group, self.force_complete)

    def on_complete(self) -> None:
        event = TimerEvent.DelayedJoinExpire if self.expired else TimerEvent.DelayedJoinComplete
        self.hooks.on_complete_join(self.group, event)


class InitialDelayedJoin(DelayedJoin):
    """DJ:62: the first rebalance from Empty; never completes early, extends while members arrive."""

    def __init__(
        self,
        hooks: CoordinatorHooks,
        purgatory: Purgatory,
        group: GroupMetadata,
        configured_delay_ms: int,
        delay_ms: int,
        remaining_ms: int,
        complete_on_check: bool = False,
    ) -> None:
        super().__init__(hooks, group, delay_ms)
        self.purgatory = purgatory
        self.configured_delay_ms = configured_delay_ms
        self.delay_ms = delay_ms
        self.remaining_ms = remaining_ms
        self.complete_on_check = complete_on_check  # seeded bug `initial-delay-completes-early`

    def try_complete(self) -> bool:
        if self.complete_on_check:
            return super().try_complete()
        return False

    def on_complete(self) -> None:
        if not self.expired:
            self.hooks.on_complete_join(self.group, TimerEvent.DelayedJoinComplete)
            return
        self.hooks.record_timer(self.group, TimerEvent.InitialDelayedJoinExpire, None)
        if self.group.new_member_added and self.remaining_ms != 0:
            self.group.new_member_added = False
            delay = min(self.configured_delay_ms, self.remaining_ms)
            remaining = max(self.remaining_ms - self.delay_ms, 0)
            self.purgatory.try_complete_else_watch(
                InitialDelayedJoin(
                    self.hooks,
                    self.purgatory,
                    self.group,
                    self.configured_delay_ms,
                    delay,
                    remaining,
                    self.complete_on_check,
                ),
                (join_key(self.group.group_id),),
            )
        else:
            self.hooks.on_complete_join(self.group, None)


class DelayedHeartbeat(DelayedOperation):
    """DH:26: a member's session deadline, or a pending (MEMBER_ID_REQUIRED) id's deadline."""

    def __init__(
        self, hooks: CoordinatorHooks, group: GroupMetadata, member_id: str, is_pending: bool, timeout_ms: int
    ) -> None:
        super().__init__(timeout_ms)
        self.hooks = hooks
        self.group = group
        self.member_id = member_id
        self.is_pending = is_pending

    def try_complete(self) -> bool:
        return self.hooks.try_complete_heartbeat(self.group, self.member_id, self.is_pending, self.force_complete)

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.hooks.on_expire_heartbeat(self.group, self.member_id, self.is_pending)


class DelayedSync(DelayedOperation):
    """DS:30 (KAFKA-12890): members that never send SyncGroup are removed at the rebalance timeout."""

    def __init__(
        self, hooks: CoordinatorHooks, group: GroupMetadata, generation_id: int, rebalance_timeout_ms: int
    ) -> None:
        super().__init__(rebalance_timeout_ms)
        self.hooks = hooks
        self.group = group
        self.generation_id = generation_id

    def try_complete(self) -> bool:
        return self.hooks.try_complete_pending_sync(self.group, self.generation_id, self.force_complete)

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.hooks.on_expire_pending_sync(self.group, self.generation_id)

"""The interface every scenario target implements: the model, the reference, a remote broker.

A request is handed over with a callback; the callback runs when the response exists, which for a
parked JoinGroup or SyncGroup may be during a later request or clock advance (as in Kafka's
GroupCoordinator, whose handlers take `responseCallback`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, runtime_checkable

from model.messages import GroupView, Request, Response
from model.vocabulary import (
    DEFAULT_GROUP_MAX_SIZE,
    DEFAULT_INITIAL_REBALANCE_DELAY_MS,
    DEFAULT_MAX_SESSION_TIMEOUT_MS,
    DEFAULT_MIN_SESSION_TIMEOUT_MS,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    Error,
)

ResponseCallback = Callable[[Response], None]


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Broker configuration that the coordinator's behaviour depends on (scenario `config` keys)."""

    group_min_session_timeout_ms: int = DEFAULT_MIN_SESSION_TIMEOUT_MS
    group_max_session_timeout_ms: int = DEFAULT_MAX_SESSION_TIMEOUT_MS
    group_max_size: int = DEFAULT_GROUP_MAX_SIZE
    group_initial_rebalance_delay_ms: int = DEFAULT_INITIAL_REBALANCE_DELAY_MS
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS
    not_owned_groups: frozenset[str] = field(default_factory=frozenset)
    # Result of every log append (group metadata and offsets); NONE = success.
    append_result: Error = Error.NONE


@runtime_checkable
class Coordinator(Protocol):
    """A group coordinator driven by requests and a virtual clock."""

    def handle(self, request: Request, callback: ResponseCallback) -> None:
        """Process one request at the current time; `callback` runs exactly once, maybe later."""

    def advance(self, ms: int) -> None:
        """Move the clock forward and fire every timer whose deadline is strictly earlier."""

    def now_ms(self) -> int:
        """The current virtual time."""


@runtime_checkable
class WhiteBoxCoordinator(Coordinator, Protocol):
    """A coordinator whose internals can be read (the model and the reference)."""

    def group_view(self, group_id: str) -> Optional[GroupView]:
        """The group's current state, or None when no group object exists."""

    def set_append_result(self, error: Error) -> None:
        """Make later log appends succeed (NONE) or fail with `error`."""

    def unload(self, group_id: str) -> None:
        """Partition emigration of the group's partition (GC:1241 onResignation)."""

    def load(self, group_id: str) -> None:
        """Partition immigration (GC:1231 onElection): resume from the last persisted metadata."""

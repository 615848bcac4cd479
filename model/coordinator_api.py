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
    GroupState,
    TimerEvent,
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


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """A member placed into a group by a scenario's `setup_add_group` backdoor step."""

    member_id: str
    group_instance_id: Optional[str] = None
    protocols: tuple[tuple[str, bytes], ...] = (("range", b""),)
    session_timeout_ms: int = 10000
    rebalance_timeout_ms: int = 300000


@runtime_checkable
class BackdoorCoordinator(WhiteBoxCoordinator, Protocol):
    """Test hooks for the scenario steps marked `backdoor: true` and the `unit_*` steps."""

    def setup_add_group(
        self, group_id: str, state: GroupState, members: tuple[MemberSpec, ...], protocol_type: str
    ) -> None:
        """Create the group directly in `state` holding `members` (first one is the leader)."""

    def setup_prepare_rebalance(self, group_id: str) -> None:
        """Start a rebalance as Kafka's prepareRebalance would (GC:1478)."""

    def setup_force_transition(self, group_id: str, state: GroupState) -> None:
        """Move the group to `state` via the target's own transition check (raises if illegal)."""

    def can_transition(self, start: GroupState, path: tuple[GroupState, ...]) -> bool:
        """Whether the target's transition check accepts every edge of `start -> path...`."""

    def select_protocol(
        self, members_protocols: tuple[tuple[str, ...], ...], group_protocol_type: str
    ) -> Optional[str]:
        """The protocol the target's selection picks for members with these preference lists."""


class Recorder(Protocol):
    """A recording hook: a coordinator that is given one reports everything it does to it.

    Used to produce traces (traces/ turns the calls into rows) and, later, ITF exports.
    `request_id` correlates a request with its (possibly later) response.
    """

    def on_request(self, now_ms: int, request_id: int, request: Request) -> None: ...

    def on_response(self, now_ms: int, request_id: int, group_id: str, response: Response) -> None: ...

    def on_timer(self, now_ms: int, group_id: str, event: TimerEvent, member_id: Optional[str]) -> None: ...

    def on_transition(
        self, now_ms: int, group_id: str, source: GroupState, target: GroupState, generation_id: int
    ) -> None: ...

"""Typed exceptions of the reference coordinator.

Kafka throws `IllegalStateException` where the coordinator reaches a state its authors consider
impossible (`GroupMetadata.transitionTo`, `add` of an already-mapped instance id, ...). Here each of
those is a typed exception, so a test (or the lockstep checker) sees a reference bug as a failure
naming the group, never as a silently wrong answer. Bad arguments to the public methods raise
`ReferenceUsageError`.
"""

from __future__ import annotations

from model.vocabulary import GroupState


class ReferenceError_(Exception):
    """Base class of everything the reference coordinator raises on purpose."""


class IllegalStateTransition(ReferenceError_):
    """`GroupMetadata.transitionTo` (GM:428) found `source` not among `target`'s valid previous states."""

    def __init__(self, group_id: str, source: GroupState, target: GroupState) -> None:
        self.group_id = group_id
        self.source = source
        self.target = target
        super().__init__(
            f"Group {group_id} should be in one of the valid previous states of {target.value} "
            f"before moving to {target.value} state. Instead it is in {source.value} state"
        )


class IllegalGroupState(ReferenceError_):
    """Any other `IllegalStateException` / assertion of Kafka's group code (GM, GC)."""


class ReferenceUsageError(ReferenceError_, ValueError):
    """A public method of the reference was called with arguments it cannot accept."""

"""Seeded bugs for negative controls: name -> one-line description of the deviation from Kafka 3.9.

`ReferenceCoordinator(config, bugs=frozenset({"no-generation-bump"}))` switches a deviation on; each
is a small `if "<name>" in self._bugs` in coordinator.py (or a flag passed to group.py/purgatory.py).
A checker that compares the reference with the model must catch every one of them.
"""

from __future__ import annotations

from typing import Final

BUGS: Final[dict[str, str]] = {
    "sync-accepted-in-preparing": "leader SyncGroup in PreparingRebalance stores the assignment and answers NONE",
    "no-generation-bump": "join completion does not increment the generation",
    "timer-join-no-generation-bump": "a join phase completed by its timer (InitialDelayedJoin or DelayedJoin "
                                     "expiry) does not increment the generation",
    "no-delayed-sync": "DelayedSync is never armed (KAFKA-12890: group stuck in CompletingRebalance)",
    "static-no-fence": "JoinGroup of a static member with a wrong member id is not fenced (no FENCED_INSTANCE_ID)",
    "heartbeat-empty-accepted": "Heartbeat to an Empty group answers NONE",
    "session-expiry-while-parked": "members parked in JoinGroup/SyncGroup are session-expired",
    "leave-no-rebalance": "LeaveGroup in Stable removes the member without triggering a rebalance",
    "heartbeat-completing-rebalance-in-progress": "Heartbeat in CompletingRebalance answers REBALANCE_IN_PROGRESS (pre-2.6.1)",
    "commit-in-completing-accepted": "OffsetCommit in CompletingRebalance is stored instead of REBALANCE_IN_PROGRESS",
    "pending-ignored-in-join-check": "MEMBER_ID_REQUIRED ids do not block join completion (pre KAFKA-7909)",
    "static-removed-at-join-timeout": "join completion also removes static members that did not rejoin (pre KAFKA-8220)",
    "initial-delay-completes-early": "InitialDelayedJoin completes as soon as every member has joined",
    "max-size-counts-members": "group.max.size in PreparingRebalance counts all members, not parked ones",
    "describe-protocol-outside-stable": "DescribeGroups reports the protocol name in every state",
    # timing bugs: departures from Kafka's timers (negative controls for the judge's timing slack)
    "session-expiry-late": "a member's session expires 1,000 ms after its session timeout",
    "session-expiry-early": "a member's session expires 300 ms before its session timeout",
    "join-unanswered-at-rebalance-timeout": "a join phase ended by the rebalance timeout never answers the parked JoinGroups",
    "empty-group-deleted": "an Empty group without offsets is deleted at once (its generation lost)",
    "heartbeat-answered-late": "Heartbeat is answered 3,000 ms after it was handled",
    "rebalance-timeout-first-member": "the group's rebalance timeout is its first member's, not the largest",
}

# the bugs that change only when things happen, not what (negative controls for fuzz timing)
TIMING_BUGS: Final = ("session-expiry-late", "session-expiry-early", "join-unanswered-at-rebalance-timeout",
                      "empty-group-deleted", "heartbeat-answered-late", "rebalance-timeout-first-member")

# the timing bugs' magnitudes (reference/coordinator.py reads them)
SESSION_LATE_MS: Final = 1000
SESSION_EARLY_MS: Final = 300
HEARTBEAT_LATE_MS: Final = 3000

"""Kafka's own words for the classic group protocol.

Everything here is vocabulary: names and numbers a reader can grep for in Apache Kafka
(`clients/src/main/java/org/apache/kafka/common/protocol/Errors.java`, `ApiKeys.java`,
`core/src/main/scala/kafka/coordinator/group/GroupMetadata.scala`). No behaviour lives here.
Every other package may import this module.
"""

from __future__ import annotations

import enum
from typing import Final


class PastableEnum(enum.Enum):
    """An enum whose repr is valid Python (`GroupState.Stable`, not `<GroupState.Stable: ...>`), so
    a printed failure pastes straight into a test (the model's, the wire's and the traces' enums)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class GroupState(PastableEnum):
    """The states of a classic group (GroupMetadata.scala, GM:37-126), plus one pseudo-state.

    `Missing` is not a Kafka state: it stands for "no group object in the coordinator's cache"
    (never created, deleted by DeleteGroups, removed by offset expiry). Kafka answers requests for a
    missing group with its own rules (UNKNOWN_MEMBER_ID for a Heartbeat, a new group for a JoinGroup
    with an empty member id, ...), so the table gives it rows of its own.
    """

    Empty = "Empty"
    PreparingRebalance = "PreparingRebalance"
    CompletingRebalance = "CompletingRebalance"
    Stable = "Stable"
    Dead = "Dead"
    Missing = "Missing"


KAFKA_STATES: Final = (
    GroupState.Empty,
    GroupState.PreparingRebalance,
    GroupState.CompletingRebalance,
    GroupState.Stable,
    GroupState.Dead,
)

# GroupMetadata.scala: each state's `validPreviousStates` (identical in every Kafka from 1.1 to 3.9,
# and in the Java port's ClassicGroupState). `transitionTo` throws IllegalStateException otherwise.
VALID_PREVIOUS_STATES: Final[dict[GroupState, frozenset[GroupState]]] = {
    GroupState.PreparingRebalance: frozenset(
        {GroupState.Stable, GroupState.CompletingRebalance, GroupState.Empty}
    ),
    GroupState.CompletingRebalance: frozenset({GroupState.PreparingRebalance}),
    GroupState.Stable: frozenset({GroupState.CompletingRebalance}),
    GroupState.Empty: frozenset({GroupState.PreparingRebalance}),
    GroupState.Dead: frozenset(
        {
            GroupState.Stable,
            GroupState.PreparingRebalance,
            GroupState.CompletingRebalance,
            GroupState.Empty,
            GroupState.Dead,
        }
    ),
}


def is_valid_transition(source: GroupState, target: GroupState) -> bool:
    """Kafka's `transitionTo` check: `source` must be one of `target`'s valid previous states
    (so Stable -> Stable is illegal; Dead -> Dead is the one legal self-transition)."""
    return source in VALID_PREVIOUS_STATES.get(target, frozenset())


class Error(PastableEnum):
    """Kafka error codes used by the group APIs (Errors.java), value = Kafka's numeric code."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_VERSION = 35
    RECORD_LIST_TOO_LARGE = 18
    INVALID_FETCH_SIZE = 4
    KAFKA_STORAGE_ERROR = 56
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88

    @property
    def code(self) -> int:
        return self.value

    @classmethod
    def from_code(cls, code: int) -> "Error":
        return _ERROR_BY_CODE[code]

    @classmethod
    def from_name(cls, name: str) -> "Error":
        return cls[name]


_ERROR_BY_CODE: Final[dict[int, Error]] = {e.value: e for e in Error}


# GroupMetadataManager.scala storeGroup (GMM:250): how an append error on the group-metadata record
# is reported to the SyncGroup / JoinGroup caller. Errors not listed are passed through unchanged.
STORE_GROUP_ERROR_MAPPING: Final[dict[Error, Error]] = {
    Error.UNKNOWN_TOPIC_OR_PARTITION: Error.COORDINATOR_NOT_AVAILABLE,
    Error.NOT_ENOUGH_REPLICAS: Error.COORDINATOR_NOT_AVAILABLE,
    Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Error.COORDINATOR_NOT_AVAILABLE,
    Error.NOT_LEADER_OR_FOLLOWER: Error.NOT_COORDINATOR,
    Error.KAFKA_STORAGE_ERROR: Error.NOT_COORDINATOR,
    Error.REQUEST_TIMED_OUT: Error.REBALANCE_IN_PROGRESS,
    Error.MESSAGE_TOO_LARGE: Error.UNKNOWN_SERVER_ERROR,
    Error.RECORD_LIST_TOO_LARGE: Error.UNKNOWN_SERVER_ERROR,
    Error.INVALID_FETCH_SIZE: Error.UNKNOWN_SERVER_ERROR,
}

# GroupMetadataManager.scala maybeConvertOffsetCommitError: the same for offset-commit appends.
OFFSET_COMMIT_ERROR_MAPPING: Final[dict[Error, Error]] = {
    Error.UNKNOWN_TOPIC_OR_PARTITION: Error.COORDINATOR_NOT_AVAILABLE,
    Error.NOT_ENOUGH_REPLICAS: Error.COORDINATOR_NOT_AVAILABLE,
    Error.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Error.COORDINATOR_NOT_AVAILABLE,
    Error.NOT_LEADER_OR_FOLLOWER: Error.NOT_COORDINATOR,
    Error.KAFKA_STORAGE_ERROR: Error.NOT_COORDINATOR,
    Error.MESSAGE_TOO_LARGE: Error.INVALID_COMMIT_OFFSET_SIZE,
    Error.RECORD_LIST_TOO_LARGE: Error.INVALID_COMMIT_OFFSET_SIZE,
    Error.INVALID_FETCH_SIZE: Error.INVALID_COMMIT_OFFSET_SIZE,
}


def map_store_group_error(error: Error) -> Error:
    return STORE_GROUP_ERROR_MAPPING.get(error, error)


def map_offset_commit_error(error: Error) -> Error:
    return OFFSET_COMMIT_ERROR_MAPPING.get(error, error)


class ApiKey(PastableEnum):
    """Kafka API keys (ApiKeys.java) of the requests this project speaks."""

    OffsetCommit = 8
    OffsetFetch = 9
    FindCoordinator = 10
    JoinGroup = 11
    Heartbeat = 12
    LeaveGroup = 13
    SyncGroup = 14
    DescribeGroups = 15
    ListGroups = 16
    ApiVersions = 18
    DeleteGroups = 42


# The request kinds the table has rows for, beyond the Kafka APIs: timers and administrative events.
class TimerEvent(PastableEnum):
    """Internal events of the coordinator (purgatory operations and partition changes)."""

    DelayedJoinComplete = "DelayedJoinComplete"  # DelayedJoin.tryComplete succeeds (DJ:34)
    DelayedJoinExpire = "DelayedJoinExpire"  # DelayedJoin timed out (rebalance timeout)
    InitialDelayedJoinExpire = "InitialDelayedJoinExpire"  # DJ:62 InitialDelayedJoin
    MemberSessionExpire = "MemberSessionExpire"  # DelayedHeartbeat expired (DH:26)
    PendingMemberExpire = "PendingMemberExpire"  # DelayedHeartbeat of a MEMBER_ID_REQUIRED id
    DelayedSyncExpire = "DelayedSyncExpire"  # DelayedSync timed out (DS:30, KAFKA-12890)
    DelayedSyncComplete = "DelayedSyncComplete"  # every member has synced: DelayedSync done
    PartitionUnload = "PartitionUnload"  # GC:1241 onResignation
    PartitionLoad = "PartitionLoad"  # GC:1231 onElection
    OffsetsExpire = "OffsetsExpire"  # GMM:847 cleanupGroupMetadata


# Defaults of Kafka 3.9's broker configuration (GroupCoordinatorConfig / KafkaConfig).
DEFAULT_MIN_SESSION_TIMEOUT_MS: Final = 6000
DEFAULT_MAX_SESSION_TIMEOUT_MS: Final = 1800000
DEFAULT_INITIAL_REBALANCE_DELAY_MS: Final = 3000
DEFAULT_GROUP_MAX_SIZE: Final = 2**31 - 1
NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 300000  # GC:1758 NewMemberJoinTimeoutMs (KAFKA-7610)
UNKNOWN_MEMBER_ID: Final = ""  # JoinGroupRequest.UNKNOWN_MEMBER_ID
NO_GENERATION: Final = -1  # JoinGroupRequest.UNKNOWN_GENERATION_ID / error responses

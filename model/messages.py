"""Requests and responses of the classic group APIs, with Kafka's field names.

These records are shared by every target: the model's concrete mode, the reference coordinator,
and the wire adapter that talks to a real broker. They carry the fields of the Kafka messages
(JoinGroupRequest.json, SyncGroupResponse.json, ...) that the coordinator's behaviour depends on.
Assignments and member metadata are raw bytes, as on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from model.vocabulary import ApiKey, Error, GroupState, NO_GENERATION


@dataclass(frozen=True, slots=True)
class ProtocolMetadata:
    """One entry of JoinGroupRequest.protocols: a protocol name and its opaque metadata."""

    name: str
    metadata: bytes = b""


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[ProtocolMetadata, ...]
    session_timeout_ms: int = 10000
    rebalance_timeout_ms: int = 300000
    group_instance_id: Optional[str] = None
    # JoinGroup v4+ for a dynamic member (KIP-394): the coordinator answers MEMBER_ID_REQUIRED first.
    require_known_member_id: bool = True
    # JoinGroup v9+ (KIP-814): the leader may be told to skip the assignment on a static restart.
    supports_skip_assignment: bool = True
    client_id: str = "consumer"
    reason: Optional[str] = None
    api_key: ApiKey = ApiKey.JoinGroup


@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: Optional[str]
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error: Error
    generation_id: int = NO_GENERATION
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    leader: str = ""
    member_id: str = ""
    skip_assignment: bool = False
    members: tuple[JoinGroupMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: Optional[str] = None
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    assignments: tuple[tuple[str, bytes], ...] = ()
    api_key: ApiKey = ApiKey.SyncGroup


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error: Error
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: Optional[str] = None
    api_key: ApiKey = ApiKey.Heartbeat


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error: Error


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    """One member of a LeaveGroup batch (v3+): a member id, an instance id, or both."""

    member_id: str
    group_instance_id: Optional[str] = None


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...]
    api_key: ApiKey = ApiKey.LeaveGroup


@dataclass(frozen=True, slots=True)
class MemberLeaveResult:
    member_id: str
    group_instance_id: Optional[str]
    error: Error


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error: Error
    members: tuple[MemberLeaveResult, ...] = ()


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, text: str) -> "TopicPartition":
        """`"orders-3"` -> TopicPartition("orders", 3); raises ValueError otherwise."""
        topic, sep, part = text.rpartition("-")
        if not sep or not topic or not part.isdigit():
            raise ValueError(f"expected TOPIC-PARTITION, got {text!r}")
        return cls(topic, int(part))


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    member_id: str
    generation_id: int
    offsets: tuple[tuple[TopicPartition, int], ...]
    group_instance_id: Optional[str] = None
    api_key: ApiKey = ApiKey.OffsetCommit


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    partitions: tuple[tuple[TopicPartition, Error], ...]


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    partitions: Optional[tuple[TopicPartition, ...]]  # None = all committed partitions
    api_key: ApiKey = ApiKey.OffsetFetch


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error: Error
    partitions: tuple[tuple[TopicPartition, int, Error], ...] = ()  # offset -1 = none committed


@dataclass(frozen=True, slots=True)
class DescribeGroupsRequest:
    group_ids: tuple[str, ...]
    api_key: ApiKey = ApiKey.DescribeGroups


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error: Error
    group_id: str
    state: str  # Kafka's state name, "Dead" for an unknown group, "" on a pre-check error
    protocol_type: str
    protocol: str
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()
    api_key: ApiKey = ApiKey.ListGroups


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    error: Error
    groups: tuple[ListedGroup, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteGroupsRequest:
    group_ids: tuple[str, ...]
    api_key: ApiKey = ApiKey.DeleteGroups


@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    results: tuple[tuple[str, Error], ...]


Request = Union[
    JoinGroupRequest,
    SyncGroupRequest,
    HeartbeatRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    DeleteGroupsRequest,
]

Response = Union[
    JoinGroupResponse,
    SyncGroupResponse,
    HeartbeatResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    DescribeGroupsResponse,
    ListGroupsResponse,
    DeleteGroupsResponse,
]


@dataclass(frozen=True, slots=True)
class MemberView:
    """What a white-box target reports about one member (for scenario `check_group`)."""

    member_id: str
    group_instance_id: Optional[str]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    awaiting_join: bool
    awaiting_sync: bool
    is_new: bool
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupView:
    """A white-box snapshot of one group, the same shape for the model and the reference."""

    group_id: str
    state: GroupState
    generation_id: int
    protocol_type: Optional[str]
    protocol_name: Optional[str]
    leader: Optional[str]
    members: tuple[MemberView, ...]
    pending_members: tuple[str, ...]

    def member(self, member_id: str) -> Optional[MemberView]:
        for m in self.members:
            if m.member_id == member_id:
                return m
        return None

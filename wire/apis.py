"""The schema table: every request and response this codec speaks, transcribed from Kafka's JSON.

Source: `clients/src/main/resources/common/message/<Name>.json` in Apache Kafka (the same files
kafka-python 3 ships). Field lines keep the JSON's order, version ranges, `nullableVersions`,
tags, defaults and `ignorable` flags. `valid` is the range *this codec* supports: Kafka 3.9's range
cut to what the test-only independent encoder (kafka-python 3.0) also implements, so that every
supported version is checked byte for byte.

| API | key | codec | Kafka 3.9 | flexible from | not supported, why |
|---|---|---|---|---|---|
| OffsetCommit | 8 | 2-9 | 0-9 | 8 | v0-1: absent from kafka-python's schema (removed in Kafka 4) |
| OffsetFetch | 9 | 1-9 | 0-9 | 6 | v0: ZooKeeper-stored offsets, absent from kafka-python |
| FindCoordinator | 10 | 0-4 | 0-5 | 3 | v5 only adds TRANSACTION_ABORTABLE for transactions (v5-6, Kafka 4: `FIND_COORDINATOR_RESPONSE_KAFKA_4`) |
| JoinGroup | 11 | 0-9 | 0-9 | 6 | |
| Heartbeat | 12 | 0-4 | 0-4 | 4 | |
| LeaveGroup | 13 | 0-5 | 0-5 | 4 | |
| SyncGroup | 14 | 0-5 | 0-5 | 4 | |
| DescribeGroups | 15 | 0-5 | 0-5 | 5 | |
| ListGroups | 16 | 0-5 | 0-5 | 3 | |
| ApiVersions | 18 | 0-4 | 0-4 | 3 | |
| DeleteGroups | 42 | 0-2 | 0-2 | 2 | |
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from model.vocabulary import ApiKey
from wire.schema import F, MessageSchema, Prim, Versions, array, struct

S, B, I8, I16, I32, I64, BOOL = (
    Prim.STRING, Prim.BYTES, Prim.INT8, Prim.INT16, Prim.INT32, Prim.INT64, Prim.BOOL,
)


def _msg(name: str, key: ApiKey, valid: str, flexible: str, *fields: object) -> MessageSchema:
    return MessageSchema(name, key.value, Versions.parse(valid), Versions.parse(flexible),
                         struct(name, *fields))  # type: ignore[arg-type]


# ApiVersionsRequest.json / ApiVersionsResponse.json (KIP-511 client software name from v3)
API_VERSIONS_REQUEST: Final = _msg(
    "ApiVersionsRequest", ApiKey.ApiVersions, "0-4", "3+",
    F("ClientSoftwareName", S, "3+", ignorable=True),
    F("ClientSoftwareVersion", S, "3+", ignorable=True),
)
API_VERSIONS_RESPONSE: Final = _msg(
    "ApiVersionsResponse", ApiKey.ApiVersions, "0-4", "3+",
    F("ErrorCode", I16, "0+"),
    F("ApiKeys", array(struct("ApiVersion",
        F("ApiKey", I16, "0+"), F("MinVersion", I16, "0+"), F("MaxVersion", I16, "0+"))), "0+"),
    F("ThrottleTimeMs", I32, "1+", ignorable=True),
    F("SupportedFeatures", array(struct("SupportedFeatureKey",
        F("Name", S, "3+"), F("MinVersion", I16, "3+"), F("MaxVersion", I16, "3+"))),
      "3+", tag=0, tagged="3+", ignorable=True),
    F("FinalizedFeaturesEpoch", I64, "3+", tag=1, tagged="3+", default=-1, ignorable=True),
    F("FinalizedFeatures", array(struct("FinalizedFeatureKey",
        F("Name", S, "3+"), F("MaxVersionLevel", I16, "3+"), F("MinVersionLevel", I16, "3+"))),
      "3+", tag=2, tagged="3+", ignorable=True),
    F("ZkMigrationReady", BOOL, "3+", tag=3, tagged="3+", default=False, ignorable=True),
)

# FindCoordinatorRequest.json / FindCoordinatorResponse.json (v4: batched keys, KIP-699)
FIND_COORDINATOR_REQUEST: Final = _msg(
    "FindCoordinatorRequest", ApiKey.FindCoordinator, "0-4", "3+",
    F("Key", S, "0-3"),
    F("KeyType", I8, "1+", default=0),
    F("CoordinatorKeys", array(S), "4+"),
)
FIND_COORDINATOR_RESPONSE: Final = _msg(
    "FindCoordinatorResponse", ApiKey.FindCoordinator, "0-4", "3+",
    F("ThrottleTimeMs", I32, "1+", ignorable=True),
    F("ErrorCode", I16, "0-3"),
    F("ErrorMessage", S, "1-3", nullable="1-3", ignorable=True),
    F("NodeId", I32, "0-3"),
    F("Host", S, "0-3"),
    F("Port", I32, "0-3"),
    F("Coordinators", array(struct("Coordinator",
        F("Key", S, "4+"), F("NodeId", I32, "4+"), F("Host", S, "4+"), F("Port", I32, "4+"),
        F("ErrorCode", I16, "4+"), F("ErrorMessage", S, "4+", nullable="4+", ignorable=True))), "4+"),
)
# Kafka 4's range (0-6): v5 (TRANSACTION_ABORTABLE, KIP-890) and v6 (share groups, KIP-932) add an
# error code and a key type, no field, so they read and write with v4's layout. Not in
# SUPPORTED_VERSIONS (the codec's group APIs are checked byte for byte there); observe rewrites the
# answers with it (observe/addresses.py).
FIND_COORDINATOR_REQUEST_KAFKA_4: Final = replace(FIND_COORDINATOR_REQUEST, valid=Versions(0, 6))
FIND_COORDINATOR_RESPONSE_KAFKA_4: Final = replace(FIND_COORDINATOR_RESPONSE, valid=Versions(0, 6))

# JoinGroupRequest.json / JoinGroupResponse.json
JOIN_GROUP_REQUEST: Final = _msg(
    "JoinGroupRequest", ApiKey.JoinGroup, "0-9", "6+",
    F("GroupId", S, "0+"),
    F("SessionTimeoutMs", I32, "0+"),
    F("RebalanceTimeoutMs", I32, "1+", default=-1, ignorable=True),
    F("MemberId", S, "0+"),
    F("GroupInstanceId", S, "5+", nullable="5+", default=None),
    F("ProtocolType", S, "0+"),
    F("Protocols", array(struct("JoinGroupRequestProtocol",
        F("Name", S, "0+"), F("Metadata", B, "0+"))), "0+"),
    F("Reason", S, "8+", nullable="8+", default=None, ignorable=True),
)
JOIN_GROUP_RESPONSE: Final = _msg(
    "JoinGroupResponse", ApiKey.JoinGroup, "0-9", "6+",
    F("ThrottleTimeMs", I32, "2+", ignorable=True),
    F("ErrorCode", I16, "0+"),
    F("GenerationId", I32, "0+", default=-1),
    F("ProtocolType", S, "7+", nullable="7+", default=None, ignorable=True),
    F("ProtocolName", S, "0+", nullable="7+"),
    F("Leader", S, "0+"),
    F("SkipAssignment", BOOL, "9+", default=False),
    F("MemberId", S, "0+"),
    F("Members", array(struct("JoinGroupResponseMember",
        F("MemberId", S, "0+"),
        F("GroupInstanceId", S, "5+", nullable="5+", default=None, ignorable=True),
        F("Metadata", B, "0+"))), "0+"),
)

# SyncGroupRequest.json / SyncGroupResponse.json
SYNC_GROUP_REQUEST: Final = _msg(
    "SyncGroupRequest", ApiKey.SyncGroup, "0-5", "4+",
    F("GroupId", S, "0+"),
    F("GenerationId", I32, "0+"),
    F("MemberId", S, "0+"),
    F("GroupInstanceId", S, "3+", nullable="3+", default=None),
    F("ProtocolType", S, "5+", nullable="5+", default=None, ignorable=True),
    F("ProtocolName", S, "5+", nullable="5+", default=None, ignorable=True),
    F("Assignments", array(struct("SyncGroupRequestAssignment",
        F("MemberId", S, "0+"), F("Assignment", B, "0+"))), "0+"),
)
SYNC_GROUP_RESPONSE: Final = _msg(
    "SyncGroupResponse", ApiKey.SyncGroup, "0-5", "4+",
    F("ThrottleTimeMs", I32, "1+", ignorable=True),
    F("ErrorCode", I16, "0+"),
    F("ProtocolType", S, "5+", nullable="5+", default=None, ignorable=True),
    F("ProtocolName", S, "5+", nullable="5+", default=None, ignorable=True),
    F("Assignment", B, "0+"),
)

# HeartbeatRequest.json / HeartbeatResponse.json
HEARTBEAT_REQUEST: Final = _msg(
    "HeartbeatRequest", ApiKey.Heartbeat, "0-4", "4+",
    F("GroupId", S, "0+"),
    F("GenerationId", I32, "0+"),
    F("MemberId", S, "0+"),
    F("GroupInstanceId", S, "3+", nullable="3+", default=None),
)
HEARTBEAT_RESPONSE: Final = _msg(
    "HeartbeatResponse", ApiKey.Heartbeat, "0-4", "4+",
    F("ThrottleTimeMs", I32, "1+", ignorable=True),
    F("ErrorCode", I16, "0+"),
)

# LeaveGroupRequest.json / LeaveGroupResponse.json (v3: batch of members, KIP-345)
LEAVE_GROUP_REQUEST: Final = _msg(
    "LeaveGroupRequest", ApiKey.LeaveGroup, "0-5", "4+",
    F("GroupId", S, "0+"),
    F("MemberId", S, "0-2"),
    F("Members", array(struct("MemberIdentity",
        F("MemberId", S, "3+"),
        F("GroupInstanceId", S, "3+", nullable="3+", default=None),
        F("Reason", S, "5+", nullable="5+", default=None, ignorable=True))), "3+"),
)
LEAVE_GROUP_RESPONSE: Final = _msg(
    "LeaveGroupResponse", ApiKey.LeaveGroup, "0-5", "4+",
    F("ThrottleTimeMs", I32, "1+", ignorable=True),
    F("ErrorCode", I16, "0+"),
    F("Members", array(struct("MemberResponse",
        F("MemberId", S, "3+"),
        F("GroupInstanceId", S, "3+", nullable="3+"),
        F("ErrorCode", I16, "3+"))), "3+"),
)

# OffsetCommitRequest.json / OffsetCommitResponse.json
OFFSET_COMMIT_REQUEST: Final = _msg(
    "OffsetCommitRequest", ApiKey.OffsetCommit, "2-9", "8+",
    F("GroupId", S, "0+"),
    F("GenerationIdOrMemberEpoch", I32, "1+", default=-1, ignorable=True),
    F("MemberId", S, "1+", ignorable=True),
    F("GroupInstanceId", S, "7+", nullable="7+", default=None),
    F("RetentionTimeMs", I64, "2-4", default=-1, ignorable=True),
    F("Topics", array(struct("OffsetCommitRequestTopic",
        F("Name", S, "0+"),
        F("Partitions", array(struct("OffsetCommitRequestPartition",
            F("PartitionIndex", I32, "0+"),
            F("CommittedOffset", I64, "0+"),
            F("CommittedLeaderEpoch", I32, "6+", default=-1, ignorable=True),
            F("CommittedMetadata", S, "0+", nullable="0+"))), "0+"))), "0+"),
)
OFFSET_COMMIT_RESPONSE: Final = _msg(
    "OffsetCommitResponse", ApiKey.OffsetCommit, "2-9", "8+",
    F("ThrottleTimeMs", I32, "3+", ignorable=True),
    F("Topics", array(struct("OffsetCommitResponseTopic",
        F("Name", S, "0+"),
        F("Partitions", array(struct("OffsetCommitResponsePartition",
            F("PartitionIndex", I32, "0+"), F("ErrorCode", I16, "0+"))), "0+"))), "0+"),
)

# OffsetFetchRequest.json / OffsetFetchResponse.json (v8: batch of groups, KIP-709)
OFFSET_FETCH_REQUEST: Final = _msg(
    "OffsetFetchRequest", ApiKey.OffsetFetch, "1-9", "6+",
    F("GroupId", S, "0-7"),
    F("Topics", array(struct("OffsetFetchRequestTopic",
        F("Name", S, "0-7"), F("PartitionIndexes", array(I32), "0-7"))), "0-7", nullable="2-7"),
    F("Groups", array(struct("OffsetFetchRequestGroup",
        F("GroupId", S, "8+"),
        F("MemberId", S, "9+", nullable="9+", default=None, ignorable=True),
        F("MemberEpoch", I32, "9+", default=-1, ignorable=True),
        F("Topics", array(struct("OffsetFetchRequestTopics",
            F("Name", S, "8+"), F("PartitionIndexes", array(I32), "8+"))), "8+", nullable="8+"))),
      "8+"),
    F("RequireStable", BOOL, "7+", default=False),
)
OFFSET_FETCH_RESPONSE: Final = _msg(
    "OffsetFetchResponse", ApiKey.OffsetFetch, "1-9", "6+",
    F("ThrottleTimeMs", I32, "3+", ignorable=True),
    F("Topics", array(struct("OffsetFetchResponseTopic",
        F("Name", S, "0-7"),
        F("Partitions", array(struct("OffsetFetchResponsePartition",
            F("PartitionIndex", I32, "0-7"),
            F("CommittedOffset", I64, "0-7"),
            F("CommittedLeaderEpoch", I32, "5-7", default=-1, ignorable=True),
            F("Metadata", S, "0-7", nullable="0-7"),
            F("ErrorCode", I16, "0-7"))), "0-7"))), "0-7"),
    F("ErrorCode", I16, "2-7", default=0, ignorable=True),
    F("Groups", array(struct("OffsetFetchResponseGroup",
        F("GroupId", S, "8+"),
        F("Topics", array(struct("OffsetFetchResponseTopics",
            F("Name", S, "8+"),
            F("Partitions", array(struct("OffsetFetchResponsePartitions",
                F("PartitionIndex", I32, "8+"),
                F("CommittedOffset", I64, "8+"),
                F("CommittedLeaderEpoch", I32, "8+", default=-1, ignorable=True),
                F("Metadata", S, "8+", nullable="8+"),
                F("ErrorCode", I16, "8+"))), "8+"))), "8+"),
        F("ErrorCode", I16, "8+", default=0))), "8+"),
)

# DescribeGroupsRequest.json / DescribeGroupsResponse.json
DESCRIBE_GROUPS_REQUEST: Final = _msg(
    "DescribeGroupsRequest", ApiKey.DescribeGroups, "0-5", "5+",
    F("Groups", array(S), "0+"),
    F("IncludeAuthorizedOperations", BOOL, "3+"),
)
DESCRIBE_GROUPS_RESPONSE: Final = _msg(
    "DescribeGroupsResponse", ApiKey.DescribeGroups, "0-5", "5+",
    F("ThrottleTimeMs", I32, "1+", ignorable=True),
    F("Groups", array(struct("DescribedGroup",
        F("ErrorCode", I16, "0+"),
        F("GroupId", S, "0+"),
        F("GroupState", S, "0+"),
        F("ProtocolType", S, "0+"),
        F("ProtocolData", S, "0+"),
        F("Members", array(struct("DescribedGroupMember",
            F("MemberId", S, "0+"),
            F("GroupInstanceId", S, "4+", nullable="4+", default=None, ignorable=True),
            F("ClientId", S, "0+"),
            F("ClientHost", S, "0+"),
            F("MemberMetadata", B, "0+"),
            F("MemberAssignment", B, "0+"))), "0+"),
        F("AuthorizedOperations", I32, "3+", default=-2147483648))), "0+"),
)

# ListGroupsRequest.json / ListGroupsResponse.json (v4: states filter, KIP-518; v5: types, KIP-848)
LIST_GROUPS_REQUEST: Final = _msg(
    "ListGroupsRequest", ApiKey.ListGroups, "0-5", "3+",
    F("StatesFilter", array(S), "4+"),
    F("TypesFilter", array(S), "5+"),
)
LIST_GROUPS_RESPONSE: Final = _msg(
    "ListGroupsResponse", ApiKey.ListGroups, "0-5", "3+",
    F("ThrottleTimeMs", I32, "1+", ignorable=True),
    F("ErrorCode", I16, "0+"),
    F("Groups", array(struct("ListedGroup",
        F("GroupId", S, "0+"),
        F("ProtocolType", S, "0+"),
        F("GroupState", S, "4+", ignorable=True),
        F("GroupType", S, "5+", ignorable=True))), "0+"),
)

# DeleteGroupsRequest.json / DeleteGroupsResponse.json
DELETE_GROUPS_REQUEST: Final = _msg(
    "DeleteGroupsRequest", ApiKey.DeleteGroups, "0-2", "2+",
    F("GroupsNames", array(S), "0+"),
)
DELETE_GROUPS_RESPONSE: Final = _msg(
    "DeleteGroupsResponse", ApiKey.DeleteGroups, "0-2", "2+",
    F("ThrottleTimeMs", I32, "0+"),
    F("Results", array(struct("DeletableGroupResult",
        F("GroupId", S, "0+"), F("ErrorCode", I16, "0+"))), "0+"),
)

# api key -> (request schema, response schema)
SCHEMAS: Final[dict[ApiKey, tuple[MessageSchema, MessageSchema]]] = {
    ApiKey.ApiVersions: (API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE),
    ApiKey.FindCoordinator: (FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE),
    ApiKey.JoinGroup: (JOIN_GROUP_REQUEST, JOIN_GROUP_RESPONSE),
    ApiKey.SyncGroup: (SYNC_GROUP_REQUEST, SYNC_GROUP_RESPONSE),
    ApiKey.Heartbeat: (HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE),
    ApiKey.LeaveGroup: (LEAVE_GROUP_REQUEST, LEAVE_GROUP_RESPONSE),
    ApiKey.OffsetCommit: (OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE),
    ApiKey.OffsetFetch: (OFFSET_FETCH_REQUEST, OFFSET_FETCH_RESPONSE),
    ApiKey.DescribeGroups: (DESCRIBE_GROUPS_REQUEST, DESCRIBE_GROUPS_RESPONSE),
    ApiKey.ListGroups: (LIST_GROUPS_REQUEST, LIST_GROUPS_RESPONSE),
    ApiKey.DeleteGroups: (DELETE_GROUPS_REQUEST, DELETE_GROUPS_RESPONSE),
}

SUPPORTED_VERSIONS: Final[dict[ApiKey, Versions]] = {k: req.valid for k, (req, _) in SCHEMAS.items()}

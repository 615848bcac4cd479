"""The data-plane APIs `groupspec serve` answers, as schemas, and their frames (sans-IO).

Not group APIs, so not in `model.vocabulary.ApiKey` nor in `wire.apis`; keyed here by Kafka's API
key number. Transcribed from Kafka's `clients/src/main/resources/common/message/*.json` (the copies
kafka-python 3 ships), keeping each JSON's field order, version ranges, nullable versions, tags,
defaults and `ignorable` flags. `valid` is the range served: Kafka 3.9's range cut where a version
would need what a one-broker, non-transactional, in-memory log does not have, and never above
Kafka 3.9's own maximum.

| API | key | served | Kafka 3.9 | flexible from | not served, why |
|---|---|---|---|---|---|
| Produce | 0 | 3-9 | 0-11 | 9 | v0-2: message formats v0/v1 (only record batches, magic 2, are stored); v10-11: leader-change hints (KIP-951) |
| Fetch | 1 | 4-12 | 0-17 | 12 | v0-3: message formats v0/v1; v13+: topic ids in place of names |
| ListOffsets | 2 | 1-7 | 0-9 | 6 | v0: the old offsets-before API; v8-9: tiered storage (KIP-405, KIP-1005) |
| Metadata | 3 | 0-12 | 0-12 | 9 | v13 (Kafka 4): above Kafka 3.9; its schema is here (`METADATA_RESPONSE_KAFKA_4`) for observe |
| CreateTopics | 19 | 2-7 | 0-7 | 5 | v0-1: absent from the message JSON kafka-python 3 ships |
| DeleteTopics | 20 | 1-6 | 0-6 | 4 | v0: absent from the message JSON kafka-python 3 ships |
| InitProducerId | 22 | 0-5 | 0-5 | 2 | |

Produce, Fetch: `Records` is Kafka's `records` type, a nullable byte string here (record batches are
parsed by `wire.records`, never by the schema interpreter).
"""

from __future__ import annotations

from dataclasses import replace
from enum import IntEnum
from typing import Final

from wire.schema import F, MessageSchema, Prim, Versions, array, struct

S, B, I8, I16, I32, I64, BOOL, UUID = (
    Prim.STRING, Prim.BYTES, Prim.INT8, Prim.INT16, Prim.INT32, Prim.INT64, Prim.BOOL, Prim.UUID,
)


class DataApi(IntEnum):
    """Kafka API keys (ApiKeys.java) of the data-plane requests served."""

    Produce = 0
    Fetch = 1
    ListOffsets = 2
    Metadata = 3
    CreateTopics = 19
    DeleteTopics = 20
    InitProducerId = 22


def _msg(name: str, key: DataApi, valid: str, flexible: str, *fields: object) -> MessageSchema:
    return MessageSchema(name, key.value, Versions.parse(valid), Versions.parse(flexible),
                         struct(name, *fields))  # type: ignore[arg-type]


# MetadataRequest.json / MetadataResponse.json
METADATA_REQUEST: Final = _msg(
    "MetadataRequest", DataApi.Metadata, "0-12", "9+",
    F("Topics", array(struct("MetadataRequestTopic",
        F("TopicId", UUID, "10+", ignorable=True),
        F("Name", S, "0+", nullable="10+"))), "0+", nullable="1+"),
    F("AllowAutoTopicCreation", BOOL, "4+", default=True),
    F("IncludeClusterAuthorizedOperations", BOOL, "8-10"),
    F("IncludeTopicAuthorizedOperations", BOOL, "8+"),
)
METADATA_RESPONSE: Final = _msg(
    "MetadataResponse", DataApi.Metadata, "0-12", "9+",
    F("ThrottleTimeMs", I32, "3+", ignorable=True),
    F("Brokers", array(struct("MetadataResponseBroker",
        F("NodeId", I32, "0+"), F("Host", S, "0+"), F("Port", I32, "0+"),
        F("Rack", S, "1+", nullable="1+", default=None, ignorable=True))), "0+"),
    F("ClusterId", S, "2+", nullable="2+", default=None, ignorable=True),
    F("ControllerId", I32, "1+", default=-1, ignorable=True),
    F("Topics", array(struct("MetadataResponseTopic",
        F("ErrorCode", I16, "0+"),
        F("Name", S, "0+", nullable="12+"),
        F("TopicId", UUID, "10+", ignorable=True),
        F("IsInternal", BOOL, "1+", default=False, ignorable=True),
        F("Partitions", array(struct("MetadataResponsePartition",
            F("ErrorCode", I16, "0+"), F("PartitionIndex", I32, "0+"), F("LeaderId", I32, "0+"),
            F("LeaderEpoch", I32, "7+", default=-1, ignorable=True),
            F("ReplicaNodes", array(I32), "0+"), F("IsrNodes", array(I32), "0+"),
            F("OfflineReplicas", array(I32), "5+", ignorable=True))), "0+"),
        F("TopicAuthorizedOperations", I32, "8+", default=-2147483648))), "0+"),
    F("ClusterAuthorizedOperations", I32, "8-10", default=-2147483648),
    F("ErrorCode", I16, "13+", default=0, ignorable=True),
)
# Kafka 4's range of Metadata (0-13: v13 adds the answer's top-level ErrorCode, KIP-1102; its
# request is v12's). Not served (serve stays within Kafka 3.9's 0-12): read and written by observe
# (observe/addresses.py), which rewrites the answers a Kafka 4 broker gives Kafka 4 clients.
METADATA_REQUEST_KAFKA_4: Final = replace(METADATA_REQUEST, valid=Versions(0, 13))
METADATA_RESPONSE_KAFKA_4: Final = replace(METADATA_RESPONSE, valid=Versions(0, 13))

# ProduceRequest.json / ProduceResponse.json
PRODUCE_REQUEST: Final = _msg(
    "ProduceRequest", DataApi.Produce, "3-9", "9+",
    F("TransactionalId", S, "3+", nullable="3+", default=None),
    F("Acks", I16, "0+"),
    F("TimeoutMs", I32, "0+"),
    F("TopicData", array(struct("TopicProduceData",
        F("Name", S, "0+"),
        F("PartitionData", array(struct("PartitionProduceData",
            F("Index", I32, "0+"),
            F("Records", B, "0+", nullable="0+"))), "0+"))), "0+"),
)
PRODUCE_RESPONSE: Final = _msg(
    "ProduceResponse", DataApi.Produce, "3-9", "9+",
    F("Responses", array(struct("TopicProduceResponse",
        F("Name", S, "0+"),
        F("PartitionResponses", array(struct("PartitionProduceResponse",
            F("Index", I32, "0+"),
            F("ErrorCode", I16, "0+"),
            F("BaseOffset", I64, "0+"),
            F("LogAppendTimeMs", I64, "2+", default=-1, ignorable=True),
            F("LogStartOffset", I64, "5+", default=-1, ignorable=True),
            F("RecordErrors", array(struct("BatchIndexAndErrorMessage",
                F("BatchIndex", I32, "8+"),
                F("BatchIndexErrorMessage", S, "8+", nullable="8+", default=None))), "8+", ignorable=True),
            F("ErrorMessage", S, "8+", nullable="8+", default=None, ignorable=True))), "0+"))), "0+"),
    F("ThrottleTimeMs", I32, "1+", default=0, ignorable=True),
)

# FetchRequest.json / FetchResponse.json
FETCH_REQUEST: Final = _msg(
    "FetchRequest", DataApi.Fetch, "4-12", "12+",
    F("ClusterId", S, "12+", nullable="12+", default=None, tag=0, tagged="12+", ignorable=True),
    F("ReplicaId", I32, "0+", default=-1),
    F("MaxWaitMs", I32, "0+"),
    F("MinBytes", I32, "0+"),
    F("MaxBytes", I32, "3+", default=0x7FFFFFFF, ignorable=True),
    F("IsolationLevel", I8, "4+", default=0, ignorable=True),
    F("SessionId", I32, "7+", default=0, ignorable=True),
    F("SessionEpoch", I32, "7+", default=-1, ignorable=True),
    F("Topics", array(struct("FetchTopic",
        F("Topic", S, "0+"),
        F("Partitions", array(struct("FetchPartition",
            F("Partition", I32, "0+"),
            F("CurrentLeaderEpoch", I32, "9+", default=-1, ignorable=True),
            F("FetchOffset", I64, "0+"),
            F("LastFetchedEpoch", I32, "12+", default=-1),
            F("LogStartOffset", I64, "5+", default=-1, ignorable=True),
            F("PartitionMaxBytes", I32, "0+"))), "0+"))), "0+"),
    F("ForgottenTopicsData", array(struct("ForgottenTopic",
        F("Topic", S, "7+"),
        F("Partitions", array(I32), "7+"))), "7+"),
    F("RackId", S, "11+", default="", ignorable=True),
)
FETCH_RESPONSE: Final = _msg(
    "FetchResponse", DataApi.Fetch, "4-12", "12+",
    F("ThrottleTimeMs", I32, "1+", ignorable=True),
    F("ErrorCode", I16, "7+", ignorable=True),
    F("SessionId", I32, "7+", default=0),
    F("Responses", array(struct("FetchableTopicResponse",
        F("Topic", S, "0+"),
        F("Partitions", array(struct("PartitionData",
            F("PartitionIndex", I32, "0+"),
            F("ErrorCode", I16, "0+"),
            F("HighWatermark", I64, "0+"),
            F("LastStableOffset", I64, "4+", default=-1, ignorable=True),
            F("LogStartOffset", I64, "5+", default=-1, ignorable=True),
            F("DivergingEpoch", struct("EpochEndOffset",
                F("Epoch", I32, "12+", default=-1), F("EndOffset", I64, "12+", default=-1)),
              "12+", tag=0, tagged="12+"),
            F("CurrentLeader", struct("LeaderIdAndEpoch",
                F("LeaderId", I32, "12+", default=-1), F("LeaderEpoch", I32, "12+", default=-1)),
              "12+", tag=1, tagged="12+"),
            F("AbortedTransactions", array(struct("AbortedTransaction",
                F("ProducerId", I64, "4+"), F("FirstOffset", I64, "4+"))),
              "4+", nullable="4+", ignorable=True),
            F("PreferredReadReplica", I32, "11+", default=-1),
            F("Records", B, "0+", nullable="0+"))), "0+"))), "0+"),
)

# ListOffsetsRequest.json / ListOffsetsResponse.json
LIST_OFFSETS_REQUEST: Final = _msg(
    "ListOffsetsRequest", DataApi.ListOffsets, "1-7", "6+",
    F("ReplicaId", I32, "0+"),
    F("IsolationLevel", I8, "2+"),
    F("Topics", array(struct("ListOffsetsTopic",
        F("Name", S, "0+"),
        F("Partitions", array(struct("ListOffsetsPartition",
            F("PartitionIndex", I32, "0+"),
            F("CurrentLeaderEpoch", I32, "4+", default=-1, ignorable=True),
            F("Timestamp", I64, "0+"))), "0+"))), "0+"),
)
LIST_OFFSETS_RESPONSE: Final = _msg(
    "ListOffsetsResponse", DataApi.ListOffsets, "1-7", "6+",
    F("ThrottleTimeMs", I32, "2+", ignorable=True),
    F("Topics", array(struct("ListOffsetsTopicResponse",
        F("Name", S, "0+"),
        F("Partitions", array(struct("ListOffsetsPartitionResponse",
            F("PartitionIndex", I32, "0+"),
            F("ErrorCode", I16, "0+"),
            F("Timestamp", I64, "1+", default=-1),
            F("Offset", I64, "1+", default=-1),
            F("LeaderEpoch", I32, "4+", default=-1))), "0+"))), "0+"),
)

# CreateTopicsRequest.json / CreateTopicsResponse.json
CREATE_TOPICS_REQUEST: Final = _msg(
    "CreateTopicsRequest", DataApi.CreateTopics, "2-7", "5+",
    F("Topics", array(struct("CreatableTopic",
        F("Name", S, "0+"),
        F("NumPartitions", I32, "0+"),
        F("ReplicationFactor", I16, "0+"),
        F("Assignments", array(struct("CreatableReplicaAssignment",
            F("PartitionIndex", I32, "0+"), F("BrokerIds", array(I32), "0+"))), "0+"),
        F("Configs", array(struct("CreatableTopicConfig",
            F("Name", S, "0+"), F("Value", S, "0+", nullable="0+"))), "0+"))), "0+"),
    F("TimeoutMs", I32, "0+", default=60000),
    F("ValidateOnly", BOOL, "1+", default=False),
)
CREATE_TOPICS_RESPONSE: Final = _msg(
    "CreateTopicsResponse", DataApi.CreateTopics, "2-7", "5+",
    F("ThrottleTimeMs", I32, "2+", ignorable=True),
    F("Topics", array(struct("CreatableTopicResult",
        F("Name", S, "0+"),
        F("TopicId", UUID, "7+", ignorable=True),
        F("ErrorCode", I16, "0+"),
        F("ErrorMessage", S, "1+", nullable="0+", default=None, ignorable=True),
        F("TopicConfigErrorCode", I16, "5+", tag=0, tagged="5+", ignorable=True),
        F("NumPartitions", I32, "5+", default=-1, ignorable=True),
        F("ReplicationFactor", I16, "5+", default=-1, ignorable=True),
        F("Configs", array(struct("CreatableTopicConfigs",
            F("Name", S, "5+"), F("Value", S, "5+", nullable="5+"), F("ReadOnly", BOOL, "5+"),
            F("ConfigSource", I8, "5+", default=-1, ignorable=True), F("IsSensitive", BOOL, "5+"))),
          "5+", nullable="5+", ignorable=True))), "0+"),
)

# DeleteTopicsRequest.json / DeleteTopicsResponse.json
DELETE_TOPICS_REQUEST: Final = _msg(
    "DeleteTopicsRequest", DataApi.DeleteTopics, "1-6", "4+",
    F("Topics", array(struct("DeleteTopicState",
        F("Name", S, "6+", nullable="6+", default=None), F("TopicId", UUID, "6+"))), "6+"),
    F("TopicNames", array(S), "0-5", ignorable=True),
    F("TimeoutMs", I32, "0+"),
)
DELETE_TOPICS_RESPONSE: Final = _msg(
    "DeleteTopicsResponse", DataApi.DeleteTopics, "1-6", "4+",
    F("ThrottleTimeMs", I32, "1+", ignorable=True),
    F("Responses", array(struct("DeletableTopicResult",
        F("Name", S, "0+", nullable="6+"),
        F("TopicId", UUID, "6+", ignorable=True),
        F("ErrorCode", I16, "0+"),
        F("ErrorMessage", S, "5+", nullable="5+", default=None, ignorable=True))), "0+"),
)

# InitProducerIdRequest.json / InitProducerIdResponse.json (idempotent producers: Kafka's clients
# enable idempotence by default and ask for a producer id before their first Produce)
INIT_PRODUCER_ID_REQUEST: Final = _msg(
    "InitProducerIdRequest", DataApi.InitProducerId, "0-5", "2+",
    F("TransactionalId", S, "0+", nullable="0+"),
    F("TransactionTimeoutMs", I32, "0+"),
    F("ProducerId", I64, "3+", default=-1),
    F("ProducerEpoch", I16, "3+", default=-1),
)
INIT_PRODUCER_ID_RESPONSE: Final = _msg(
    "InitProducerIdResponse", DataApi.InitProducerId, "0-5", "2+",
    F("ThrottleTimeMs", I32, "0+", ignorable=True),
    F("ErrorCode", I16, "0+"),
    F("ProducerId", I64, "0+", default=-1),
    F("ProducerEpoch", I16, "0+"),
)

# api key -> (request schema, response schema)
DATA_SCHEMAS: Final[dict[DataApi, tuple[MessageSchema, MessageSchema]]] = {
    DataApi.Produce: (PRODUCE_REQUEST, PRODUCE_RESPONSE),
    DataApi.Fetch: (FETCH_REQUEST, FETCH_RESPONSE),
    DataApi.ListOffsets: (LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE),
    DataApi.Metadata: (METADATA_REQUEST, METADATA_RESPONSE),
    DataApi.CreateTopics: (CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE),
    DataApi.DeleteTopics: (DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE),
    DataApi.InitProducerId: (INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE),
}
DATA_VERSIONS: Final[dict[DataApi, Versions]] = {k: req.valid for k, (req, _) in DATA_SCHEMAS.items()}

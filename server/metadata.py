"""Metadata (API key 3), v0-8: only what a client needs to bootstrap against a group-only broker.

Not a group API and not in wire/'s codec; real clients (kafka-python's KafkaConsumer and
KafkaAdminClient) send it right after ApiVersions and will not talk to a broker without it. The
answer: one broker (this one, node 0, also the controller), no topics: every requested topic is
UNKNOWN_TOPIC_OR_PARTITION (this broker has no partitions). A consumer can therefore join a group
and get an empty assignment, and never fetches. Versions 9+ (flexible, topic UUIDs) are not served.

Schemas transcribed from Kafka's MetadataRequest.json / MetadataResponse.json (fields of v0-8 only).
"""

from __future__ import annotations

from typing import Final, Optional

from wire.errors import DecodeError
from wire.primitives import Reader, Writer
from wire.schema import F, MessageSchema, Prim, Struct, Versions, array, decode, encode, struct

API_KEY: Final = 3
VERSIONS: Final = Versions(0, 8)
UNKNOWN_TOPIC_OR_PARTITION: Final = 3
CLUSTER_ID: Final = "groupspec-serve"

S, I16, I32, BOOL = Prim.STRING, Prim.INT16, Prim.INT32, Prim.BOOL

METADATA_REQUEST: Final = MessageSchema(
    "MetadataRequest", API_KEY, VERSIONS, Versions.parse("9+"), struct(
        "MetadataRequest",
        F("Topics", array(struct("MetadataRequestTopic", F("Name", S, "0+"))), "0+", nullable="1+"),
        F("AllowAutoTopicCreation", BOOL, "4+", default=True),
        F("IncludeClusterAuthorizedOperations", BOOL, "8-10"),
        F("IncludeTopicAuthorizedOperations", BOOL, "8+"),
    ))
METADATA_RESPONSE: Final = MessageSchema(
    "MetadataResponse", API_KEY, VERSIONS, Versions.parse("9+"), struct(
        "MetadataResponse",
        F("ThrottleTimeMs", I32, "3+", ignorable=True),
        F("Brokers", array(struct("MetadataResponseBroker",
            F("NodeId", I32, "0+"), F("Host", S, "0+"), F("Port", I32, "0+"),
            F("Rack", S, "1+", nullable="1+", default=None, ignorable=True))), "0+"),
        F("ClusterId", S, "2+", nullable="2+", default=None, ignorable=True),
        F("ControllerId", I32, "1+", default=-1, ignorable=True),
        F("Topics", array(struct("MetadataResponseTopic",
            F("ErrorCode", I16, "0+"),
            F("Name", S, "0+"),
            F("IsInternal", BOOL, "1+", default=False, ignorable=True),
            F("Partitions", array(struct("MetadataResponsePartition",
                F("ErrorCode", I16, "0+"), F("PartitionIndex", I32, "0+"), F("LeaderId", I32, "0+"),
                F("LeaderEpoch", I32, "7+", default=-1, ignorable=True),
                F("ReplicaNodes", array(I32), "0+"), F("IsrNodes", array(I32), "0+"),
                F("OfflineReplicas", array(I32), "5+", ignorable=True))), "0+"),
            F("TopicAuthorizedOperations", I32, "8+", default=-2147483648))), "0+"),
        F("ClusterAuthorizedOperations", I32, "8-10", default=-2147483648),
    ))


def is_metadata(payload: bytes) -> bool:
    return len(payload) >= 2 and int.from_bytes(payload[:2], "big", signed=True) == API_KEY


def answer(payload: bytes, node_id: int, host: str, port: int) -> bytes:
    """The response (header v0 + body, no size prefix) to one Metadata request; DecodeError if bad."""
    r = Reader(payload, "MetadataRequest", None)
    r.int16("request_api_key")
    version = r.int16("request_api_version")
    correlation_id = r.int32("correlation_id")
    r.version = version
    if version not in VERSIONS:
        raise DecodeError("MetadataRequest", version, 2, f"unsupported version (supported: {VERSIONS})")
    n = r.length(False, False, "RequestHeader.ClientId")
    if n != -1:
        r.text(n, "RequestHeader.ClientId")
    body = decode(METADATA_REQUEST, version, r)
    if r.remaining():
        raise r.fail(f"{r.remaining()} trailing bytes after the message")
    topics: Optional[list[Struct]] = body["topics"]
    names = [t["name"] for t in topics] if topics is not None else []
    w = Writer()
    w.int32(correlation_id)
    encode(METADATA_RESPONSE, version, {
        "brokers": [{"node_id": node_id, "host": host, "port": port, "rack": None}],
        "cluster_id": CLUSTER_ID,
        "controller_id": node_id,
        "topics": [{"error_code": UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": []} for name in names],
    }, w)
    return bytes(w.buf)

"""The data plane: Metadata, Produce, Fetch, ListOffsets, CreateTopics, DeleteTopics over server/log.py.

What a consumer group's members need besides the coordinator, answered the way one Kafka 3.9
broker (node 0, controller and leader of every partition, leader epoch 0) answers them. Nothing
here knows about groups. Bodies are wire/data_apis.py structs; `DataPlane.handle` gets a decoded
request and calls `answer(body)` once, maybe later (a long-polling Fetch), or `answer(None)` for a
request that has no response (Produce with acks=0).

Kafka's behaviour kept (KafkaApis, ReplicaManager, AutoTopicCreationManager, ZkAdminManager):

- Metadata: a null topic list (v1+; an empty one at v0) lists every topic. A missing topic is
  created when `auto_create` (auto.create.topics.enable) is on and the request allows it (v4+
  AllowAutoTopicCreation; always below v4), with `num_partitions` (num.partitions) partitions, and
  that answer says LEADER_NOT_AVAILABLE, as Kafka's does while a topic is being created; the next
  Metadata lists its partitions. An illegal name is INVALID_TOPIC_EXCEPTION, an unknown one
  UNKNOWN_TOPIC_OR_PARTITION (by id, v10+: UNKNOWN_TOPIC_ID).
- Produce: acks must be -1, 0 or 1 (INVALID_REQUIRED_ACKS); acks=0 gets no response; records that
  are not whole v2 batches are CORRUPT_MESSAGE; a missing topic or partition
  UNKNOWN_TOPIC_OR_PARTITION (Produce never creates topics).
- Fetch: sessionless (the answer's SessionId is 0, so clients send full fetches; a request naming a
  session gets FETCH_SESSION_ID_NOT_FOUND); an offset outside [log start, log end] is
  OFFSET_OUT_OF_RANGE; per-partition and total byte limits with the first batch always whole
  (KIP-74). Long-poll (DelayedFetch): answered at once if min_bytes are there, a partition has an
  error or max_wait_ms is 0; else when an append brings min_bytes, or after max_wait_ms with what
  there is.
- ListOffsets: -1 latest (the log end offset), -2 earliest (the log start offset), -3 (v7+) the
  batch with the largest timestamp, t >= 0 the first batch whose max timestamp is >= t.
- CreateTopics: num_partitions -1 means num.partitions; replication factor -1 or 1 (one broker);
  explicit assignments must name broker 0 only; duplicates in one request are INVALID_REQUEST;
  validate_only creates nothing. Topic configs are accepted and ignored.
- DeleteTopics: by name (v1-5) or name/id (v6); deletion wakes long-polling fetches of the topic.
- InitProducerId: a new producer id (epoch 0) for an idempotent producer; v3+ naming its current id
  and epoch gets the epoch bumped. A transactional id is COORDINATOR_NOT_AVAILABLE, as
  FindCoordinator answers for transactions: this broker runs no transaction coordinator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Final, Optional, Protocol

from wire import records
from wire.data_apis import DataApi
from wire.schema import Struct

from server.log import LEADER_EPOCH, Log, Topic, topic_name_problem

# Kafka error codes (Errors.java) the data plane answers with.
NONE: Final = 0
OFFSET_OUT_OF_RANGE: Final = 1
CORRUPT_MESSAGE: Final = 2
UNKNOWN_TOPIC_OR_PARTITION: Final = 3
LEADER_NOT_AVAILABLE: Final = 5
COORDINATOR_NOT_AVAILABLE: Final = 15
INVALID_TOPIC_EXCEPTION: Final = 17
INVALID_REQUIRED_ACKS: Final = 21
TOPIC_ALREADY_EXISTS: Final = 36
INVALID_PARTITIONS: Final = 37
INVALID_REPLICATION_FACTOR: Final = 38
INVALID_REPLICA_ASSIGNMENT: Final = 39
INVALID_REQUEST: Final = 42
FETCH_SESSION_ID_NOT_FOUND: Final = 70
UNKNOWN_TOPIC_ID: Final = 100

CLUSTER_ID: Final = "groupspec-serve"
NO_OPERATIONS: Final = -2147483648  # authorized operations not requested
DEFAULT_NUM_PARTITIONS: Final = 1  # num.partitions
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3

Answer = Callable[[Optional[Struct]], None]


class Cancellable(Protocol):
    def cancel(self) -> None: ...


Schedule = Callable[[float, Callable[[], None]], Cancellable]


@dataclass(frozen=True, slots=True)
class Broker:
    """Where this broker is, as Metadata describes it."""

    node_id: int
    host: str
    port: int


class DataPlane:
    """Serves the data-plane APIs over one Log; every call happens on the event-loop thread."""

    def __init__(self, log: Log, schedule: Schedule, *, auto_create: bool = True,
                 num_partitions: int = DEFAULT_NUM_PARTITIONS) -> None:
        self.log = log
        self.schedule = schedule
        self.auto_create = auto_create
        self.num_partitions = num_partitions
        self.parked_fetches = 0
        self.producer_epochs: dict[int, int] = {}

    def handle(self, api: DataApi, version: int, body: Struct, broker: Broker, answer: Answer) -> None:
        if api is DataApi.Metadata:
            answer(self.metadata(version, body, broker))
        elif api is DataApi.Produce:
            result = self.produce(body)
            answer(result if body["acks"] != 0 else None)
        elif api is DataApi.Fetch:
            self.fetch(body, answer)
        elif api is DataApi.ListOffsets:
            answer(self.list_offsets(version, body))
        elif api is DataApi.CreateTopics:
            answer(self.create_topics(version, body))
        elif api is DataApi.DeleteTopics:
            answer(self.delete_topics(version, body))
        else:
            answer(self.init_producer_id(body))

    def init_producer_id(self, body: Struct) -> Struct:
        if body["transactional_id"] is not None:
            return {"error_code": COORDINATOR_NOT_AVAILABLE, "producer_id": -1, "producer_epoch": -1}
        pid, epoch = body["producer_id"], body["producer_epoch"]
        if pid >= 0 and self.producer_epochs.get(pid) == epoch and epoch < 0x7FFF - 1:
            self.producer_epochs[pid] = epoch + 1
            return {"error_code": NONE, "producer_id": pid, "producer_epoch": epoch + 1}
        pid = len(self.producer_epochs)
        self.producer_epochs[pid] = 0
        return {"error_code": NONE, "producer_id": pid, "producer_epoch": 0}

    # ------------------------------------------------------------------ Metadata

    def metadata(self, version: int, body: Struct, broker: Broker) -> Struct:
        wanted: Optional[list[Struct]] = body["topics"]
        if wanted is None or (version == 0 and not wanted):
            topics = [self._topic_metadata(t) for t in sorted(self.log.topics.values(), key=lambda t: t.name)]
        else:
            allow = version < 4 or bool(body["allow_auto_topic_creation"])
            topics = [self._requested_metadata(w, allow) for w in wanted]
        return {"brokers": [{"node_id": broker.node_id, "host": broker.host, "port": broker.port, "rack": None}],
                "cluster_id": CLUSTER_ID, "controller_id": broker.node_id, "topics": topics}

    def _requested_metadata(self, wanted: Struct, allow_create: bool) -> Struct:
        name: Optional[str] = wanted["name"]
        if name is None:
            topic = self.log.by_id(wanted["topic_id"])
            if topic is None:
                return _missing_topic(None, UNKNOWN_TOPIC_ID, wanted["topic_id"])
            return self._topic_metadata(topic)
        topic = self.log.topics.get(name)
        if topic is not None:
            return self._topic_metadata(topic)
        if topic_name_problem(name) is not None:
            return _missing_topic(name, INVALID_TOPIC_EXCEPTION)
        if self.auto_create and allow_create:
            created = self.log.create(name, self.num_partitions)
            return _missing_topic(name, LEADER_NOT_AVAILABLE, created.topic_id)
        return _missing_topic(name, UNKNOWN_TOPIC_OR_PARTITION)

    @staticmethod
    def _topic_metadata(topic: Topic) -> Struct:
        return {"error_code": NONE, "name": topic.name, "topic_id": topic.topic_id, "is_internal": False,
                "partitions": [{"error_code": NONE, "partition_index": i, "leader_id": 0,
                                "leader_epoch": LEADER_EPOCH, "replica_nodes": [0], "isr_nodes": [0],
                                "offline_replicas": []} for i in range(len(topic.partitions))],
                "topic_authorized_operations": NO_OPERATIONS}

    # ------------------------------------------------------------------ Produce

    def produce(self, body: Struct) -> Struct:
        acks = body["acks"]
        out = []
        for topic in body["topic_data"]:
            parts = []
            for p in topic["partition_data"]:
                code, base, start = NONE, -1, -1
                part = self.log.partition(topic["name"], p["index"])
                if acks not in (-1, 0, 1):
                    code = INVALID_REQUIRED_ACKS
                elif part is None:
                    code = UNKNOWN_TOPIC_OR_PARTITION
                elif p["records"] is None:
                    code = CORRUPT_MESSAGE
                else:
                    try:
                        base = self.log.append(topic["name"], p["index"], p["records"])
                        start = part.log_start
                    except records.RecordsError:
                        code = CORRUPT_MESSAGE
                parts.append({"index": p["index"], "error_code": code, "base_offset": base,
                              "log_append_time_ms": -1, "log_start_offset": start, "record_errors": [],
                              "error_message": None})
            out.append({"name": topic["name"], "partition_responses": parts})
        return {"responses": out}

    # ------------------------------------------------------------------ Fetch (with DelayedFetch)

    def fetch(self, body: Struct, answer: Answer) -> None:
        if body["session_id"] != 0:
            answer({"error_code": FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": []})
            return
        response, size, errors = self._read(body)
        if size >= body["min_bytes"] or errors or body["max_wait_ms"] <= 0 or not body["topics"]:
            answer(response)
            return
        _ParkedFetch(self, body, answer).park()

    def _read(self, body: Struct) -> tuple[Struct, int, bool]:
        """(the response, bytes of records in it, whether some partition has an error)."""
        left = body["max_bytes"]
        size, errors = 0, False
        out = []
        for topic in body["topics"]:
            parts = []
            for p in topic["partitions"]:
                part = self.log.partition(topic["topic"], p["partition"])
                entry: dict[str, Any] = {"partition_index": p["partition"], "error_code": NONE,
                                         "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                                         "aborted_transactions": [] if body["isolation_level"] == 1 else None,
                                         "preferred_read_replica": -1, "records": b""}
                if part is None:
                    entry["error_code"] = UNKNOWN_TOPIC_OR_PARTITION
                elif not part.log_start <= p["fetch_offset"] <= part.log_end:
                    entry["error_code"] = OFFSET_OUT_OF_RANGE
                else:
                    limit = max(0, min(p["partition_max_bytes"], left))
                    data = part.read(p["fetch_offset"], limit, at_least_one=size == 0)
                    size += len(data)
                    left -= len(data)
                    entry["records"] = data
                if part is not None:
                    entry.update(high_watermark=part.log_end, last_stable_offset=part.log_end,
                                 log_start_offset=part.log_start)
                errors = errors or entry["error_code"] != NONE
                parts.append(entry)
            out.append({"topic": topic["topic"], "partitions": parts})
        return {"error_code": NONE, "session_id": 0, "responses": out}, size, errors

    # ------------------------------------------------------------------ ListOffsets

    def list_offsets(self, version: int, body: Struct) -> Struct:
        out = []
        for topic in body["topics"]:
            parts = []
            for p in topic["partitions"]:
                part = self.log.partition(topic["name"], p["partition_index"])
                entry = {"partition_index": p["partition_index"], "error_code": NONE, "timestamp": -1,
                         "offset": -1, "leader_epoch": LEADER_EPOCH if version >= 4 else -1}
                ts = p["timestamp"]
                if part is None:
                    entry.update(error_code=UNKNOWN_TOPIC_OR_PARTITION, leader_epoch=-1)
                elif ts == LATEST:
                    entry["offset"] = part.log_end
                elif ts == EARLIEST:
                    entry["offset"] = part.log_start
                elif ts == MAX_TIMESTAMP and version >= 7:
                    entry["offset"], entry["timestamp"] = part.max_timestamp()
                elif ts >= 0:
                    entry["offset"], entry["timestamp"] = part.offset_for_timestamp(ts)
                else:
                    entry["error_code"] = INVALID_REQUEST
                parts.append(entry)
            out.append({"name": topic["name"], "partitions": parts})
        return {"topics": out}

    # ------------------------------------------------------------------ CreateTopics, DeleteTopics

    def create_topics(self, version: int, body: Struct) -> Struct:
        names = [t["name"] for t in body["topics"]]
        out = []
        for t in body["topics"]:
            code, message, count = self._creatable(t, names.count(t["name"]) > 1)
            created = None
            if code == NONE and not body["validate_only"]:
                created = self.log.create(t["name"], count)
            out.append({"name": t["name"], "topic_id": created.topic_id if created else bytes(16),
                        "error_code": code, "error_message": message,
                        "num_partitions": count if code == NONE else -1,
                        "replication_factor": 1 if code == NONE else -1,
                        "configs": [] if code == NONE else None})
        return {"topics": out}

    def _creatable(self, t: Struct, duplicate: bool) -> tuple[int, Optional[str], int]:
        """(error code, message, partitions) for one CreatableTopic."""
        name, count, factor, assignments = t["name"], t["num_partitions"], t["replication_factor"], t["assignments"]
        if duplicate:
            return INVALID_REQUEST, f"topic {name!r} appears more than once in the request", -1
        problem = topic_name_problem(name)
        if problem is not None:
            return INVALID_TOPIC_EXCEPTION, problem, -1
        if name in self.log.topics:
            return TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", -1
        if assignments:
            if count != -1 or factor != -1:
                return INVALID_REQUEST, "both assignments and num_partitions/replication_factor are set", -1
            indexes = sorted(a["partition_index"] for a in assignments)
            if indexes != list(range(len(assignments))):
                return INVALID_REPLICA_ASSIGNMENT, "partitions must be numbered 0..n-1", -1
            if any(a["broker_ids"] != [0] for a in assignments):
                return INVALID_REPLICA_ASSIGNMENT, "the only broker is 0, with one replica per partition", -1
            return NONE, None, len(assignments)
        if count == -1:
            count = self.num_partitions
        if count < 1:
            return INVALID_PARTITIONS, "Number of partitions must be larger than 0.", -1
        if factor not in (-1, 1):
            return (INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {factor} time(s): the target "
                    "replication factor cannot be reached because only 1 broker(s) are registered.", -1)
        return NONE, None, count

    def delete_topics(self, version: int, body: Struct) -> Struct:
        wanted = ([(t["name"], t["topic_id"]) for t in body["topics"]] if version >= 6
                  else [(n, bytes(16)) for n in body["topic_names"]])
        out = []
        for name, topic_id in wanted:
            topic = self.log.topics.get(name) if name is not None else self.log.by_id(topic_id)
            code = NONE
            if topic is None:
                code = UNKNOWN_TOPIC_OR_PARTITION if name is not None else UNKNOWN_TOPIC_ID
            else:
                self.log.delete(topic.name)
            out.append({"name": topic.name if topic else name, "topic_id": topic.topic_id if topic else topic_id,
                        "error_code": code, "error_message": None})
        return {"responses": out}


def _missing_topic(name: Optional[str], code: int, topic_id: bytes = bytes(16)) -> Struct:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False, "partitions": [],
            "topic_authorized_operations": NO_OPERATIONS}


class _ParkedFetch:
    """A Fetch waiting for min_bytes (Kafka's DelayedFetch): woken by appends, ended by max_wait_ms."""

    def __init__(self, plane: DataPlane, body: Struct, answer: Answer) -> None:
        self.plane, self.body, self.answer = plane, body, answer
        self.partitions = [(t["topic"], p["partition"]) for t in body["topics"] for p in t["partitions"]]
        self.key = -1
        self.done = False
        self.timer: Optional[Cancellable] = None

    def park(self) -> None:
        self.plane.parked_fetches += 1
        self.timer = self.plane.schedule(self.body["max_wait_ms"] / 1000, self._expire)
        self.key = self.plane.log.wait(self.partitions, self._woken)

    def _woken(self) -> None:
        if self.done:
            return
        response, size, errors = self.plane._read(self.body)
        if size >= self.body["min_bytes"] or errors:
            self._finish(response)
        else:
            self.key = self.plane.log.wait(self.partitions, self._woken)

    def _expire(self) -> None:
        if not self.done:
            self._finish(self.plane._read(self.body)[0])

    def _finish(self, response: Struct) -> None:
        self.done = True
        self.plane.parked_fetches -= 1
        self.plane.log.cancel(self.key)
        if self.timer is not None:
            self.timer.cancel()
        self.answer(response)

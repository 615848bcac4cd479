"""The data plane over real sockets: Metadata, Produce, Fetch (long-poll), ListOffsets, CreateTopics,
DeleteTopics, InitProducerId. Requests are built by the project's codec (wire/data_apis.py); where a
check needs an independent reader, kafka-python's own protocol classes and record parser decode the
answer. Each behaviour has its negative control next to it (the error case, the wait that must not
end early)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any, Optional

import pytest

from served import raw_connect, read_frame

from model.coordinator_api import CoordinatorConfig
from server import ServerHandle, start_in_thread
from wire import codec
from wire.data_apis import DATA_SCHEMAS, DataApi
from wire.records import RecordsError, batches
from wire.schema import Struct, encode

_cids = iter(range(1, 10**6))


def call(sock: socket.socket, api: DataApi, version: int, body: Struct) -> Struct:
    request_schema, response_schema = DATA_SCHEMAS[api]
    cid = next(_cids)
    head = struct.pack(">hhih", api.value, version, cid, 4) + b"test"
    if request_schema.is_flexible(version):
        head += b"\x00"
    sock.sendall(codec.frame(head + encode(request_schema, version, body)))
    data = read_frame(sock)
    assert data is not None, f"{api.name} v{version}: the server closed the connection"
    from wire.primitives import Reader
    from wire.schema import decode

    r = Reader(data, response_schema.name, version)
    assert r.int32() == cid
    if response_schema.is_flexible(version):
        assert r.uvarint() == 0
    out = decode(response_schema, version, r)
    assert r.remaining() == 0
    return out


def batch(values: list[bytes], producer_id: int = -1, sequence: int = -1) -> bytes:
    """Whole v2 record batches, built and checksummed by kafka-python (an independent encoder)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                                        base_sequence=sequence, batch_size=1 << 20)
    for i, v in enumerate(values):
        builder.append(i, timestamp=1_000 + i, key=b"k%d" % i, value=v, headers=[])
    return bytes(builder.build())


def read_records(raw: bytes) -> list[tuple[int, Optional[bytes]]]:
    """(offset, value) of every record, read and CRC-checked by kafka-python's MemoryRecords."""
    from kafka.record import MemoryRecords

    out: list[tuple[int, Optional[bytes]]] = []
    records = MemoryRecords(raw)
    while True:
        b = records.next_batch()
        if b is None:
            return out
        assert b.validate_crc(), "a stored batch fails its CRC"
        out.extend((r.offset, r.value) for r in b)


def produce(sock: socket.socket, topic: str, partition: int, raw: bytes, version: int = 9,
            acks: int = -1) -> Struct:
    return call(sock, DataApi.Produce, version, {"transactional_id": None, "acks": acks, "timeout_ms": 5000,
                                                  "topic_data": [{"name": topic, "partition_data": [
                                                      {"index": partition, "records": raw}]}]})


def fetch_body(topic: str, partition: int, offset: int, *, max_wait_ms: int = 0, min_bytes: int = 1,
               max_bytes: int = 1 << 20) -> Struct:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": -1,
                                                        "fetch_offset": offset, "last_fetched_epoch": -1,
                                                        "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def part(response: Struct) -> Struct:
    p: Struct = response["responses"][0]["partitions"][0]
    return p


@pytest.fixture(scope="module")
def served() -> Iterator[ServerHandle]:
    with start_in_thread(CoordinatorConfig(), topics=[("t", 3), ("del", 1)]) as handle:
        yield handle


@pytest.fixture
def sock(served: ServerHandle) -> Iterator[socket.socket]:
    s = raw_connect(served.port, timeout_s=10)
    yield s
    s.close()


# ------------------------------------------------------------------ records (wire/records.py)


def test_batches_reads_headers_and_rejects_what_is_not_whole_v2_batches() -> None:
    raw = batch([b"a", b"b", b"c"]) + batch([b"d"])
    found = batches(raw)
    assert [(b.records_count, b.last_offset_delta, b.base_timestamp) for b in found] == [(3, 2, 1000), (1, 0, 1000)]
    with pytest.raises(RecordsError, match="does not fit"):
        batches(raw[:-1])
    with pytest.raises(RecordsError, match="magic"):
        batches(raw[:16] + b"\x01" + raw[17:])
    with pytest.raises(RecordsError, match="shorter than a batch header"):
        batches(raw[:30])


# ------------------------------------------------------------------ Produce, Fetch


def test_produce_assigns_offsets_and_fetch_returns_the_batches_with_valid_crcs(sock: socket.socket) -> None:
    first = produce(sock, "t", 0, batch([b"a", b"b", b"c"]))
    assert first["responses"][0]["partition_responses"][0]["error_code"] == 0
    base = first["responses"][0]["partition_responses"][0]["base_offset"]
    second = produce(sock, "t", 0, batch([b"d", b"e"]), version=3)  # non-flexible Produce too
    assert second["responses"][0]["partition_responses"][0]["base_offset"] == base + 3
    got = part(call(sock, DataApi.Fetch, 12, fetch_body("t", 0, base)))
    assert got["error_code"] == 0 and got["high_watermark"] == base + 5
    assert read_records(got["records"]) == [(base + i, v) for i, v in enumerate([b"a", b"b", b"c", b"d", b"e"])]
    # from the middle of a batch: the whole batch comes back, the client skips what it did not ask for
    mid = part(call(sock, DataApi.Fetch, 4, fetch_body("t", 0, base + 4)))
    assert [o for o, _ in read_records(mid["records"])] == [base + 3, base + 4]


def test_a_rewritten_byte_inside_the_crc_is_caught_by_the_client_parser() -> None:
    """Negative control for the CRC check used above: the client's parser does see a damaged batch."""
    raw = bytearray(batch([b"a"]))
    raw[-1] ^= 0xFF
    with pytest.raises(AssertionError, match="CRC"):
        read_records(bytes(raw))


def test_produce_errors(sock: socket.socket) -> None:
    assert produce(sock, "nope", 0, batch([b"a"]))["responses"][0]["partition_responses"][0]["error_code"] == 3
    assert produce(sock, "t", 7, batch([b"a"]))["responses"][0]["partition_responses"][0]["error_code"] == 3
    assert produce(sock, "t", 0, b"\x00" * 70)["responses"][0]["partition_responses"][0]["error_code"] == 2
    assert produce(sock, "t", 0, batch([b"a"]), acks=2)["responses"][0]["partition_responses"][0]["error_code"] == 21


def test_produce_with_acks_0_has_no_response_and_the_connection_reads_on(sock: socket.socket) -> None:
    request_schema = DATA_SCHEMAS[DataApi.Produce][0]
    body = {"transactional_id": None, "acks": 0, "timeout_ms": 5000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 1, "records": batch([b"z"])}]}]}
    sock.sendall(codec.frame(struct.pack(">hhih", 0, 8, 777, -1) + encode(request_schema, 8, body)))
    after = call(sock, DataApi.ListOffsets, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "t", "partitions": [{"partition_index": 1, "current_leader_epoch": -1, "timestamp": -1}]}]})
    assert after["topics"][0]["partitions"][0]["offset"] >= 1  # the acks=0 record was stored


def test_idempotent_retry_is_not_stored_twice(sock: socket.socket) -> None:
    pid = call(sock, DataApi.InitProducerId, 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                                 "producer_id": -1, "producer_epoch": -1})
    assert pid["error_code"] == 0 and pid["producer_id"] >= 0 and pid["producer_epoch"] == 0
    raw = batch([b"once"], producer_id=pid["producer_id"], sequence=0)
    first = produce(sock, "t", 2, raw)["responses"][0]["partition_responses"][0]["base_offset"]
    again = produce(sock, "t", 2, raw)["responses"][0]["partition_responses"][0]["base_offset"]
    assert again == first
    nxt = produce(sock, "t", 2, batch([b"next"], producer_id=pid["producer_id"], sequence=1))
    assert nxt["responses"][0]["partition_responses"][0]["base_offset"] == first + 1
    bumped = call(sock, DataApi.InitProducerId, 4, {"transaction_timeout_ms": 60000, "transactional_id": None,
                                                    "producer_id": pid["producer_id"], "producer_epoch": 0})
    assert (bumped["producer_id"], bumped["producer_epoch"]) == (pid["producer_id"], 1)
    txn = call(sock, DataApi.InitProducerId, 1, {"transactional_id": "tx", "transaction_timeout_ms": 60000})
    assert txn["error_code"] == 15  # COORDINATOR_NOT_AVAILABLE: no transaction coordinator


def test_fetch_errors(sock: socket.socket) -> None:
    assert part(call(sock, DataApi.Fetch, 12, fetch_body("nope", 0, 0)))["error_code"] == 3
    out_of_range = part(call(sock, DataApi.Fetch, 12, fetch_body("t", 1, 10**9, max_wait_ms=5000)))
    assert out_of_range["error_code"] == 1  # answered at once: an error does not wait
    session = call(sock, DataApi.Fetch, 12, {**fetch_body("t", 0, 0), "session_id": 5})
    assert session["error_code"] == 70 and session["session_id"] == 0


def _timed_fetch(port: int, body: Struct) -> tuple[float, Struct]:
    with raw_connect(port, timeout_s=20) as s:
        t0 = time.monotonic()
        got = call(s, DataApi.Fetch, 12, body)
        return time.monotonic() - t0, got


def test_fetch_waits_max_wait_ms_for_min_bytes(served: ServerHandle, sock: socket.socket) -> None:
    end = part(call(sock, DataApi.Fetch, 12, fetch_body("t", 1, 0)))["high_watermark"]
    waited, got = _timed_fetch(served.port, fetch_body("t", 1, end, max_wait_ms=600, min_bytes=1))
    assert 0.55 <= waited < 5 and part(got)["records"] == b""
    # negative control: with max_wait_ms 0 the same fetch returns at once
    waited, _ = _timed_fetch(served.port, fetch_body("t", 1, end, max_wait_ms=0, min_bytes=1))
    assert waited < 0.4


def test_a_produce_wakes_a_long_polling_fetch(served: ServerHandle, sock: socket.socket) -> None:
    end = part(call(sock, DataApi.Fetch, 12, fetch_body("t", 1, 0)))["high_watermark"]
    result: dict[str, Any] = {}
    poller = threading.Thread(target=lambda: result.update(
        zip(("waited", "got"), _timed_fetch(served.port, fetch_body("t", 1, end, max_wait_ms=10000)))))
    poller.start()
    time.sleep(0.3)
    assert served.call(lambda s: s.data.parked_fetches) == 1
    produce(sock, "t", 1, batch([b"wake"]))
    poller.join(15)
    assert result["waited"] < 5
    assert read_records(part(result["got"])["records"]) == [(end, b"wake")]
    assert served.call(lambda s: s.data.parked_fetches) == 0


def test_min_bytes_above_what_arrives_keeps_waiting_until_max_wait(served: ServerHandle, sock: socket.socket) -> None:
    end = part(call(sock, DataApi.Fetch, 12, fetch_body("t", 1, 0)))["high_watermark"]
    result: dict[str, Any] = {}
    poller = threading.Thread(target=lambda: result.update(zip(("waited", "got"), _timed_fetch(
        served.port, fetch_body("t", 1, end, max_wait_ms=1500, min_bytes=100_000)))))
    poller.start()
    time.sleep(0.2)
    produce(sock, "t", 1, batch([b"small"]))  # far below min_bytes: the fetch keeps waiting
    poller.join(15)
    assert result["waited"] >= 1.4
    assert read_records(part(result["got"])["records"]) == [(end, b"small")]


def test_max_bytes_cuts_after_the_first_batch(sock: socket.socket) -> None:
    produce(sock, "t", 0, batch([b"x" * 300]))
    produce(sock, "t", 0, batch([b"y" * 300]))
    start = part(call(sock, DataApi.Fetch, 12, fetch_body("t", 0, 0)))["log_start_offset"]
    whole = part(call(sock, DataApi.Fetch, 12, fetch_body("t", 0, start)))["records"]
    cut = part(call(sock, DataApi.Fetch, 12, fetch_body("t", 0, start, max_bytes=1)))["records"]
    assert len(batches(cut)) == 1 and len(batches(whole)) > 1  # KIP-74: one whole batch at least


# ------------------------------------------------------------------ ListOffsets


def test_list_offsets_earliest_latest_and_by_time(sock: socket.socket) -> None:
    produce(sock, "t", 2, batch([b"a", b"b"]))

    def lookup(timestamp: int, version: int = 7) -> Struct:
        got: Struct = call(sock, DataApi.ListOffsets, version, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t", "partitions": [{"partition_index": 2, "current_leader_epoch": -1,
                                          "timestamp": timestamp}]}]})["topics"][0]["partitions"][0]
        return got

    latest = part(call(sock, DataApi.Fetch, 12, fetch_body("t", 2, 0)))["high_watermark"]
    assert lookup(-1)["offset"] == latest and lookup(-2, version=1)["offset"] == 0
    assert lookup(-3)["timestamp"] == 1001  # the largest timestamp (the batches' records: 1000, 1001)
    assert lookup(1000)["offset"] == 0 and lookup(10**12)["offset"] == -1
    missing = call(sock, DataApi.ListOffsets, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "nope", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    assert missing["topics"][0]["partitions"][0]["error_code"] == 3


# ------------------------------------------------------------------ Metadata, auto-creation


@pytest.mark.parametrize("version", range(0, 13))
def test_metadata_at_every_version_lists_the_topics(sock: socket.socket, version: int) -> None:
    body: Struct = {"topics": [{"name": "t", "topic_id": bytes(16)}], "allow_auto_topic_creation": version < 4,
                    "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}
    got = call(sock, DataApi.Metadata, version, body)
    (topic,) = got["topics"]
    assert topic["name"] == "t" and topic["error_code"] == 0
    assert [p["partition_index"] for p in topic["partitions"]] == [0, 1, 2]
    assert got["brokers"][0]["node_id"] == 0 and all(p["leader_id"] == 0 for p in topic["partitions"])


def test_metadata_v12_as_kafka_python_decodes_it(served: ServerHandle) -> None:
    """An independent decoder (kafka-python's classes from Kafka's JSON) reads a flexible answer."""
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    request = MetadataRequest[12](topics=None, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False)
    request.with_header(correlation_id=5, client_id="kp")
    data = bytes(request.encode(header=True))
    with raw_connect(served.port) as s:
        s.sendall(struct.pack(">i", len(data)) + data)
        raw = read_frame(s)
    assert raw is not None
    decoded: Any = MetadataResponse.decode(raw, version=12, header=True)
    names = sorted(t.name for t in decoded.topics)
    assert "t" in names and "del" in names


def test_a_missing_topic_is_created_as_kafka_does_and_not_when_disallowed(sock: socket.socket) -> None:
    def ask(name: str, allow: bool, version: int = 12) -> Struct:
        got: Struct = call(sock, DataApi.Metadata, version, {
            "topics": [{"name": name, "topic_id": bytes(16)}], "allow_auto_topic_creation": allow or version < 4,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False})["topics"][0]
        return got

    assert ask("auto1", False)["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION: not allowed by the request
    assert ask("auto1", True)["error_code"] == 5  # LEADER_NOT_AVAILABLE while being created
    again = ask("auto1", False)
    assert again["error_code"] == 0 and len(again["partitions"]) == 1  # num.partitions
    assert ask("auto2", False, version=3)["error_code"] == 5  # below v4 a request always allows creation
    assert ask("bad/name", True)["error_code"] == 17  # INVALID_TOPIC_EXCEPTION


def test_auto_creation_off() -> None:
    with start_in_thread(auto_create_topics=False) as handle, raw_connect(handle.port) as s:
        got = call(s, DataApi.Metadata, 12, {"topics": [{"name": "x", "topic_id": bytes(16)}],
                                             "allow_auto_topic_creation": True,
                                             "include_cluster_authorized_operations": False,
                                             "include_topic_authorized_operations": False})
        assert got["topics"][0]["error_code"] == 3


# ------------------------------------------------------------------ CreateTopics, DeleteTopics


def _creatable(name: str, partitions: int = 2, factor: int = 1, assignments: Optional[list[Struct]] = None) -> Struct:
    return {"name": name, "num_partitions": partitions, "replication_factor": factor,
            "assignments": assignments or [], "configs": []}


def test_create_topics_and_its_errors(sock: socket.socket) -> None:
    got = call(sock, DataApi.CreateTopics, 7, {"topics": [
        _creatable("c1"), _creatable("t"), _creatable("c2", factor=3), _creatable("c3", partitions=0),
        _creatable("bad name"), _creatable("dup"), _creatable("dup"),
        _creatable("c4", -1, -1, [{"partition_index": 0, "broker_ids": [0]}, {"partition_index": 1, "broker_ids": [0]}]),
        _creatable("c5", -1, -1, [{"partition_index": 0, "broker_ids": [1]}])],
        "timeout_ms": 1000, "validate_only": False})
    codes = {t["name"]: t["error_code"] for t in got["topics"]}
    assert codes == {"c1": 0, "t": 36, "c2": 38, "c3": 37, "bad name": 17, "dup": 42, "c4": 0, "c5": 39}
    assert next(t for t in got["topics"] if t["name"] == "c1")["topic_id"] != bytes(16)
    dry = call(sock, DataApi.CreateTopics, 2, {"topics": [_creatable("dry")], "timeout_ms": 1000, "validate_only": True})
    assert dry["topics"][0]["error_code"] == 0
    listed = call(sock, DataApi.Metadata, 1, {"topics": None, "allow_auto_topic_creation": True,
                                              "include_cluster_authorized_operations": False,
                                              "include_topic_authorized_operations": False})
    partitions = {t["name"]: len(t["partitions"]) for t in listed["topics"]}
    assert partitions["c1"] == 2 and partitions["c4"] == 2 and "dry" not in partitions and "c2" not in partitions


def test_delete_topics_by_name_and_id_wakes_a_parked_fetch(served: ServerHandle, sock: socket.socket) -> None:
    result: dict[str, Any] = {}
    poller = threading.Thread(target=lambda: result.update(
        zip(("waited", "got"), _timed_fetch(served.port, fetch_body("del", 0, 0, max_wait_ms=10000)))))
    poller.start()
    time.sleep(0.3)
    got = call(sock, DataApi.DeleteTopics, 5, {"topic_names": ["del", "never"], "timeout_ms": 1000})
    assert [(r["name"], r["error_code"]) for r in got["responses"]] == [("del", 0), ("never", 3)]
    poller.join(15)
    assert result["waited"] < 5 and part(result["got"])["error_code"] == 3
    created = call(sock, DataApi.CreateTopics, 7, {"topics": [_creatable("byid")], "timeout_ms": 1000,
                                                   "validate_only": False})["topics"][0]["topic_id"]
    by_id = call(sock, DataApi.DeleteTopics, 6, {"topics": [{"name": None, "topic_id": created},
                                                            {"name": None, "topic_id": b"\x01" * 16}],
                                                 "timeout_ms": 1000})
    assert [(r["name"], r["error_code"]) for r in by_id["responses"]] == [("byid", 0), (None, 100)]

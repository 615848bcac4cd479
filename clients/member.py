"""One member of a consumer group, on a Python client: `python -m clients.member --client C ...`.

    python -m clients.member --client kafka-python|librdkafka --bootstrap 127.0.0.1:9092 \\
        --topic T --partitions 3 --group G --name m1 [--produce N] [--rate R] \\
        [--session-timeout-ms MS] [--heartbeat-interval-ms MS] [--instance-id ID]

It makes sure the topic exists (its client's admin API: CreateTopics; TOPIC_ALREADY_EXISTS is fine),
then runs one loop until SIGTERM: produce the records that are due (`--produce` records in all,
keys `NAME:i`, at `--rate` a second, acks=all), poll, print each record consumed, commit
synchronously what was consumed. The rebalance listener commits what it consumed of the partitions it
gives up before printing `revoked`, and prints `assigned` with the generation the client joined in.
On SIGTERM it closes the consumer (LeaveGroup) and the producer, prints `closed` and exits 0.
What the client library logs at warning level or above is printed as `client_log` events (kafka-python's
`kafka` loggers; librdkafka's log callback, delivered on the consumer's polls).
An error the client raises (or, for librdkafka, reports to its error callback) is printed as an
`error` event and the loop carries on, as an application that logs and retries does; a fatal one
(a static member fenced by another process with its instance id) ends the program with exit 1.
Events: clients/events.py. `--instance-id` sets group.instance.id (a static member; a restarted
static member gets a new name, so its record keys stay unique, and the same instance id).

kafka-python's generation: `KafkaConsumer.group_metadata().generation_id` (public since 3.0).
librdkafka's: confluent-kafka exposes no accessor, so it is read from the serialized consumer group
metadata (`rd_kafka_consumer_group_metadata_write`: b"CGMDv2:" then the int32 generation in native
byte order), which `Consumer.consumer_group_metadata()` returns.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import struct
import sys
import threading
import time
from typing import Any, Callable, Optional

from clients.events import Emitter

CLIENTS = ("kafka-python", "librdkafka")
POLL_S = 0.2
FATAL = 1  # the exit code after a fatal client error (the member stops without closing: it cannot)
VALUE = b"x" * 100  # 100-byte values


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m clients.member", description=__doc__.splitlines()[0])
    p.add_argument("--client", choices=CLIENTS, required=True, help="the client library")
    p.add_argument("--bootstrap", required=True, help="HOST:PORT of a broker")
    p.add_argument("--topic", required=True, help="the topic produced to and subscribed")
    p.add_argument("--partitions", type=int, default=3, help="partitions if the topic must be created")
    p.add_argument("--group", required=True, help="the consumer group id")
    p.add_argument("--name", required=True, help="this member's name: client id, record key prefix")
    p.add_argument("--produce", type=int, default=0, help="records to produce in all")
    p.add_argument("--rate", type=float, default=200.0, help="records produced a second")
    p.add_argument("--session-timeout-ms", type=int, default=10000, help="session.timeout.ms")
    p.add_argument("--heartbeat-interval-ms", type=int, default=1000, help="heartbeat.interval.ms")
    p.add_argument("--instance-id", default=None, help="group.instance.id: a static member")
    return p.parse_args(argv)


class LogEvents(logging.Handler):
    """The client library's warnings and errors as `client_log` events."""

    def __init__(self, member: "Member") -> None:
        super().__init__(logging.WARNING)
        self.member = member

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a library's malformed log call must not stop the member
            message = str(record.msg)
        self.member.emit("client_log", level=record.levelname, logger=record.name, message=message[:300])


def library_logger(m: "Member", name: str) -> logging.Logger:
    """A logger whose warnings and errors become `client_log` events (and nothing goes to stderr)."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    logger.addHandler(LogEvents(m))
    return logger


class Member:
    """What both Python clients share: the produce schedule, the uncommitted offsets, the stop flag."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.emit = Emitter(a.name)
        self.stop = threading.Event()
        self.generation = -1
        self.produced = 0
        self.start = time.monotonic()
        self.pending: dict[int, int] = {}  # partition -> next offset to commit (consumed, not committed)

    def due(self) -> int:
        """How many records to produce now to keep to the rate."""
        want: int = min(int(self.a.produce), int((time.monotonic() - self.start) * self.a.rate) + 1)
        return max(0, int(want) - self.produced)

    def next_key(self) -> str:
        key = f"{self.a.name}:{self.produced}"
        self.produced += 1
        return key

    def consumed(self, key: Optional[bytes], partition: int, offset: int, ts: int) -> None:
        self.emit("consumed", key=key.decode() if key is not None else None, partition=partition, offset=offset,
                  generation=self.generation, ts=ts)
        self.pending[partition] = offset + 1

    def error(self, what: str, exc: BaseException) -> None:
        """Print an error the client raised and carry on, as an application that logs and retries does."""
        self.emit("error", error=f"{what}: {type(exc).__name__}: {exc}")
        time.sleep(POLL_S)

    def commit(self, partitions: Optional[set[int]], do_commit: Callable[[dict[int, int]], None]) -> None:
        """Commit the pending offsets (of `partitions`, or all) synchronously and print the outcome."""
        offsets = {p: o for p, o in self.pending.items() if partitions is None or p in partitions}
        if not offsets:
            return
        sent = round(time.time(), 6)
        try:
            do_commit(offsets)
        except Exception as exc:  # noqa: BLE001 - a client's commit error is an outcome to print
            self.emit("commit_failed", error=f"{type(exc).__name__}: {exc}", generation=self.generation)
        else:
            for p, o in sorted(offsets.items()):
                self.emit("committed", partition=p, offset=o, generation=self.generation, sent=sent)
        for p in offsets:
            self.pending.pop(p, None)


# ------------------------------------------------------------------------------ kafka-python


def run_kafka_python(m: Member) -> int:
    import kafka
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
    from kafka.admin import NewTopic
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.errors import FencedInstanceIdError, KafkaError, TopicAlreadyExistsError

    a = m.a
    m.emit("started", client=f"kafka-python {kafka.__version__}")
    library_logger(m, "kafka")
    admin = KafkaAdminClient(bootstrap_servers=a.bootstrap, client_id=f"{a.name}-admin")
    try:
        admin.create_topics([NewTopic(a.topic, a.partitions, 1)])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=a.bootstrap, client_id=f"{a.name}-producer", acks="all")
    consumer = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, client_id=a.name,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             session_timeout_ms=a.session_timeout_ms,
                             heartbeat_interval_ms=a.heartbeat_interval_ms,
                             group_instance_id=a.instance_id)

    def commit(offsets: dict[int, int]) -> None:
        consumer.commit({TopicPartition(a.topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            parts = {tp.partition for tp in revoked}
            m.commit(parts, commit)
            m.emit("revoked", generation=m.generation, partitions=sorted(parts))

        def on_partitions_assigned(self, assigned: Any) -> None:
            meta = consumer.group_metadata()
            m.generation = meta.generation_id
            m.emit("assigned", generation=meta.generation_id, member_id=meta.member_id, instance_id=a.instance_id,
                   partitions=sorted(tp.partition for tp in assigned))

    def delivered(key: str) -> Callable[[Any], None]:
        return lambda md: m.emit("produced", key=key, partition=md.partition, offset=md.offset)

    consumer.subscribe([a.topic], listener=Listener())
    while not m.stop.is_set():
        for _ in range(m.due()):
            key = m.next_key()
            producer.send(a.topic, key=key.encode(), value=VALUE).add_callback(delivered(key)).add_errback(
                lambda exc: m.emit("error", error=f"produce: {exc}"))
        try:
            polled = consumer.poll(timeout_ms=int(POLL_S * 1000))
        except FencedInstanceIdError as exc:  # fatal: another process took this static member's place
            m.emit("error", error=f"poll: fatal: {type(exc).__name__}: {exc}")
            return FATAL
        except KafkaError as exc:
            m.error("poll", exc)
            continue
        for tp, batch in polled.items():
            for record in batch:
                m.consumed(record.key, tp.partition, record.offset, record.timestamp)
        m.commit(None, commit)
    consumer.close()  # LeaveGroup (dynamic members)
    producer.flush(10)
    producer.close(10)
    m.emit("closed")
    return 0


# ------------------------------------------------------------------------------ librdkafka


def _rdkafka_generation(cgmd: Any) -> int:
    """The generation id in librdkafka's serialized consumer group metadata (b"CGMDv2:" + int32)."""
    if isinstance(cgmd, bytes) and cgmd.startswith(b"CGMDv2:") and len(cgmd) >= 11:
        return int(struct.unpack_from("=i", cgmd, 7)[0])
    return -1


def run_librdkafka(m: Member) -> int:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    a = m.a
    m.emit("started", client=f"librdkafka {ck.libversion()[0]} (confluent-kafka {ck.version()[0]})")
    admin = AdminClient({"bootstrap.servers": a.bootstrap, "client.id": f"{a.name}-admin"})
    for future in admin.create_topics([NewTopic(a.topic, a.partitions, 1)]).values():
        try:
            future.result(30)
        except ck.KafkaException as exc:
            if exc.args[0].code() != ck.KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    producer = ck.Producer({"bootstrap.servers": a.bootstrap, "client.id": f"{a.name}-producer", "acks": "all"})
    fatal = threading.Event()

    def on_error(err: Any) -> None:  # the consumer's errors outside poll (its background threads)
        m.emit("error", error=f"{'fatal: ' if err.fatal() else ''}{err.name()}: {err.str()}")
        if err.fatal():
            fatal.set()

    settings: dict[str, Any] = {"bootstrap.servers": a.bootstrap, "group.id": a.group, "client.id": a.name,
                "enable.auto.commit": False, "auto.offset.reset": "earliest",
                "session.timeout.ms": a.session_timeout_ms, "heartbeat.interval.ms": a.heartbeat_interval_ms,
                "error_cb": on_error, "logger": library_logger(m, "librdkafka")}
    if a.instance_id is not None:
        settings["group.instance.id"] = a.instance_id
    consumer = ck.Consumer(settings)

    def commit(offsets: dict[int, int]) -> None:
        result = consumer.commit(offsets=[ck.TopicPartition(a.topic, p, o) for p, o in offsets.items()],
                                 asynchronous=False)
        failed = [tp for tp in result or [] if tp.error is not None]
        if failed:
            raise RuntimeError(f"commit failed for {failed}")

    def on_assign(c: Any, parts: list[Any]) -> None:
        m.generation = _rdkafka_generation(c.consumer_group_metadata())
        m.emit("assigned", generation=m.generation, member_id=c.memberid() or "", instance_id=a.instance_id,
               partitions=sorted(tp.partition for tp in parts))

    def on_revoke(c: Any, parts: list[Any]) -> None:
        revoked = {tp.partition for tp in parts}
        m.commit(revoked, commit)
        m.emit("revoked", generation=m.generation, partitions=sorted(revoked))

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            m.emit("error", error=f"produce: {err}")
        else:
            m.emit("produced", key=msg.key().decode(), partition=msg.partition(), offset=msg.offset())

    consumer.subscribe([a.topic], on_assign=on_assign, on_revoke=on_revoke)
    while not m.stop.is_set():
        if fatal.is_set():  # e.g. a static member fenced by another process with its instance id
            return FATAL
        for _ in range(m.due()):
            producer.produce(a.topic, key=m.next_key().encode(), value=VALUE, on_delivery=delivered)
        producer.poll(0)
        first = consumer.poll(POLL_S)  # returns as soon as a record is there (consume(n) would wait for n)
        for msg in ([first, *consumer.consume(num_messages=499, timeout=0)] if first is not None else []):
            error = msg.error()
            if error is not None:
                if error.code() != ck.KafkaError._PARTITION_EOF:
                    m.emit("error", error=str(error))
                continue
            partition, offset, key = msg.partition(), msg.offset(), msg.key()
            assert partition is not None and offset is not None
            m.consumed(key if isinstance(key, bytes) else None, partition, offset, msg.timestamp()[1])
        m.commit(None, commit)
    consumer.close()  # revokes (on_revoke commits), then LeaveGroup
    producer.flush(10)
    m.emit("closed")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    a = parse_args(argv)
    member = Member(a)
    signal.signal(signal.SIGTERM, lambda signum, frame: member.stop.set())
    signal.signal(signal.SIGINT, lambda signum, frame: member.stop.set())
    code = {"kafka-python": run_kafka_python, "librdkafka": run_librdkafka}[a.client](member)
    if code == FATAL:  # the client's threads may still be retrying: do not wait for them
        sys.stdout.flush()
        os._exit(FATAL)
    return code


if __name__ == "__main__":
    sys.exit(main())

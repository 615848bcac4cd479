"""The data plane's storage: topics, partitions and a small in-memory log per partition.

Plumbing only: no group or coordinator behaviour lives here (the coordinator, reference/, knows
nothing of it and it knows nothing of groups). One broker, one replica, so the high watermark is
the log end offset and every append is committed at once.

A partition's log is a list of record batches stored as received, except that each batch's
`baseOffset` is set to the next offset and its `partitionLeaderEpoch` to the leader epoch (0):
both lie outside the CRC (wire/records.py), as in Kafka's LogValidator. Offsets of a batch are
base .. base + lastOffsetDelta. Retention (Kafka's `retention.bytes`): when a partition holds more
than `retention_bytes`, its oldest batches are dropped and the log start offset moves past them.

Idempotent producers (a batch with a producer id >= 0): a batch whose (producer id, epoch, base
sequence) is one of the last five appended for that producer on this partition is a retry of it,
not stored again; its first offset is answered again (Kafka's ProducerStateManager keeps the same
five). Sequence gaps are not checked.

Topic names follow Kafka's Topic.validate: 1-249 characters of [a-zA-Z0-9._-], not "." or "..".
Waiters: `wait(partitions, callback)` registers a one-shot callback called after the next append to
any of those partitions (or their topic's deletion); Fetch's long-poll uses it.
"""

from __future__ import annotations

import bisect
import re
import uuid
from dataclasses import dataclass, field
from typing import Callable, Final, Iterable, Optional

from wire import records

LEADER_EPOCH: Final = 0
MAX_TOPIC_NAME: Final = 249
_LEGAL: Final = re.compile(r"[a-zA-Z0-9._-]+\Z")
DEFAULT_RETENTION_BYTES: Final = 64 * 1024 * 1024

TopicPartition = tuple[str, int]


def topic_name_problem(name: str) -> Optional[str]:
    """Why `name` is not a legal topic name (Kafka's Topic.validate), or None."""
    if not name:
        return "the topic name is empty"
    if name in (".", ".."):
        return f"topic name {name!r} is illegal"
    if len(name) > MAX_TOPIC_NAME:
        return f"topic name is longer than {MAX_TOPIC_NAME} characters"
    if not _LEGAL.match(name):
        return f"topic name {name!r} has characters outside [a-zA-Z0-9._-]"
    return None


@dataclass(slots=True)
class PartitionLog:
    """One partition: batches in offset order, each (base offset, last offset, bytes, max timestamp)."""

    retention_bytes: int = DEFAULT_RETENTION_BYTES
    bases: list[int] = field(default_factory=list)
    lasts: list[int] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)
    max_timestamps: list[int] = field(default_factory=list)
    log_start: int = 0
    log_end: int = 0  # the next offset; the high watermark (one replica)
    size: int = 0
    producers: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)  # id -> (epoch, seq, offset)

    def append(self, raw: bytes) -> int:
        """Store every batch of `raw` (RecordsError if it is not whole v2 batches); the first offset."""
        found = records.batches(raw)
        if not found:
            raise records.RecordsError("no record batch in the produced records")
        first = self.log_end
        for n, batch in enumerate(found):
            if batch.producer_id >= 0:
                recent = self.producers.setdefault(batch.producer_id, [])
                seen = next((off for ep, seq, off in recent
                             if (ep, seq) == (batch.producer_epoch, batch.base_sequence)), None)
                if seen is not None:  # a retry of a batch already stored
                    if n == 0:
                        first = seen
                    continue
                recent.append((batch.producer_epoch, batch.base_sequence, self.log_end))
                del recent[:-5]
            base = self.log_end
            self.bases.append(base)
            self.lasts.append(base + batch.last_offset_delta)
            self.data.append(records.rebase(raw, batch, base, LEADER_EPOCH))
            self.max_timestamps.append(batch.max_timestamp)
            self.log_end = base + batch.last_offset_delta + 1
            self.size += batch.size
        while self.size > self.retention_bytes and len(self.data) > 1:
            self.size -= len(self.data[0])
            for column in (self.bases, self.lasts, self.data, self.max_timestamps):
                del column[0]
            self.log_start = self.bases[0]
        return first

    def read(self, offset: int, max_bytes: int, at_least_one: bool) -> bytes:
        """Whole batches from the one holding `offset`, up to `max_bytes` (at least one batch when
        `at_least_one`, as KIP-74 asks so that a batch larger than the limit still gets through)."""
        i = bisect.bisect_right(self.lasts, offset - 1)  # first batch whose last offset >= offset
        out = bytearray()
        while i < len(self.data):
            chunk = self.data[i]
            if out or not at_least_one:
                if len(out) + len(chunk) > max_bytes:
                    break
            out += chunk
            i += 1
        return bytes(out)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int]:
        """(offset, timestamp) of the first batch whose max timestamp is >= `timestamp`: the batch's
        base offset and max timestamp (records are not parsed, so this is batch-granular), or
        (-1, -1) if none."""
        for base, max_ts in zip(self.bases, self.max_timestamps):
            if max_ts >= timestamp:
                return base, max_ts
        return -1, -1

    def max_timestamp(self) -> tuple[int, int]:
        """(offset, timestamp) of the batch with the largest timestamp (ListOffsets -3), or (-1, -1)."""
        best = (-1, -1)
        for base, max_ts in zip(self.bases, self.max_timestamps):
            if max_ts > best[1]:
                best = (base, max_ts)
        return best


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: bytes
    partitions: list[PartitionLog]


class Log:
    """Every topic of the broker."""

    def __init__(self, retention_bytes: int = DEFAULT_RETENTION_BYTES) -> None:
        self.topics: dict[str, Topic] = {}
        self.retention_bytes = retention_bytes
        self._waiters: dict[TopicPartition, set[int]] = {}
        self._callbacks: dict[int, tuple[Callable[[], None], tuple[TopicPartition, ...]]] = {}
        self._next_waiter = 0

    def create(self, name: str, partitions: int) -> Topic:
        """A new topic (ValueError if the name is illegal, taken, or partitions < 1)."""
        problem = topic_name_problem(name)
        if problem is not None:
            raise ValueError(problem)
        if name in self.topics:
            raise ValueError(f"topic {name!r} already exists")
        if partitions < 1:
            raise ValueError(f"a topic needs at least one partition, got {partitions}")
        topic = Topic(name, uuid.uuid4().bytes, [PartitionLog(self.retention_bytes) for _ in range(partitions)])
        self.topics[name] = topic
        return topic

    def delete(self, name: str) -> Topic:
        topic = self.topics.pop(name)
        self._wake((name, p) for p in range(len(topic.partitions)))
        return topic

    def by_id(self, topic_id: bytes) -> Optional[Topic]:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def partition(self, name: str, index: int) -> Optional[PartitionLog]:
        topic = self.topics.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def append(self, name: str, index: int, raw: bytes) -> int:
        part = self.partition(name, index)
        if part is None:
            raise KeyError((name, index))
        first = part.append(raw)
        self._wake([(name, index)])
        return first

    # long-poll waiters

    def wait(self, partitions: Iterable[TopicPartition], callback: Callable[[], None]) -> int:
        """Call `callback` once, after the next append to one of `partitions`; returns a key for `cancel`."""
        key = self._next_waiter
        self._next_waiter += 1
        tps = tuple(partitions)
        self._callbacks[key] = (callback, tps)
        for tp in tps:
            self._waiters.setdefault(tp, set()).add(key)
        return key

    def cancel(self, key: int) -> None:
        entry = self._callbacks.pop(key, None)
        if entry is None:
            return
        for tp in entry[1]:
            keys = self._waiters.get(tp)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._waiters[tp]

    def waiting(self) -> int:
        return len(self._callbacks)

    def _wake(self, partitions: Iterable[TopicPartition]) -> None:
        due: set[int] = set()
        for tp in partitions:
            due |= self._waiters.get(tp, set())
        for key in sorted(due):
            entry = self._callbacks.get(key)
            if entry is not None:
                self.cancel(key)
                entry[0]()

"""Record batches (message format v2, magic 2): the header fields a broker reads and rewrites.

The layout (DefaultRecordBatch.java), offsets in bytes:

    0 baseOffset int64 | 8 batchLength int32 | 12 partitionLeaderEpoch int32 | 16 magic int8 |
    17 crc uint32 | 21 attributes int16 | 23 lastOffsetDelta int32 | 27 baseTimestamp int64 |
    35 maxTimestamp int64 | 43 producerId int64 | 51 producerEpoch int16 | 55 baseSequence int32 |
    57 recordsCount int32 | 61 records...

`batchLength` counts the bytes after itself (the whole batch is batchLength + 12 bytes). The CRC-32C
covers the bytes from `attributes` to the end of the batch, so a broker may rewrite `baseOffset` and
`partitionLeaderEpoch` (as Kafka's LogValidator does on append) and every client's CRC check still
passes. The records themselves are never parsed (they may be compressed).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

HEADER_BYTES: Final = 61
MAGIC: Final = 2
CRC_START: Final = 21  # first byte the CRC covers
_HEAD: Final = struct.Struct(">qiibIhiqqqhii")


class RecordsError(ValueError):
    """Bytes that are not a sequence of whole v2 record batches (Kafka: CORRUPT_MESSAGE)."""


@dataclass(frozen=True, slots=True)
class Batch:
    """One batch's header fields, and where it lies in the buffer it was read from."""

    start: int
    size: int  # whole batch, header included
    base_offset: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    records_count: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1


def batches(data: bytes) -> list[Batch]:
    """Every batch of `data`, which must hold whole v2 batches only (RecordsError otherwise)."""
    out: list[Batch] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < HEADER_BYTES:
            raise RecordsError(f"{len(data) - pos} bytes at {pos}: shorter than a batch header ({HEADER_BYTES})")
        (base, length, _epoch, magic, _crc, _attrs, delta, first_ts, max_ts,
         pid, pepoch, seq, count) = _HEAD.unpack_from(data, pos)
        size = length + 12
        if magic != MAGIC:
            raise RecordsError(f"batch at {pos}: magic {magic}, only record batches (magic 2) are stored")
        if size < HEADER_BYTES or pos + size > len(data):
            raise RecordsError(f"batch at {pos}: batchLength {length} does not fit the {len(data) - pos} bytes left")
        if count < 0 or delta < 0 or (count > 0 and delta < count - 1):
            raise RecordsError(f"batch at {pos}: {count} records but lastOffsetDelta {delta}")
        out.append(Batch(pos, size, base, delta, first_ts, max_ts, count, pid, pepoch, seq))
        pos += size
    return out


def rebase(data: bytes, batch: Batch, base_offset: int, leader_epoch: int) -> bytes:
    """The batch's bytes with `baseOffset` and `partitionLeaderEpoch` rewritten (outside the CRC)."""
    raw = bytearray(data[batch.start : batch.start + batch.size])
    struct.pack_into(">q", raw, 0, base_offset)
    struct.pack_into(">i", raw, 12, leader_epoch)
    return bytes(raw)

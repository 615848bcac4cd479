"""The same pipeline as the Spark job in one Python process (tests, benchmarks, `replay --local`).

Memory does not grow with the input, by one of two paths (`stream_local`):

- **clustered** (traces, tried first): input that is already clustered by group (each group's rows
  together across the whole input, in stage 2's order `sort_columns`; `traces generate` writes
  it so) goes from stage 1 straight to stage 2, batch by batch. `GroupOrder` checks the order on
  the fly: a good row of a group that was already closed (another group came after it), a seq
  lower than the one before it in its group, or a reject of a closed group breaks it. Inside each
  batch the rejects go to stage 2 before the good rows (as the spill path sends them all first),
  so stage 2 has seen every reject of a group before it judges the group. The set of closed group
  ids is the only state that grows: O(groups), not O(events).
- **sorted** (broker logs, which interleave groups by nature; and traces whose order breaks): an
  external sort by group. The rows that pass stage 1 go to spill files on disk, one per bucket of
  groups (a group's rows all land in the bucket its id hashes to), while rejects and ignored-line
  counts go straight to stage 2. Then each bucket alone is read back, sorted by (group, order) and
  judged. A bucket holds about `SPILL_BUCKET_BYTES` of input, so the largest thing in memory is
  one bucket, whatever the input's size.

When the clustered path meets the first row out of order, everything it emitted is discarded (the
caller's `discard`; `replay` truncates the files of its unpublished output) and the run starts
again on the sorted path, saying once on stderr where the order broke. Both paths give the same
output rows (in another order) and counts. The check needs no look-ahead: input that is not
clustered breaks within its first chunk; the worst case, input whose order breaks near its end,
costs up to twice the time.

The input rows (`Counts.rows`) are counted as stage 1 reads them (`ReadCount`: newlines in the
bytes read, Parquet files' record counts from their metadata), apart from what stage 1 makes of
them, so rows = replayed + rejected + ignored still checks that no row was lost.
Output rows go to the caller as they are made (`stream_local`); `run_local` collects them for
tests and small inputs.
"""

from __future__ import annotations

import functools
import math
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Final, Generator, Iterator, Optional

from traces.batch import native_stager, stage_json_lines, stage_parsed, stage_records, staged_schema
from traces.inputs import Inputs
from traces.logcheck import Edges, default_edges
from traces.pipeline import (
    LOG,
    TRACE,
    PartitionJudge,
    Row,
    sort_columns,
    validate_json_line,
    validate_log_line,
    validate_record,
)
from traces.replay import CLUSTER_STATUS, INCOMPLETE, VIOLATION, ModelFactory, default_model_factory
from traces.schema import COLUMNS
from traces.summary import Counts

BATCH_ROWS = 8192  # rows per staged batch, as in the Spark job
NATIVE_CHUNK_BYTES = 4 << 20  # bytes of whole lines per chunk the native parser reads (~14 k trace rows)
SPILL_BUCKET_BYTES = 64 << 20  # input bytes per spill bucket (one bucket is in memory at a time)
MAX_BUCKETS = 1024  # spill files open at once, at most
_FLUSH_ROWS = 4096  # rows a bucket gathers in memory before they are appended to its spill file

Emit = Callable[[str, Row], None]  # (output table: "verdict" | "reject", row)
CLUSTERED: Final = "clustered"  # the paths of `stream_local` (summary.json `local_path`)
SORTED: Final = "sorted"


@dataclass(slots=True)
class LocalResult:
    counts: Counts
    verdicts: list[Row] = field(default_factory=list)
    rejects: list[Row] = field(default_factory=list)
    coverage: dict[str, int] = field(default_factory=dict)
    path: str = ""  # the path `stream_local` took: CLUSTERED or SORTED


@dataclass(slots=True)
class ReadCount:
    """Input rows counted while stage 1 reads them (lines of text files: the newlines in the bytes
    read, plus a last line without one; records of Parquet files: their metadata), never from what
    stage 1 makes of them."""

    rows: int = 0


# --- stage 1, streamed -------------------------------------------------------------------------


def _jsonl_batches(path: str, count: ReadCount) -> Iterator[Any]:
    import pyarrow as pa

    def staged(texts: list[str], first: int) -> Any:
        origins = pa.array([f"{path}:{first + i}" for i in range(len(texts))], pa.string())
        return stage_json_lines(texts, origins, lambda i: validate_json_line(texts[i], f"{path}:{first + i}"))

    with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as handle:
        texts: list[str] = []
        first = 1
        for line in handle:
            texts.append(line.rstrip("\n").removesuffix("\r"))
            if len(texts) == BATCH_ROWS:
                yield staged(texts, first)
                first += len(texts)
                texts = []
        if texts:
            yield staged(texts, first)
            first += len(texts)
        count.rows += first - 1


def _line_chunks(path: str, count: ReadCount) -> Generator[tuple[bytes, int], None, None]:
    """(whole lines of about NATIVE_CHUNK_BYTES, the number of the first) over a file; the lines
    are added to `count` as they are read."""
    with open(path, "rb") as handle:
        first = 1
        rest = b""
        while chunk := handle.read(NATIVE_CHUNK_BYTES):
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:  # no line ends in this chunk yet
                rest += chunk
                continue
            if cut < len(chunk):  # the next chunk starts at the cut line (one copy, not two)
                handle.seek(cut - len(chunk), 1)
                chunk = chunk[:cut]
            data = rest + chunk if rest else chunk
            rest = b""
            lines = data.count(b"\n")
            count.rows += lines
            yield data, first
            first += lines
        if rest:  # the last line, without a newline
            count.rows += 1
            yield rest, first


def _jsonl_native_batches(path: str, stager: Any, count: ReadCount) -> Iterator[Any]:
    """`_jsonl_batches` with the lines parsed by the engine (traces.batch `stage_parsed`), chunk by
    chunk; the lines it does not take are the Python validator's, as there. A thread reads and
    parses the next chunk (the engine releases the GIL) while this one is checked and judged, so
    two chunks at most are in memory."""
    from concurrent.futures import ThreadPoolExecutor

    chunks = _line_chunks(path, count)  # read by the thread alone, one task at a time

    def parse_next() -> Optional[tuple[Any, bytes]]:
        got = next(chunks, None)
        if got is None:
            return None
        data, first = got
        return stager.stage(data, path, first), data

    def finish(parsed: Any, data: bytes) -> Any:
        rows, failed = parsed

        def check(line: int, start: int, end: int) -> Row:
            return validate_json_line(data[start:end].decode("utf-8", "surrogateescape"), f"{path}:{line}")

        return stage_parsed(rows, failed, check)

    with ThreadPoolExecutor(1, thread_name_prefix="groupspec-stage1") as pool:
        try:
            pending = pool.submit(parse_next)
            while (done := pending.result()) is not None:
                pending = pool.submit(parse_next)
                yield finish(*done)
        finally:
            pending.cancel()
            pool.shutdown(wait=True)
            chunks.close()


def _parquet_batches(path: str, count: ReadCount) -> Iterator[Any]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from traces.batch import parse_schema

    schema = parse_schema()
    start = 0
    file = pq.ParquetFile(path)
    count.rows += file.metadata.num_rows
    prefix = pa.scalar(f"{path}#")
    for batch in _read_ahead(file.iter_batches(batch_size=BATCH_ROWS)):
        # optional columns a file leaves out read as null
        part = pa.Table.from_arrays(
            [batch.column(c.name) if c.name in batch.schema.names
             else pa.nulls(batch.num_rows, schema.field(c.name).type) for c in COLUMNS], schema=schema)
        origins = None  # "PATH#RECORD" for the rows without an origin of their own
        if part["origin"].null_count:
            numbers = pc.add(_row_numbers(part.num_rows), start + 1)
            origins = pc.binary_join_element_wise(prefix, pc.cast(numbers, pa.string()), "")

        def check(i: int, part: Any = part, start: int = start) -> Row:
            record = {k: v for k, v in part.slice(i, 1).to_pylist()[0].items() if v is not None}
            return validate_record(record, f"{path}#{start + i + 1}")

        yield stage_records(part, origins, check)
        start += part.num_rows


@functools.lru_cache(maxsize=4)
def _row_numbers(n: int) -> Any:
    """0 .. n-1 as an Arrow int64 array (Parquet batches are all BATCH_ROWS long but the last)."""
    import pyarrow as pa

    return pa.array(range(n), pa.int64())


def _read_ahead(items: Iterator[Any]) -> Iterator[Any]:
    """`items`, each made by a thread while the one before is used (Parquet decoding releases the
    GIL): one item ahead at most."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="groupspec-read") as pool:
        pending = pool.submit(next, items, None)
        try:
            while (item := pending.result()) is not None:
                pending = pool.submit(next, items, None)
                yield item
        finally:
            pending.cancel()
            pool.shutdown(wait=True)


def _log_batches(path: str, count: ReadCount) -> Iterator[Any]:
    import pyarrow as pa

    schema = staged_schema()
    rows: list[Row] = []
    ignored = 0
    with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as handle:
        for number, line in enumerate(handle, 1):
            row = validate_log_line(line.rstrip("\n").removesuffix("\r"), f"{path}:{number}", number)
            if row is None:
                ignored += 1
            else:
                rows.append(row)
            if len(rows) == BATCH_ROWS:
                yield pa.Table.from_pylist(rows, schema=schema)
                rows = []
            count.rows += 1
    if ignored:
        rows.append({"origin": "ignored", "ignored": ignored})
    if rows:
        yield pa.Table.from_pylist(rows, schema=schema)


def staged_batches(inputs: Inputs, stager: Optional[Any] = None,
                   count: Optional[ReadCount] = None) -> Generator[Any, None, None]:
    """Stage 1 over every input file, one staged Arrow table at a time (at most BATCH_ROWS rows, or
    one chunk of NATIVE_CHUNK_BYTES when `stager`, the engine's JSON Lines parser, reads the lines);
    the input rows read are added to `count`."""
    count = ReadCount() if count is None else count
    for f in inputs.jsonl:
        yield from (_jsonl_native_batches(f, stager, count) if stager is not None else _jsonl_batches(f, count))
    for f in inputs.parquet:
        yield from _parquet_batches(f, count)
    for f in inputs.logs:
        yield from _log_batches(f, count)


def staged_table(inputs: Inputs) -> Any:
    """Stage 1 over every input file, as one Arrow table (held in memory: benchmarks, small inputs)."""
    import pyarrow as pa

    parts = list(staged_batches(inputs))
    return pa.concat_tables(parts) if parts else staged_schema().empty_table()



# --- the external sort by group ------------------------------------------------------------------


def bucket_count(inputs: Inputs) -> int:
    """Spill buckets for the input: one per SPILL_BUCKET_BYTES of input files (at least 1)."""
    size = sum(Path(f).stat().st_size for f in inputs.jsonl + inputs.parquet + inputs.logs)
    # Parquet is compressed: count its bytes ten times (a 10 M-event trace is 2.9 GB as JSON
    # Lines and 233 MB as Parquet)
    size += 9 * sum(Path(f).stat().st_size for f in inputs.parquet)
    return max(1, min(MAX_BUCKETS, math.ceil(size / SPILL_BUCKET_BYTES)))


def bucket_of(group_ids: Any, buckets: int) -> Any:
    """The bucket of each row's group (an Arrow int32 array): crc32 of the id modulo `buckets`;
    rows without a group id (log lines about the cluster) all go to bucket 0."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(group_ids)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    per_id = pa.array([zlib.crc32(g.encode("utf-8", "surrogatepass")) % buckets
                       for g in encoded.dictionary.to_pylist()], pa.int32())
    return pc.fill_null(pc.take(per_id, encoded.indices), 0)


class Spill:
    """Bucket files of staged rows under `directory` (Arrow IPC streams, appended to)."""

    def __init__(self, directory: Path, buckets: int) -> None:
        self.directory = directory
        self.buckets = buckets
        self._pending: dict[int, list[Any]] = {}
        self._rows: dict[int, int] = {}
        self._writers: dict[int, Any] = {}

    def path(self, bucket: int) -> Path:
        return self.directory / f"bucket-{bucket:04d}.arrow"

    def add(self, table: Any) -> None:
        import pyarrow.compute as pc

        if table.num_rows == 0:
            return
        if self.buckets == 1:
            self._keep(0, table)
            return
        of = bucket_of(table["group_id"], self.buckets)
        order = pc.sort_indices(of)  # one take, then each bucket's rows are one slice
        table = table.take(order)
        start = 0
        for run in sorted(pc.value_counts(of).to_pylist(), key=lambda r: r["values"]):
            self._keep(run["values"], table.slice(start, run["counts"]))
            start += run["counts"]

    def _keep(self, bucket: int, table: Any) -> None:
        self._pending.setdefault(bucket, []).append(table)
        self._rows[bucket] = self._rows.get(bucket, 0) + table.num_rows
        if self._rows[bucket] >= _FLUSH_ROWS:
            self._flush(bucket)

    def _flush(self, bucket: int) -> None:
        import pyarrow as pa

        parts = self._pending.pop(bucket, [])
        self._rows.pop(bucket, None)
        if not parts:
            return
        writer = self._writers.get(bucket)
        if writer is None:
            writer = self._writers[bucket] = pa.ipc.new_stream(str(self.path(bucket)), staged_schema())
        writer.write_table(pa.concat_tables(parts).combine_chunks())

    def close(self) -> None:
        for bucket in list(self._pending):
            self._flush(bucket)
        for writer in self._writers.values():
            writer.close()

    def sorted_batches(self, fmt: str) -> Iterator[Any]:
        """Each bucket in turn, read back alone, sorted by (group, order), in batches."""
        import pyarrow as pa

        for bucket in range(self.buckets):
            path = self.path(bucket)
            if not path.exists():
                continue
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_stream(source).read_all()
            # input clustered by group (as `traces generate` writes it) needs no sort
            ordered = table if in_group_order(table, fmt) else table.sort_by(sort_columns(fmt))
            del table
            yield from ordered.to_batches(BATCH_ROWS)
            del ordered
            path.unlink()


def in_group_order(table: Any, fmt: str) -> bool:
    """Whether each group's rows are together and in stage 2's order already (`sort_columns`;
    the groups themselves in any order). Rows with a null key: False (they are sorted)."""
    import pyarrow.compute as pc

    n: int = table.num_rows
    keys = [table[name] for name, _ in sort_columns(fmt)]
    if any(k.null_count for k in keys):
        return False
    if n < 2:
        return True
    gid = keys[0]
    changes = pc.not_equal(gid.slice(1), gid.slice(0, n - 1))
    if pc.sum(changes).as_py() + 1 != pc.count_distinct(gid).as_py():
        return False  # a group in two places
    ordered = changes  # across a change anything goes; inside a group the keys must not decrease
    equal_so_far = pc.invert(changes)
    for key in keys[1:]:
        after, before = key.slice(1), key.slice(0, n - 1)
        ordered = pc.or_(ordered, pc.and_(equal_so_far, pc.greater(after, before)))
        equal_so_far = pc.and_(equal_so_far, pc.equal(after, before))
    return bool(pc.all(pc.or_(ordered, equal_so_far)).as_py())


def _spill_good_rows(inputs: Inputs, spill: Spill, stager: Optional[Any], count: ReadCount) -> Iterator[Any]:
    """Stage 1 over the inputs: rows that pass are spilled; rejects and ignored-line counts are
    yielded at once (stage 2 must see every reject of a group before the group)."""
    try:
        for table in staged_batches(inputs, stager, count):
            direct, good = _split_direct(table)
            if direct is not None:
                yield from direct.to_batches()
            spill.add(good)
    finally:
        spill.close()


def _split_direct(table: Any) -> tuple[Optional[Any], Any]:
    """(the rejects and ignored-line counts of a staged table, or None; its good rows)."""
    import pyarrow.compute as pc

    direct = pc.or_(pc.is_valid(table["reject_reason"]), pc.is_valid(table["ignored"]))
    if not pc.any(direct).as_py():
        return None, table
    return table.filter(direct), table.filter(pc.invert(direct))


# --- the clustered path ----------------------------------------------------------------------------


class Unclustered(Exception):
    """The input is not clustered by group: where (the row's origin) and why."""


class GroupOrder:
    """Checks on the fly that staged trace rows come clustered by group, in stage 2's order: fed
    each staged table's rejects, then its good rows (the order stage 2 gets them in), it raises
    `Unclustered` at the first row that a sort by group would have moved, or a reject of a group
    stage 2 may already have judged. Holds the ids of the closed groups: O(groups)."""

    def __init__(self) -> None:
        self.closed: set[str] = set()
        self.open: Optional[str] = None  # the group whose rows came last (not judged yet)
        self.last_seq = 0  # its last seq

    def rejects(self, table: Any) -> None:
        for gid, origin in zip(table["group_id"].to_pylist(), table["origin"].to_pylist()):
            if gid is not None and gid in self.closed:
                raise Unclustered(f"{origin}: a rejected row of group {gid!r}, after the group's rows "
                                  "were followed by another group's")

    def good(self, table: Any) -> None:
        import pyarrow.compute as pc

        n = table.num_rows
        if n == 0:
            return
        gid, seq = table["group_id"], table["seq"]
        if gid.null_count or seq.null_count:  # stage 1 lets no such trace row pass: a sort decides
            raise Unclustered(f"{table['origin'][0].as_py()}: a row without group_id or seq")
        starts = [0]
        if n > 1:
            change = pc.not_equal(gid.slice(1), gid.slice(0, n - 1))
            back = pc.and_(pc.invert(change), pc.less(seq.slice(1), seq.slice(0, n - 1)))
            if pc.any(back).as_py():
                i = pc.indices_nonzero(back)[0].as_py() + 1
                raise Unclustered(f"{table['origin'][i].as_py()}: seq {seq[i].as_py()} of group "
                                  f"{gid[i].as_py()!r} comes after seq {seq[i - 1].as_py()}")
            starts += [i + 1 for i in pc.indices_nonzero(change).to_pylist()]
        first_seq = seq[0].as_py()
        for start, group in zip(starts, gid.take(starts).to_pylist()):
            if group == self.open:  # only the first run can continue the open group
                if first_seq < self.last_seq:
                    raise Unclustered(f"{table['origin'][0].as_py()}: seq {first_seq} of group {group!r} comes after "
                                      f"seq {self.last_seq}")
                continue
            if group in self.closed:
                raise Unclustered(f"{table['origin'][start].as_py()}: group {group!r} again, after other groups' rows")
            if self.open is not None:
                self.closed.add(self.open)
            self.open = group
        self.last_seq = seq[n - 1].as_py()


def _clustered_rows(inputs: Inputs, stager: Optional[Any], count: ReadCount) -> Iterator[Any]:
    """Stage 1 over input clustered by group, straight to stage 2 (no spill): each staged table's
    rejects, then its good rows, each checked by `GroupOrder` before stage 2 sees it."""
    order = GroupOrder()
    tables = staged_batches(inputs, stager, count)
    try:
        for table in tables:
            direct, good = _split_direct(table)
            if direct is not None:
                order.rejects(direct)
                yield from direct.to_batches()
            order.good(good)
            yield from good.to_batches()
    finally:
        tables.close()  # stops the parse thread now when the order breaks


# --- stage 2 ---------------------------------------------------------------------------------------


def stream_local(inputs: Inputs, emit: Emit, discard: Callable[[], None], scratch: Path,
                 factory: Optional[ModelFactory] = None, edges: Optional[Edges] = None,
                 native: Optional[Any] = None) -> tuple[Counts, dict[str, int], str]:
    """The whole pipeline; each verdict and reject goes to `emit` as it is made. Traces take the
    clustered path first; when its order breaks, `discard()` must forget every row emitted so far,
    and the run starts again on the sorted path, spilling under the existing directory `scratch`.
    `native`: the native replayer (check/native_replay.py), which judges each trace group first.
    Returns the counts, the row coverage and the path taken (CLUSTERED or SORTED)."""
    # with the native step, the engine parses the JSON Lines too
    stager = native_stager() if native is not None and inputs.jsonl else None
    if inputs.fmt == TRACE:
        try:
            return (*_judge_all(inputs, emit, factory, edges, native,
                                lambda count: _clustered_rows(inputs, stager, count)), CLUSTERED)
        except Unclustered as e:
            discard()
            if native is not None:
                native.take_coverage()  # the rows the abandoned pass fired
            print(f"replay --local: the input is not clustered by group ({e}); "
                  "replaying through the external sort by group", file=sys.stderr)

    def sorted_rows(count: ReadCount) -> Iterator[Any]:
        spill = Spill(scratch, bucket_count(inputs))
        yield from _spill_good_rows(inputs, spill, stager, count)
        yield from spill.sorted_batches(inputs.fmt)

    return (*_judge_all(inputs, emit, factory, edges, native, sorted_rows), SORTED)


def _judge_all(inputs: Inputs, emit: Emit, factory: Optional[ModelFactory], edges: Optional[Edges],
               native: Optional[Any], rows: Callable[[ReadCount], Iterator[Any]]) -> tuple[Counts, dict[str, int]]:
    """Stage 2 over `rows(count)`, the staged batches of one path; the counts and the row coverage."""
    if inputs.fmt == LOG:
        judge = PartitionJudge(inputs.fmt, edges=edges or default_edges())
    else:
        judge = PartitionJudge(inputs.fmt, factory=factory or default_model_factory(), native=native)
    count = ReadCount()
    replayed = rejected = groups = violations = incomplete = 0
    for out in judge.judge(rows(count)):
        if out["table"] == "verdict":
            row = _pick(out, "verdict")
            replayed += row["events"]
            if row["status"] != CLUSTER_STATUS:
                groups += 1
                violations += row["status"] == VIOLATION
                incomplete += row["status"] == INCOMPLETE
            emit("verdict", row)
        else:
            rejected += 1
            emit("reject", _pick(out, "reject"))
    counts = Counts(
        rows=count.rows, replayed=replayed, rejected=rejected, ignored=judge.ignored, groups=groups,
        violations=violations, incomplete=incomplete, duplicates=judge.duplicates,
    )
    return counts, dict(judge.coverage)


def run_local(
    inputs: Inputs, factory: Optional[ModelFactory] = None, edges: Optional[Edges] = None,
    native: Optional[Any] = None,
) -> LocalResult:
    """`stream_local` with the output rows collected (spilling to a temporary directory)."""
    result = LocalResult(Counts(0, 0, 0, 0, 0, 0, 0))

    def keep(table: str, row: Row) -> None:
        (result.verdicts if table == "verdict" else result.rejects).append(row)

    def discard() -> None:
        result.verdicts.clear()
        result.rejects.clear()

    with tempfile.TemporaryDirectory(prefix="groupspec-spill-") as scratch:
        result.counts, result.coverage, result.path = stream_local(inputs, keep, discard, Path(scratch), factory,
                                                                   edges, native)
    return result


def _pick(row: Row, table: str) -> dict[str, Any]:
    from traces.pipeline import REJECT_COLUMNS, VERDICT_COLUMNS

    names = VERDICT_COLUMNS if table == "verdict" else REJECT_COLUMNS
    return {n: row[n] for n in names}

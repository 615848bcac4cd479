"""The same pipeline as the Spark job in one Python process (tests, benchmarks, `replay --local`).

Memory does not grow with the input: stage 1 streams over the input files in batches; the rows that
pass go to spill files on disk, one per bucket of groups (an external sort by group: a group's rows
all land in the bucket its id hashes to), while rejects and ignored-line counts go straight to
stage 2. Then each bucket alone is read back, sorted by (group, order) and judged. A bucket holds
about `SPILL_BUCKET_BYTES` of input, so the largest thing in memory is one bucket, whatever the
input's size. Output rows go to the caller as they are made (`stream_local`); `run_local` collects
them for tests and small inputs.
"""

from __future__ import annotations

import math
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from traces.batch import native_stager, stage_json_lines, stage_parsed, stage_records, staged_schema
from traces.inputs import Inputs
from traces.logcheck import Edges, default_edges
from traces.pipeline import (
    LOG,
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


@dataclass(slots=True)
class LocalResult:
    counts: Counts
    verdicts: list[Row] = field(default_factory=list)
    rejects: list[Row] = field(default_factory=list)
    coverage: dict[str, int] = field(default_factory=dict)


# --- stage 1, streamed -------------------------------------------------------------------------


def _jsonl_batches(path: str) -> Iterator[Any]:
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


def _line_chunks(path: str) -> Iterator[tuple[bytes, int]]:
    """(whole lines of about NATIVE_CHUNK_BYTES, the number of the first) over a file."""
    with open(path, "rb") as handle:
        first = 1
        rest = b""
        while chunk := handle.read(NATIVE_CHUNK_BYTES):
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # no line ends in this chunk yet
                rest = data
                continue
            data, rest = data[:cut], data[cut:]
            yield data, first
            first += data.count(b"\n")
        if rest:  # the last line, without a newline
            yield rest, first


def _jsonl_native_batches(path: str, stager: Any) -> Iterator[Any]:
    """`_jsonl_batches` with the lines parsed by the engine (traces.batch `stage_parsed`), chunk by
    chunk; the lines it does not take are the Python validator's, as there. The engine parses the
    next chunk in a thread (it releases the GIL) while this one is checked and spilled, so two
    chunks at most are in memory."""
    from concurrent.futures import Future, ThreadPoolExecutor

    def finish(parsing: Future[Any], data: bytes) -> Any:
        parsed, failed = parsing.result()

        def check(line: int, start: int, end: int) -> Row:
            return validate_json_line(data[start:end].decode("utf-8", "surrogateescape"), f"{path}:{line}")

        return stage_parsed(parsed, failed, check)

    with ThreadPoolExecutor(1, thread_name_prefix="groupspec-stage1") as pool:
        pending: Optional[tuple[Future[Any], bytes]] = None
        for data, first in _line_chunks(path):
            parsing = pool.submit(stager.stage, data, path, first)
            if pending is not None:
                yield finish(*pending)
            pending = parsing, data
        if pending is not None:
            yield finish(*pending)


def _parquet_batches(path: str) -> Iterator[Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from traces.batch import parse_schema

    schema = parse_schema()
    start = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS):
        # optional columns a file leaves out read as null
        part = pa.Table.from_arrays(
            [batch.column(c.name) if c.name in batch.schema.names
             else pa.nulls(batch.num_rows, schema.field(c.name).type) for c in COLUMNS], schema=schema)
        origins = pa.array([f"{path}#{start + i + 1}" for i in range(part.num_rows)], pa.string())

        def check(i: int, part: Any = part, start: int = start) -> Row:
            record = {k: v for k, v in part.slice(i, 1).to_pylist()[0].items() if v is not None}
            return validate_record(record, f"{path}#{start + i + 1}")

        yield stage_records(part, origins, check)
        start += part.num_rows


def _log_batches(path: str) -> Iterator[Any]:
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
    if ignored:
        rows.append({"origin": "ignored", "ignored": ignored})
    if rows:
        yield pa.Table.from_pylist(rows, schema=schema)


def staged_batches(inputs: Inputs, stager: Optional[Any] = None) -> Iterator[Any]:
    """Stage 1 over every input file, one staged Arrow table at a time (at most BATCH_ROWS rows, or
    one chunk of NATIVE_CHUNK_BYTES when `stager`, the engine's JSON Lines parser, reads the lines)."""
    for f in inputs.jsonl:
        yield from (_jsonl_native_batches(f, stager) if stager is not None else _jsonl_batches(f))
    for f in inputs.parquet:
        yield from _parquet_batches(f)
    for f in inputs.logs:
        yield from _log_batches(f)


def staged_table(inputs: Inputs) -> Any:
    """Stage 1 over every input file, as one Arrow table (held in memory: benchmarks, small inputs)."""
    import pyarrow as pa

    parts = list(staged_batches(inputs))
    return pa.concat_tables(parts) if parts else staged_schema().empty_table()


def count_rows(inputs: Inputs) -> int:
    """Input rows counted on their own (lines of text files, records of Parquet files)."""
    total = 0
    for f in inputs.jsonl + inputs.logs:
        with open(f, "rb") as handle:
            last = b"\n"
            while chunk := handle.read(16 << 20):
                total += chunk.count(b"\n")
                last = chunk[-1:]
            total += last != b"\n"  # a last line without a newline
    if inputs.parquet:
        import pyarrow.parquet as pq

        total += sum(pq.ParquetFile(f).metadata.num_rows for f in inputs.parquet)
    return total


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


def _spill_good_rows(inputs: Inputs, spill: Spill, stager: Optional[Any] = None) -> Iterator[Any]:
    """Stage 1 over the inputs: rows that pass are spilled; rejects and ignored-line counts are
    yielded at once (stage 2 must see every reject of a group before the group)."""
    import pyarrow.compute as pc

    try:
        for table in staged_batches(inputs, stager):
            direct = pc.or_(pc.is_valid(table["reject_reason"]), pc.is_valid(table["ignored"]))
            if pc.any(direct).as_py():
                yield from table.filter(direct).to_batches()
                table = table.filter(pc.invert(direct))
            spill.add(table)
    finally:
        spill.close()


# --- stage 2 ---------------------------------------------------------------------------------------


def stream_local(inputs: Inputs, emit: Emit, scratch: Path, factory: Optional[ModelFactory] = None,
                 edges: Optional[Edges] = None, native: Optional[Any] = None) -> tuple[Counts, dict[str, int]]:
    """The whole pipeline, spilling under the existing directory `scratch`; each verdict and reject
    goes to `emit` as it is made. `native`: the native replayer (check/native_replay.py), which
    judges each trace group first. Returns the counts and the row coverage."""
    import itertools

    if inputs.fmt == LOG:
        judge = PartitionJudge(inputs.fmt, edges=edges or default_edges())
    else:
        judge = PartitionJudge(inputs.fmt, factory=factory or default_model_factory(), native=native)
    spill = Spill(scratch, bucket_count(inputs))
    # with the native step, the engine parses the JSON Lines too
    stager = native_stager() if native is not None and inputs.jsonl else None
    replayed = rejected = groups = violations = incomplete = 0
    for out in judge.judge(itertools.chain(_spill_good_rows(inputs, spill, stager), spill.sorted_batches(inputs.fmt))):
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
        rows=count_rows(inputs), replayed=replayed, rejected=rejected, ignored=judge.ignored, groups=groups,
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

    with tempfile.TemporaryDirectory(prefix="groupspec-spill-") as scratch:
        result.counts, result.coverage = stream_local(inputs, keep, Path(scratch), factory, edges, native)
    return result


def _pick(row: Row, table: str) -> dict[str, Any]:
    from traces.pipeline import REJECT_COLUMNS, VERDICT_COLUMNS

    names = VERDICT_COLUMNS if table == "verdict" else REJECT_COLUMNS
    return {n: row[n] for n in names}

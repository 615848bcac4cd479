"""The same pipeline as the Spark job in one Python process (tests, benchmarks, small inputs).

Everything is held in memory: use the Spark job for large inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from traces.batch import stage_json_lines, stage_records, staged_schema
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


@dataclass(slots=True)
class LocalResult:
    counts: Counts
    verdicts: list[Row] = field(default_factory=list)
    rejects: list[Row] = field(default_factory=list)
    coverage: dict[str, int] = field(default_factory=dict)


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


def _parquet_batches(path: str) -> Iterator[Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from traces.batch import parse_schema

    table = pq.read_table(path)
    schema = parse_schema()
    # optional columns a file leaves out read as null
    table = pa.Table.from_arrays(
        [table[c.name] if c.name in table.column_names else pa.nulls(table.num_rows, schema.field(c.name).type)
         for c in COLUMNS], schema=schema)
    for start in range(0, table.num_rows, BATCH_ROWS):
        part = table.slice(start, BATCH_ROWS)
        origins = pa.array([f"{path}#{start + i + 1}" for i in range(part.num_rows)], pa.string())

        def check(i: int, part: Any = part, start: int = start) -> Row:
            record = {k: v for k, v in part.slice(i, 1).to_pylist()[0].items() if v is not None}
            return validate_record(record, f"{path}#{start + i + 1}")

        yield stage_records(part, origins, check)


def _log_batches(path: str) -> Iterator[Any]:
    import pyarrow as pa

    rows: list[Row] = []
    ignored = 0
    with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as handle:
        for number, line in enumerate(handle, 1):
            row = validate_log_line(line.rstrip("\n").removesuffix("\r"), f"{path}:{number}", number)
            if row is None:
                ignored += 1
            else:
                rows.append(row)
    if ignored:
        rows.append({"origin": "ignored", "ignored": ignored})
    yield pa.Table.from_pylist(rows, schema=staged_schema())


def staged_table(inputs: Inputs) -> Any:
    """Stage 1 over every input file, as one Arrow table."""
    import pyarrow as pa

    parts = [t for f in inputs.jsonl for t in _jsonl_batches(f)]
    parts += [t for f in inputs.parquet for t in _parquet_batches(f)]
    parts += [t for f in inputs.logs for t in _log_batches(f)]
    return pa.concat_tables(parts) if parts else staged_schema().empty_table()


def count_rows(inputs: Inputs) -> int:
    """Input rows counted on their own (lines of text files, records of Parquet files)."""
    total = 0
    for f in inputs.jsonl + inputs.logs:
        with open(f, "rb") as handle:
            total += sum(1 for _ in handle)
    if inputs.parquet:
        import pyarrow.parquet as pq

        total += sum(pq.ParquetFile(f).metadata.num_rows for f in inputs.parquet)
    return total


def run_local(
    inputs: Inputs, factory: Optional[ModelFactory] = None, edges: Optional[Edges] = None
) -> LocalResult:
    import pyarrow.compute as pc

    staged = staged_table(inputs)
    passed = pc.is_null(staged["reject_reason"])
    rejects_first = staged.filter(pc.invert(passed))
    good = staged.filter(passed).sort_by(sort_columns(inputs.fmt))
    if inputs.fmt == LOG:
        judge = PartitionJudge(inputs.fmt, edges=edges or default_edges())
    else:
        judge = PartitionJudge(inputs.fmt, factory=factory or default_model_factory())
    result = LocalResult(Counts(0, 0, 0, 0, 0, 0, 0))
    batches = rejects_first.to_batches(BATCH_ROWS) + good.to_batches(BATCH_ROWS)
    for out in judge.judge(batches):
        if out["table"] == "verdict":
            result.verdicts.append(_pick(out, "verdict"))
        else:
            result.rejects.append(_pick(out, "reject"))
    result.coverage = dict(judge.coverage)
    real = [v for v in result.verdicts if v["status"] != CLUSTER_STATUS]
    result.counts = Counts(
        rows=count_rows(inputs),
        replayed=sum(v["events"] for v in result.verdicts),
        rejected=len(result.rejects),
        ignored=judge.ignored,
        groups=len(real),
        violations=sum(1 for v in real if v["status"] == VIOLATION),
        incomplete=sum(1 for v in real if v["status"] == INCOMPLETE),
        duplicates=judge.duplicates,
    )
    return result


def _pick(row: Row, table: str) -> dict[str, Any]:
    from traces.pipeline import REJECT_COLUMNS, VERDICT_COLUMNS

    names = VERDICT_COLUMNS if table == "verdict" else REJECT_COLUMNS
    return {n: row[n] for n in names}

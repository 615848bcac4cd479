"""The same pipeline as the Spark job in one Python process (tests, benchmarks, small inputs).

Everything is held in memory: use the Spark job for large inputs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from traces.inputs import Inputs
from traces.logcheck import Edges, default_edges
from traces.pipeline import (
    LOG,
    PartitionJudge,
    Row,
    sort_key,
    validate_json_line,
    validate_log_line,
    validate_record,
)
from traces.replay import CLUSTER_STATUS, INCOMPLETE, VIOLATION, ModelFactory, default_model_factory
from traces.summary import Counts


@dataclass(slots=True)
class LocalResult:
    counts: Counts
    verdicts: list[Row] = field(default_factory=list)
    rejects: list[Row] = field(default_factory=list)
    coverage: dict[str, int] = field(default_factory=dict)


def _staged_rows(inputs: Inputs, ignored: Counter[str]) -> Iterator[Row]:
    for f in inputs.jsonl:
        with open(f, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                yield validate_json_line(line.rstrip("\n"), f"{f}:{number}")
    if inputs.parquet:
        import pyarrow.parquet as pq

        for f in inputs.parquet:
            for number, record in enumerate(pq.read_table(f).to_pylist(), 1):
                yield validate_record(record, f"{f}#{number}")
    for f in inputs.logs:
        with open(f, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                row = validate_log_line(line.rstrip("\n"), f"{f}:{number}", number)
                if row is None:
                    ignored["lines"] += 1
                else:
                    yield row


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
    ignored: Counter[str] = Counter()
    staged = list(_staged_rows(inputs, ignored))
    key = sort_key(inputs.fmt)
    rejects_first = [r for r in staged if r["reject_reason"] is not None]
    good = sorted((r for r in staged if r["reject_reason"] is None), key=key)
    if inputs.fmt == LOG:
        judge = PartitionJudge(inputs.fmt, edges=edges or default_edges())
    else:
        judge = PartitionJudge(inputs.fmt, factory=factory or default_model_factory())
    result = LocalResult(Counts(0, 0, 0, 0, 0, 0, 0))
    for out in judge.judge(rejects_first + good):
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
        ignored=ignored["lines"],
        groups=len(real),
        violations=sum(1 for v in real if v["status"] == VIOLATION),
        incomplete=sum(1 for v in real if v["status"] == INCOMPLETE),
    )
    return result


def _pick(row: Row, table: str) -> dict[str, Any]:
    from traces.pipeline import REJECT_COLUMNS, VERDICT_COLUMNS

    names = VERDICT_COLUMNS if table == "verdict" else REJECT_COLUMNS
    return {n: row[n] for n in names}

"""The Spark shell around traces.pipeline: read -> validate -> partition by group -> judge -> write.

pyspark and pyarrow are imported inside functions only, so the rest of the package imports without
them. Every Python step runs in `mapInArrow` over Arrow batches; the driver receives only counts.
Run it through `groupspec replay` (local[*] by default), on a cluster through
`spark-submit groupspec/cli.py replay ...` (ship the project with `--py-files`; the output path must
be visible to the driver).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Final, Iterator, Optional

from check.user_code import user_fault
from model.errors import BadInput
from traces.inputs import Inputs
from traces.output import AtomicOutput
from traces.batch import STAGED_EXTRA, native_stager, stage_json_lines, stage_parsed, stage_records, staged_schema
from traces.pipeline import (
    COVERAGE_COLUMNS,
    LOG,
    OUTPUT_COLUMNS,
    REJECT_COLUMNS,
    TRACE,
    VERDICT_COLUMNS,
    PartitionJudge,
    validate_json_line,
    validate_log_line,
    validate_record,
)
from traces.replay import CLUSTER_STATUS, INCOMPLETE, VIOLATION
from traces.schema import COLUMNS, COLUMN_NAMES
from traces.summary import Counts

_SPARK_TYPES: Final = {"string": "string", "int64": "bigint", "int32": "int"}
STAGED_DDL: Final = ", ".join(
    [f"{c.name} {_SPARK_TYPES[c.type]}" for c in COLUMNS]
    + [f"{n} {_SPARK_TYPES[t]}" for n, t in STAGED_EXTRA]
)
OUTPUT_DDL: Final = ", ".join(f"`{n}` {_SPARK_TYPES[t]}" for n, t in OUTPUT_COLUMNS)
# stage 2's row for an exception raised inside the table's own definition (`reason`: what)
FAULT: Final = "fault"


def _arrow_types() -> dict[str, Any]:
    import pyarrow as pa

    return {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32()}


def _output_schema() -> Any:
    import pyarrow as pa

    t = _arrow_types()
    return pa.schema([pa.field(n, t[ty]) for n, ty in OUTPUT_COLUMNS])


def _to_batch(rows: list[dict[str, Any]], schema: Any) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_pylist(rows, schema=schema)


# --- stage 1: one function per input format (each runs on executors) -------------------------


def _origins(batch: Any, file_col: str, pos_col: str) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    files = pc.cast(batch.column(file_col), pa.string())
    return pc.binary_join_element_wise(files, pc.cast(batch.column(pos_col), pa.string()), "#")


def _texts(batch: Any) -> list[str]:
    """The lines of a text batch (read as binary): bytes that are not UTF-8 become lone surrogates,
    which stage 1 rejects as "not valid UTF-8", the same as the single-process runner."""
    return [b.decode("utf-8", "surrogateescape") for b in batch.column("value").to_pylist()]


def stage1_jsonl(batches: Iterator[Any]) -> Iterator[Any]:
    for batch in batches:
        texts = _texts(batch)
        origins = _origins(batch, "file", "pos")
        table = stage_json_lines(texts, origins, lambda i: validate_json_line(texts[i], origins[i].as_py()))
        yield from table.to_batches()


def stage1_jsonl_native(batches: Iterator[Any]) -> Iterator[Any]:
    """`stage1_jsonl` with the lines parsed by the engine (traces.batch `stage_parsed`)."""
    stager = native_stager()
    if stager is None:  # the driver had the engine: an executor without it must not hide that
        raise RuntimeError("executor: the native engine is not installed (run with --engine python)")
    for batch in batches:
        parsed, failed = stager.stage_batch(batch)
        values, files, positions = batch.column("value"), batch.column("file"), batch.column("pos")

        def check(row: int, _start: int, _end: int) -> dict[str, Any]:
            text = values[row].as_py().decode("utf-8", "surrogateescape")
            return validate_json_line(text, f"{files[row].as_py()}#{positions[row].as_py()}")

        yield from stage_parsed(parsed, failed, check).to_batches()


def stage1_records(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    for batch in batches:
        origins = _origins(batch, "__file", "__pos")
        table = pa.Table.from_batches([batch]).select(list(COLUMN_NAMES))

        def check(i: int, table: Any = table, origins: Any = origins) -> dict[str, Any]:
            record = {k: v for k, v in table.slice(i, 1).to_pylist()[0].items() if v is not None}
            return validate_record(record, origins[i].as_py())

        yield from stage_records(table, origins, check).to_batches()


def stage1_log(batches: Iterator[Any]) -> Iterator[Any]:
    schema = staged_schema()
    ignored = 0
    for batch in batches:
        cols = batch.to_pydict()
        rows = []
        for v, f, p in zip(_texts(batch), cols["file"], cols["pos"]):
            row = validate_log_line(v, f"{f}#{p}", p)
            if row is None:
                ignored += 1
            else:
                rows.append(row | {"ignored": None})
        yield _to_batch(rows, schema)
    if ignored:
        # One row per partition carries the count of lines of other loggers.
        row = {name: None for name in schema.names} | {"ignored": ignored, "origin": "ignored"}
        yield _to_batch([row], schema)


# --- stage 2 ---------------------------------------------------------------------------------


def make_stage2(fmt: str, engine: str = "native", table: Optional[str] = None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Stage 2 on an executor; `engine` native: the native replay judges each trace group first
    (the driver chose python if it could not have the engine; an executor that cannot fails).
    `table`: replay --table's name, resolved on the executor (its module imported there)."""

    def stage2(batches: Iterator[Any]) -> Iterator[Any]:
        from check.native_replay import replayer_for
        from traces.logcheck import default_edges
        from traces.replay import default_model_factory

        schema = _output_schema()
        judged, urgent = _executor_table(table)
        native, why = replayer_for(engine, judged, urgent) if fmt == TRACE else (None, None)
        if why is not None:  # the driver had the engine: an executor without it must not hide that
            raise RuntimeError(f"executor: {why} (run with --engine python)")
        judge = (
            PartitionJudge(fmt, factory=default_model_factory(judged, urgent), native=native)
            if fmt == TRACE
            else PartitionJudge(fmt, edges=default_edges(judged))
        )
        out: list[dict[str, Any]] = []
        try:
            for row in judge.judge(batches):
                out.append(row)
                if len(out) >= 4096:
                    yield _to_batch(out, schema)
                    out = []
        except Exception as e:
            fault = user_fault(e)
            if fault is None:
                raise
            # the table's own definition raised: one row saying so, for the driver to report
            # (a failed task would bury it in the executor's log, with Spark's stack traces)
            yield _to_batch([{name: None for name in schema.names} | {"table": FAULT, "reason": fault}], schema)
            return
        out.extend(judge.coverage_rows())
        if judge.ignored:
            out.append({name: None for name in schema.names} | {"table": "ignored", "count": judge.ignored})
        if judge.duplicates:
            out.append({name: None for name in schema.names} | {"table": "duplicates", "count": judge.duplicates})
        if native is not None:  # the native step's time in this task, for the summary's CPU split
            out.append({name: None for name in schema.names} | {"table": "native_us",
                                                                 "count": round(native.seconds() * 1e6)})
        if out:
            yield _to_batch(out, schema)

    return stage2


def _executor_table(spec: Optional[str]) -> tuple[Any, Any]:
    """replay --table's table and URGENT on an executor (the driver has checked the name; a
    module the executor cannot import fails the task, saying how to ship it)."""
    from check.profiles import table_or_profile
    from model.errors import BadInput
    from model.table import CLASSIC_TABLE, URGENT

    if spec is None:
        return CLASSIC_TABLE, URGENT
    try:
        return table_or_profile(spec, "--table")
    except BadInput as e:
        raise RuntimeError(f"executor: {e} (the table's module must be importable on every executor: "
                           "ship it with spark-submit --py-files, or put it on the executors' PYTHONPATH)") from None


# --- session and progress ----------------------------------------------------------------------


def session(master: Optional[str], partitions: int) -> Any:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("groupspec-replay")
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ and master is None
    if not under_submit:
        master = master or "local[*]"
        builder = builder.master(master)
    if master is not None and master.startswith("local"):
        builder = (
            builder.config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false")
        )
    builder = (
        builder.config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "8192")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.sources.partitionOverwriteMode", "static")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
    )
    return builder.getOrCreate()


class Progress:
    """Prints stage progress to stderr every few seconds while the job runs."""

    def __init__(self, spark: Any, every_s: float = 3.0) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._every = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._start = time.monotonic()

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        last = ""
        while not self._stop.wait(self._every):
            parts = []
            for sid in self._tracker.getActiveStageIds():
                info = self._tracker.getStageInfo(sid)
                if info is not None:
                    parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks")
            line = "; ".join(parts)
            if line and line != last:
                print(f"[{time.monotonic() - self._start:6.0f}s] {line}", file=sys.stderr, flush=True)
                last = line


# --- the job ---------------------------------------------------------------------------------


def _read_staged(spark: Any, inputs: Inputs, engine: str = "native") -> Any:
    from pyspark.sql import functions as F

    frames = []
    if inputs.jsonl:
        text = spark.read.text(list(inputs.jsonl)).select(
            F.col("value").cast("binary").alias("value"),  # bytes: not every input is UTF-8
            F.input_file_name().alias("file"), F.monotonically_increasing_id().alias("pos"),
        )
        frames.append(text.mapInArrow(stage1_jsonl_native if engine == "native" else stage1_jsonl, STAGED_DDL))
    if inputs.parquet:
        df = spark.read.parquet(*inputs.parquet)
        for c in COLUMNS:  # optional columns a file leaves out read as null
            if c.name not in df.columns:
                df = df.withColumn(c.name, F.lit(None).cast(_SPARK_TYPES[c.type]))
        df = df.select(
            *COLUMN_NAMES, F.input_file_name().alias("__file"), F.monotonically_increasing_id().alias("__pos")
        )
        frames.append(df.mapInArrow(stage1_records, STAGED_DDL))
    if inputs.logs:
        text = spark.read.text(list(inputs.logs)).select(
            F.col("value").cast("binary").alias("value"),  # bytes: not every input is UTF-8
            F.input_file_name().alias("file"), F.monotonically_increasing_id().alias("pos"),
        )
        frames.append(text.mapInArrow(stage1_log, STAGED_DDL))
    staged = frames[0]
    for other in frames[1:]:
        staged = staged.unionByName(other)
    return staged


def count_input_rows(spark: Any, inputs: Inputs) -> int:
    total = 0
    text = list(inputs.jsonl + inputs.logs)
    if text:
        total += spark.read.text(text).count()
    if inputs.parquet:
        total += spark.read.parquet(*inputs.parquet).count()
    return int(total)


def run(
    spark: Any,
    inputs: Inputs,
    output: Path,
    partitions: int,
    overwrite: bool = False,
    table_rows: tuple[str, ...] = (),
    engine: str = "native",
    judged_by: Optional[str] = None,
) -> Counts:
    """Run the whole job; publishes `output` atomically and returns the checked counts.
    `judged_by`: replay --table's name, resolved on each executor (None: Kafka 3.9's table)."""
    from pyspark.sql import functions as F

    started = time.monotonic()
    with AtomicOutput(output, overwrite) as out:
        staged = _read_staged(spark, inputs, engine)
        key = F.coalesce(F.col("group_id"), F.col("origin"))
        order = ["group_id", "seq"] if inputs.fmt == TRACE else ["group_id", "ts_ms", "seq"]
        judged = (
            staged.repartition(partitions, key)
            .sortWithinPartitions(*order)
            .mapInArrow(make_stage2(inputs.fmt, engine, judged_by), OUTPUT_DDL)
        )
        stage_dir = str(out.path("_stage"))
        judged.write.partitionBy("table").parquet(stage_dir)
        staged_out = spark.read.schema(OUTPUT_DDL).parquet(stage_dir)
        fault = staged_out.where(F.col("table") == FAULT).agg(F.min("reason")).first()[0]
        if fault is not None:  # nothing is published: the output stays as it was
            raise BadInput(fault)

        def table(name: str, columns: tuple[str, ...]) -> Any:
            return staged_out.where(F.col("table") == name).select(*columns)

        verdicts = table("verdict", VERDICT_COLUMNS)
        verdicts.write.parquet(str(out.path("verdicts")))
        table("reject", REJECT_COLUMNS).write.parquet(str(out.path("rejects")))
        coverage = table("coverage", COVERAGE_COLUMNS).groupBy("key").agg(F.sum("count").alias("count"))
        if table_rows:
            every = spark.createDataFrame([(r,) for r in table_rows], "key string")
            coverage = every.join(coverage, "key", "full_outer").fillna(0, ["count"])
        coverage.orderBy("key").coalesce(1).write.parquet(str(out.path("coverage")))

        v = spark.read.parquet(str(out.path("verdicts")))
        agg = v.agg(
            F.coalesce(F.sum("events"), F.lit(0)).alias("replayed"),
            F.sum(F.when(F.col("status") != CLUSTER_STATUS, 1).otherwise(0)).alias("groups"),
            F.sum(F.when(F.col("status") == VIOLATION, 1).otherwise(0)).alias("violations"),
            F.sum(F.when(F.col("status") == INCOMPLETE, 1).otherwise(0)).alias("incomplete"),
        ).first()
        ignored = staged_out.where(F.col("table") == "ignored").agg(F.sum("count")).first()[0] or 0
        duplicates = staged_out.where(F.col("table") == "duplicates").agg(F.sum("count")).first()[0] or 0
        native_us = staged_out.where(F.col("table") == "native_us").agg(F.sum("count")).first()[0] or 0
        counts = Counts(
            rows=count_input_rows(spark, inputs),
            replayed=int(agg["replayed"] or 0),
            rejected=int(spark.read.parquet(str(out.path("rejects"))).count()),
            ignored=int(ignored),
            groups=int(agg["groups"] or 0),
            violations=int(agg["violations"] or 0),
            incomplete=int(agg["incomplete"] or 0),
            duplicates=int(duplicates),
        )
        counts.check()
        import shutil

        shutil.rmtree(stage_dir)
        elapsed = time.monotonic() - started
        out.commit(
            counts.to_dict()
            | {
                "format": inputs.fmt,
                "inputs": list(inputs.jsonl + inputs.parquet + inputs.logs),
                "elapsed_s": round(elapsed, 3),
                "events_per_s": round(counts.replayed / elapsed) if elapsed > 0 else None,
                "master": spark.sparkContext.master,
                "partitions": partitions,
                "engine": engine,
                "table": judged_by or "kafka-3.9",
                "native_step_s": round(native_us / 1e6, 3),
            }
        )
    return counts

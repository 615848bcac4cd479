"""What `groupspec replay` runs: traces or broker logs replayed against the model, on Spark or in
this process (groupspec/commands/replay.py parses the arguments; `groupspec traces generate` is
traces.generate.generate).

`replay` returns the counts (their `violations` decide exit 0 or 1); an input that is not a trace at
all, or an output that cannot be used, raises a BadInput (exit 2, nothing written); counts that do not
add up raise an Incomplete (exit 3, nothing published).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from model.errors import Incomplete
from traces.output import AtomicOutput, OutputError
from traces.summary import CountMismatch, Counts


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    master: Optional[str] = None  # Spark master URL (None: local[*], or spark-submit's master)
    partitions: Optional[int] = None  # partitions of the group shuffle (None: from the parallelism)
    overwrite: bool = False  # replace an existing output directory
    local: bool = False  # in this Python process, without Spark
    progress: Optional[bool] = None  # stage progress on stderr (None: when stderr is a terminal)
    engine: str = "native"  # the replay's step: "native" (engine/, Python judges what it hands back) or "python"
    # --table: the table the traces (and logs) are judged by, a profile or package.module:NAME
    # (check.profiles.table_or_profile); None: Kafka 3.9's, model/table.py
    table: Optional[str] = None


@dataclass(frozen=True, slots=True)
class JudgedBy:
    """The table a replay judges by: its name (as given, for the summary), the table, its URGENT."""

    name: str
    table: Any
    urgent: Any


def judged_by(spec: Optional[str]) -> JudgedBy:
    """`--table`'s table (BadInput, naming the flag, for a spec that names none), or the classic one."""
    from check.profiles import table_or_profile
    from model.table import CLASSIC_TABLE, URGENT

    if spec is None:
        return JudgedBy("kafka-3.9", CLASSIC_TABLE, URGENT)
    table, urgent = table_or_profile(spec, "--table")
    return JudgedBy(spec, table, urgent)


def replay(inputs: Sequence[str], output: str, options: ReplayOptions = ReplayOptions()) -> Counts:
    """Replay `inputs` (files or directories of traces or broker logs) into the directory `output`,
    published atomically; returns the counts."""
    from traces.inputs import classify

    judged = judged_by(options.table)  # a table that is not one: exit 2 before anything is read
    check_output_apart(inputs, output)
    classified = classify(list(inputs))
    options = _resolve_engine(options, classified.fmt, judged)
    try:
        if options.local:
            return _run_local(classified, output, options, judged)
        return _run_spark(classified, output, options, judged)
    except CountMismatch as e:
        raise Incomplete(f"counts do not add up, output not published: {e}") from e


def _resolve_engine(options: ReplayOptions, fmt: str, judged: JudgedBy) -> ReplayOptions:
    """The engine the run uses: native unless asked for python, or the native one cannot be had
    (not built, or the table names something it lacks: said on stderr, the run goes on in Python)."""
    from dataclasses import replace

    from check.native_replay import replayer_for

    if fmt != "trace" or options.engine == "python":
        return options
    _, why = replayer_for(options.engine, judged.table, judged.urgent)
    if why is None:
        return options
    print(f"replay: {why}; replaying in Python (--engine python)", file=sys.stderr)
    return replace(options, engine="python")


def print_counts(counts: Counts) -> None:
    print(counts.detail_line())
    print(counts.last_line())


def check_output_apart(inputs: Sequence[str], output: str) -> None:
    """Refuse an output that is, contains or lies inside an input: publishing it (with --overwrite)
    would replace the input it was computed from."""
    out = Path(output).resolve()
    for given in inputs:
        path = Path(given).resolve()
        if out == path or path.is_relative_to(out) or out.is_relative_to(path):
            raise OutputError(f"--output {output} overlaps --input {given}: an output must not be, contain "
                              "or lie inside an input (it is replaced as a whole when published)")


def _run_spark(inputs: Any, output: str, options: ReplayOptions, judged: JudgedBy) -> Counts:
    from traces import job

    spark = job.session(options.master, options.partitions or 8)
    try:
        partitions = options.partitions or max(4, 2 * spark.sparkContext.defaultParallelism)
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
        progress = options.progress if options.progress is not None else sys.stderr.isatty()
        rows = _table_row_ids(judged) if inputs.fmt == "trace" else ()
        run = (spark, inputs, Path(output), partitions, options.overwrite, rows, options.engine, options.table)
        try:
            if progress:
                with job.Progress(spark):
                    return job.run(*run)
            return job.run(*run)
        except Exception as e:  # noqa: BLE001 - only an executor that could not load --table's table is ours
            said = re.search(r"executor: --table: [^\n]*", str(e))
            if said is None:
                raise
            raise Incomplete(f"on Spark, {said.group(0)}; nothing published") from None
    finally:
        spark.stop()


def _table_row_ids(judged: JudgedBy) -> tuple[str, ...]:
    """Every reachable row id of the table judged by, so the coverage output lists uncovered rows with 0."""
    return tuple(r.id for r in judged.table.rows if not r.unreachable)


def _run_local(inputs: Any, output: str, options: ReplayOptions, judged: JudgedBy) -> Counts:
    """The single-process run, streamed (traces/local.py): verdicts and rejects are written as they
    are made (input clustered by group goes straight through; when its order breaks, the files are
    emptied and the run starts again sorted), and the spill files of the external sort by group
    live inside the output being built (removed before it is published). summary.json says which
    path the run took (`local_path`: clustered or sorted)."""
    import shutil

    from check.native_replay import replayer_for
    from traces.local import stream_local
    from traces.logcheck import default_edges
    from traces.replay import default_model_factory

    with AtomicOutput(Path(output), options.overwrite) as out:
        scratch = out.path("_spill")
        scratch.mkdir()
        with out.create("verdicts.jsonl") as verdicts, out.create("rejects.jsonl") as rejects:
            handles = {"verdict": verdicts, "reject": rejects}

            def emit(table: str, row: dict[str, Any]) -> None:
                handles[table].write(json.dumps(row) + "\n")

            def discard() -> None:  # the clustered path's order broke: it starts again, sorted
                for handle in handles.values():
                    handle.seek(0)
                    handle.truncate()

            native = replayer_for(options.engine, judged.table, judged.urgent)[0] if inputs.fmt == "trace" else None
            factory = default_model_factory(judged.table, judged.urgent)
            counts, covered, path = stream_local(inputs, emit, discard, scratch, factory, default_edges(judged.table),
                                                 native=native)
        shutil.rmtree(scratch)
        counts.check()
        coverage = dict.fromkeys(_table_row_ids(judged) if inputs.fmt == "trace" else (), 0) | covered
        with out.create("coverage.jsonl") as handle:
            for k, v in sorted(coverage.items()):
                handle.write(json.dumps({"key": k, "count": v}) + "\n")
        out.commit(counts.to_dict() | {"format": inputs.fmt, "master": "local (no Spark)", "table": judged.name,
                                       "engine": options.engine if inputs.fmt == "trace" else "python",
                                       "local_path": path,
                                       "native_step_s": round(native.seconds(), 3) if native is not None else 0})
    return counts

"""Command-line entry points: `groupspec traces generate` and `groupspec replay`.

Exit codes: 0 = done, no violation; 1 = violations found; 2 = bad arguments or an input that is not
a trace at all (nothing written); 3 = the counts do not add up (nothing published).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from traces.generate import CoordinatorFactory, GenerateError, GeneratorOptions, generate
from traces.output import AtomicOutput, OutputError
from traces.summary import CountMismatch, Counts
from traces.validate import SchemaError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits 2 too; keep its message short
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def replay_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="groupspec replay", description="Replay traces or broker logs against the model.")
    p.add_argument("--input", nargs="+", action="extend", required=True, metavar="PATH",
                   help="trace files (*.jsonl, *.parquet), broker logs (*.log, server.log*), or directories")
    p.add_argument("--output", required=True, metavar="DIR", help="output directory (published atomically)")
    p.add_argument("--master", default=None, help="Spark master URL (default local[*]; under spark-submit: its master)")
    p.add_argument("--partitions", type=int, default=None, help="partitions of the group shuffle")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    p.add_argument("--local", action="store_true", help="run in this Python process, without Spark")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="print stage progress (default: when stderr is a terminal)")
    return p


def _print_counts(counts: Counts) -> None:
    print(counts.detail_line())
    print(counts.last_line())


def replay_main(argv: Sequence[str]) -> int:
    try:
        args = replay_parser().parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    from traces.inputs import classify

    try:
        check_output_apart(args.input, args.output)
        inputs = classify(args.input)
    except (SchemaError, OutputError) as e:
        print(f"groupspec replay: {e}", file=sys.stderr)
        return 2
    try:
        counts = _run_local(inputs, args) if args.local else _run_spark(inputs, args)
    except (SchemaError, OutputError) as e:
        print(f"groupspec replay: {e}", file=sys.stderr)
        return 2
    except CountMismatch as e:
        print(f"groupspec replay: counts do not add up, output not published: {e}", file=sys.stderr)
        return 3
    _print_counts(counts)
    return 1 if counts.violations else 0


def check_output_apart(inputs: Sequence[str], output: str) -> None:
    """Refuse an output that is, contains or lies inside an input: publishing it (with --overwrite)
    would replace the input it was computed from."""
    out = Path(output).resolve()
    for given in inputs:
        path = Path(given).resolve()
        if out == path or path.is_relative_to(out) or out.is_relative_to(path):
            raise OutputError(f"--output {output} overlaps --input {given}: an output must not be, contain "
                              "or lie inside an input (it is replaced as a whole when published)")


def _run_spark(inputs: Any, args: argparse.Namespace) -> Counts:
    from traces import job

    spark = job.session(args.master, args.partitions or 8)
    try:
        partitions = args.partitions or max(4, 2 * spark.sparkContext.defaultParallelism)
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
        progress = args.progress if args.progress is not None else sys.stderr.isatty()
        rows = _table_row_ids() if inputs.fmt == "trace" else ()
        if progress:
            with job.Progress(spark):
                return job.run(spark, inputs, Path(args.output), partitions, args.overwrite, rows)
        return job.run(spark, inputs, Path(args.output), partitions, args.overwrite, rows)
    finally:
        spark.stop()


def _table_row_ids() -> tuple[str, ...]:
    """Every row id of the model's table, so the coverage output lists uncovered rows with 0."""
    try:
        from model import table
    except ImportError:
        return ()
    return tuple(r.id for r in table.CLASSIC_TABLE.rows if not r.unreachable)


def _run_local(inputs: Any, args: argparse.Namespace) -> Counts:
    from traces.local import run_local

    with AtomicOutput(Path(args.output), args.overwrite) as out:
        result = run_local(inputs)
        result.counts.check()
        coverage = dict.fromkeys(_table_row_ids() if inputs.fmt == "trace" else (), 0) | result.coverage
        for name, rows in (
            ("verdicts", result.verdicts),
            ("rejects", result.rejects),
            ("coverage", [{"key": k, "count": v} for k, v in sorted(coverage.items())]),
        ):
            with open(out.path(f"{name}.jsonl"), "w") as handle:
                for row in rows:
                    handle.write(json.dumps(row) + "\n")
        out.commit(result.counts.to_dict() | {"format": inputs.fmt, "master": "local (no Spark)"})
    return result.counts


def generate_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="groupspec traces generate", description="Record randomized groups as a trace.")
    p.add_argument("--groups", type=int, required=True, help="number of groups")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--faults", default="all",
                   help="comma-separated faults: crash,session,rebalance,lost,leave ('all' or 'none'; "
                        "the names of check --faults; session-timeout, rebalance-timeout, lost-response "
                        "are accepted too)")
    p.add_argument("--bug", action="append", default=[], metavar="NAME", help="coordinator bug to inject")
    p.add_argument("--bug-fraction", type=float, default=0.1, help="fraction of groups given the bug")
    p.add_argument("--steps", type=int, default=40, help="client actions per group")
    p.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    p.add_argument("--files", type=int, default=1, help="number of output files")
    p.add_argument("--jobs", type=int, default=1,
                   help="processes writing the files (at most --files; same output as one process)")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--overwrite", action="store_true")
    return p


def generate_main(argv: Sequence[str], coordinator_factory: CoordinatorFactory, source: str = "reference") -> int:
    try:
        args = generate_parser().parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    try:
        options = GeneratorOptions.from_args(
            groups=args.groups, seed=args.seed, faults=args.faults, bugs=tuple(args.bug),
            bug_fraction=args.bug_fraction, steps=args.steps, fmt=args.format, files=args.files,
        )
        manifest = generate(options, coordinator_factory, Path(args.out), args.overwrite, source,
                            jobs=args.jobs, progress=sys.stderr)
    except (GenerateError, OutputError) as e:
        print(f"groupspec traces generate: {e}", file=sys.stderr)
        return 2
    print(f"groups {manifest['groups']}, events {manifest['events']}, bugged groups {len(manifest['bugged_groups'])}"
          f" (bug observable in {len(manifest['bug_observable_groups'])}), out {args.out}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m traces.cli replay ...` / `... generate ...` (generate uses the model as the coordinator)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["replay"]:
        return replay_main(argv[1:])
    if argv[:1] == ["generate"]:
        from traces.generate import model_factory

        return generate_main(argv[1:], model_factory, source="model")
    print("usage: python -m traces.cli {replay|generate} ...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of the trace replay: Spark local[2] end to end (after JVM start) vs one Python process.

    .venv/bin/python benchmarks/traces_bench.py --groups 2000 [--work DIR] [--skip-local]

Generates a trace with the model as the producer (not timed), then times
1. the Spark job (`traces.job.run`, local[2], the session already started), input to published output;
2. the same replay in one Python process (`traces.local.run_local`);
3. the model alone on the same inputs (`ModelCoordinator.handle`/`advance` per group, requests decoded
   beforehand): the floor no pipeline change can go below.
Only counts reach the driver. Results are recorded by hand in benchmarks/traces_results.md.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--groups", type=int, default=2000)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--work", default=None)
    p.add_argument("--skip-local", action="store_true")
    p.add_argument("--profile", action="store_true", help="profile the single-process replay")
    args = p.parse_args()

    from traces.generate import GeneratorOptions, generate, model_factory
    from traces.inputs import classify

    work = Path(args.work or tempfile.mkdtemp(prefix="traces-bench-"))
    data = work / "trace"
    if not data.exists():
        t = time.monotonic()
        manifest = generate(GeneratorOptions(groups=args.groups, steps=args.steps, files=args.files),
                            model_factory, data, source="model")
        print(f"generated {manifest['events']} events in {time.monotonic() - t:.1f}s -> {data}")
    inputs = classify([str(data)])

    from traces import job

    t = time.monotonic()
    spark = job.session("local[2]", args.partitions)
    spark.range(1).count()
    print(f"JVM + session start {time.monotonic() - t:.1f}s (not counted)")
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    t = time.monotonic()
    counts = job.run(spark, inputs, out, args.partitions)
    spark_s = time.monotonic() - t
    spark.stop()
    print(f"spark local[2]: {counts.last_line()} in {spark_s:.1f}s = {counts.replayed / spark_s:,.0f} events/s")

    if not args.skip_local:
        from traces.local import run_local

        profiler = cProfile.Profile() if args.profile else None
        t = time.monotonic()
        if profiler:
            profiler.enable()
        result = run_local(inputs)
        if profiler:
            profiler.disable()
        local_s = time.monotonic() - t
        print(f"single process: {result.counts.last_line()} in {local_s:.1f}s = "
              f"{result.counts.replayed / local_s:,.0f} events/s")
        if profiler:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        _model_floor(inputs, result.counts.replayed, local_s)
    return 0


def _model_floor(inputs: object, events: int, local_s: float) -> None:
    import pyarrow.compute as pc

    from model.concrete import ModelCoordinator
    from model.coordinator_api import CoordinatorConfig
    from traces import codec
    from traces.local import staged_table
    from traces.pipeline import sort_columns

    staged = staged_table(inputs)  # type: ignore[arg-type]
    good = staged.filter(pc.is_null(staged["reject_reason"])).sort_by(sort_columns("trace"))
    work: dict[str, list[tuple[str, int, object]]] = {}
    for gid, kind, ts, payload in zip(*(good[c].to_pylist() for c in ("group_id", "kind", "ts_ms", "payload"))):
        if kind == "config":
            work.setdefault(gid, []).append((kind, ts, codec.loads_config(payload)))
        elif kind == "request":
            work.setdefault(gid, []).append((kind, ts, codec.loads_record(payload)))
        elif kind == "advance":
            work.setdefault(gid, []).append((kind, ts, None))
    t = time.monotonic()
    for ops in work.values():
        model = None
        for kind, ts, value in ops:
            if kind == "config":
                model = ModelCoordinator(value)  # type: ignore[arg-type]
                continue
            model = model or ModelCoordinator(CoordinatorConfig())
            if ts > model.now_ms():
                model.advance(ts - model.now_ms())
            if kind == "request":
                model.handle(value, lambda r: None)  # type: ignore[arg-type]
    floor_s = time.monotonic() - t
    print(f"model alone (handle/advance, same inputs): {floor_s:.1f}s = {events / floor_s:,.0f} events/s, "
          f"{100 * floor_s / local_s:.0f}% of the single-process run")


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of the trace replay with the native step against the Python step, in one run.

    .venv/bin/python benchmarks/replay_native_bench.py --input T --work DIR [--runs local-native,...]

Each run is the real command, in its own process:
- `local-ENGINE`: `groupspec replay --local --engine ENGINE` under `/usr/bin/time -v` (wall time of the
  whole command, its CPU time (user + system), maximum resident memory);
- `spark-ENGINE`: `groupspec replay --master local[2] --partitions 32 --engine ENGINE` under
  benchmarks/cpu_split.py (CPU seconds of the JVM, the Python workers and the driver); its
  `elapsed_s` (summary.json) is the time after the JVM and session started.
- `local-split`: the same `--local` run in this process, its CPU split by thread (`local_split`).
`native_step_s` (summary.json) is the time spent inside the engine's `judge` (the native step with its
Arrow reads), summed over tasks: the native part of the Python workers' CPU. The trace is made with
`groupspec traces generate`; results are recorded by hand in benchmarks/replay_native_results.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GROUPSPEC = str(ROOT / ".venv" / "bin" / "groupspec")


def run(name: str, inputs: list[str], work: Path) -> dict[str, object]:
    mode, engine = name.split("-")
    out = work / f"out-{name}"
    shutil.rmtree(out, ignore_errors=True)
    replay = [GROUPSPEC, "replay", "--input", *inputs, "--output", str(out), "--engine", engine, "--no-progress"]
    if mode == "local":
        cmd = ["/usr/bin/time", "-v", *replay, "--local"]
    else:
        cmd = [sys.executable, str(ROOT / "benchmarks" / "cpu_split.py"), "--",
               *replay, "--master", "local[2]", "--partitions", "32"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    text = done.stdout + done.stderr
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    result: dict[str, object] = {"run": name, "exit": done.returncode, "summary": summary}
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    user = re.search(r"User time \(seconds\): ([\d.]+)", text)
    system = re.search(r"System time \(seconds\): ([\d.]+)", text)
    if user and system:
        result["cpu_s"] = round(float(user.group(1)) + float(system.group(1)), 1)
        result["user_s"], result["sys_s"] = float(user.group(1)), float(system.group(1))
    split = re.search(r"^cpu_split: .*$", text, re.M)
    if wall:
        parts = [float(x) for x in wall.group(1).split(":")]
        result["wall_s"] = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    if rss:
        result["max_rss_mb"] = int(rss.group(1)) // 1024
    if split:
        result["cpu_split"] = split.group(0)
    if done.returncode not in (0, 1):
        result["stderr"] = text[-2000:]
    shutil.rmtree(out, ignore_errors=True)
    return result


class _Timed:
    """The replayer with the CPU time of the calling thread spent inside `judge` summed (the native step's CPU)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cpu = 0.0

    def judge(self, batch: Any, ranges: list[tuple[int, int]]) -> list[bool]:
        t = time.thread_time()
        try:
            out: list[bool] = self.inner.judge(batch, ranges)
            return out
        finally:
            self.cpu += time.thread_time() - t

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def stage2_split(inputs: list[str]) -> dict[str, object]:
    """Stage 2 alone, in this process, on staged rows sorted by group (stage 1 not timed): CPU
    seconds of the whole stage with the native step, the part inside the engine, and the same stage
    with the Python step."""
    import pyarrow.compute as pc

    from check.native_replay import make_replayer
    from traces.inputs import classify
    from traces.local import BATCH_ROWS, staged_table
    from traces.pipeline import PartitionJudge, sort_columns
    from traces.replay import default_model_factory

    classified = classify(inputs)
    staged = staged_table(classified)
    good = staged.filter(pc.is_null(staged["reject_reason"])).sort_by(sort_columns("trace"))
    batches = good.to_batches(BATCH_ROWS)
    out: dict[str, object] = {"run": "stage2-split", "events": good.num_rows}
    timed = _Timed(make_replayer())
    t = time.process_time()
    verdicts = sum(1 for _ in PartitionJudge("trace", factory=default_model_factory(), native=timed).judge(batches))
    out["native_stage2_cpu_s"] = round(time.process_time() - t, 2)
    out["native_step_cpu_s"] = round(timed.cpu, 2)
    t = time.process_time()
    assert verdicts == sum(1 for _ in PartitionJudge("trace", factory=default_model_factory()).judge(batches))
    out["python_stage2_cpu_s"] = round(time.process_time() - t, 2)
    return out


def local_split(inputs: list[str], work: Path) -> dict[str, object]:
    """`replay --local --engine native` in this process, its CPU split by thread: the main thread
    (checks, stage 2, output) with the parts inside the engine's `judge` and in `stage_parsed`
    (the column rules), and the stage-1 threads (reading and parsing chunks, decoding Parquet) as
    the rest of the process's CPU. The two run side by side, so on an idle machine the wall time
    is about the larger of the two (the main thread's) plus the start."""
    from check import native_replay
    from traces import local
    from traces.cli import ReplayOptions, replay

    judged = _Timed(native_replay.make_replayer())
    real_stage = getattr(local, "stage_parsed")
    staged = [0.0]

    def stage(*args: Any) -> Any:
        t = time.thread_time()
        try:
            return real_stage(*args)
        finally:
            staged[0] += time.thread_time() - t

    setattr(native_replay, "replayer_for", lambda engine: (judged, None))
    setattr(local, "stage_parsed", stage)
    out = work / "out-local-split"
    shutil.rmtree(out, ignore_errors=True)
    wall, process, main_thread = time.perf_counter(), time.process_time(), time.thread_time()
    counts = replay(inputs, str(out), ReplayOptions(local=True, progress=False, engine="native"))
    wall, process, main_thread = (time.perf_counter() - wall, time.process_time() - process,
                                  time.thread_time() - main_thread)
    summary = json.loads((out / "summary.json").read_text())
    shutil.rmtree(out)
    us = 1e6 / counts.replayed
    return {"run": "local-split", "events": counts.replayed, "local_path": summary.get("local_path"),
            "wall_s": round(wall, 2), "process_cpu_s": round(process, 2), "main_thread_cpu_s": round(main_thread, 2),
            "of_which_engine_judge_cpu_s": round(judged.cpu, 2), "of_which_stage_parsed_cpu_s": round(staged[0], 2),
            "stage1_threads_cpu_s": round(process - main_thread, 2),
            "us_per_event": {"main": round(main_thread * us, 2), "stage1_threads": round((process - main_thread) * us, 2),
                             "engine_judge": round(judged.cpu * us, 2), "stage_parsed": round(staged[0] * us, 2)}}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--input", nargs="+", required=True, help="trace files or directories")
    p.add_argument("--work", required=True, help="directory for the outputs (removed after each run)")
    p.add_argument("--runs", default="local-native,local-python,spark-native,spark-python",
                   help="comma-separated runs: local-native, local-python, spark-native, spark-python, "
                        "stage2-split (stage 2 alone in this process: CPU with each step, and inside the engine), "
                        "local-split (--local in this process: CPU of the main thread, the engine's judge, "
                        "stage_parsed and the stage-1 threads)")
    args = p.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    for name in args.runs.split(","):
        if name == "stage2-split":
            print(json.dumps(stage2_split(args.input)), flush=True)
            continue
        if name == "local-split":  # last: it replaces the replayer and stage_parsed in this process
            print(json.dumps(local_split(args.input, work)), flush=True)
            continue
        r = run(name, args.input, work)
        s = r["summary"]
        assert isinstance(s, dict)
        events = s.get("replayed", 0)
        seconds = r.get("wall_s") if name.startswith("local") else s.get("elapsed_s")
        rate = f"{events / seconds:,.0f} events/s" if isinstance(seconds, (int, float)) and seconds else "?"
        cpu = r.get("cpu_s")
        per_cpu = f"{events / cpu:,.0f} events per CPU-second" if isinstance(cpu, float) and cpu else ""
        print(json.dumps(r | {"rate": rate, "per_cpu": per_cpu}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

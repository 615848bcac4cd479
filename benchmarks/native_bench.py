"""Native engine benchmark: bounds the Python explorer cannot reach, both engines where Python
finishes, SPIN's anchor model in the same run, and the default plan with each engine. Not a test;
results go to explore_results.md.

    .venv/bin/python benchmarks/native_bench.py [--timeout S] [--python-timeout S] [--skip-spin]
        [--part spin,side,bounds,big,crash1,plancpu,plan] [--repeat N]

Each exploration runs in its own process (peak memory = that process's maximum RSS) with a time
limit; a run that hits it is reported as not finished, with the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple, Optional

ROOT = Path(__file__).resolve().parent.parent
ANCHORS = ROOT / ".." / "shared" / "anchors"
SRS = "session,rebalance,stall"
FAULT_SETS = (SRS, SRS + ",crash", "session,rebalance,unload,lost,crash,offsets,stall,append,impersonate")


def one(engine: str, members: int, gen: int, faults: str, liveness: bool, ids: int = 2,
        threads: Optional[int] = None) -> None:
    """Child process: one exploration, a JSON line on stdout. `cpu` is the exploration's own CPU
    time (every thread's); `base` the process's peak RSS before it (interpreter, model, engine
    loaded), so (peak - base) / states is what each state cost. `threads`: the native explorer's
    (None: its default; main's engine has no such option)."""
    from check.abstract import Bounds
    from check.native import explore_native
    from check.explore import explore
    from model.table import CLASSIC_TABLE, URGENT
    b = Bounds(dynamic=members, max_generation=gen, faults=frozenset(faults.split(",")),
               max_ids_per_client=ids)
    before = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    if engine != "native":
        r = explore(CLASSIC_TABLE, URGENT, b, progress=None, liveness=liveness)
    elif threads is None:
        r = explore_native(CLASSIC_TABLE, URGENT, b, progress=None, liveness=liveness)
    else:
        r = explore_native(CLASSIC_TABLE, URGENT, b, progress=None, liveness=liveness,
                           threads=threads)
    secs = time.perf_counter() - t
    use = resource.getrusage(resource.RUSAGE_SELF)
    peak = use.ru_maxrss * 1024
    cpu = use.ru_utime + use.ru_stime - before.ru_utime - before.ru_stime
    print(json.dumps({"states": r.states, "edges": r.edges, "depth": r.depth, "seconds": secs,
                      "cpu": cpu, "peak": peak, "base": before.ru_maxrss * 1024,
                      "violations": [v.invariant for v in r.violations]}))


# The engine before this branch, for side-by-side runs: main's checkout with its own venv.
OLD_ROOT = Path("/work/main")
OLD_PYTHON = OLD_ROOT / ".venv" / "bin" / "python"


def child(args: list[str], timeout: float, old: bool = False) -> Optional[dict[str, object]]:
    """One exploration in its own process; `old`: main's code and engine (OLD_ROOT)."""
    py, root = (str(OLD_PYTHON), OLD_ROOT) if old else (sys.executable, ROOT)
    env = dict(os.environ, PYTHONPATH=str(root))
    try:
        out = subprocess.run([py, __file__, "one", *args], capture_output=True, env=env,
                             text=True, timeout=timeout, cwd=root)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    doc: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return doc


HEADER = ("| members | generation <= | faults | engine | states | edges | depth | seconds | "
          "CPU s (process) | peak memory | result |\n|---|---|---|---|---|---|---|---|---|---|---|")


def row(engine: str, members: int, gen: int, faults: str, timeout: float) -> str:
    r = child([engine, str(members), str(gen), faults, "1"], timeout)
    label = f"| {members} | {gen} | {faults} | {engine} |"
    if r is None:
        return f"{label} | | | | > {timeout:.0f} | | | not finished in {timeout:.0f} s |"
    if "error" in r:
        return f"{label} | | | | | | | error: {r['error']} |"
    states = int(r["states"])  # type: ignore[call-overload]
    secs = float(r["seconds"])  # type: ignore[arg-type]
    verdict = "pass" if not r["violations"] else f"violations {r['violations']}"
    cpu = float(r["cpu"])  # type: ignore[arg-type]  # the whole child process, start-up included
    return (f"{label} {states:,} | {int(r['edges']):,} | {r['depth']} | {secs:.1f} | {cpu:.1f} | "  # type: ignore[call-overload]
            f"{int(r['peak']) / 2**20:,.0f} MB | {verdict}, {states / max(secs, 1e-9):,.0f} states/s |")  # type: ignore[call-overload]


SPIN_FLAGS = ["-O2", "-DSAFETY", "-DNOREDUCE", "-DMEMLIM=20000"]


class SpinRuns(NamedTuple):
    states: int
    cpus: list[float]  # CPU seconds of each run (pan and the workers it forks)
    walls: list[float]
    mb: float  # pan's own count of its memory


def spin_runs(model: str, timeout: float, repeat: int, cores: int = 1,
              between: Callable[[], None] = lambda: None) -> Optional[SpinRuns]:
    """SPIN's pan on the anchor model, `repeat` times (`between` called after each run, to
    interleave other runs with them); cores > 1: pan built with -DNCORE=cores (SPIN's own
    multi-core search)."""
    src = ANCHORS / model
    if shutil.which("spin") is None or shutil.which("gcc") is None or not src.exists():
        return None
    cpus: list[float] = []
    walls: list[float] = []
    ncore = [f"-DNCORE={cores}"] if cores > 1 else []
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(src, d)
        subprocess.run(["spin", "-a", model], cwd=d, check=True, capture_output=True)
        subprocess.run(["gcc", *SPIN_FLAGS, *ncore, "-o", "pan", "pan.c"], cwd=d, check=True,
                       capture_output=True)
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            out = subprocess.run(["./pan", "-m4000000", "-w24"], cwd=d, capture_output=True,
                                 text=True, timeout=timeout).stdout
            walls.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            between()
    found = re.search(r"([\d.e+]+) states, stored", out)
    mem = re.search(r"([\d.]+)\s+total actual memory usage", out)
    return SpinRuns(int(float(found.group(1))) if found else 0, cpus, walls,
                    float(mem.group(1)) if mem else 0.0)


def spin(model: str, timeout: float) -> str:
    r = spin_runs(model, timeout, 1)
    if r is None:
        return f"| SPIN {model} | not run (spin, gcc or the model missing) |"
    return (f"| SPIN {model} | {r.states:,} states | {r.cpus[0]:.1f} s CPU | {r.states / r.cpus[0]:,.0f} "
            f"states/s | {r.mb} MB |")


def _rates(n: int, secs: list[float]) -> str:
    """min / median seconds | states per second max / median / min."""
    secs = sorted(secs)
    return (f"{secs[0]:.2f} / {statistics.median(secs):.2f} | {n / secs[0]:,.0f} / "
            f"{n / statistics.median(secs):,.0f} / {n / secs[-1]:,.0f}")


SIDE_HEADER = ("| run | states | CPU s min / median | states per CPU s max / median / min | "
               "wall s min / median | states per wall s max / median / min | bytes a state (RSS) | "
               "peak RSS |\n|---|---|---|---|---|---|---|---|")


def side_by_side(repeat: int, gens: list[int], threads: list[int]) -> None:
    """SPIN's N3 anchor (one core, and SPIN's own multi-core search on the machine's cores), this
    engine on each of `threads` and main's, interleaved `repeat` times: states per CPU second and
    per wall second (min / median / max) and bytes a state ((peak RSS - RSS before exploring) /
    states)."""
    from check.native import machine_cores
    print(SIDE_HEADER, flush=True)
    cores = machine_cores()
    engines: list[tuple[str, bool, Optional[int]]] = [("main's engine", True, None)]
    engines += [(f"this branch, {t} thread{'s' if t > 1 else ''}", False, t) for t in threads]
    runs: dict[tuple[int, str], list[dict[str, object]]] = {}

    def ours() -> None:  # one run of each engine at each bound, between SPIN's runs
        for gen in gens:
            for label, old, t in engines:
                extra = [] if t is None else ["2", str(t)]
                got = child(["native", "3", str(gen), SRS, "1", *extra], 600, old=old)
                if got is not None and "error" not in got:
                    runs.setdefault((gen, label), []).append(got)

    spins = [(1, spin_runs("kafka_N3_flat.pml", 300, repeat, 1, ours))]
    if cores > 1:
        spins.append((cores, spin_runs("kafka_N3_flat.pml", 300, repeat, cores)))
    for c, r in spins:
        label = "`pan -m4000000 -w24`, -DSAFETY -DNOREDUCE" + (f" -DNCORE={c}" if c > 1 else ", one core")
        if r is None:
            print(f"| SPIN kafka_N3_flat.pml ({label}) | not run (spin, gcc or the model missing) |")
            continue
        print(f"| SPIN kafka_N3_flat.pml ({label}) | {r.states:,} | {_rates(r.states, r.cpus)} | "
              f"{_rates(r.states, r.walls)} | {r.mb * 2**20 / r.states:,.0f} (pan's own count) | "
              f"{r.mb:,.0f} MB (pan's count) |", flush=True)
    if not spins[0][1]:
        for _ in range(repeat):
            ours()
    for gen in gens:
        for label, _, _ in engines:
            rs = runs.get((gen, label), [])
            if not rs:
                print(f"| {label}, generation <= {gen} | not finished |")
                continue
            n = int(rs[0]["states"])  # type: ignore[call-overload]
            cpus = [float(x["cpu"]) for x in rs]  # type: ignore[arg-type]
            walls = [float(x["seconds"]) for x in rs]  # type: ignore[arg-type]
            per = [(int(x["peak"]) - int(x["base"])) / n for x in rs]  # type: ignore[call-overload]
            peak = max(int(x["peak"]) for x in rs) / 2**20  # type: ignore[call-overload]
            print(f"| {label}, 3 members, closed, {SRS}, generation <= {gen} | {n:,} | "
                  f"{_rates(n, cpus)} | {_rates(n, walls)} | {min(per):,.0f} | {peak:,.0f} MB |",
                  flush=True)


def plan(engine: str, timeout: float) -> str:
    t = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, "-m", "groupspec.cli", "check", "--engine", engine,
                              "--quiet"], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return f"| {engine} | > {timeout:.0f} s | not finished |"
    secs = time.perf_counter() - t
    tail = [ln for ln in out.stdout.splitlines() if ln.startswith("all runs") or "violat" in ln]
    return f"| {engine} | {secs:.1f} s | exit {out.returncode}; {'; '.join(tail)} |"


def plan_cpu() -> None:
    """The nine runs of PYTHON_PLAN with each engine in this process: CPU and wall seconds."""
    from check.explore import explore
    from check.native import explore_native
    from check.plan import PYTHON_PLAN
    from model.table import CLASSIC_TABLE, URGENT
    print("| engine | states | CPU seconds | wall seconds |\n|---|---|---|---|")
    for name, run in (("native", explore_native), ("python", explore)):
        cpu, wall, states = time.process_time(), time.perf_counter(), 0
        for _, b in PYTHON_PLAN:
            states += run(CLASSIC_TABLE, URGENT, b, progress=None).states
        print(f"| {name} | {states:,} | {time.process_time() - cpu:.2f} | "
              f"{time.perf_counter() - wall:.1f} |", flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "one":
        engine, members, generation, faults, live = sys.argv[2:7]
        ids = int(sys.argv[7]) if len(sys.argv) > 7 else 2
        threads = int(sys.argv[8]) if len(sys.argv) > 8 else None
        one(engine, int(members), int(generation), faults, live == "1", ids, threads)
        return
    p = argparse.ArgumentParser()
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--python-timeout", type=float, default=120.0)
    p.add_argument("--skip-spin", action="store_true")
    p.add_argument("--members", default="2,3,4,5")
    p.add_argument("--generations", default="1,2,3")
    p.add_argument("--part", default="spin,bounds,plan",
                   help="spin, side (SPIN, this engine and main's interleaved), bounds, big, "
                        "crash1 (4 members, generation <= 2, crashes, one id per client), plancpu, plan")
    p.add_argument("--repeat", type=int, default=5, help="runs of each in --part side")
    p.add_argument("--threads", default="1,2",
                   help="thread counts of this branch's explorer in --part side (comma-separated)")
    a = p.parse_args()
    load = os.getloadavg()[0]
    print(f"# native engine benchmark, {time.strftime('%Y-%m-%d %H:%M')} "
          f"{platform.machine()}, load average at start {load:.1f}\n", flush=True)
    parts = a.part.split(",")
    if "spin" in parts and not a.skip_spin:
        print("## SPIN anchor and the native engine, side by side\n")
        print("| run | states | seconds | states/s | memory |\n|---|---|---|---|---|", flush=True)
        print(spin("kafka_N3_flat.pml", 300), flush=True)
        for gen in (1, 2, 3):
            r = child(["native", "3", str(gen), SRS, "1"], 300)
            if r is not None and "error" not in r:
                s, secs = int(r["states"]), float(r["seconds"])  # type: ignore[call-overload,arg-type]
                print(f"| native, 3 members, closed, {SRS}, generation <= {gen} | {s:,} states | "
                      f"{secs:.2f} s | {s / secs:,.0f} states/s | "
                      f"{int(r['peak']) / 2**20:,.0f} MB |", flush=True)  # type: ignore[call-overload]
        print()
    if "side" in parts:
        print(f"## SPIN's N3 anchor, this engine and main's, interleaved {a.repeat} times\n")
        side_by_side(a.repeat, [1, 2], [int(t) for t in a.threads.split(",")])
        print()
    if "bounds" in parts:
        print("## Bounds (closed mode, dynamic members, symmetry on, liveness on)\n")
        print(HEADER, flush=True)
        for faults in FAULT_SETS:
            cut: list[tuple[int, int]] = []  # (members, generation) that hit the time limit
            for n in (int(x) for x in a.members.split(",")):
                for gen in (int(x) for x in a.generations.split(",")):
                    if any(n >= m and gen >= g for m, g in cut):
                        print(f"| {n} | {gen} | {faults} | native | | | | | | | not run: a smaller "
                              f"bound already took longer than {a.timeout:.0f} s |", flush=True)
                        continue
                    line = row("native", n, gen, faults, a.timeout)
                    if "not finished" in line:
                        cut.append((n, gen))
                    print(line, flush=True)
                    small = "," in line and "not finished" not in line and n <= 3 and gen <= 2
                    if small:
                        print(row("python", n, gen, faults, a.python_timeout), flush=True)
    if "big" in parts:
        print("\n## 4 members, generation <= 2, session,rebalance,stall,crash\n")
        print(HEADER, flush=True)
        print(row("native", 4, 2, SRS + ",crash", 1200), flush=True)
    if "crash1" in parts:
        print("\n## 4 members, generation <= 2, session,rebalance,stall,crash, one id per client\n")
        print(HEADER, flush=True)
        for old in (False, True):
            r = child(["native", "4", "2", SRS + ",crash", "1", "1"], a.timeout, old=old)
            label = "main's engine" if old else "this branch"
            if r is None or "error" in r:
                print(f"| 4 | 2 | {SRS},crash | {label} | {r or f'not finished in {a.timeout:.0f} s'} |",
                      flush=True)
                continue
            n = int(r["states"])  # type: ignore[call-overload]
            print(f"| 4 | 2 | {SRS},crash (1 id per client) | {label} | {n:,} | {int(r['edges']):,} | "  # type: ignore[call-overload]
                  f"{r['depth']} | {float(r['seconds']):.1f} | {float(r['cpu']):.1f} | "  # type: ignore[arg-type]
                  f"{int(r['peak']) / 2**20:,.0f} MB ({(int(r['peak']) - int(r['base'])) / n:.0f} B/state) | "  # type: ignore[call-overload]
                  f"{'pass' if not r['violations'] else r['violations']}, "
                  f"{n / float(r['cpu']):,.0f} states/CPU s |", flush=True)  # type: ignore[arg-type]
    if "plancpu" in parts:
        print("\n## Default plan, both engines, CPU time\n")
        plan_cpu()
    if "plan" in parts:
        print("\n## Default plan (`groupspec check --quiet`)\n")
        print("| engine | wall time | result |\n|---|---|---|", flush=True)
        print(plan("native", 600), flush=True)
        print(plan("python", 1800), flush=True)


if __name__ == "__main__":
    main()

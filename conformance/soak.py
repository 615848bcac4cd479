"""`groupspec soak --minutes M [--out DIR] [--seed S] [--steps N]`: the lockstep comparison, on and on.

Runs `conformance.lockstep` with seeded random actions (one seed per run, `--steps` actions each)
until the time is up. Every divergence is shrunk (a bounded delta-debugging pass over its actions)
and saved in DIR as a scenario file (`soak-<seed>.json`), replayable with `groupspec scenario run`.
Progress goes to stderr every few seconds; the summary to stdout. Exit status: 0 nothing failed,
1 some run failed, 2 bad arguments (groupspec/commands/soak.py parses them).
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, TextIO

from model.atomic import write_text_atomic

from conformance.lockstep import (
    Divergence,
    Lockstep,
    PROLOGUES,
    finding_text,
    random_action,
    random_config,
    shrink,
)

PROGRESS_EVERY_S = 5.0
SHRINK_BUDGET_S = 20.0


@dataclass
class SoakResult:
    runs: int = 0
    steps: int = 0
    seconds: float = 0.0
    failures: list[tuple[int, str, str]] = field(default_factory=list)  # (seed, kind, file)
    tolerated: dict[str, int] = field(default_factory=dict)


def run_one(seed: int, steps: int, bugs: frozenset[str] = frozenset()) -> tuple[Lockstep, Optional[Divergence]]:
    """One random run: its seed picks the configuration and every action."""
    rng = random.Random(seed)
    config = random_config(rng)
    ls = Lockstep(config, bugs=bugs, seed=seed)
    try:
        for a in PROLOGUES[rng.randrange(len(PROLOGUES))]:
            ls.apply(a)
        for _ in range(steps):
            ls.apply(random_action(rng))
    except Divergence as d:
        return ls, d
    return ls, None


def soak(minutes: float, out_dir: str, first_seed: int, steps: int, *, bugs: frozenset[str] = frozenset(),
         progress: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic) -> SoakResult:
    """Run until `minutes` are over; every failure is shrunk and written to `out_dir`."""
    result = SoakResult()
    start = clock()
    deadline = start + minutes * 60.0
    next_report = start + PROGRESS_EVERY_S
    seed = first_seed
    while clock() < deadline:
        ls, divergence = run_one(seed, steps, bugs)
        result.runs += 1
        result.steps += ls.steps
        for name, n in ls.tolerated.items():
            result.tolerated[name] = result.tolerated.get(name, 0) + n
        if divergence is not None:
            small = shrink(divergence, ls.config, bugs=bugs, seed=seed, budget_s=SHRINK_BUDGET_S)
            path = os.path.join(out_dir, f"soak-{seed}.json")
            write_text_atomic(path, finding_text(small, bugs=bugs))  # never a half-written scenario file
            result.failures.append((seed, small.kind, path))
            if progress is not None:
                progress.write(f"soak: seed {seed} FAILED ({small.kind}, {len(small.actions)} actions "
                               f"after shrinking): {path}\n")
        seed += 1
        now = clock()
        if progress is not None and now >= next_report:
            elapsed = now - start
            progress.write(f"soak: {elapsed:6.0f}s  runs {result.runs}  steps {result.steps}  "
                           f"({result.steps / max(elapsed, 1e-9):,.0f}/s)  failures {len(result.failures)}\n")
            progress.flush()
            next_report = now + PROGRESS_EVERY_S
    result.seconds = clock() - start
    return result


def summary(result: SoakResult, first_seed: int) -> str:
    lines = [
        f"soak: {result.runs} runs (seeds {first_seed}..{first_seed + max(result.runs - 1, 0)}), "
        f"{result.steps} steps in {result.seconds:.0f}s ({result.steps / max(result.seconds, 1e-9):,.0f} steps/s)",
    ]
    for name, n in sorted(result.tolerated.items()):
        if name == "timing-tie-order":
            lines.append(f"  equal-deadline timers agreed only in the other order {n} times (Kafka leaves it unspecified)")
        else:
            lines.append(f"  known difference {name!r} tolerated {n} times (conformance.lockstep.KNOWN_DIFFERENCES)")
    for seed, kind, path in result.failures:
        lines.append(f"  FAIL seed {seed}: {kind}: {path}")
    lines.append(f"{len(result.failures)} failed" if result.failures else "no divergence")
    return "\n".join(lines) + "\n"


__all__ = ["SoakResult", "run_one", "soak", "summary"]

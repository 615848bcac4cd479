"""Long lockstep run, model vs real Kafka 3.9 (conformance.lockstep_kafka); results to a folder.

    nice -n 10 .venv/bin/python benchmarks/kafka_lockstep.py --seed 1 --minutes 30 --out out/kl

Prints a progress line per run to stderr; writes every divergence as a scenario file
(OUT/divergence-N.json) and the figures as OUT/summary.json. Exit 0: none found, 1: found.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conformance.lockstep_kafka import run_kafka_lockstep  # noqa: E402


def _write(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--steps-per-run", type=int, default=40)
    p.add_argument("--out", default="out/kafka-lockstep")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    begin = time.monotonic()
    stats = run_kafka_lockstep(a.seed, budget_s=a.minutes * 60, steps_per_run=a.steps_per_run,
                               progress=lambda s: print(s, file=sys.stderr, flush=True))
    for i, d in enumerate(stats.divergences):
        _write(os.path.join(a.out, f"divergence-{i}.json"), d.render())
    summary = {"seed": a.seed, "seconds": round(time.monotonic() - begin, 1), "runs": stats.runs,
               "steps": stats.steps, "responses_compared": stats.compared,
               "timing_stops": stats.timing_stops, "divergences": len(stats.divergences),
               "divergence_kinds": [f"{d.kind}: {d.message[:300]}" for d in stats.divergences],
               "timing_notes": [n[:300] for n in stats.timing_notes],
               "brokers_started": stats.brokers_started}
    _write(os.path.join(a.out, "summary.json"), json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "timing_notes"}, indent=1))
    return 1 if stats.divergences else 0


if __name__ == "__main__":
    sys.exit(main())

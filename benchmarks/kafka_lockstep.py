"""Long lockstep run, model vs real Kafka 3.9 (fuzz.lockstep_kafka); results to a folder.

    nice -n 10 .venv/bin/python benchmarks/kafka_lockstep.py --seed 1 --minutes 30 --out out/kl
    nice -n 10 .venv/bin/python benchmarks/kafka_lockstep.py --seed 1 --runs 40 --steps-per-run 12 \\
        --serve-bug timer-join-no-generation-bump --out out/kl-mutant   # a mutant posing as Kafka 3.9

Prints a progress line per run to stderr; writes every divergence as a scenario file
(OUT/divergence-N.json) and the figures as OUT/summary.json (timing stops and their share of the
runs included). Exit 0: none found, 1: found.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from model.coordinator_api import CoordinatorConfig  # noqa: E402
from fuzz.lockstep_kafka import Brokers, run_kafka_lockstep  # noqa: E402


def _write(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _served(bug: str, handles: list[Any]) -> Brokers:
    """`groupspec serve --bug BUG` (in this process, one per broker config) posing as the broker."""
    from server.run import start_in_thread
    by_config: dict[CoordinatorConfig, int] = {}

    def address(cc: CoordinatorConfig) -> tuple[str, int]:
        if cc not in by_config:
            h = start_in_thread(cc, None if bug == "none" else bug)
            handles.append(h)
            by_config[cc] = h.port
        return "127.0.0.1", by_config[cc]
    return address


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--runs", type=int, default=None, help="stop after this many runs (else --minutes)")
    p.add_argument("--steps-per-run", type=int, default=40)
    p.add_argument("--serve-bug", default=None, metavar="BUG",
                   help="pose `groupspec serve --bug BUG` as Kafka 3.9 (`none`: the correct serve)")
    p.add_argument("--out", default="out/kafka-lockstep")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    begin = time.monotonic()
    handles: list[Any] = []
    brokers: Optional[Brokers] = _served(a.serve_bug, handles) if a.serve_bug else None
    try:
        stats = run_kafka_lockstep(a.seed, runs=a.runs, budget_s=None if a.runs else a.minutes * 60,
                                   steps_per_run=a.steps_per_run, brokers=brokers,
                                   progress=lambda s: print(s, file=sys.stderr, flush=True))
    finally:
        for h in handles:
            h.stop()
    for i, d in enumerate(stats.divergences):
        _write(os.path.join(a.out, f"divergence-{i}.json"), d.render())
    summary = {"seed": a.seed, "target": f"serve --bug {a.serve_bug}" if a.serve_bug else "kafka-3.9",
               "profile": stats.profile, "seconds": round(time.monotonic() - begin, 1),
               "runs": stats.runs, "steps": stats.steps, "responses_compared": stats.compared,
               "responses_judged": stats.judged, "timing_stops": stats.timing_stops,
               "timing_stop_share": round(stats.timing_stop_share(), 4),
               "desynchronised_runs": stats.desynced, "answers_judged_desynchronised": stats.judged_desynced,
               "divergences": len(stats.divergences),
               "divergence_kinds": [f"{d.kind}: {d.message[:300]}" for d in stats.divergences],
               "timing_notes": [n[:300] for n in stats.timing_notes],
               "brokers_started": stats.brokers_started}
    _write(os.path.join(a.out, "summary.json"), json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k not in ("timing_notes", "divergence_kinds")}, indent=1))
    return 1 if stats.divergences else 0


if __name__ == "__main__":
    sys.exit(main())

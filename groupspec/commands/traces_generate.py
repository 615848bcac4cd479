"""`groupspec traces generate`: record randomized groups run by the reference coordinator as a trace
(traces/generate.py). Exit 0 when written; 2 on bad options or an output that cannot be used
(nothing is written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Final

HELP: Final = "make traces with the reference coordinator"
DESCRIPTION: Final = "Record randomized groups as a trace."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--groups", type=int, required=True, help="number of groups")
    p.add_argument("--seed", type=int, default=0, help="seed of the randomized groups (default 0)")
    p.add_argument("--faults", default="all",
                   help="comma-separated faults: crash,session,rebalance,lost,leave ('all' or 'none'; "
                        "the names of check --faults; session-timeout, rebalance-timeout, lost-response "
                        "are accepted too)")
    p.add_argument("--bug", action="append", default=[], metavar="NAME", help="coordinator bug to inject")
    p.add_argument("--bug-fraction", type=float, default=0.1, help="fraction of groups given the bug")
    p.add_argument("--steps", type=int, default=40, help="client actions per group")
    p.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl",
                   help="file format of the trace (default jsonl)")
    p.add_argument("--files", type=int, default=1, help="number of output files")
    p.add_argument("--jobs", type=int, default=1,
                   help="processes writing the files (at most --files; same output as one process)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (published atomically)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output directory")


def run(a: argparse.Namespace) -> int:
    from reference.coordinator import ReferenceCoordinator
    from traces.generate import GeneratorOptions, generate

    options = GeneratorOptions.from_args(
        groups=a.groups, seed=a.seed, faults=a.faults, bugs=tuple(a.bug), bug_fraction=a.bug_fraction,
        steps=a.steps, fmt=a.format, files=a.files,
    )
    manifest = generate(options, ReferenceCoordinator, Path(a.out), a.overwrite, "reference",
                        jobs=a.jobs, progress=sys.stderr)
    print(f"groups {manifest['groups']}, events {manifest['events']}, bugged groups {len(manifest['bugged_groups'])}"
          f" (bug observable in {len(manifest['bug_observable_groups'])}), out {a.out}")
    return 0

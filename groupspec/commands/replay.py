"""`groupspec replay --input PATH... --output DIR`: check traces or broker logs against the model,
on Spark or in this process (traces/cli.py).

Exit 0 = no violation, 1 = violations, 2 = bad arguments or an input that is not a trace at all
(nothing written), 3 = the counts do not add up (nothing published).
"""

from __future__ import annotations

import argparse
from typing import Final

HELP: Final = "check traces or broker logs against the model (Spark)"
DESCRIPTION: Final = "Replay traces or broker logs against the model."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", nargs="+", action="extend", required=True, metavar="PATH",
                   help="trace files (*.jsonl, *.parquet), broker logs (*.log, server.log*), or directories")
    p.add_argument("--output", required=True, metavar="DIR", help="output directory (published atomically)")
    p.add_argument("--master", default=None, help="Spark master URL (default local[*]; under spark-submit: its master)")
    p.add_argument("--partitions", type=int, default=None, help="partitions of the group shuffle")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    p.add_argument("--local", action="store_true", help="run in this Python process, without Spark")
    p.add_argument("--engine", choices=("native", "python"), default="native",
                   help="the replay's model step: native (the engine built from the table; Python judges "
                        "every group it does not call clean) or python (model.concrete alone)")
    p.add_argument("--table", default=None, metavar="PROFILE|MODULE:NAME",
                   help="judge by this transition table: a profile (kafka-3.9, kafka-4) or package.module:NAME "
                        "(a table of your own, or a mutant of check.mutants; default kafka-3.9). Both engines take "
                        "it (native: a table naming what the engine lacks replays in Python, said on stderr); on "
                        "Spark its module must be importable by the executors (a cluster: --py-files or their "
                        "PYTHONPATH). summary.json names it")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="print stage progress (default: when stderr is a terminal)")


def run(a: argparse.Namespace) -> int:
    from traces.cli import ReplayOptions, print_counts, replay

    counts = replay(a.input, a.output, ReplayOptions(master=a.master, partitions=a.partitions,
                                                     overwrite=a.overwrite, local=a.local, progress=a.progress,
                                                     engine=a.engine, table=a.table))
    print_counts(counts)
    return 1 if counts.violations else 0

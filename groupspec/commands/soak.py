"""`groupspec soak --minutes M [--out DIR] [--seed S] [--steps N]`: the reference against the model
on seeded random runs until the time is up (conformance/soak.py); each divergence is shrunk and
saved as a scenario file. Exit 0 nothing failed, 1 some run failed, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Final

from model.errors import BadInput

from groupspec.options import at_least, output_dir

HELP: Final = "reference vs model on random runs, findings saved as scenario files"
DESCRIPTION: Final = "Compare the reference coordinator with the model on random runs until time is up."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--minutes", type=float, required=True, help="how long to run (> 0)")
    p.add_argument("--out", default="soak-findings", metavar="DIR",
                   help="directory for failing runs as scenario files (default soak-findings)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the first run (runs use seed, seed+1, ...; default: random, printed)")
    p.add_argument("--steps", type=int, default=400, help="actions per run (default 400)")


def run(a: argparse.Namespace) -> int:
    if not a.minutes > 0:
        raise BadInput(f"--minutes must be > 0, got {a.minutes}")
    at_least("--steps", a.steps, 1)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    output_dir(a.out, "--out", f"soak-{seed}.json", create=True)
    from conformance.soak import soak, summary

    sys.stderr.write(f"soak: {a.minutes:g} minutes, {a.steps} actions per run, first seed {seed}, "
                     f"findings in {a.out}\n")
    result = soak(a.minutes, a.out, seed, a.steps, progress=sys.stderr)
    sys.stdout.write(summary(result, seed))
    return 1 if result.failures else 0

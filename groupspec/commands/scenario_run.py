"""`groupspec scenario run FILE... --target T [--json FILE] [--allow-remote] [--profile P]
[--table PROFILE|MODULE:NAME] [--time-scale X] [--budget SECONDS]`.

On a real-clock target (a broker) the scenarios run at a time scale, with their topics created
and their off-clock answers judged by the fuzz judge (docs/realclock.md).

Exit status: 0 nothing failed, 1 some scenario failed, 2 bad input (arguments, scenario files,
target); on bad input nothing is run and no report is written; 3 a target that could not be
reached or did not answer.
"""

from __future__ import annotations

import argparse
from typing import Final

from conformance.realclock import DEFAULT_BUDGET_S
from conformance.targets import PROFILES, TARGET_HELP, is_real_clock
from groupspec.options import load_table_or_profile

HELP: Final = "run scenario files against a target"
DESCRIPTION: Final = "Run conformance scenario files against a target."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="scenario files (kafka-classic-group-conformance/1)")
    p.add_argument("--target", required=True, help=TARGET_HELP)
    p.add_argument("--json", metavar="FILE", dest="json_path", help="also write a machine-readable report")
    p.add_argument("--allow-remote", action="store_true", help="allow kafka://HOST:PORT targets")
    p.add_argument("--profile", choices=PROFILES, default=None,
                   help="with --target model: the table of this Kafka version (default kafka-3.9)")
    p.add_argument("--table", default=None, metavar="PROFILE|MODULE:NAME",
                   help="with --target model: run this transition table, a profile (kafka-3.9, kafka-4) or "
                        "package.module:NAME (a table of your own: the one a finding's file names in "
                        "conventions.judged_with_table); on a real-clock target: judge every scenario's "
                        "answers by it (default: the profile a scenario's tags name, else kafka-3.9)")
    p.add_argument("--time-scale", type=float, default=None, metavar="X",
                   help="real-clock targets: multiply every timer and advance by X >= 1 (default: chosen per "
                        "scenario from its smallest timer and the request latency measured at the start)")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, metavar="SECONDS",
                   help=f"real-clock targets: real waiting allowed per scenario; a scenario needing more is "
                        f"skipped with the reason (default {DEFAULT_BUDGET_S:g})")


def run(a: argparse.Namespace) -> int:
    from conformance.cli import run_files
    from fuzz.scenario_judge import judge_factory
    table = (a.table, *load_table_or_profile(a.table, "--table")) if a.table is not None else None
    judge = (judge_factory(a.target, table=None if table is None else table[1:])
             if is_real_clock(a.target) else None)
    return run_files(a.files, a.target, allow_remote=a.allow_remote, profile=a.profile, json_path=a.json_path,
                     time_scale=a.time_scale, budget_s=a.budget, judge=judge, table=table)

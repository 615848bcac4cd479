"""`groupspec prove`: every Z3 proof obligation over a table (proofs/cli.py runs them).

Exit 0 iff all are proved, 1 if one is refuted (a counterexample, a CTI, a well-formedness
finding), 3 if the rest are only undecided (a solver timeout), 2 on bad arguments, 130 on Ctrl-C
(the running query is interrupted). `groupspec prove states` is groupspec/commands/prove_states.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Final, Optional

from model.atomic import write_text_atomic
from model.dsl import Table
from model.errors import BadInput

from groupspec import junit
from groupspec.options import load_table, output_file

HELP: Final = "Z3 proofs over the table; prove states: explorer and solver agree"
DESCRIPTION: Final = ("Z3 proofs over the transition table: well-formed guards, every invariant by "
                      "induction and by BMC, and with --rows every row's reachability.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--invariant", action="append", default=[], metavar="NAME",
                   help="check only this invariant (repeatable); default: all")
    p.add_argument("--depth", type=int, default=10, metavar="K", help="BMC depth (default 10)")
    p.add_argument("--ids", type=int, default=3, metavar="N",
                   help="member/instance ids in BMC (default 3)")
    p.add_argument("--rows", action="store_true", help="also decide every row's reachability")
    p.add_argument("--reach-depth", type=int, default=8, metavar="D",
                   help="BMC depth for row witnesses (default 8)")
    p.add_argument("--timeout-ms", type=int, default=30000, metavar="MS",
                   help="per-query solver timeout (default 30000)")
    p.add_argument("--json", metavar="FILE", help="write the full report as JSON")
    p.add_argument("--junit", metavar="FILE",
                   help="write a JUnit XML report: one testcase per obligation")
    p.add_argument("--table", metavar="module:NAME", help="the table to prove (default: "
                   "model.table:CLASSIC_TABLE)")


def run(a: argparse.Namespace) -> int:
    output_file(a.junit, "--junit")
    try:
        from proofs.cli import IDS_ESTIMATE, ProveOptions, check_options, prove_table
    except ImportError as e:  # z3 is loaded with them
        raise _unavailable(e) from e
    options = ProveOptions(invariants=tuple(a.invariant), depth=a.depth, ids=a.ids, rows=a.rows,
                           reach_depth=a.reach_depth, timeout_ms=a.timeout_ms)
    table = _table(a.table)  # first: its module may register invariants --invariant names
    check_options(options)
    if a.ids in IDS_ESTIMATE:
        print(f"groupspec prove: --ids {a.ids} takes {IDS_ESTIMATE[a.ids]} on 2 cores, and BMC "
              "queries may time out (undecided, exit 3); the default is 3", file=sys.stderr, flush=True)
    output_file(a.json, "--json")
    status, report = prove_table(table, options, sys.stdout)
    if a.json is not None:
        write_text_atomic(a.json, json.dumps(report, indent=2))
    if a.junit is not None and status in (0, 1):
        junit.write(a.junit, f"groupspec prove {report.get('table', '')}", junit.prove_cases(report),
                    float(report.get("seconds", 0.0)))
    return status


def prove_status(table_spec: Optional[str]) -> int:
    """`groupspec check --prove`: every obligation with the default options; the exit status."""
    try:
        from proofs.cli import ProveOptions, prove_table
    except ImportError as e:
        raise _unavailable(e) from e
    return prove_table(_table(table_spec), ProveOptions(), sys.stdout)[0]


def _table(spec: Optional[str]) -> Table:
    if spec is None:
        from model.table import CLASSIC_TABLE
        return CLASSIC_TABLE
    return load_table(spec)[0]


def _unavailable(e: ImportError) -> BadInput:
    return BadInput(f"groupspec prove is not available in this build: {e}")

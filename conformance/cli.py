"""`groupspec scenario run FILE... --target T [--json FILE] [--allow-remote]`.

Exit status: 0 nothing failed, 1 some scenario failed, 2 bad input (arguments, scenario files,
target); on bad input nothing is run and no report is written.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, TextIO

from model.atomic import check_writable
from model.errors import BadInput

from conformance.parse import ScenarioFormatError, load
from conformance.report import json_report, summary_line, write_json
from conformance.runner import Outcome, ScenarioResult, run_scenario
from conformance.scenario import ScenarioFile
from conformance.targets import (
    PROFILES, TARGET_HELP, TargetError, close_factory, profile_model_factory, resolve_target,
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _BadArguments(message)


class _BadArguments(Exception):
    pass


def _parser() -> _Parser:
    p = _Parser(prog="groupspec scenario run", description="Run conformance scenario files against a target.")
    p.add_argument("files", nargs="+", metavar="FILE", help="scenario files (kafka-classic-group-conformance/1)")
    p.add_argument("--target", required=True, help=TARGET_HELP)
    p.add_argument("--json", metavar="FILE", dest="json_path", help="also write a machine-readable report")
    p.add_argument("--allow-remote", action="store_true", help="allow kafka://HOST:PORT targets")
    p.add_argument("--profile", choices=PROFILES, default=None,
                   help="with --target model: the table of this Kafka version (default kafka-3.9)")
    return p


def run_scenarios(argv: list[str], out: Optional[TextIO] = None, err: Optional[TextIO] = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except _BadArguments as e:
        err.write(f"{parser.format_usage()}groupspec scenario run: error: {e}\n")
        return 2
    except SystemExit as e:  # --help
        return int(e.code or 0)
    try:
        if args.json_path:
            check_writable(args.json_path, "--json")  # before the run, not after it
        files: list[ScenarioFile] = [load(path) for path in args.files]
    except (ScenarioFormatError, BadInput) as e:
        err.write(f"groupspec scenario run: error: {e}\n")
        return 2
    if args.profile is not None and args.target != "model":
        err.write(f"groupspec scenario run: error: --profile {args.profile} needs --target model "
                  f"(got --target {args.target})\n")
        return 2
    try:
        factory = (resolve_target(args.target, args.allow_remote) if args.profile in (None, "kafka-3.9")
                   else profile_model_factory(args.profile))
    except TargetError as e:
        err.write(f"groupspec scenario run: error: {e}\n")
        return 2
    results: list[ScenarioResult] = []
    try:
        for f in files:
            for scenario in f.scenarios:
                result = run_scenario(f.path, scenario, factory)
                results.append(result)
                out.write(result.describe() + "\n")  # one line per result as it comes (slow targets)
                out.flush()
    finally:
        close_factory(factory)
    out.write(summary_line(results) + "\n")
    if args.json_path:
        try:
            write_json(args.json_path, json_report(results, args.target))
        except OSError as e:
            err.write(f"groupspec scenario run: error: cannot write {args.json_path}: {e.strerror}\n")
            return 2
    return 1 if any(r.outcome is Outcome.FAIL for r in results) else 0

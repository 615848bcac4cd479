"""What `groupspec scenario run FILE... --target T [--json FILE] [--allow-remote] [--profile P]` runs
(groupspec/commands/scenario_run.py parses the arguments).

`run_files` returns 0 if nothing failed, 1 if some scenario failed; bad input (a scenario file, an
unknown or remote target, a --profile without --target model) raises a BadInput before anything is
run or written; a target that cannot be reached raises an Incomplete.
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence, TextIO

from model.atomic import check_writable
from model.errors import BadInput

from conformance.parse import load
from conformance.report import json_report, summary_line, write_json
from conformance.runner import Outcome, ScenarioResult, run_scenario
from conformance.scenario import ScenarioFile
from conformance.targets import close_factory, profile_model_factory, resolve_target


def run_files(paths: Sequence[str], target: str, *, allow_remote: bool = False, profile: Optional[str] = None,
              json_path: Optional[str] = None, out: Optional[TextIO] = None) -> int:
    """Run every scenario of every file on `target`, one line per result on `out` as it comes, then
    the summary line; with `json_path`, also the machine-readable report."""
    out = out if out is not None else sys.stdout
    if json_path:
        check_writable(json_path, "--json")  # before the run, not after it
    files: list[ScenarioFile] = [load(path) for path in paths]
    if profile is not None and target != "model":
        raise BadInput(f"--profile {profile} needs --target model (got --target {target})")
    factory = (resolve_target(target, allow_remote) if profile in (None, "kafka-3.9")
               else profile_model_factory(profile))
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
    if json_path:
        try:
            write_json(json_path, json_report(results, target))
        except OSError as e:
            raise BadInput(f"cannot write {json_path}: {e.strerror}") from None
    return 1 if any(r.outcome is Outcome.FAIL for r in results) else 0

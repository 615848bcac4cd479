"""What `groupspec scenario run FILE... --target T [--json FILE] [--allow-remote] [--profile P]` runs
(groupspec/commands/scenario_run.py parses the arguments).

`run_files` returns 0 if nothing failed, 1 if some scenario failed; bad input (a scenario file, an
unknown or remote target, a --profile without --target model) raises a BadInput before anything is
run or written; a target that cannot be reached raises an Incomplete.

On a real-clock target (every target but `model` and `reference`) the request latency is measured
once at the start, and each scenario runs at a time scale (given, or chosen per scenario), with its
topics created and its answers judged by `judge` (conformance/realclock.py).
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence, TextIO

from model.atomic import check_writable
from model.coordinator_api import CoordinatorConfig
from model.dsl import Table
from model.errors import BadInput
from check.profiles import Urgent

from conformance.parse import load
from conformance.realclock import DEFAULT_BUDGET_S, JudgeFactory, RealClockOptions, measure_latency_ms
from conformance.report import json_report, summary_line, write_json
from conformance.runner import Outcome, ScenarioResult, TargetFactory, run_scenario
from conformance.scenario import ScenarioFile
from conformance.targets import (
    close_factory, is_real_clock, profile_model_factory, resolve_target, table_model_factory,
)


def run_files(paths: Sequence[str], target: str, *, allow_remote: bool = False, profile: Optional[str] = None,
              json_path: Optional[str] = None, out: Optional[TextIO] = None,
              time_scale: Optional[float] = None, budget_s: float = DEFAULT_BUDGET_S,
              judge: Optional[JudgeFactory] = None,
              table: Optional[tuple[str, Table, Urgent]] = None) -> int:
    """Run every scenario of every file on `target`, one line per result on `out` as it comes, then
    the summary line; with `json_path`, also the machine-readable report. On a real-clock target:
    `time_scale` (None: chosen per scenario), `budget_s` of real waiting per scenario, `judge`.
    `table`: --table's (name, table, URGENT), the table `--target model` runs (on a real-clock
    target the judge reads it: the caller's `judge` is made with it)."""
    out = out if out is not None else sys.stdout
    if json_path:
        check_writable(json_path, "--json")  # before the run, not after it
    files: list[ScenarioFile] = [load(path) for path in paths]
    if profile is not None and target != "model":
        raise BadInput(f"--profile {profile} needs --target model (got --target {target})")
    real = is_real_clock(target)
    if table is not None and ((target != "model" and not real) or profile is not None):
        raise BadInput(f"--table {table[0]} needs --target model or a real-clock target, and no --profile "
                       f"(got --target {target}" + (f", --profile {profile})" if profile is not None else ")"))
    if time_scale is not None and (not real or time_scale < 1.0):
        raise BadInput(f"--time-scale {time_scale:g}: a real-clock target (not model/reference) and a scale >= 1")
    if not 0 < budget_s < 300:
        raise BadInput(f"--budget {budget_s:g}: expected 0 < seconds < 300 (Kafka's new-member timeout)")
    if table is not None and not real:
        factory = table_model_factory(table[1], table[2])
    else:
        factory = (resolve_target(target, allow_remote) if profile in (None, "kafka-3.9")
                   else profile_model_factory(profile))
    results: list[ScenarioResult] = []
    try:
        clock: Optional[RealClockOptions] = None
        if real:
            latency = _latency(factory)
            out.write(f"real clock: request cost {latency:.1f} ms (second slowest of 10 DescribeGroups steps at the start); "
                      f"time scale {'auto per scenario' if time_scale is None else f'{time_scale:g}'}; "
                      f"budget {budget_s:g} s of waiting per scenario\n")
            clock = RealClockOptions(time_scale, latency, budget_s, judge)
        for f in files:
            for scenario in f.scenarios:
                result = run_scenario(f.path, scenario, factory, clock=clock)
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


def _latency(factory: TargetFactory) -> float:
    """The target's request latency now, on a target with the default config (then closed)."""
    target = factory(CoordinatorConfig())
    try:
        return measure_latency_ms(target)
    finally:
        close = getattr(target, "close", None)
        if close is not None:
            close()

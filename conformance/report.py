"""Runner output: one line per scenario, a summary line, and the same as JSON (`--json`)."""

from __future__ import annotations

import json
from typing import Any, Iterable

from model.atomic import write_text_atomic

from conformance.expect import thaw
from conformance.runner import Outcome, ScenarioResult

REPORT_FORMAT = "groupspec-scenario-report/1"


def summary_line(results: Iterable[ScenarioResult]) -> str:
    counts = {o: 0 for o in Outcome}
    for r in results:
        counts[r.outcome] += 1
    return f"{counts[Outcome.PASS]} passed, {counts[Outcome.FAIL]} failed, {counts[Outcome.SKIP]} skipped"


def text_report(results: list[ScenarioResult]) -> str:
    return "\n".join([r.describe() for r in results] + [summary_line(results)]) + "\n"


def result_json(r: ScenarioResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "file": r.path,
        "scenario": r.scenario.name,
        "index": r.scenario.index,
        "outcome": r.outcome.value,
    }
    if r.failure is not None:
        out["step"] = r.failure.step_index
        out["op"] = r.failure.op
        out["message"] = r.failure.message
        out["mismatches"] = [
            {"key": m.key, "expected": thaw(m.expected), "resolved": m.resolved, "actual": m.actual}
            for m in r.failure.mismatches
        ]
    if r.reason:
        out["reason"] = r.reason
    if r.clock:
        out["clock"] = r.clock
    return out


def json_report(results: list[ScenarioResult], target: str) -> dict[str, Any]:
    counts = {o: sum(1 for r in results if r.outcome is o) for o in Outcome}
    return {
        "format": REPORT_FORMAT,
        "target": target,
        "results": [result_json(r) for r in results],
        "passed": counts[Outcome.PASS],
        "failed": counts[Outcome.FAIL],
        "skipped": counts[Outcome.SKIP],
    }


def write_json(path: str, document: dict[str, Any]) -> None:
    """Write atomically (model.atomic): the file is either complete or untouched."""
    write_text_atomic(path, json.dumps(document, indent=2) + "\n")

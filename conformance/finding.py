"""A finding (a FAIL) printed as a ready-to-run scenario file.

The file holds the failing scenario's steps up to and including the failing one, unchanged, with
the file's defaults; the observed values are noted in the scenario's `notes` and, structured, in a
top-level `finding` object (unknown top-level keys are ignored by runners). Running it against the
same target fails again at its last step.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.expect import thaw
from conformance.runner import Outcome, ScenarioResult
from conformance.scenario import FORMAT, ScenarioFile, step_raw


def finding_document(result: ScenarioResult, file: ScenarioFile, target: str) -> dict[str, Any]:
    """The finding as a scenario document (a JSON-ready dict)."""
    if result.outcome is not Outcome.FAIL or result.failure is None:
        raise ValueError(f"{result.scenario.name}: only a FAIL is a finding (got {result.outcome.value})")
    failure = result.failure
    scenario = result.scenario
    raw = json.loads(scenario.raw)
    steps = [json.loads(step_raw(s)) for s in scenario.steps[: failure.step_index + 1]]
    observed = [
        {"key": m.key, "expected": thaw(m.expected), "resolved": m.resolved, "actual": m.actual}
        for m in failure.mismatches
    ]
    note = f"FINDING against target {target!r} at step {failure.step_index}: {failure.describe()}"
    raw["steps"] = steps
    raw["notes"] = f"{raw.get('notes', '')}\n{note}".strip()
    raw["tags"] = list(raw.get("tags", [])) + ["finding"]
    return {
        "format": FORMAT,
        "defaults": json.loads(file.defaults_raw),
        "finding": {
            "target": target,
            "file": file.path,
            "scenario": scenario.name,
            "step": failure.step_index,
            "op": failure.op,
            "message": failure.message,
            "observed": observed,
        },
        "scenarios": [raw],
    }


def render_finding(result: ScenarioResult, file: ScenarioFile, target: str) -> str:
    """The finding as scenario-file text."""
    return json.dumps(finding_document(result, file, target), indent=2) + "\n"

"""Every scenario file against every in-process target (the model and the reference).

Both targets implement the white-box and backdoor hooks, so every scenario must PASS (a SKIP would
hide a gap). Disagreements with Kafka found so far are listed in KNOWN_TARGET_BUGS as strict xfails:
the scenario stays as Kafka 3.9 behaves, and the entry must be removed once the target is fixed.
"""

from __future__ import annotations

import glob
import importlib.util
import os

import pytest

from conformance.parse import load
from conformance.runner import Outcome, run_scenario
from conformance.targets import resolve_target

SCENARIO_DIR = os.path.join(os.path.dirname(__file__), "..", "scenarios")
FILES = sorted(glob.glob(os.path.join(SCENARIO_DIR, "*.json")))
TARGET_MODULES = {"model": "model.concrete", "reference": "reference.coordinator"}

KNOWN_TARGET_BUGS: dict[tuple[str, str], str] = {}


def _available(target: str) -> bool:
    return importlib.util.find_spec(TARGET_MODULES[target]) is not None


def _cases() -> list[object]:
    cases: list[object] = []
    for target in TARGET_MODULES:
        for path in FILES:
            for scenario in load(path).scenarios:
                marks = []
                if not _available(target):
                    marks.append(pytest.mark.skip(reason=f"{TARGET_MODULES[target]} does not exist yet"))
                bug = KNOWN_TARGET_BUGS.get((target, scenario.name))
                if bug is not None:
                    marks.append(pytest.mark.xfail(reason=bug, strict=True))
                cases.append(
                    pytest.param(target, path, scenario.name, marks=marks, id=f"{target}:{os.path.basename(path)}:{scenario.name}")
                )
    return cases


@pytest.mark.parametrize(("target", "path", "name"), _cases())
def test_scenario_passes_on_target(target: str, path: str, name: str) -> None:
    scenario = next(s for s in load(path).scenarios if s.name == name)
    result = run_scenario(path, scenario, resolve_target(target, allow_remote=False))
    assert result.outcome is Outcome.PASS, result.describe()


def test_known_bugs_name_real_scenarios() -> None:
    names = {s.name for path in FILES for s in load(path).scenarios}
    assert {name for _, name in KNOWN_TARGET_BUGS} <= names


@pytest.mark.skipif(not _available("reference"), reason="reference.coordinator does not exist yet")
@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_mutated_expectations_fail_on_reference(path: str) -> None:
    """Negative control on a real target: changing one expected error makes each scenario FAIL there."""
    import json

    from conformance.parse import parse_text

    raw = json.load(open(path, encoding="utf-8"))
    mutated = 0
    for k, scenario in enumerate(raw["scenarios"]):
        index = next((i for i, st in enumerate(scenario["steps"]) if "error" in st.get("expect", {})), None)
        if index is None:
            continue
        step = scenario["steps"][index]
        step["expect"]["error"] = "UNKNOWN_SERVER_ERROR" if step["expect"]["error"] != "UNKNOWN_SERVER_ERROR" else "NONE"
        one = dict(raw, scenarios=[scenario])
        parsed = parse_text(json.dumps(one), path).scenarios[0]
        result = run_scenario(path, parsed, resolve_target("reference", allow_remote=False))
        assert result.outcome is Outcome.FAIL and result.failure is not None, result.describe()
        assert result.failure.step_index == index, result.describe()
        mutated += 1
    assert mutated > 0

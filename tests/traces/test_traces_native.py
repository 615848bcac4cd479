"""The native trace replay agrees with the Python replay (Python is the reference).

Generated sets with every seeded bug of reference/bugs.py (half the groups bugged), a clean set,
a trace with every kind of malformed row, and the real broker logs of tests/data (a log check,
which the native replay leaves to Python): `replay --local` with `--engine native` and with
`--engine python` give the same verdicts (every column), rejects, counts and row coverage. The
engine only ever calls a group clean; every other group is judged by Python, so the dangerous
disagreement is a group the engine calls clean and Python does not. The negative control builds
the engine from a wrong table that has the seeded bug's behaviour: the engine then calls the
bugged groups clean, and the comparison catches it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from traces_helpers import model_trace, row_json, write_jsonl
from check.mutants import MUTANTS
from check.native_replay import make_replayer
from reference.bugs import BUGS
from reference.coordinator import ReferenceCoordinator
from traces.generate import GeneratorOptions, run_group
from traces.inputs import Inputs, classify
from traces.local import LocalResult, run_local

GROUPS = 12
DATA = Path(__file__).parents[1] / "data" / "broker-logs"


def generated(tmp: Path, bug: Optional[str]) -> Inputs:
    """GROUPS groups recorded from the reference coordinator; with `bug`, every other one has it."""
    options = GeneratorOptions(groups=GROUPS, steps=40)
    lines: list[str] = []
    for k in range(GROUPS):
        bugs = frozenset({bug}) if bug is not None and k % 2 == 0 else frozenset()
        events = run_group(f"g{k:02d}", f"27:{k}", options, ReferenceCoordinator, bugs, "reference")
        lines += [row_json(e) for e in events]
    return classify([str(write_jsonl(tmp / "t.jsonl", lines))])


def differences(inputs: Inputs, native: Any) -> list[str]:
    """Where the pipeline with `native` differs from the Python replay (empty: they agree)."""
    python = run_local(inputs)
    other = run_local(inputs, native=native)
    out: list[str] = []
    mine = {v["group_id"]: v for v in other.verdicts}
    for v in python.verdicts:
        if mine.get(v["group_id"]) != v:
            out.append(f"verdict {v['group_id']}: python {v}, native {mine.get(v['group_id'])}")
    if len(python.verdicts) != len(other.verdicts):
        out.append(f"{len(python.verdicts)} verdicts against {len(other.verdicts)}")

    def rejects(r: LocalResult) -> list[str]:
        return sorted(json.dumps(x, sort_keys=True) for x in r.rejects)

    if rejects(python) != rejects(other):
        out.append("rejects differ")
    if python.counts != other.counts:
        out.append(f"counts: python {python.counts}, native {other.counts}")
    if python.coverage != other.coverage:
        out.append("row coverage differs")
    return out


@pytest.mark.parametrize("bug", [None, *sorted(BUGS)])
def test_the_native_replay_agrees_with_python_on_generated_sets(tmp_path: Path, bug: Optional[str]) -> None:
    inputs = generated(tmp_path, bug)
    replayer = make_replayer()
    assert differences(inputs, replayer) == []
    # not vacuous: the engine judged every clean group itself, and handed back only the others
    flagged = sum(1 for v in run_local(inputs).verdicts if v["status"] != "ok")
    assert sum(n for _, n in replayer.handed_back()) == flagged
    if bug is None:
        assert flagged == 0


def test_the_native_replay_agrees_on_malformed_rows(tmp_path: Path) -> None:
    lines: list[str] = []
    for k in range(4):
        lines += [row_json(e) for e in model_trace(f"m{k}", str(k), steps=30)]
    lines.append(json.dumps({"group_id": "m1", "ts_ms": 0, "source": "t", "kind": "advance"}))  # no seq
    lines.append(lines[5])  # a duplicate
    lines.append(lines[len(lines) // 2].replace('"error":"NONE"', '"error":"REBALANCE_IN_PROGRESS"'))
    lines.append(lines[-8][:60])  # a line cut short
    inputs = classify([str(write_jsonl(tmp_path / "t.jsonl", lines))])
    assert differences(inputs, make_replayer()) == []


def test_the_broker_logs_give_the_same_output_with_either_engine(tmp_path: Path) -> None:
    inputs = classify([str(p) for p in sorted(DATA.glob("*.log"))])
    assert inputs.logs and differences(inputs, make_replayer()) == []


@pytest.mark.parametrize("bug", ["heartbeat-empty-accepted", "sync-accepted-in-preparing", "no-delayed-sync"])
def test_an_engine_built_from_a_wrong_table_is_caught(tmp_path: Path, bug: str) -> None:
    """Negative control: the engine built from the mutant table with the seeded bug's behaviour
    (check/mutants.py) calls bugged groups clean, or fires other rows; the comparison says so."""
    inputs = generated(tmp_path, bug)
    found = differences(inputs, make_replayer(MUTANTS[bug][0]))
    assert found
    wrongly_clean = [d for d in found if d.startswith("verdict ")]
    assert all("'status': 'violation'" in d and "native {'group_id'" in d and "'status': 'ok'" in d.split("native")[1]
               for d in wrongly_clean)
    if bug != "no-delayed-sync":  # that mutant is seen in the rows fired, not in any response
        assert wrongly_clean

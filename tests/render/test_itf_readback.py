"""ITF export read back with itf-py (the Apalache/Quint reader): the same number of states as the
trace, and each state's group, rows and action as the trace has them. Negative controls: a
missing state or a changed row does not read back as the trace."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import itf_py
import pytest

from check.abstract import Bounds
from check.explore import explore
from check.mutants import MUTANTS
from model.table import URGENT

from render.counterexample import trace_of_counterexample
from render.itf import VARS, dumps, itf, numbered
from render.trace import Trace, trace_of_scenario


def disagreements(doc: dict[str, Any], t: Trace) -> list[str]:
    """Where an ITF document, read back with itf-py, differs from the trace (empty: it agrees)."""
    back = itf_py.trace_from_json(json.loads(json.dumps(doc)))
    out = []
    if list(back.vars) != list(VARS):
        out.append(f"vars {back.vars}")
    if len(back.states) != t.states:
        return out + [f"{len(back.states)} states, the trace has {t.states}"]
    group = t.initial
    for i, st in enumerate(back.states):
        v = st.values
        step = t.steps[i - 1] if i else None
        if step is not None and step.group is not None:
            group = step.group
        if v["step"] != i:
            out.append(f"state {i}: step {v['step']}")
        if tuple(v["rows"]) != (step.rows if step else ()):
            out.append(f"state {i}: rows {list(v['rows'])}")
        if step is not None and v["action"].label != step.cause.label:
            out.append(f"state {i}: action {v['action'].label!r}")
        if group is not None and (v["group"].state, v["group"].generation) != (group.state, group.generation):
            out.append(f"state {i}: group {v['group'].state} {v['group'].generation}")
        if group is not None and set(v["group"].members) != {m.member_id for m in group.members}:
            out.append(f"state {i}: members {sorted(v['group'].members)}")
    return out


def mutant_counterexample(name: str) -> Trace:
    table, invariant, _ = MUTANTS[name]
    bounds = Bounds(dynamic=2, max_generation=1, faults=frozenset({"session", "rebalance", "stall"}))
    r = explore(table, URGENT, bounds, invariants=frozenset({invariant}), liveness=False, progress=None,
                all_counterexamples=False)
    v = next(v for v in r.violations if v.invariant == invariant)
    return trace_of_counterexample(table, URGENT, bounds, v)


@pytest.mark.parametrize("name", ["join-answered-and-parked", "second-delayed-join", "no-generation-bump"])
def test_a_mutant_counterexample_reads_back_state_for_state(name: str) -> None:
    t = mutant_counterexample(name)
    doc = itf(t)
    assert disagreements(doc, t) == []
    back = itf_py.trace_from_json(doc)
    assert len(back.states) == len(t.steps) + 1
    assert back.meta["violated"] == MUTANTS[name][1]
    assert back.states[-1].values["violation"] == MUTANTS[name][1]  # named where it breaks
    assert all(s.values["violation"] == "" for s in back.states[:-1])
    assert all(s.values["time_ms"] == -1 for s in back.states)  # the abstract model is untimed


def test_a_scenario_trace_reads_back_with_times_and_big_ints() -> None:
    t = trace_of_scenario("tests/scenarios/seeds.json")
    text = dumps(t)
    assert '"#bigint"' in text and '"#map"' in text and '"#set"' in text and "null" not in text
    doc = json.loads(text)
    assert disagreements(doc, t) == []
    back = itf_py.trace_from_json(doc)
    assert [s.values["time_ms"] for s in back.states][1:] == [s.time_ms for s in t.steps]


def test_negative_controls_a_missing_state_or_step_or_a_changed_row_disagree() -> None:
    t = mutant_counterexample("join-answered-and-parked")
    doc = itf(t)
    short = copy.deepcopy(doc)
    del short["states"][3]
    assert disagreements(short, t)  # a state missing from the ITF
    assert disagreements(doc, replace(t, steps=t.steps[:-1]))  # a step missing from the trace
    changed = copy.deepcopy(doc)
    changed["states"][2]["rows"] = ["Stable/Heartbeat/ok"]
    assert any("rows" in d for d in disagreements(changed, t))


def test_several_traces_are_numbered_beside_the_first() -> None:
    assert [numbered("out/cex.itf.json", k) for k in (1, 2, 3)] == \
        ["out/cex.itf.json", "out/cex-2.itf.json", "out/cex-3.itf.json"]
    assert numbered("cex", 2) == "cex-2"

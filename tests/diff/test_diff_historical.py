"""The historical bugs no property can kill (check/historical.py, `killed_by` None) are caught by
`groupspec diff` against Kafka's table: at each bug's pinned `diff_bounds` the diff finds a
client-visible difference and renders it as a scenario that passes on one table and fails on the
other, and the difference is the one the bug's `diff_expected` describes. Negative controls: Kafka's
table against itself at the same bounds does not differ, and no bug's text fits another's
difference."""

from __future__ import annotations

import functools
import re

import pytest

from conformance.diff import DiffReport, Difference, Side, explore_diff, run_document
from conformance.runner import Outcome
from check.historical import HISTORICAL
from model.table import CLASSIC_TABLE, URGENT
from model.vocabulary import Error

KAFKA = Side("kafka-3.9", CLASSIC_TABLE, URGENT)
BEHAVIOUR_ONLY = sorted(n for n, b in HISTORICAL.items() if b.killed_by is None)
_WORD = re.compile(r"\b[A-Z][A-Z_]+\b")


@functools.cache
def diff(name: str) -> DiffReport:
    """The bug's table against Kafka's at its diff bounds (run once per test session)."""
    bug = HISTORICAL[name]
    assert bug.diff_bounds is not None, name
    return explore_diff(Side(name, bug.table, URGENT), KAFKA, bug.diff_bounds, progress=None,
                        max_differences=1)


def error_codes(text: str) -> set[str]:
    return {w for w in _WORD.findall(text) if w in Error.__members__}


def mismatches(d: Difference, expected: str) -> list[str]:
    """What `expected` ("differs ...: Kafka <answer>; the mutant <answer>") gets wrong about the
    difference: the input it names, and the error codes each side answers (none: no response)."""
    kafka_says, sep, mutant_says = expected.partition("; the mutant")
    if not sep:
        return [f"no '; the mutant' in {expected!r}"]
    out = []
    a = d.action
    name = a.kind if a.request is None else type(a.request).__name__.removesuffix("Request")
    if name not in expected:
        out.append(f"the input {name} is not named")
    # side A is the bug's table, side B is Kafka's
    sides = (("Kafka", kafka_says, d.b_answers), ("the mutant", mutant_says, d.a_answers))
    for who, says, answers in sides:
        named = error_codes(says)
        given = set().union(*(error_codes(what) for o in answers for _, what in o))
        if named and not named <= given:
            out.append(f"{who} answers {sorted(given)}, not {sorted(named)}")
        dropped = all(what == "dropped without a response" for o in answers for _, what in o)
        if "drops" in says and not (answers != ((),) and dropped):
            out.append(f"{who} answers {answers}, not a drop")
        if not named and "drops" not in says and answers != ((),):
            out.append(f"{who} answers {answers}, not nothing")
    return out


@pytest.mark.parametrize("name", BEHAVIOUR_ONLY)
def test_each_behaviour_only_bug_differs_with_a_verified_scenario(name: str) -> None:
    bug = HISTORICAL[name]
    r = diff(name)
    assert r.complete and r.differences, f"{name}: no difference at {r.bounds.describe()}"
    d = r.differences[0]
    assert d.scenario is not None, f"{name}: no scenario: {d.unrendered}"
    # Re-run the scenario independently: it passes on the table that shows the answer and fails
    # on the other one.
    passes = bug.table if d.shown_by == "A" else CLASSIC_TABLE
    fails = CLASSIC_TABLE if d.shown_by == "A" else bug.table
    assert run_document(d.scenario, passes) is Outcome.PASS
    assert run_document(d.scenario, fails) is Outcome.FAIL
    assert d.other and d.shown not in d.other
    assert mismatches(d, bug.diff_expected) == [], bug.diff_expected


@pytest.mark.parametrize("name", BEHAVIOUR_ONLY)
def test_kafka_does_not_differ_from_itself_at_the_same_bounds(name: str) -> None:
    bounds = HISTORICAL[name].diff_bounds
    assert bounds is not None
    r = explore_diff(KAFKA, KAFKA, bounds, progress=None, max_differences=1)
    assert r.complete and r.differences == []
    assert r.nodes > 300  # it explored something


def test_no_bug_text_fits_another_bugs_difference() -> None:
    found = {n: diff(n).differences[0] for n in BEHAVIOUR_ONLY}
    for name, d in found.items():
        for other in BEHAVIOUR_ONLY:
            if other != name:
                assert mismatches(d, HISTORICAL[other].diff_expected), (name, other)


def test_diff_bounds_are_pinned_exactly_for_the_behaviour_only_bugs() -> None:
    assert len(BEHAVIOUR_ONLY) == 6
    for name, bug in HISTORICAL.items():
        if bug.killed_by is not None:  # caught by a property: no diff needed
            assert bug.diff_bounds is None and bug.diff_expected == "", name
            continue
        assert bug.diff_bounds is not None and bug.diff_expected.startswith("differs"), name
        # a fault the text says the diff needs is in the bounds
        for fault in re.findall(r"needs the (\w+) fault", bug.diff_expected):
            assert fault in bug.diff_bounds.faults, (name, fault)

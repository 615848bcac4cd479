"""Pure replay: traces recorded from the model replay clean; mutated ones do not, naming the rows."""

from __future__ import annotations

import dataclasses
import json

import pytest

from model.concrete import ModelCoordinator
from model.vocabulary import Error
from reference.coordinator import ReferenceCoordinator
from traces_helpers import model_trace
from traces import codec
from traces.replay import INCOMPLETE, OK, VIOLATION, replay_group
from traces.schema import EventKind, TraceEvent


@pytest.mark.parametrize("seed", [str(s) for s in range(12)])
def test_traces_recorded_from_the_model_replay_clean(seed: str) -> None:
    events = model_trace(f"g{seed}", seed, steps=60)
    verdict = replay_group(f"g{seed}", events, ModelCoordinator)
    assert verdict.status == OK, verdict.divergence
    assert verdict.events == len(events)
    assert sum(verdict.coverage.values()) > 0  # the model reported the rows it fired


def _first(events: list[TraceEvent], pred: object) -> int:
    return next(i for i, e in enumerate(events) if pred(e))  # type: ignore[operator]


def _set_error(e: TraceEvent, error: Error) -> TraceEvent:
    record = codec.loads_record(e.payload or "")
    changed = dataclasses.replace(record, error=error)
    return dataclasses.replace(e, payload=codec.dumps_record(changed), error=error.name)


def test_a_changed_response_error_is_flagged_with_the_row_that_fired() -> None:
    events = model_trace("g1", "1", steps=60)
    i = _first(events, lambda e: e.kind == EventKind.response and e.api == "Heartbeat" and e.error == "NONE")
    events[i] = _set_error(events[i], Error.REBALANCE_IN_PROGRESS)
    verdict = replay_group("g1", events, ModelCoordinator)
    assert verdict.status == VIOLATION
    d = verdict.divergence
    assert d is not None and d.seq == events[i].seq
    assert (d.expected, d.actual) == ("error=Error.NONE", "error=Error.REBALANCE_IN_PROGRESS")
    assert "/Heartbeat/" in d.row_id


def test_a_wrong_generation_in_a_transition_is_flagged() -> None:
    events = model_trace("g1", "1", steps=60)
    i = _first(events, lambda e: e.kind == EventKind.transition and e.to_state == "CompletingRebalance")
    events[i] = dataclasses.replace(events[i], generation=(events[i].generation or 0) + 1)
    verdict = replay_group("g1", events, ModelCoordinator)
    assert verdict.status == VIOLATION and verdict.divergence is not None
    assert verdict.divergence.kind == "transition"


def test_a_dropped_transition_is_flagged() -> None:
    events = model_trace("g1", "1", steps=60)
    i = _first(events, lambda e: e.kind == EventKind.transition and e.to_state == "Stable")
    mutated = [dataclasses.replace(e, seq=k) for k, e in enumerate(events[:i] + events[i + 1 :])]
    assert replay_group("g1", mutated, ModelCoordinator).status == VIOLATION


def test_a_missing_response_is_flagged() -> None:
    events = model_trace("g1", "1", steps=60)
    i = _first(events, lambda e: e.kind == EventKind.response)
    mutated = [dataclasses.replace(e, seq=k) for k, e in enumerate(events[:i] + events[i + 1 :])]
    verdict = replay_group("g1", mutated, ModelCoordinator)
    assert verdict.status == VIOLATION and verdict.divergence is not None
    assert verdict.divergence.actual == "no response recorded"


def test_a_gap_in_seq_is_incomplete_not_a_violation() -> None:
    events = model_trace("g1", "1", steps=60)
    verdict = replay_group("g1", events[:10] + events[11:], ModelCoordinator)
    assert verdict.status == INCOMPLETE


@pytest.mark.parametrize("bug", ["no-generation-bump", "heartbeat-empty-accepted", "sync-accepted-in-preparing"])
def test_reference_traces_with_a_seeded_bug_diverge_from_the_model(bug: str) -> None:
    from traces.generate import GeneratorOptions, run_group, visible_projection

    options = GeneratorOptions(groups=1, steps=60)
    flagged = 0
    for k in range(15):
        buggy = run_group(f"b{k}", str(k), options, ReferenceCoordinator, frozenset({bug}), "reference")
        clean = run_group(f"b{k}", str(k), options, ReferenceCoordinator, frozenset(), "reference")
        visible = visible_projection(buggy) != visible_projection(clean)
        verdict = replay_group(f"b{k}", buggy, lambda c: ReferenceCoordinator(c))
        assert (verdict.status == VIOLATION) == visible, (k, verdict.divergence)
        flagged += verdict.status == VIOLATION
    assert flagged > 0, "the workload never exercised the bug"


def test_member_ids_are_matched_not_compared() -> None:
    # The reference generates UUID member ids; its clean traces replay against a fresh reference
    # (different UUIDs) only because the replay binds ids on first sight.
    from traces.generate import GeneratorOptions, run_group

    events = run_group("u", "3", GeneratorOptions(groups=1, steps=60), ReferenceCoordinator, frozenset(), "reference")
    assert any(json.loads(e.payload or "{}").get("member_id", "").count("-") >= 4 for e in events if e.kind == EventKind.response)
    assert replay_group("u", events, lambda c: ReferenceCoordinator(c)).status == OK

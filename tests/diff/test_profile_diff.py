"""The version profiles through `groupspec diff`: kafka-4 (Kafka 4.x's Java coordinator as row
overrides of the 3.9 table) differs from kafka-3.9 exactly where its overrides say, with a scenario
that passes on kafka-4 and fails on kafka-3.9; kafka-4 does not refine kafka-3.9."""

from __future__ import annotations

from conformance.diff import Side, explore_diff, run_document
from conformance.runner import Outcome
from check.abstract import Bounds
from check.profile_kafka4 import KAFKA4_OVERRIDES
from check.profiles import profile_table
from model.table import URGENT

F = frozenset


def test_kafka4_profile_differs_from_kafka39_where_it_overrides_a_row() -> None:
    k4, k39 = profile_table("kafka-4"), profile_table("kafka-3.9")
    r = explore_diff(Side("kafka-4", k4, URGENT), Side("kafka-3.9", k39, URGENT),
                     Bounds(dynamic=2, max_generation=2, faults=F({"session", "rebalance", "stall"})),
                     progress=None, max_differences=1)
    assert r.differences, "kafka-4 and kafka-3.9 show no difference"
    d = r.differences[0]
    assert d.scenario is not None, d.unrendered
    assert d.shown_by == "A"
    # the difference is the one the profile overrides, and its scenario tells the tables apart
    assert any(rid in label for label in d.labels for rid in KAFKA4_OVERRIDES), d.labels
    assert run_document(d.scenario, k4) is Outcome.PASS
    assert run_document(d.scenario, k39) is Outcome.FAIL


def test_the_3_9_table_against_itself_through_the_registry_shows_nothing() -> None:
    k39 = profile_table("kafka-3.9")
    r = explore_diff(Side("a", k39, URGENT), Side("b", k39, URGENT),
                     Bounds(dynamic=1, max_generation=1, faults=F({"session", "rebalance"})),
                     progress=None, max_differences=1)
    assert not r.differences

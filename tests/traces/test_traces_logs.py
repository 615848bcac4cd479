"""Broker log lines (Kafka 2.8, 3.9, the Java port) -> rows, and the log check with negative controls."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from traces_helpers import FIXTURES
from traces.logcheck import check_group, default_edges
from traces.logparse import LogLineError, parse_line
from traces.replay import OK, VIOLATION
from traces.schema import TraceEvent


def parse_file(path: Path) -> tuple[list[TraceEvent], int]:
    events, ignored = [], 0
    for number, line in enumerate(path.read_text().splitlines(), 1):
        event = parse_line(line, f"{path.name}:{number}", number)
        if event is None:
            ignored += 1
        else:
            events.append(event)
    return events, ignored


@pytest.mark.parametrize(
    "name, ignored, counts",
    [
        ("server-2.8.log", 1, {"PrepareRebalance": 3, "Stabilized": 3, "AssignmentReceived": 2, "MemberJoined": 2,
                               "StaticMemberReplaced": 1, "MemberLeft": 1, "MemberFailed": 1, "PendingMemberRemoved": 1,
                               "Loaded": 1, "Info": 3}),
        ("server-3.9.log", 5, {"PrepareRebalance": 4, "Stabilized": 3, "AssignmentReceived": 3, "MemberIdRequired": 2,
                               "MemberFailed": 1, "MemberLeft": 1, "NowEmpty": 1, "Dead": 1, "Unloaded": 1,
                               "DynamicMembersRemoved": 1, "Info": 6}),
        ("server-java-port.log", 1, {"MemberIdRequired": 1, "MemberJoined": 1, "PrepareRebalance": 3, "Stabilized": 2,
                                     "AssignmentReceived": 1, "MemberLeft": 1, "NowEmpty": 1, "MemberFailed": 1}),
    ],
)
def test_fixture_lines_parse(name: str, ignored: int, counts: dict[str, int]) -> None:
    events, other = parse_file(FIXTURES / name)
    assert other == ignored
    assert Counter(e.log_event for e in events) == counts


def test_parsed_fields() -> None:
    events, _ = parse_file(FIXTURES / "server-3.9.log")
    stabilized = next(e for e in events if e.log_event == "Stabilized")
    assert (stabilized.group_id, stabilized.generation, stabilized.member_count) == ("orders", 1, 2)
    assert stabilized.ts_ms == 1714557608320  # 2024-05-01 10:00:08,320 UTC
    prepare = next(e for e in events if e.group_id == "payments")
    assert (prepare.from_state, prepare.to_state, prepare.generation) == ("Stable", "PreparingRebalance", 41)


@pytest.mark.parametrize(
    "line, reason",
    [
        ("[2024-05-01 10:00:00,000] INFO [GroupCoordinator 1]: Dynamic member with unknown member id joins group g "
         "in Rebalancing state. Created a new member id m and request the member to rejoin with this id. "
         "(kafka.coordinator.group.GroupCoordinator)", "unknown group state 'Rebalancing'"),
        ("[2024-05-01 10:00:00,000] INFO [GroupCoordinator 1]: Something new happened to group g "
         "(kafka.coordinator.group.GroupCoordinator)", "unrecognised GroupCoordinator message"),
        ("[2024-05-01 10:00:00] INFO [GroupCoordinator 1]: Stabilized group g generation 1 "
         "(kafka.coordinator.group.GroupCoordinator)", "malformed log4j line"),
    ],
)
def test_unreadable_coordinator_lines_are_rejected(line: str, reason: str) -> None:
    with pytest.raises(LogLineError, match=reason):
        parse_line(line, "x:1", 1)


def test_lines_of_other_loggers_are_ignored() -> None:
    line = "[2024-05-01 10:00:00,000] INFO [Log partition=t-0] Rolled new log segment (kafka.log.LocalLog)"
    assert parse_line(line, "x:1", 1) is None


def _groups(events: list[TraceEvent]) -> dict[str, list[TraceEvent]]:
    out: dict[str, list[TraceEvent]] = {}
    for e in sorted(events, key=lambda e: (e.ts_ms, e.seq)):
        out.setdefault(e.group_id, []).append(e)
    return out


@pytest.mark.parametrize("name", ["server-2.8.log", "server-3.9.log", "server-java-port.log"])
def test_real_logs_are_explained_by_the_table(name: str) -> None:
    edges = default_edges()
    for gid, events in _groups(parse_file(FIXTURES / name)[0]).items():
        verdict = check_group(gid, events, edges)
        assert verdict.status in (OK, "cluster"), (gid, verdict.divergence)


def _mutated(name: str, drop: str | None = None, replace: tuple[str, str] | None = None) -> list[TraceEvent]:
    lines = (FIXTURES / name).read_text().splitlines()
    if drop is not None:
        lines = [line for line in lines if drop not in line]
    if replace is not None:
        lines = [line.replace(*replace) for line in lines]
    out = []
    for n, line in enumerate(lines, 1):
        e = parse_line(line, f"{name}:{n}", n)
        if e is not None:
            out.append(e)
    return out


@pytest.mark.parametrize(
    "mutation, group, expected",
    [
        # the group stabilized twice in generation 1 (a missing Stabilized line is a gap, not a violation)
        (dict(replace=("Assignment received from leader consumer-orders-1-5d1c0e6a-3b8f-4e63-9a57-0f1e2d3c4b5a for group "
                       "orders for generation 1. The group has 2 members, 0 of which are static.",
                       "Stabilized group orders generation 1 (__consumer_offsets-13) with 2 members")),
         "orders", "generation above 1"),
        # a generation that goes backwards
        (dict(replace=("Stabilized group orders generation 2 ", "Stabilized group orders generation 1 ")), "orders", "generation 1"),
        # a generation skipped
        (dict(replace=("Stabilized group orders generation 2 ", "Stabilized group orders generation 5 ")), "orders", "generation 2"),
        # a member removed twice
        (dict(replace=("Pending member consumer-billing-4-ff00 is leaving group billing.",
                       "Member consumer-billing-1-aa01 in group billing has failed, removing it from the group")),
         "billing", "consumer-billing-1-aa01"),
    ],
)
def test_mutated_logs_are_flagged(mutation: dict[str, object], group: str, expected: str) -> None:
    name = "server-3.9.log" if group == "orders" else "server-2.8.log"
    events = _mutated(name, **mutation)  # type: ignore[arg-type]
    verdict = check_group(group, _groups(events)[group], default_edges())
    assert verdict.status == VIOLATION
    assert verdict.divergence is not None
    assert expected in verdict.divergence.expected + verdict.divergence.actual


def test_a_group_first_seen_mid_life_is_judged_from_its_first_line() -> None:
    events = _groups(parse_file(FIXTURES / "server-java-port.log")[0])["shipping"]
    assert events[0].log_event == "MemberFailed"  # nothing before it is known
    assert check_group("shipping", events, default_edges()).status == OK


def test_a_missing_rebalance_line_is_assumed_missing_not_a_violation() -> None:
    # Stable -> CompletingRebalance is no edge of the table, but a grep excerpt may lack the line
    # "Preparing to rebalance ... old generation 18"; the generations agree with that (18 -> 19).
    events = _mutated("server-2.8.log", drop="Preparing to rebalance group billing in state PreparingRebalance with old generation 18")
    verdict = check_group("billing", _groups(events)["billing"], default_edges())
    assert verdict.status == OK
    assert verdict.note is not None and "lines are missing before server-2.8.log:" in verdict.note
    assert "PreparingRebalance" in verdict.note

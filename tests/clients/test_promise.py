"""The end-to-end promise checks (clients/promise.py) on hand-made event streams: a clean stream
passes, and each kind of violation is caught (the checker's negative controls)."""

from __future__ import annotations

from typing import Any

import pytest

from clients.events import BadEvent, Event, parse_line
from clients.promise import check


def ev(kind: str, t: float, name: str, **fields: Any) -> Event:
    return Event(kind, t, name, fields)


CLEAN = [
    ev("produced", 1.0, "a", key="a:0", partition=0, offset=0),
    ev("produced", 1.1, "a", key="a:1", partition=1, offset=0),
    ev("assigned", 2.0, "a", generation=1, member_id="a-1", partitions=[0]),
    ev("assigned", 2.0, "b", generation=1, member_id="b-1", partitions=[1]),
    ev("consumed", 2.5, "a", key="a:0", partition=0, offset=0, generation=1),
    ev("committed", 2.6, "a", partition=0, offset=1, generation=1),
    ev("consumed", 2.7, "b", key="a:1", partition=1, offset=0, generation=1),
    ev("committed", 2.8, "b", partition=1, offset=1, generation=1),
    ev("assigned", 3.0, "b", generation=2, member_id="b-1", partitions=[0, 1]),
    ev("consumed", 3.1, "b", key="a:1", partition=1, offset=0, generation=2),  # a duplicate: allowed
    ev("committed", 3.2, "b", partition=0, offset=1, generation=2),
]


def test_a_clean_stream_keeps_the_promise() -> None:
    v = check(CLEAN)
    assert v.violations == ()
    assert (v.produced, v.consumed, v.deliveries, v.duplicates, v.generations, v.commits) == (2, 2, 3, 1, (1, 2), 3)


def test_a_record_never_consumed_is_a_violation() -> None:
    stream = [e for e in CLEAN if not (e.ev == "consumed" and e["key"] == "a:0")]
    v = check(stream)
    assert [x.kind for x in v.violations] == ["unconsumed"] and "a:0" in v.violations[0].detail


def test_two_owners_in_one_generation_is_a_violation() -> None:
    v = check([*CLEAN, ev("assigned", 2.1, "c", generation=1, member_id="c-1", partitions=[1])])
    assert [x.kind for x in v.violations] == ["double-ownership"]
    assert "partition 1 in generation 1" in v.violations[0].detail


def test_a_commit_going_backwards_is_a_violation() -> None:
    v = check([*CLEAN, ev("committed", 4.0, "a", partition=0, offset=0, generation=1)])
    assert [x.kind for x in v.violations] == ["commit-backwards"] and v.count("commit-backwards") == 1


def test_event_lines_parse_and_bad_lines_are_named() -> None:
    e = parse_line('{"ev": "committed", "t": 1.5, "name": "m1", "partition": 2, "offset": 7, "generation": 3}', "m1:1")
    assert (e.ev, e.t, e.name, e["offset"]) == ("committed", 1.5, "m1", 7)
    for bad, why in [("nope", "not JSON"), ('{"ev": "lunch", "t": 1, "name": "m"}', "not an event"),
                     ('{"ev": "closed", "t": "x", "name": "m"}', "must be a number")]:
        with pytest.raises(BadEvent, match=why):
            parse_line(bad, "m1 stdout line 9")


def test_a_static_member_coming_back_in_the_same_generation_is_one_owner() -> None:
    """KIP-345: a static member restarted (a new process, a new member id, the same instance id) takes
    its assignment over in the same generation. Two dynamic members doing that is a violation."""
    first = ev("assigned", 2.0, "s1-1", generation=3, member_id="x-1", instance_id="s1", partitions=[0])
    again = ev("assigned", 5.0, "s1-2", generation=3, member_id="x-2", instance_id="s1", partitions=[0])
    assert check([first, again]).violations == ()
    other = ev("assigned", 5.0, "s2-1", generation=3, member_id="x-3", instance_id="s2", partitions=[0])
    assert [x.kind for x in check([first, other]).violations] == ["double-ownership"]


def test_commits_are_compared_only_when_one_was_sent_after_the_others_answer() -> None:
    """A member paused between a commit's answer and its line prints it late: two commits whose
    round trips overlap are not ordered, and a late line is not a commit going backwards. A commit
    sent after a higher one's answer is."""
    high = ev("committed", 10.0, "b", partition=0, offset=50, generation=2, sent=9.9)
    late_line = ev("committed", 12.0, "a", partition=0, offset=40, generation=1, sent=9.5)  # sent before 10.0
    assert check([high, late_line]).violations == ()
    stale = ev("committed", 12.0, "a", partition=0, offset=40, generation=1, sent=11.0)  # sent after 10.0
    v = check([high, stale])
    assert [x.kind for x in v.violations] == ["commit-backwards"]
    assert "a committed 40 (generation 1) after b had committed 50 (generation 2)" in v.violations[0].detail
    other_partition = ev("committed", 12.0, "a", partition=1, offset=40, generation=1, sent=11.0)
    assert check([high, other_partition]).violations == ()


def test_an_assignment_without_a_generation_is_not_judged() -> None:
    first = ev("assigned", 2.0, "a", generation=-1, member_id="a-1", partitions=[0])
    second = ev("assigned", 2.0, "b", generation=-1, member_id="b-1", partitions=[0])
    assert check([first, second]).violations == ()

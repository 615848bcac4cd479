"""An answer judged too late across this process's own event-loop stall is the observer's doubt,
not the target's lateness: the group is inconclusive. A target later than any stall still is a
finding (the controls)."""

from __future__ import annotations

import time

import pytest

from model.coordinator_api import CoordinatorConfig
from fuzz.actions import Timing
from fuzz.client import Broker
from fuzz.engine import RunSettings, SequenceResult, Stalls, _Sequence
from fuzz.judge import Finding, Tolerance


def test_stalls_keep_only_real_stalls_and_measure_their_overlap() -> None:
    s = Stalls()
    s.note(10.0, 10.05)  # scheduler jitter: not a stall
    s.note(20.0, 22.5)
    assert s.longest(0.0, 15.0) == 0.0
    assert s.longest(21.0, 30.0) == pytest.approx(1.5)  # only the part after the request was sent
    assert s.longest(0.0, 30.0) == pytest.approx(2.5)
    assert s.longest(23.0, 30.0) == 0.0  # a stall before the request cannot delay its answer


def _late(number: int, after_ms: int, shape: str = "error differing answered too late") -> Finding:
    return Finding(number, "Heartbeat", 4, ("Stable",), ("Stable/Heartbeat/ok",), ({"error": "NONE"},),
                   {"error": "NONE", "answered_after_ms": after_ms}, after_ms, shape)


@pytest.mark.parametrize(("stall_s", "after_ms", "shape", "inconclusive"), [
    (2.5, 3000, "answered too late", True),  # 1 s past the 2 s bound, 2.5 s unread: the observer's
    (0.5, 3000, "answered too late", False),  # control: a stall too short to explain the lateness
    (0.0, 3000, "answered too late", False),  # control: no stall at all
    (2.5, 3000, "error differing", False),  # control: a wrong answer is wrong whenever it is read
])
def test_a_late_answer_read_after_a_stall_makes_the_group_inconclusive(
        stall_s: float, after_ms: int, shape: str, inconclusive: bool) -> None:
    config = CoordinatorConfig()
    settings = RunSettings(config, Timing.for_config(config), Tolerance(response_bound_ms=2000))
    seq = _Sequence(Broker("127.0.0.1", 9), "g", settings, SequenceResult(0, "g", []), [])
    now = time.monotonic()
    seq.t0 = now - 4.0
    seq.sent_ms[7] = 500  # sent 3.5 s ago
    if stall_s:
        settings.stalls.note(now - 3.0, now - 3.0 + stall_s)
    seq._finish(_late(7, after_ms, shape))
    assert (seq.r.inconclusive is not None) is inconclusive
    assert (seq.r.finding is None) is inconclusive
    assert not seq.judging  # either way the group's judging ends
    if inconclusive:
        assert "stalled 2500 ms" in (seq.r.inconclusive or "")

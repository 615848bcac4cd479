"""Timers on the real clock: delayed joins, session expiry and rebalance timeouts fire in real time
and answer parked requests asynchronously (the served reference's default clock)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import Error
from server import ServerHandle, start_in_thread
from wire.target import KafkaTarget


class Got(dict[str, Any]):
    def __call__(self, name: str) -> Callable[[m.Response], None]:
        def record(response: m.Response) -> None:
            assert name not in self, f"{name} answered twice"
            self[name] = response
        return record


def _join(member: str, session_ms: int = 10000, rebalance_ms: int = 30000) -> m.JoinGroupRequest:
    return m.JoinGroupRequest("g", member, "consumer", (m.ProtocolMetadata("range", b"\x01"),),
                              session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms)


def _until(t: KafkaTarget, done: Callable[[], bool], limit_s: float = 10.0) -> float:
    """Pump responses in 20 ms slices until `done()`; returns the real seconds it took."""
    start = time.monotonic()
    while not done():
        assert time.monotonic() - start < limit_s, "timed out waiting for the server's timer"
        t.advance(20)
    return time.monotonic() - start


@pytest.fixture
def served() -> Iterator[tuple[ServerHandle, KafkaTarget]]:
    log: list[str] = []
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=300, group_min_session_timeout_ms=100)
    with start_in_thread(config, log=log.append) as handle:
        with KafkaTarget(handle.host, handle.port, config, immediate_wait_s=0.05, settle_s=0.01) as t:
            yield handle, t
    assert log == []


def _stable_pair(t: KafkaTarget, got: Got, session_ms: int, rebalance_ms: int) -> tuple[str, str, int]:
    t.handle(_join("", session_ms, rebalance_ms), got("a0"))
    t.handle(_join("", session_ms, rebalance_ms), got("b0"))
    a, b = got["a0"].member_id, got["b0"].member_id
    t.handle(_join(a, session_ms, rebalance_ms), got("a1"))
    t.handle(_join(b, session_ms, rebalance_ms), got("b1"))
    _until(t, lambda: "a1" in got and "b1" in got)
    gen = got["a1"].generation_id
    leader = got["a1"].leader
    follower = b if leader == a else a
    t.handle(m.SyncGroupRequest("g", leader, gen, assignments=((a, b"A"), (b, b"B"))), got("sl"))
    t.handle(m.SyncGroupRequest("g", follower, gen), got("sf"))
    _until(t, lambda: "sl" in got and "sf" in got)
    assert got["sl"].error is got["sf"].error is Error.NONE
    return a, b, gen


def test_initial_delayed_join_answers_the_parked_join_after_the_delay(
        served: tuple[ServerHandle, KafkaTarget]) -> None:
    _, t = served
    got = Got()
    t.handle(_join(""), got("a0"))
    assert got["a0"].error is Error.MEMBER_ID_REQUIRED
    sent = time.monotonic()
    t.handle(_join(got["a0"].member_id), got("a1"))
    assert "a1" not in got  # parked in the InitialDelayedJoin (300 ms)
    _until(t, lambda: "a1" in got)
    waited = time.monotonic() - sent
    assert got["a1"].error is Error.NONE and got["a1"].generation_id == 1
    assert 0.29 <= waited < 5.0, waited


def test_session_expiry_removes_a_silent_member_in_real_time(served: tuple[ServerHandle, KafkaTarget]) -> None:
    handle, t = served
    got = Got()
    a, b, gen = _stable_pair(t, got, session_ms=1000, rebalance_ms=5000)
    t.handle(m.HeartbeatRequest("g", a, gen), got("h1"))
    assert got["h1"].error is Error.NONE  # within its session
    group = t.broker_group_id("g")  # the wire target prefixes group ids

    def gone() -> bool:
        view = handle.call(lambda s: s.coordinator.group_view(group))
        return view is not None and view.members == ()

    _until(t, gone)
    t.handle(m.HeartbeatRequest("g", a, gen), got("h2"))
    assert got["h2"].error is Error.UNKNOWN_MEMBER_ID
    t.handle(m.DescribeGroupsRequest(("g",)), got("d"))
    assert got["d"].groups[0].state == "Empty" and got["d"].groups[0].members == ()


def test_rebalance_timeout_completes_a_parked_join_without_the_silent_member(
        served: tuple[ServerHandle, KafkaTarget]) -> None:
    _, t = served
    got = Got()
    a, b, gen = _stable_pair(t, got, session_ms=10000, rebalance_ms=600)
    sent = time.monotonic()
    t.handle(_join(a, 10000, 600), got("a2"))  # a rejoins: PreparingRebalance, b never rejoins
    assert "a2" not in got
    _until(t, lambda: "a2" in got)
    waited = time.monotonic() - sent
    answer = got["a2"]
    assert answer.error is Error.NONE and answer.generation_id == gen + 1
    assert [x.member_id for x in answer.members] == [a]  # b was removed at the DelayedJoin expiry
    assert 0.59 <= waited < 5.0, waited

"""observe keeps a group's whole exchange for its scenario file in bounded memory (observe/event_log.py):
every event comes back in order, however many went to disk, and the judging of a long-lived group
no longer grows by its exchange (negative control: with everything kept in memory it does)."""

from __future__ import annotations

import gc
import tracemalloc

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey, Error

from fuzz.engine import Event
from fuzz.judge import Tolerance
from observe import judging as judging_module
from observe.event_log import EventLog
from observe.judging import Judging

import pytest

PROTOCOLS = (m.ProtocolMetadata("range", b"\x00" * 40),)


def test_every_event_comes_back_in_order_with_little_in_memory() -> None:
    log = EventLog(memory_events=8)
    sent = [Event("send", i, i, m.HeartbeatRequest("g", "c-1", 1), 4) for i in range(100)]
    for ev in sent[:50]:
        log.append(ev)
    assert log.in_memory() < 8 and len(log) == 50
    seen = []
    for i, ev in enumerate(log):  # appending while reading: the reader sees what was there
        seen.append(ev)
        if i < 50:
            log.append(sent[50 + i])
    assert seen == sent[:50]
    assert list(log) == sent and len(log) == 100 and log.in_memory() < 8
    log.close()
    with pytest.raises(ValueError):
        EventLog(memory_events=0)


def _stable_group(j: Judging) -> list[float]:
    t = [0.0]

    def exchange(api: ApiKey, version: int, req: m.Request, resp: m.Response, took: float = 0.002) -> None:
        tokens = j.request(1, api, version, req, t[0])
        t[0] += took
        j.answer(tokens, resp, t[0])
        t[0] += 0.001
        j.tick(t[0])

    exchange(ApiKey.JoinGroup, 5, m.JoinGroupRequest("g", "", "consumer", PROTOCOLS, 10000, 30000, client_id="c"),
             m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, member_id="c-1"))
    exchange(ApiKey.JoinGroup, 5, m.JoinGroupRequest("g", "c-1", "consumer", PROTOCOLS, 10000, 30000, client_id="c"),
             m.JoinGroupResponse(Error.NONE, generation_id=1, protocol_type="consumer", protocol_name="range",
                                 leader="c-1", member_id="c-1",
                                 members=(m.JoinGroupMember("c-1", None, b"\x00" * 40),)), took=3.01)
    exchange(ApiKey.SyncGroup, 3, m.SyncGroupRequest("g", "c-1", 1, protocol_type="consumer", protocol_name="range",
                                                     assignments=(("c-1", b"\x01" * 60),)),
             m.SyncGroupResponse(Error.NONE, assignment=b"\x01" * 60))
    assert not j.groups["g"].ended
    return t


def _growth_per_heartbeat(j: Judging, n: int) -> float:
    t = _stable_group(j)
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(n):
            t[0] += 0.5
            tokens = j.request(1, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), t[0])
            t[0] += 0.002
            j.answer(tokens, m.HeartbeatResponse(Error.NONE), t[0])
            j.tick(t[0])
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert not j.groups["g"].ended and j.judged() >= n
    return grown / n


def test_a_long_lived_group_is_judged_in_bounded_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 2000
    monkeypatch.setattr(judging_module, "EventLog", lambda: EventLog(memory_events=64))
    bounded = _growth_per_heartbeat(Judging(CoordinatorConfig(), Tolerance(), target="t", started=0.0), n)
    # negative control: an exchange kept whole in memory grows by it (about 400 B a heartbeat here)
    monkeypatch.setattr(judging_module, "EventLog", lambda: EventLog(memory_events=10 ** 9))
    whole = _growth_per_heartbeat(Judging(CoordinatorConfig(), Tolerance(), target="t", started=0.0), n)
    assert whole > 250, whole
    assert bounded < 80 and bounded * 4 < whole, (bounded, whole)
    print(f"bytes per judged heartbeat: {bounded:.0f} bounded, {whole:.0f} kept whole")

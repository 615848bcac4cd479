"""Probe Kafka 3.9's late session expiry against a real broker.

In each group, leader A and follower B are Stable (generation 2); A heartbeats at T (its session,
600 ms, is due at T + 600), rejoins at T + 100 (a rebalance: A parks in JoinGroup), B heartbeats
at T + 300 and rejoins at T + 600 + delta, which completes the join phase for both. Kafka 3.9
force-completes A's DelayedHeartbeat at its deadline and evaluates it after the lock is free: when
B's join holds the lock at that moment, A (no longer parked) is removed right after its join is
answered. A DescribeGroups 50 ms later tells which: CompletingRebalance with 2 members (the
model's atomic expiry), or PreparingRebalance with B alone (the late expiry).

    .venv/bin/python benchmarks/kafka_late_expiry_probe.py --rounds 3 --groups 61
    .venv/bin/python benchmarks/kafka_late_expiry_probe.py --pending --rounds 3 --groups 61

`--pending`: the same race for a MEMBER_ID_REQUIRED id. X gets its id at T (pending until
T + 600) and joins with it at T + 600 + delta: when the pending expiry is evaluated after that
join, Kafka removes X (GroupMetadata.remove) and never answers its JoinGroup.

Each round runs `--groups` groups at once, delta = -30 ... +30 ms. Prints the outcomes per delta
and the broker's own log lines for every late expiry ("Stabilized group ... generation 3" then
"Member A ... has failed"). Results: benchmarks/fuzz_results.md ("late session expiry").
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import sys
import time
import uuid
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from model import messages as m  # noqa: E402
from fuzz.actions import PARTITIONS  # noqa: E402
from fuzz.cli import FUZZ_CONFIG  # noqa: E402
from fuzz.client import AsyncConnection, Broker, Received, wire_request  # noqa: E402
from wire.kafka_broker import KafkaBroker  # noqa: E402

PROTOS = (m.ProtocolMetadata("range", b"\x01"),)
NORMAL = ("NONE", "NONE", "CompletingRebalance", 2)
LATE = ("NONE", "NONE", "PreparingRebalance", 1)


async def call(conn: AsyncConnection, req: m.Request, version: int) -> "asyncio.Future[Received]":
    """Send now; the future is the answer."""
    api, body, _ = wire_request(req, version)
    fut: asyncio.Future[Received] = asyncio.get_running_loop().create_future()
    conn.send(api, version, body, lambda rec: None if fut.done() else fut.set_result(rec))
    return fut


async def answer(conn: AsyncConnection, req: m.Request, version: int) -> Any:
    rec = await (await call(conn, req, version))
    if rec.response is None:
        raise RuntimeError(f"{type(req).__name__}: {rec.error}")
    return rec.response


def join(g: str, mid: str) -> m.JoinGroupRequest:
    return m.JoinGroupRequest(g, mid, "consumer", PROTOS, session_timeout_ms=600,
                              rebalance_timeout_ms=3000)


def sync(g: str, mid: str, gen: int, assignments: tuple[tuple[str, bytes], ...] = ()) -> m.SyncGroupRequest:
    return m.SyncGroupRequest(g, mid, gen, None, "consumer", "range", assignments)


async def one_group(b: Broker, g: str, delta_ms: int) -> tuple[str, str, str, int, str]:
    c0, c1, c2 = [await b.connect(g) for _ in range(3)]
    try:
        a = (await answer(c0, join(g, ""), 9)).member_id
        bb = (await answer(c1, join(g, ""), 9)).member_id
        r = await answer(c0, join(g, a), 9)  # generation 1, A alone
        await answer(c0, sync(g, a, r.generation_id, ((a, b"\x01"),)), 5)
        fb = await call(c1, join(g, bb), 9)  # B joins: a rebalance
        await asyncio.sleep(0.02)
        ra = await answer(c0, join(g, a), 9)  # A rejoins: generation 2 for both
        rb = (await fb).response
        assert isinstance(rb, m.JoinGroupResponse) and ra.generation_id == rb.generation_id == 2 and ra.leader == a, (ra, rb)
        s_a = await call(c0, sync(g, a, 2, ((a, b"\x01"), (bb, b"\x02"))), 5)
        s_b = await call(c1, sync(g, bb, 2), 5)
        await s_a
        await s_b
        hb = await call(c0, m.HeartbeatRequest(g, a, 2), 4)
        t = time.monotonic()
        await hb
        await asyncio.sleep(0.1)
        ja = await call(c0, join(g, a), 9)  # the leader rejoins: a rebalance, A parks
        await asyncio.sleep(0.2)
        await answer(c1, m.HeartbeatRequest(g, bb, 2), 4)
        await asyncio.sleep(max(0.0, t + 0.6 + delta_ms / 1000 - time.monotonic()))
        jb = await call(c1, join(g, bb), 9)  # completes the join phase
        got_b, got_a = (await jb).response, (await ja).response
        assert isinstance(got_a, m.JoinGroupResponse) and isinstance(got_b, m.JoinGroupResponse)
        await asyncio.sleep(0.05)
        d = (await answer(c2, m.DescribeGroupsRequest((g,)), 5)).groups[0]
        return got_b.error.name, got_a.error.name, d.state, len(d.members), a
    finally:
        for c in (c0, c1, c2):
            c.close()


async def one_pending(b: Broker, g: str, delta_ms: int) -> tuple[str, str, str, int, str]:
    c0 = await b.connect(g)
    try:
        f = await call(c0, join(g, ""), 9)
        t = time.monotonic()
        rec = await f
        assert isinstance(rec.response, m.JoinGroupResponse)
        x = rec.response.member_id
        await asyncio.sleep(max(0.0, t + 0.6 + delta_ms / 1000 - time.monotonic()))
        fj = await call(c0, join(g, x), 9)
        try:
            got = (await asyncio.wait_for(fj, 3.0)).response
        except asyncio.TimeoutError:
            return "no answer in 3 s", "", "", 0, x
        assert isinstance(got, m.JoinGroupResponse)
        return got.error.name, "", "", 0, x
    finally:
        c0.close()


async def probe(host: str, port: int, rounds: int, groups: int,
                pending: bool) -> list[tuple[str, int, str]]:
    b = Broker(host, port)
    await b.start()
    tally: collections.Counter[tuple[object, ...]] = collections.Counter()
    late: list[tuple[str, int, str]] = []
    try:
        for k in range(rounds):
            prefix = uuid.uuid4().hex[:6]
            names = [(f"late-expiry-{prefix}-{i}", (i % 61) - 30) for i in range(groups)]
            run = one_pending if pending else one_group
            results = await asyncio.gather(*(run(b, g, d) for g, d in names),
                                           return_exceptions=True)
            for (g, d), r in zip(names, results):
                if isinstance(r, BaseException):
                    tally[("error", type(r).__name__)] += 1
                    continue
                outcome = r[:1] if pending else r[:4]
                tally[outcome] += 1
                if outcome == (("no answer in 3 s",) if pending else LATE):
                    late.append((g, d, r[4]))
            print(f"round {k + 1}/{rounds}: " + ", ".join(f"{v} x {k2}" for k2, v in tally.items()),
                  flush=True)
    finally:
        b.close()
    return late


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--groups", type=int, default=61)
    p.add_argument("--pending", action="store_true", help="the race for a MEMBER_ID_REQUIRED id")
    p.add_argument("--kafka", default="3.9", help="Kafka version (3.9 or 4; default 3.9)")
    args = p.parse_args()
    config = FUZZ_CONFIG
    levels = {"kafka.coordinator.group.GroupCoordinator": "info"}
    with KafkaBroker(args.kafka, config, topics={PARTITIONS[0].topic: len(PARTITIONS)},
                     log_levels=levels) as kb:
        host, _, port = kb.address().rpartition(":")
        late = asyncio.run(probe(host, int(port), args.rounds, args.groups, args.pending))
        log = kb.log_text()
    print(f"late expiries: {len(late)} (delta ms: {sorted(d for _, d, _ in late)})")
    for g, d, a in late:
        print(f"--- {g} (delta {d} ms; {'X' if args.pending else 'A'} = {a})")
        for line in log.splitlines():
            if re.search(rf"group {re.escape(g)}\b", line) and any(
                    w in line for w in ("Stabilized", "has failed", "Preparing", "has been removed", "now empty")):
                print(f"    {line.split(' ', 1)[0]} ms  {line.split(' - ', 1)[-1][:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Micro-benchmark of the reference coordinator: requests/s for a join+sync+heartbeat loop.

Run: .venv/bin/python benchmarks/reference_bench.py [--groups N] [--members M] [--rounds R]
Each group is driven through KIP-394 joins, the initial delay, SyncGroup, then R rounds of
(leader rejoin -> all rejoin -> sync all -> heartbeat all). Results: benchmarks/reference_results.md.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from typing import Callable

from model.coordinator_api import CoordinatorConfig
from model.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    ProtocolMetadata,
    Response,
    SyncGroupRequest,
)
from model.vocabulary import Error

from reference import ReferenceCoordinator

PROTOCOLS = (ProtocolMetadata("range", b"\x00\x01"),)


def run(groups: int, members: int, rounds: int) -> tuple[int, float]:
    counter = itertools.count()
    c = ReferenceCoordinator(
        CoordinatorConfig(group_initial_rebalance_delay_ms=0), uuid_source=lambda: str(next(counter))
    )
    requests = 0
    last: dict[tuple[str, int], Response] = {}

    def keep(key: tuple[str, int]) -> Callable[[Response], None]:
        def store(r: Response) -> None:
            last[key] = r

        return store

    start = time.perf_counter()
    ids: dict[str, list[str]] = {}
    for g in range(groups):
        gid = f"g{g}"
        ids[gid] = []
        for i in range(members):
            c.handle(JoinGroupRequest(gid, "", "consumer", PROTOCOLS), keep((gid, i)))
            r = last[(gid, i)]
            assert isinstance(r, JoinGroupResponse) and r.error == Error.MEMBER_ID_REQUIRED
            ids[gid].append(r.member_id)
            c.handle(JoinGroupRequest(gid, r.member_id, "consumer", PROTOCOLS), keep((gid, i)))
            requests += 2
    c.advance(1)
    c.advance(1)
    generation = 1
    for round_ in range(rounds + 1):
        for gid, mids in ids.items():
            if round_ > 0:
                for i, m in enumerate(mids):
                    c.handle(JoinGroupRequest(gid, m, "consumer", PROTOCOLS), keep((gid, i)))
                    requests += 1
            assignment = tuple((m, b"a") for m in mids)
            for i, m in enumerate(mids):
                c.handle(SyncGroupRequest(gid, m, generation, assignments=assignment if i == 0 else ()), keep((gid, i)))
                c.handle(HeartbeatRequest(gid, m, generation), keep((gid, i)))
                requests += 2
            r = last[(gid, len(mids) - 1)]
            assert getattr(r, "error", None) == Error.NONE, r
        generation += 1
    return requests, time.perf_counter() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    requests, seconds = run(args.groups, args.members, args.rounds)
    print(f"groups={args.groups} members={args.members} rounds={args.rounds} "
          f"requests={requests} seconds={seconds:.3f} requests_per_s={requests / seconds:,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`groupspec serve` measurements (run on demand; results in benchmarks/serve_results.md).

    .venv/bin/python benchmarks/serve_bench.py bugs         # per seeded bug: scenarios failing over the wire
    .venv/bin/python benchmarks/serve_bench.py throughput   # heartbeats/s from C concurrent connections

`bugs` runs every scenario file through the kafka:// wire target against a served reference with a
manual clock (tests/server/served.py), once per seeded bug, and counts FAIL outcomes (the correct
server has none). `throughput` keeps C connections each sending Heartbeats back to back (one in
flight per connection, as Kafka serves them) for S seconds, against one Stable single-member group
per connection, and reports completed requests per second.
"""

from __future__ import annotations

import glob
import os
import socket
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))

from served import ServedFactory, call, raw_connect, read_frame, request_frame  # noqa: E402

from conformance.parse import load  # noqa: E402
from conformance.runner import Outcome, run_file  # noqa: E402
from model.coordinator_api import CoordinatorConfig  # noqa: E402
from model.vocabulary import ApiKey  # noqa: E402
from reference.bugs import BUGS  # noqa: E402
from server import start_in_thread  # noqa: E402


def bugs() -> None:
    files = [load(p) for p in sorted(glob.glob(os.path.join(ROOT, "tests", "scenarios", "*.json")))]
    print("| seeded bug | scenarios failing over the wire | first failing scenario | seconds |")
    print("|---|---|---|---|")
    for bug in [None, *sorted(BUGS)]:
        start = time.monotonic()
        results = [r for f in files for r in run_file(f, ServedFactory(bug))]
        failed = [r for r in results if r.outcome is Outcome.FAIL]
        first = failed[0].scenario.name if failed else "-"
        print(f"| {bug or '(none)'} | {len(failed)} of {len(results)} | {first} | "
              f"{time.monotonic() - start:.1f} |", flush=True)


def _member(port: int, group: str) -> tuple[socket.socket, str]:
    sock = raw_connect(port)
    join = {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], "reason": None}
    member = call(sock, ApiKey.JoinGroup, 3, join)["member_id"]  # v3: one step, 0 ms initial delay
    call(sock, ApiKey.SyncGroup, 3, {"group_id": group, "generation_id": 1, "member_id": member,
                                     "group_instance_id": None, "assignments": []})
    return sock, member


def throughput(connections: int = 8, seconds: float = 10.0) -> None:
    with start_in_thread(CoordinatorConfig(group_initial_rebalance_delay_ms=0)) as handle:
        members = [_member(handle.port, f"g{i}") for i in range(connections)]
        counts = [0] * connections
        stop = time.monotonic() + seconds

        def run(i: int) -> None:
            sock, member = members[i]
            frame = request_frame(ApiKey.Heartbeat, 4, {"group_id": f"g{i}", "generation_id": 1,
                                                        "member_id": member, "group_instance_id": None})
            while time.monotonic() < stop:
                sock.sendall(frame)
                assert read_frame(sock) is not None
                counts[i] += 1

        threads = [threading.Thread(target=run, args=(i,)) for i in range(connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        total = sum(counts)
        print(f"{connections} connections, {seconds:g} s: {total} heartbeats, {total / seconds:,.0f} requests/s "
              f"(server frames {handle.stats.frames})")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "bugs"
    if what == "bugs":
        bugs()
    elif what == "throughput":
        throughput(int(sys.argv[2]) if len(sys.argv) > 2 else 8)
    else:
        raise SystemExit("usage: serve_bench.py bugs|throughput [CONNECTIONS]")

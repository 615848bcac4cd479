"""Wire benchmarks (run on demand, not a test): codec round trips and Tansu round trips.

    .venv/bin/python benchmarks/wire_bench.py [--groups 20] [--heartbeats 2000]

Prints a markdown table; results are recorded in benchmarks/wire_results.md.
"""

from __future__ import annotations

import argparse
import platform
import threading
import time
from typing import Any, Callable

from model.vocabulary import ApiKey
from wire import codec
from wire.tansu import TansuBroker
from wire.transport import Connection

JOIN_V9 = {
    "group_id": "groupspec-bench", "session_timeout_ms": 6000, "rebalance_timeout_ms": 30000,
    "member_id": "consumer-1-0f3c2a4e-8d1b-4c2e-9a7f-1b2c3d4e5f60", "group_instance_id": None,
    "protocol_type": "consumer", "reason": None,
    "protocols": [{"name": "range", "metadata": bytes(40)}, {"name": "cooperative-sticky", "metadata": bytes(48)}],
}
JOIN_V9_RESPONSE = {
    "error_code": 0, "generation_id": 7, "protocol_type": "consumer", "protocol_name": "range",
    "leader": "m-0", "member_id": "m-0", "skip_assignment": False,
    "members": [{"member_id": f"m-{i}", "group_instance_id": None, "metadata": bytes(40)} for i in range(3)],
}
HEARTBEAT_V4 = {"group_id": "groupspec-bench", "generation_id": 7, "member_id": "m-0", "group_instance_id": None}


def rate(fn: Callable[[], Any], seconds: float = 1.5) -> float:
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(100):
            fn()
        n += 100
    return n / elapsed


def codec_rates() -> list[tuple[str, float]]:
    def join_request() -> None:
        codec.decode_request(codec.encode_request(ApiKey.JoinGroup, 9, 1, "bench", JOIN_V9))

    def join_response() -> None:
        codec.decode_response(ApiKey.JoinGroup, 9, codec.encode_response(ApiKey.JoinGroup, 9, 1, JOIN_V9_RESPONSE))

    def heartbeat_request() -> None:
        codec.decode_request(codec.encode_request(ApiKey.Heartbeat, 4, 1, "bench", HEARTBEAT_V4))

    def heartbeat_response() -> None:
        codec.decode_response(ApiKey.Heartbeat, 4, codec.encode_response(ApiKey.Heartbeat, 4, 1, {"error_code": 0}))

    return [("codec JoinGroup v9 request encode+decode", rate(join_request)),
            ("codec JoinGroup v9 response (3 members) encode+decode", rate(join_response)),
            ("codec Heartbeat v4 request encode+decode", rate(heartbeat_request)),
            ("codec Heartbeat v4 response encode+decode", rate(heartbeat_response))]


def join_and_sync(conn: Connection, group: str, member: str = "") -> tuple[str, int]:
    body: dict[str, Any] = {"group_id": group, "session_timeout_ms": 6000, "rebalance_timeout_ms": 30000,
                            "member_id": member, "protocol_type": "consumer",
                            "protocols": [{"name": "range", "metadata": b""}]}
    reply = conn.call(ApiKey.JoinGroup, 9, body, 60)
    if reply["error_code"] == 79:  # MEMBER_ID_REQUIRED
        body["member_id"] = reply["member_id"]
        reply = conn.call(ApiKey.JoinGroup, 9, body, 60)
    assert reply["error_code"] == 0, reply
    member, gen = reply["member_id"], reply["generation_id"]
    sync = conn.call(ApiKey.SyncGroup, 5, {"group_id": group, "generation_id": gen, "member_id": member,
                                          "protocol_type": "consumer", "protocol_name": "range",
                                          "assignments": [{"member_id": member, "assignment": b"a"}]}, 60)
    assert sync["error_code"] == 0, sync
    return member, gen


def parallel_rebalances(broker: TansuBroker, groups: int, members: list[str] | None) -> tuple[float, list[str]]:
    conns = [Connection(broker.host, broker.port) for _ in range(groups)]
    out: list[str] = [""] * groups
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            out[i] = join_and_sync(conns[i], f"groupspec-bench-{i}", members[i] if members else "")[0]
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(groups)]
    start = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - start
    for c in conns:
        c.close()
    if errors:
        raise errors[0]
    return groups / elapsed, out


def tansu_rates(groups: int, heartbeats: int) -> list[tuple[str, float]]:
    with TansuBroker() as broker:
        conn = Connection(broker.host, broker.port)
        member, gen = join_and_sync(conn, "groupspec-bench-hb")
        hb = {"group_id": "groupspec-bench-hb", "generation_id": gen, "member_id": member, "group_instance_id": None}
        start = time.perf_counter()
        for _ in range(heartbeats):
            assert conn.call(ApiKey.Heartbeat, 4, hb, 10)["error_code"] == 0
        hb_rate = heartbeats / (time.perf_counter() - start)
        conn.close()
        first, members = parallel_rebalances(broker, groups, None)
        again, _ = parallel_rebalances(broker, groups, members)
    return [("Tansu Heartbeat v4 round trips / s (one connection, sequential)", hb_rate),
            (f"Tansu first join+sync rebalances / s ({groups} groups in parallel, 1 member each)", first),
            (f"Tansu rejoin+sync rebalances / s ({groups} known members rejoining in parallel)", again)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--heartbeats", type=int, default=2000)
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    print("| measurement | per second |\n|---|---|")
    for name, value in codec_rates() + tansu_rates(args.groups, args.heartbeats):
        print(f"| {name} | {value:,.1f} |")


if __name__ == "__main__":
    main()

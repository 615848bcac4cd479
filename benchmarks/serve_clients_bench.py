"""Real clients against `groupspec serve`: a 3-member group's end-to-end throughput, and what each
client did through a leave and a join.

    PYTHONPATH=. .venv/bin/python benchmarks/serve_clients_bench.py [--records N] [--rate R]
                                                                     [--client C]...

For each client (kafka-python, librdkafka, java 3.9.2, java 4.4.0), on a fresh `serve` each time:

- throughput: 3 members, no churn, each producing `--records` records at up to `--rate` a second
  from its start, so a backlog builds while the group forms (3 s initial rebalance delay + joins).
  produce/s = acknowledged records / (last ack - first ack); consume/s = distinct records consumed /
  (last first consumption - first consumption): the group draining its backlog and keeping up;
  latency (a second run, `--steady-rate` a second per member for `--steady-seconds`, so that
  production goes on after the group has formed) = first consumption - the record's timestamp (the
  producer's send time, CreateTime), for records sent after every member had its first assignment
  (median and p99). (Acknowledgement times are no base: librdkafka prints its delivery reports only
  when the loop polls the producer.) Every member prints one JSON line per record produced and
  consumed (clients/events.py), so the figures include that cost; they are the group's rates through
  serve on this machine, not the libraries' peaks.
- rebalance: the CI scenario (clients/group.py `rebalance_run`): 3 members, the first leaves
  (SIGTERM, clean close), a fourth joins; generations, commits, commit failures, duplicates.

Prints a Markdown table per part (pasted into benchmarks/serve_results.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from clients.group import RunResult, Workload, rebalance_run, unavailable  # noqa: E402
from model.coordinator_api import CoordinatorConfig  # noqa: E402
from server import start_in_thread  # noqa: E402

CLIENTS = [("kafka-python", "3.9.2"), ("librdkafka", "3.9.2"), ("java", "3.9.2"), ("java", "4.4.0")]


def label(client: str, version: str) -> str:
    return f"java (kafka-clients {version})" if client == "java" else client


def times(r: RunResult) -> tuple[dict[str, float], dict[str, float]]:
    """key -> acknowledgement time, key -> first consumption time."""
    acks = {e["key"]: e.t for e in r.events if e.ev == "produced"}
    firsts: dict[str, float] = {}
    for e in r.events:
        if e.ev == "consumed":
            firsts.setdefault(e["key"], e.t)
    return acks, firsts


def rate(times: list[float]) -> float:
    return len(times) / (max(times) - min(times)) if len(times) > 1 and max(times) > min(times) else 0.0


def run(client: str, version: str, records: int, rate: float, churn: bool) -> RunResult:
    with start_in_thread(CoordinatorConfig()) as handle:
        w = Workload(client=client, bootstrap=f"127.0.0.1:{handle.port}", consumers=3, records=records, rate=rate,
                     java_version=version)
        return rebalance_run(w, timeout_s=180, leave_and_join=churn)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=6000, help="records each member produces (throughput part)")
    p.add_argument("--rate", type=float, default=5000.0, help="records a second each member produces, at most")
    p.add_argument("--steady-rate", type=float, default=300.0, help="records a second per member (latency run)")
    p.add_argument("--steady-seconds", type=float, default=12.0, help="seconds of production (latency run)")
    p.add_argument("--client", action="append", default=[], help="only these clients (default: all)")
    a = p.parse_args()
    cases = [(c, v) for c, v in CLIENTS if not a.client or c in a.client or label(c, v) in a.client]
    print("| client | members | records consumed | produce/s | consume/s | latency median / p99 ms | duplicates | violations |")
    print("|---|---|---|---|---|---|---|---|")
    for client, version in cases:
        reason = unavailable(client, version)
        if reason:
            print(f"| {label(client, version)} | - | - | - | - | - | - | unavailable: {reason} |")
            continue
        t0 = time.monotonic()
        r = run(client, version, a.records, a.rate, churn=False)
        v = r.verdict
        acks, firsts = times(r)
        steady = run(client, version, int(a.steady_rate * a.steady_seconds), a.steady_rate, churn=False)
        started = max(min(e.t for e in steady.events if e.ev == "assigned" and e.name == n)
                      for n in {e.name for e in steady.events if e.ev == "assigned"})
        sent: dict[str, tuple[float, float]] = {}  # key -> (send time, first consumption)
        for e in steady.events:
            if e.ev == "consumed" and e["key"] not in sent:
                sent[e["key"]] = (e["ts"] / 1000, e.t)
        lat = sorted((seen - at) * 1000 for at, seen in sent.values() if at >= started)
        pct = (f"{lat[len(lat) // 2]:.0f} / {lat[min(len(lat) - 1, len(lat) * 99 // 100)]:.0f} "
               f"({len(lat)} records)" if lat else "-")
        print(f"| {label(client, version)} | 3 | {v.consumed} of {v.produced} | "
              f"{rate(list(acks.values())):.0f} | {rate(list(firsts.values())):.0f} | {pct} | {v.duplicates} | "
              f"{len(v.violations)} |  <!-- wall {time.monotonic() - t0:.0f} s, completed={r.completed} -->", flush=True)
    print()
    print("| client | generations | commits | commit failures | duplicates | violations | members closed | end |")
    print("|---|---|---|---|---|---|---|---|")
    for client, version in cases:
        if unavailable(client, version):
            continue
        r = run(client, version, 150, 100.0, churn=True)
        v = r.verdict
        failed = [e["error"] for e in r.events if e.ev == "commit_failed"]
        failures = f"{len(failed)}" + (f" ({failed[0][:80]})" if failed else "")
        closed = sum(1 for e in r.events if e.ev == "closed")
        print(f"| {label(client, version)} | {len(v.generations)} ({', '.join(map(str, v.generations))}) | "
              f"{v.commits} | {failures} | {v.duplicates} | {len(v.violations)} | {closed} of {len(r.exit_codes)} | "
              f"{'settled, all consumed' if r.completed else 'timed out'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

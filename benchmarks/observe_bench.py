"""observe's cost: added latency, sustained group-API throughput, and 50 consumers
(benchmarks/observe_results.md).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/observe_bench.py latency    [--seconds 60]
    PYTHONPATH=$PWD .venv/bin/python benchmarks/observe_bench.py throughput [--seconds 15] [--connections 8]
    PYTHONPATH=$PWD .venv/bin/python benchmarks/observe_bench.py fifty      [--seconds 60]

One `groupspec serve` process and one `groupspec observe --upstream kafka://<that serve>` process;
the load is generated in this process with the fuzzer's asyncio client (fuzz/client.py, the wire
codec). A member here is what a consumer sends to its coordinator: JoinGroup (KIP-394 round trip),
SyncGroup (the leader assigns), then Heartbeat every `heartbeat` seconds and OffsetCommit every
`commit` seconds, rejoining on REBALANCE_IN_PROGRESS, each request timed from send to answer.

- latency: 3 members in a group through observe and 3 in another group straight to serve, at the same
  time (same serve, same run), heartbeat and commit every --interval s (0.1); median and p99 per path.
- throughput: N connections, each a one-member group sending Heartbeat / OffsetCommit / OffsetFetch
  back to back (closed loop), first straight to serve, then through observe; requests/s of each, and
  observe's CPU while it ran.
- fifty: 50 members in one group through observe (heartbeat 3 s, commit 1 s: a consumer's default
  heartbeat and a busy consumer's commits), plus 3 members in another group straight to serve as the
  reference latency; observe's and serve's CPU share, latencies, and observe's report (did the judge
  keep up: groups judged to the end, not inconclusive).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from model import messages as m
from model.vocabulary import ApiKey, Error

from fuzz.client import AsyncConnection, Received, wire_request

VERSIONS = {ApiKey.JoinGroup: 7, ApiKey.SyncGroup: 5, ApiKey.Heartbeat: 4, ApiKey.OffsetCommit: 8,
            ApiKey.OffsetFetch: 7, ApiKey.LeaveGroup: 4}
TOPIC = "bench"


def start(cmd: list[str], prefix: str) -> tuple["subprocess.Popen[str]", int]:
    p = subprocess.Popen([sys.executable, "-m", "groupspec.cli", *cmd], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    assert p.stdout is not None
    line = p.stdout.readline().strip()
    assert line.startswith(prefix), line
    return p, int(line.rsplit(":", 1)[1])


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmRSS:"))


@dataclass
class Timings:
    ms: dict[str, list[float]] = field(default_factory=dict)
    errors: int = 0

    def add(self, path: str, seconds: float) -> None:
        self.ms.setdefault(path, []).append(seconds * 1000)

    def summary(self, path: str) -> dict[str, Any]:
        xs = sorted(self.ms.get(path, []))
        if not xs:
            return {"n": 0}
        return {"n": len(xs), "median_ms": round(statistics.median(xs), 2),
                "p99_ms": round(xs[min(len(xs) - 1, int(len(xs) * 0.99))], 2), "max_ms": round(xs[-1], 2)}


async def call(conn: AsyncConnection, request: m.Request) -> tuple[m.Response, float]:
    api, body, _ = wire_request(request, VERSIONS[request.api_key])
    fut: asyncio.Future[Received] = asyncio.get_running_loop().create_future()
    t = time.monotonic()
    conn.send(api, VERSIONS[request.api_key], body, lambda r: fut.done() or fut.set_result(r))
    rec = await fut
    if rec.response is None:
        raise RuntimeError(rec.error)
    return rec.response, time.monotonic() - t


class Member:
    """One consumer's coordinator traffic (see the module docstring)."""

    def __init__(self, host: str, port: int, group: str, name: str, path: str, timings: Timings, *,
                 heartbeat_s: float, commit_s: float, partitions: int) -> None:
        self.host, self.port, self.group, self.name, self.path = host, port, group, name, path
        self.timings, self.heartbeat_s, self.commit_s, self.partitions = timings, heartbeat_s, commit_s, partitions
        self.member_id, self.generation = "", -1
        self.offset = 0

    async def timed(self, conn: AsyncConnection, request: m.Request) -> m.Response:
        """The request's answer; its latency recorded unless the model lets it park (JoinGroup,
        SyncGroup: their latency is the rebalance's, not the path's)."""
        response, took = await call(conn, request)
        if request.api_key not in (ApiKey.JoinGroup, ApiKey.SyncGroup):
            self.timings.add(self.path, took)
        return response

    async def join(self, conn: AsyncConnection, members_hint: list["Member"]) -> None:
        protocols = (m.ProtocolMetadata("range", b"\x00"),)
        while True:
            r = await self.timed(conn, m.JoinGroupRequest(self.group, self.member_id, "consumer", protocols,
                                                          10000, 30000, client_id=self.name))
            assert isinstance(r, m.JoinGroupResponse)
            if r.error is Error.MEMBER_ID_REQUIRED:
                self.member_id = r.member_id
                continue
            if r.error is not Error.NONE:
                self.member_id = "" if r.error is Error.UNKNOWN_MEMBER_ID else self.member_id
                await asyncio.sleep(0.05)
                continue
            self.generation = r.generation_id
            assignments: tuple[tuple[str, bytes], ...] = ()
            if r.leader == self.member_id:
                assignments = tuple((x.member_id, f"{i}".encode()) for i, x in enumerate(r.members))
            s = await self.timed(conn, m.SyncGroupRequest(self.group, self.member_id, self.generation,
                                                          assignments=assignments))
            assert isinstance(s, m.SyncGroupResponse)
            if s.error is Error.NONE:
                return

    async def run(self, until: float) -> None:
        conn = await AsyncConnection.open(self.host, self.port, 10)
        try:
            await self.join(conn, [])
            next_hb = next_commit = time.monotonic()
            while time.monotonic() < until:
                now = time.monotonic()
                if now >= next_hb:
                    r = await self.timed(conn, m.HeartbeatRequest(self.group, self.member_id, self.generation))
                    next_hb = now + self.heartbeat_s
                    assert isinstance(r, m.HeartbeatResponse)
                    if r.error is not Error.NONE:
                        await self.join(conn, [])
                        continue
                if now >= next_commit:
                    self.offset += 1
                    await self.timed(conn, m.OffsetCommitRequest(
                        self.group, self.member_id, self.generation,
                        ((m.TopicPartition(TOPIC, hash(self.name) % self.partitions), self.offset),)))
                    next_commit = now + self.commit_s
                await asyncio.sleep(max(0.0, min(next_hb, next_commit) - time.monotonic()))
            await call(conn, m.LeaveGroupRequest(self.group, (m.MemberIdentity(self.member_id),)))
        finally:
            conn.close()


async def closed_loop(host: str, port: int, group: str, until: float, timings: Timings, path: str) -> int:
    """A one-member group sending Heartbeat, OffsetCommit, OffsetFetch back to back: requests sent."""
    member = Member(host, port, group, group, path, timings, heartbeat_s=0, commit_s=0, partitions=1)
    conn = await AsyncConnection.open(host, port, 10)
    n = 0
    try:
        await member.join(conn, [])
        tp = m.TopicPartition(TOPIC, 0)
        while time.monotonic() < until:
            await member.timed(conn, m.HeartbeatRequest(group, member.member_id, member.generation))
            await member.timed(conn, m.OffsetCommitRequest(group, member.member_id, member.generation, ((tp, n),)))
            await member.timed(conn, m.OffsetFetchRequest(group, (tp,)))
            n += 3
    finally:
        conn.close()
    return n


def stop_observe(p: "subprocess.Popen[str]", report: str) -> dict[str, Any]:
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=300)
    with open(os.path.join(report, "report.json"), encoding="utf-8") as f:
        doc = json.load(f)
    return {"exit": p.returncode, "summary": out.strip().splitlines()[-1], "findings": doc["findings"],
            "groups": len(doc["groups"]), "inconclusive": doc["inconclusive_groups"],
            "judged_to_the_end": sum(1 for g in doc["groups"] if g["judging"] == "to the end"),
            "group_requests": doc["group_requests"], "judge_seconds": doc["judge_seconds"],
            "judge_backlog_max": doc["judge_backlog_max"], "inconclusive_reasons": doc["inconclusive_reasons"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("latency", "throughput", "fifty"), help="the measurement")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long the load runs")
    ap.add_argument("--connections", type=int, default=8, help="throughput: closed-loop connections")
    ap.add_argument("--interval", type=float, default=0.1,
                    help="latency: seconds between a member's heartbeats, and between its commits (default 0.1)")
    a = ap.parse_args()
    report = tempfile.mkdtemp(prefix="observe-bench-")
    serve, sport = start(["serve", "--port", "0", "--topic", f"{TOPIC}:64"], "groupspec serve: listening on ")
    obs, oport = start(["observe", "--upstream", f"kafka://127.0.0.1:{sport}", "--report", report, "--quiet",
                        "--no-probe"], "groupspec observe: listening on ")
    out: dict[str, Any] = {"what": a.what, "seconds": a.seconds, "report": report}
    try:
        out.update(asyncio.run(measure(a, sport, oport, obs.pid, serve.pid)))
        out["observe_rss_kb"] = rss_kb(obs.pid)
    finally:
        out["observe_run"] = stop_observe(obs, report)
        serve.terminate()
        serve.wait(30)
    print(json.dumps(out, indent=1))
    return 0


async def measure(a: argparse.Namespace, sport: int, oport: int, opid: int, spid: int) -> dict[str, Any]:
    timings = Timings()
    host = "127.0.0.1"
    if a.what == "latency":
        until = time.monotonic() + a.seconds
        members = [Member(host, port, f"lat-{path}", f"{path}-{i}", path, timings, heartbeat_s=a.interval,
                          commit_s=a.interval,
                          partitions=64)
                   for path, port in (("direct", sport), ("observe", oport)) for i in range(3)]
        cpu0 = (cpu_s(opid), cpu_s(spid), time.monotonic())
        await asyncio.gather(*(x.run(until) for x in members))
        el = time.monotonic() - cpu0[2]
        return {"direct": timings.summary("direct"), "observe": timings.summary("observe"),
                "observe_cpu_share": round((cpu_s(opid) - cpu0[0]) / el, 3),
                "serve_cpu_share": round((cpu_s(spid) - cpu0[1]) / el, 3)}
    if a.what == "throughput":
        res: dict[str, Any] = {}
        for path, port in (("direct", sport), ("observe", oport)):
            until = time.monotonic() + a.seconds
            cpu0 = (cpu_s(opid), cpu_s(spid), time.monotonic())
            counts = await asyncio.gather(*(closed_loop(host, port, f"tp-{path}-{i}", until, timings, path)
                                            for i in range(a.connections)))
            el = time.monotonic() - cpu0[2]
            res[path] = {"requests_per_s": round(sum(counts) / el, 1), **timings.summary(path),
                         "observe_cpu_share": round((cpu_s(opid) - cpu0[0]) / el, 3),
                         "serve_cpu_share": round((cpu_s(spid) - cpu0[1]) / el, 3)}
        return res
    until = time.monotonic() + a.seconds
    members = [Member(host, oport, "fifty", f"c{i}", "observe", timings, heartbeat_s=3.0, commit_s=1.0,
                      partitions=64) for i in range(50)]
    members += [Member(host, sport, "reference", f"r{i}", "direct", timings, heartbeat_s=0.5, commit_s=0.5,
                       partitions=64) for i in range(3)]
    cpu0 = (cpu_s(opid), cpu_s(spid), time.monotonic())
    await asyncio.gather(*(x.run(until) for x in members))
    el = time.monotonic() - cpu0[2]
    return {"observe_path": timings.summary("observe"), "direct_reference": timings.summary("direct"),
            "observe_cpu_share": round((cpu_s(opid) - cpu0[0]) / el, 3),
            "serve_cpu_share": round((cpu_s(spid) - cpu0[1]) / el, 3),
            "observe_requests_per_s": round(len(timings.ms.get("observe", [])) / el, 1)}


if __name__ == "__main__":
    raise SystemExit(main())

"""observe's memory over a long run (benchmarks/observe_results.md).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/observe_soak.py --minutes 30 --out /tmp/observe-soak

Starts `groupspec observe --upstream serve` (serve started by observe, Kafka's default group
settings), then a real kafka-python workload through it for --minutes: one producer process (20
records/s) and 3 consumer processes in one group, polling and committing; every --restart-every
seconds one consumer (in turn) is closed cleanly (LeaveGroup) and a new one started (JoinGroup,
a rebalance); with --churn mixed every other one is killed with SIGKILL instead (no LeaveGroup:
the group waits for its session to expire, 10 s). Every 10 s the RSS (VmRSS) and CPU time of observe's proxy process
and of its judge process (samples.csv); at the end observe gets SIGTERM and its exit status, summary line and report
(OUT/report) are kept.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

MEMBER = r"""
import sys, time
from kafka import KafkaConsumer
from kafka.errors import KafkaError
boot, name, stop = sys.argv[1], sys.argv[2], sys.argv[3]
import os
c = KafkaConsumer("soak", bootstrap_servers=boot, group_id="soak", client_id=name,
                  auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=3000)
n = failed = 0
while not os.path.exists(stop):
    for recs in c.poll(500).values():
        n += len(recs)
    try:
        c.commit()
    except KafkaError:  # a commit refused during a rebalance: the next poll rejoins
        failed += 1
c.close()
print(name, "consumed", n, "commits refused", failed, flush=True)
"""

PRODUCER = r"""
import sys, time, os
from kafka import KafkaProducer
boot, stop = sys.argv[1], sys.argv[2]
p = KafkaProducer(bootstrap_servers=boot)
i = 0
while not os.path.exists(stop):
    p.send("soak", f"r{i}".encode()); i += 1
    time.sleep(0.05)
p.flush(); p.close()
print("produced", i, flush=True)
"""


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def judge_pid(parent: int) -> int:
    """observe's judge process (observe/worker.py, a multiprocessing spawn child)."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", encoding="ascii") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if ppid == parent and b"spawn_main" in cmd:
            return int(d)
    return -1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--minutes", type=float, default=30.0, help="how long the workload runs")
    ap.add_argument("--restart-every", type=float, default=120.0, help="seconds between member restarts")
    ap.add_argument("--churn", choices=("clean", "mixed"), default="clean",
                    help="clean: every restart closes the member (LeaveGroup); mixed: every other one is a SIGKILL")
    ap.add_argument("--out", required=True, help="directory for samples.csv, the report and the log")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    stop_file = os.path.join(a.out, "stop")
    if os.path.exists(stop_file):
        os.remove(stop_file)
    obs = subprocess.Popen([sys.executable, "-m", "groupspec.cli", "observe", "--upstream", "serve",
                            "--report", os.path.join(a.out, "report")],
                           stdout=subprocess.PIPE, stderr=open(os.path.join(a.out, "observe.err"), "w"), text=True)
    assert obs.stdout is not None
    line = obs.stdout.readline().strip()
    boot = line.rsplit(" ", 1)[1]
    log = open(os.path.join(a.out, "workload.log"), "w")
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER, boot, stop_file], stdout=log, stderr=log)
    members: list[subprocess.Popen[bytes]] = []
    member_stops: list[str] = []
    started = 0

    def start_member() -> None:
        nonlocal started
        started += 1
        stop = os.path.join(a.out, f"stop-m{started}")
        member_stops.append(stop)
        members.append(subprocess.Popen([sys.executable, "-c", MEMBER, boot, f"m{started}", stop],
                                        stdout=log, stderr=log))

    for _ in range(3):
        start_member()
    t0 = time.monotonic()
    end = t0 + a.minutes * 60
    next_restart = t0 + a.restart_every
    turn = 0
    with open(os.path.join(a.out, "samples.csv"), "w") as samples:
        samples.write("seconds,proxy_rss_kb,proxy_cpu_s,judge_rss_kb,judge_cpu_s\n")
        judge = judge_pid(obs.pid)
        while time.monotonic() < end:
            samples.write(f"{time.monotonic() - t0:.0f},{rss_kb(obs.pid)},{cpu_s(obs.pid):.2f},"
                          f"{rss_kb(judge)},{cpu_s(judge):.2f}\n")
            samples.flush()
            if time.monotonic() >= next_restart:
                i = turn % len(members)
                if a.churn == "mixed" and turn % 2 == 1:
                    members[i].kill()  # no LeaveGroup: its session expires
                else:
                    open(member_stops[i], "w").close()  # clean close: LeaveGroup
                members[i].wait(60)
                members.pop(i)
                member_stops.pop(i)
                start_member()
                turn += 1
                next_restart += a.restart_every
            time.sleep(10)
    open(stop_file, "w").close()
    for s in member_stops:
        open(s, "w").close()
    for p in [producer, *members]:
        p.wait(120)
    time.sleep(2)
    final = (rss_kb(obs.pid), cpu_s(obs.pid), rss_kb(judge), cpu_s(judge))
    obs.send_signal(signal.SIGTERM)
    rest, _ = obs.communicate(timeout=120)
    with open(os.path.join(a.out, "result.txt"), "w") as f:
        f.write(f"minutes {a.minutes} churn {a.churn} restarts {turn} proxy rss_kb {final[0]} cpu_s {final[1]:.1f}; judge "
                f"rss_kb {final[2]} cpu_s {final[3]:.1f}; exit {obs.returncode}\n{rest}")
    print(open(os.path.join(a.out, "result.txt")).read())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run a command and report the CPU time its processes used, split into JVM, Python workers and driver.

    .venv/bin/python benchmarks/cpu_split.py -- groupspec replay --input DIR --output OUT --master 'local[2]'

Spark's Python workers are children of the JVM and exit only with it, so the kernel's child
accounting does not see them in time; instead the command and its descendants (not other
sessions' java processes) are sampled every `--every` seconds (/proc/PID/stat, utime + stime)
while the command runs, and the largest value seen per process is summed per kind: `jvm` (java), `python-workers` (pyspark's daemon and the
workers it forks), `driver` (the command itself and any other process whose command line names
it). A process that starts and ends between two samples is missed, so keep `--every` well under
a task's length. Linux only. Used for the CPU columns of benchmarks/traces_results.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Optional


def _read(pid: int) -> Optional[tuple[str, float, int]]:
    """(command line, CPU seconds, parent pid) of a process, None when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return cmd, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(fields[1])


def kind_of(cmd: str, driver_pid: int, pid: int) -> Optional[str]:
    program = os.path.basename(cmd.split(" ", 1)[0])
    if program == "java":
        return "jvm"
    if "pyspark.daemon" in cmd or "pyspark.worker" in cmd or "pyspark/daemon" in cmd:
        return "python-workers"
    if pid == driver_pid:
        return "driver"
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.every <= 0:
        p.error("give a command after --, and --every > 0")
    start = time.monotonic()
    proc = subprocess.Popen(command)
    seen: dict[tuple[str, int], float] = {}
    while proc.poll() is None:
        procs = {int(name): got for name in os.listdir("/proc") if name.isdigit()
                 for got in [_read(int(name))] if got is not None}
        ours = {proc.pid}  # the command and its descendants only (other sessions run java too)
        grew = True
        while grew:
            more = {pid for pid, got in procs.items() if got[2] in ours} - ours
            ours |= more
            grew = bool(more)
        for pid in ours & procs.keys():
            got = procs[pid]
            name = str(pid)
            kind = kind_of(got[0], proc.pid, int(name))
            if kind is not None:
                key = (kind, int(name))
                seen[key] = max(seen.get(key, 0.0), got[1])
        time.sleep(args.every)
    wall = time.monotonic() - start
    totals: dict[str, float] = {}
    for (kind, _), cpu in seen.items():
        totals[kind] = totals.get(kind, 0.0) + cpu
    parts = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(totals.items()))
    busy = sum(totals.values()) / wall if wall > 0 else 0.0
    print(f"cpu_split: exit {proc.returncode}, wall {wall:.1f}s, CPU {parts or 'none seen'} "
          f"({busy:.2f} cores busy on average)", file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())

"""Helpers of the observe tests: `groupspec observe` as a process (its first line read), and a real
kafka-python group (3 members in threads) producing and consuming through it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Optional

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

FIRST_LINE = "groupspec observe: listening on 127.0.0.1:"


@dataclass
class Observed:
    proc: "subprocess.Popen[str]"
    port: int
    report: str

    def stop(self, timeout_s: float = 30.0) -> tuple[int, str]:
        """SIGTERM, then its exit status and the rest of its stdout."""
        self.proc.send_signal(signal.SIGTERM)
        return self.finish(timeout_s)

    def finish(self, timeout_s: float = 30.0) -> tuple[int, str]:
        assert self.proc.stdout is not None
        out, _ = self.proc.communicate(timeout=timeout_s)
        return self.proc.returncode, out

    def doc(self) -> dict[str, Any]:
        with open(os.path.join(self.report, "report.json"), encoding="utf-8") as f:
            return dict(json.load(f))


def start_observe(report: str, *args: str, launcher: tuple[str, ...] = ("-m", "groupspec.cli"),
                  cwd: Optional[str] = None) -> Observed:
    """`groupspec observe --report REPORT --quiet ARGS`, run as `python LAUNCHER observe ...` (in
    `cwd`: `python -m` imports a user's modules from there)."""
    proc = subprocess.Popen([sys.executable, *launcher, "observe", "--report", report, "--quiet",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=cwd)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(FIRST_LINE):
        proc.kill()
        raise AssertionError(f"observe did not start: {line!r} (exit {proc.wait()})")
    return Observed(proc, int(line.strip().rsplit(":", 1)[1]), report)


def kafka_python_group(bootstrap: str, *, members: int = 3, records: int = 30, seconds: float = 6.0,
                       group: str = "observed", topic: str = "orders") -> tuple[int, set[bytes], list[str]]:
    """Produce `records` records, then run `members` consumers of one group for `seconds`,
    committing after each poll; (records acknowledged, values consumed, the errors the consumers
    raised: a commit refused during a rebalance, ...)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    futures = [producer.send(topic, f"r{i}".encode()) for i in range(records)]
    producer.flush()
    acked = sum(1 for f in futures if f.succeeded())
    producer.close()
    consumed: set[bytes] = set()
    lock = threading.Lock()
    errors: list[str] = []

    def member(i: int) -> None:
        try:
            c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=f"member-{i}",
                              auto_offset_reset="earliest", session_timeout_ms=10000,
                              heartbeat_interval_ms=500)
            end: Optional[float] = time.monotonic() + seconds
            while end is not None and time.monotonic() < end:
                for recs in c.poll(200).values():
                    with lock:
                        consumed.update(r.value for r in recs)
                try:
                    c.commit()
                except KafkaError as e:
                    errors.append(f"member-{i} commit: {e!r}")
            c.close()
        except Exception as e:  # noqa: BLE001 - reported by the caller
            errors.append(f"member-{i}: {e!r}")

    threads = [threading.Thread(target=member, args=(i,)) for i in range(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return acked, consumed, errors

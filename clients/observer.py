"""`groupspec observe` in front of a broker, as a process: the judging proxy the members bootstrap at.

    with observing("127.0.0.1:9092", "/tmp/run/observe", profile="kafka-3.9") as proxy:
        ... members bootstrap at proxy.bootstrap ...
    proxy.outcome    # after the block: observe's exit code, findings and classes (its report.json)

The proxy is `python -m groupspec.cli observe --listen 127.0.0.1:0 --upstream kafka://ADDRESS
--report DIR`, started before the members and stopped (SIGTERM: it writes its report, exit 0 no
findings, 1 findings, 3 the upstream failed) after every member has stopped. It is driven through
its command line, as a user runs it, so that this package imports nothing of the proxy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Final, Optional

from clients.java import ROOT

LISTENING: Final = "groupspec observe: listening on "
START_TIMEOUT_S: Final = 60.0
STOP_TIMEOUT_S: Final = 120.0  # writing the report includes shrinking findings


class ObserveFailed(RuntimeError):
    """observe did not start (its first line never came) or did not stop."""


@dataclass(slots=True)
class Outcome:
    exit_code: Optional[int] = None
    findings: int = 0
    classes: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    stderr_tail: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """What `groupspec clients` puts in its own report about the proxy's judgement."""
        r = self.report
        traffic: dict[str, Any] = r["traffic"] if isinstance(r.get("traffic"), dict) else {}
        unparsed: dict[str, Any] = r["unparsed"] if isinstance(r.get("unparsed"), dict) else {}
        return {"exit_code": self.exit_code, "findings": self.findings,
                "classes": [{"class": c.get("class"), "count": c.get("count"), "scenario": c.get("scenario")}
                            for c in self.classes],
                "profile": r.get("profile"), "table": r.get("table"), "requests": traffic.get("requests"),
                "group_requests": r.get("group_requests"), "judged_requests": r.get("judged_requests"),
                "inconclusive_groups": r.get("inconclusive_groups"),
                "closed_unanswered": r.get("closed_unanswered"),
                "judged_to_the_end": all(g.get("judging") == "to the end" for g in r.get("groups", [])),
                "unparsed": (unparsed.get("requests", 0) or 0) + (unparsed.get("answers", 0) or 0) if unparsed else None,
                "target_error": r.get("target_error"), "stderr_tail": self.stderr_tail[-10:]}


@dataclass(slots=True)
class Proxy:
    bootstrap: str
    report_dir: str
    outcome: Outcome = field(default_factory=Outcome)
    ended: Callable[[], bool] = lambda: False  # observe's process has exited (by itself: a failure)


def command(upstream: str, report_dir: str, profile: Optional[str], accept: Optional[str],
            config: Optional[dict[str, int]] = None, table: Optional[str] = None) -> list[str]:
    """observe's command line; `config`: the upstream's group settings where they are known (a
    broker the run started), given as `--config` so that the judge does not hold the broker to a
    timed probe's value (an initial rebalance delay timed on a loaded machine comes out late)."""
    cmd = [sys.executable, "-m", "groupspec.cli", "observe", "--listen", "127.0.0.1:0",
           "--upstream", f"kafka://{upstream}", "--report", report_dir]
    for key, value in sorted((config or {}).items()):
        cmd += ["--config", f"{key}={value}"]
    if profile:
        cmd += ["--profile", profile]
    if accept:
        cmd += ["--accept", accept]
    if table:
        cmd += ["--table", table]
    return cmd


@contextmanager
def observing(upstream: str, report_dir: str, profile: Optional[str] = None,
              accept: Optional[str] = None, config: Optional[dict[str, int]] = None,
              table: Optional[str] = None) -> Iterator[Proxy]:
    """observe between the members and `upstream` (HOST:PORT) for the block; its report in `report_dir`.
    `table`: observe's --table (a profile or package.module:NAME); observe, run in this working
    directory with this PYTHONPATH, imports its module as this command did."""
    env = dict(os.environ)  # (observe makes `report_dir`, and removes it if it stops before writing)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen(command(upstream, report_dir, profile, accept, config, table), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    tail: list[str] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            tail.append(line.rstrip("\n"))
            del tail[:-50]

    threading.Thread(target=read_stderr, daemon=True).start()
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT_S)
    line = first[0] if first else ""
    if not line.startswith(LISTENING):
        _stop(proc)
        raise ObserveFailed(f"groupspec observe did not start: {line.strip() or 'no first line'}; "
                            f"stderr: {' | '.join(tail[-3:])}")
    threading.Thread(target=lambda: proc.stdout.read() if proc.stdout else None, daemon=True).start()
    proxy = Proxy(line[len(LISTENING):].strip(), report_dir, ended=lambda: proc.poll() is not None)
    try:
        yield proxy
    finally:
        proxy.outcome.exit_code = _stop(proc)
        proxy.outcome.stderr_tail = list(tail)
        _read_report(proxy)


def _stop(proc: "subprocess.Popen[str]") -> Optional[int]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        return None


def _read_report(proxy: Proxy) -> None:
    path = os.path.join(proxy.report_dir, "report.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return
    if isinstance(doc, dict):
        proxy.outcome.report = doc
        proxy.outcome.findings = int(doc.get("findings", 0) or 0)
        classes = doc.get("classes", [])
        proxy.outcome.classes = [c for c in classes if isinstance(c, dict)] if isinstance(classes, list) else []

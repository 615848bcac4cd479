"""The workload driver: member processes of one client library in one consumer group.

    workload = Workload(client="librdkafka", bootstrap="127.0.0.1:9092", consumers=3)
    result = rebalance_run(workload, timeout_s=60)
    result.verdict.violations      # clients/promise.py: () when the promise held
    result.throughput              # records a second, produced to consumed, end to end

`Group` starts and stops members (`start`, `stop` with SIGTERM, `kill` with SIGKILL, `pause` /
`resume` with SIGSTOP / SIGCONT), each a separate OS process running clients/member.py (kafka-python,
librdkafka) or clients/java/GroupspecMember.java (the Java consumer); a reader thread per member
parses its stdout into events (clients/events.py) as they come.

`rebalance_run` is the scenario of the CI test and the benchmark: `consumers` members join and
produce `records` each; once all of them share one generation, the first one leaves (SIGTERM: a
clean close, LeaveGroup) and a new member joins; the run ends when every live member shares a
newer generation, has produced all its records, and every acknowledged record has been consumed
(or at the timeout); then every member is stopped cleanly and the promise is checked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Callable, Final, Optional

from clients import java
from clients.events import BadEvent, Event, parse_line
from clients.promise import Verdict, check

CLIENTS: Final = ("kafka-python", "librdkafka", "java")
STOP_TIMEOUT_S: Final = 30.0


@dataclass(frozen=True, slots=True)
class Workload:
    client: str
    bootstrap: str
    topic: str = "groupspec-clients"
    partitions: int = 6
    group: str = "groupspec-clients"
    consumers: int = 3
    records: int = 300  # produced by each member
    rate: float = 100.0  # records a second, per member
    session_timeout_ms: int = 10000
    heartbeat_interval_ms: int = 1000
    java_version: str = java.DEFAULT_VERSION

    def __post_init__(self) -> None:
        if self.client not in CLIENTS:
            raise ValueError(f"unknown client {self.client!r}; known: {', '.join(CLIENTS)}")


def unavailable(client: str, java_version: str = java.DEFAULT_VERSION) -> Optional[str]:
    """Why `client` cannot run here, or None."""
    if client == "java":
        return java.unavailable(java_version)
    module = {"kafka-python": "kafka", "librdkafka": "confluent_kafka"}[client]
    try:
        __import__(module)
    except ImportError:
        return f"the Python package {module!r} is not installed"
    return None


class Member:
    """One member process and the events it printed so far."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], on_event: Callable[[Event], None]) -> None:
        self.name = name
        self.events: list[Event] = []
        self.bad_lines: list[str] = []
        self.stderr: list[str] = []
        self._on_event = on_event
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                     start_new_session=True)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._threads = [threading.Thread(target=self._read_events, args=(self.proc.stdout,), daemon=True),
                         threading.Thread(target=self._read_stderr, args=(self.proc.stderr,), daemon=True)]
        for t in self._threads:
            t.start()

    def _read_events(self, stream: IO[str]) -> None:
        for n, line in enumerate(stream, 1):
            line = line.strip()
            if not line:
                continue
            try:
                event = parse_line(line, f"{self.name} stdout line {n}")
            except BadEvent as exc:
                self.bad_lines.append(str(exc))
                continue
            self.events.append(event)
            self._on_event(event)

    def _read_stderr(self, stream: IO[str]) -> None:
        for line in stream:
            line = line.rstrip("\n")
            logged = java.LOG_LINE.match(line)  # the Java member's library log (Python members print events)
            if logged:
                event = Event("client_log", round(time.time(), 6), self.name,
                              {"level": logged["level"].replace("WARN", "WARNING"), "logger": logged["logger"],
                               "message": logged["message"][:300]})
                self.events.append(event)
                self._on_event(event)
                continue
            self.stderr.append(line)
            del self.stderr[:-200]

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def wait(self, timeout_s: float) -> Optional[int]:
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None
        for t in self._threads:
            t.join(5)
        return code

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


class Group:
    """Member processes of one workload; every event of every member, in arrival order."""

    def __init__(self, workload: Workload) -> None:
        self.w = workload
        self.members: dict[str, Member] = {}
        self.budgets: dict[str, int] = {}  # records each member was told to produce
        self.events: list[Event] = []
        self._lock = threading.Condition()
        self.notes: list[str] = []  # what the driver did, when (seconds from the first start)
        self._t0 = time.monotonic()

    def note(self, text: str) -> None:
        self.notes.append(f"{time.monotonic() - self._t0:6.1f}s {text}")

    def _record(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)
            self._lock.notify_all()

    def argv(self, name: str, records: int, instance_id: Optional[str] = None) -> list[str]:
        w = self.w
        args = ["--bootstrap", w.bootstrap, "--topic", w.topic, "--partitions", str(w.partitions),
                "--group", w.group, "--name", name, "--produce", str(records), "--rate", str(w.rate),
                "--session-timeout-ms", str(w.session_timeout_ms),
                "--heartbeat-interval-ms", str(w.heartbeat_interval_ms)]
        if instance_id is not None:
            args += ["--instance-id", instance_id]
        if w.client == "java":
            return [*java.command(w.java_version), *args]
        return [sys.executable, "-m", "clients.member", "--client", w.client, *args]

    def start(self, name: str, records: Optional[int] = None, instance_id: Optional[str] = None) -> Member:
        """A new member process named `name` producing `records` (default: the workload's)."""
        env = dict(os.environ)
        root = str(java.ROOT)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        budget = self.w.records if records is None else records
        member = Member(name, self.argv(name, budget, instance_id), env, self._record)
        self.budgets[name] = budget
        self.members[name] = member
        self.note(f"started {name}" + (f" (static, {instance_id})" if instance_id else ""))
        return member

    def stop(self, name: str, timeout_s: float = STOP_TIMEOUT_S) -> Optional[int]:
        """SIGTERM, then wait for a clean exit (SIGKILL after `timeout_s`); the exit code."""
        self.members[name].signal(signal.SIGTERM)
        return self._reap(name, time.monotonic() + timeout_s, timeout_s)

    def _reap(self, name: str, deadline: float, timeout_s: float) -> Optional[int]:
        """Member `name`, sent SIGTERM, waited for until `deadline` (then SIGKILL); its exit code."""
        member = self.members[name]
        code = member.wait(max(0.0, deadline - time.monotonic()))
        if code is None:
            member.signal(signal.SIGKILL)
            code = member.wait(10)
            self.note(f"{name} did not stop within {timeout_s:g}s after SIGTERM: killed")
        else:
            self.note(f"stopped {name} (exit {code})")
        return code

    def kill(self, name: str) -> None:
        self.members[name].signal(signal.SIGKILL)
        self.members[name].wait(10)
        self.note(f"killed {name} (SIGKILL)")

    def pause(self, name: str) -> None:
        self.members[name].signal(signal.SIGSTOP)
        self.note(f"paused {name} (SIGSTOP)")

    def resume(self, name: str) -> None:
        self.members[name].signal(signal.SIGCONT)
        self.note(f"resumed {name} (SIGCONT)")

    def live(self) -> list[Member]:
        return [m for m in self.members.values() if m.alive]

    def wait_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.5))
            return True

    def close(self, timeout_s: float = STOP_TIMEOUT_S) -> dict[str, Optional[int]]:
        """Every member stopped at once (SIGTERM to all, then each waited for until one deadline:
        members that cannot leave cleanly, e.g. whose coordinator is gone, wait out their close
        together, not one after the other); the exit codes."""
        alive = [name for name, m in self.members.items() if m.alive]
        for name in alive:
            self.members[name].signal(signal.SIGCONT)  # a paused member must run to stop
            self.members[name].signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        return {name: self._reap(name, deadline, timeout_s) if name in alive else m.proc.returncode
                for name, m in self.members.items()}

    # what the events say

    def last_generation(self, member: Member) -> Optional[int]:
        assigned = [e for e in member.events if e.ev == "assigned"]
        return int(assigned[-1]["generation"]) if assigned else None

    def settled_above(self, generation: int) -> Optional[int]:
        """The generation every live member was last assigned in, if they agree and it is > `generation`."""
        gens = {self.last_generation(m) for m in self.live()}
        if len(gens) != 1:
            return None
        (g,) = gens
        return g if g is not None and g > generation else None

    def all_consumed(self) -> bool:
        produced = {e["key"] for e in self.events if e.ev == "produced"}
        consumed = {e["key"] for e in self.events if e.ev == "consumed"}
        return produced <= consumed

    def produced_by(self, member: Member) -> int:
        return sum(1 for e in member.events if e.ev == "produced")

    def done_producing(self) -> bool:
        """Every live member has had all its records acknowledged."""
        return all(self.produced_by(m) >= self.budgets[m.name] for m in self.live())


@dataclass(frozen=True, slots=True)
class RunResult:
    workload: Workload
    verdict: Verdict
    completed: bool  # the end condition was reached before the timeout
    seconds: float  # first record produced to the last first consumption
    exit_codes: dict[str, Optional[int]]
    notes: tuple[str, ...]
    stderr_tails: dict[str, tuple[str, ...]] = field(default_factory=dict)
    bad_lines: tuple[str, ...] = ()
    events: tuple[Event, ...] = ()

    @property
    def throughput(self) -> float:
        return self.verdict.consumed / self.seconds if self.seconds > 0 else 0.0


def rebalance_run(w: Workload, timeout_s: float = 90.0, leave_and_join: bool = True) -> RunResult:
    group = Group(w)
    names = [f"m{i + 1}" for i in range(w.consumers)]
    deadline = time.monotonic() + timeout_s
    completed = False
    try:
        for name in names:
            group.start(name)
        first = group.wait_until(lambda: group.settled_above(0) is not None and len(group.live()) == w.consumers,
                                 deadline - time.monotonic())
        generation = group.settled_above(0) or 0
        group.note(f"all {w.consumers} members in generation {generation}" if first
                   else "the members never shared a generation")
        if first and leave_and_join:
            group.stop(names[0])
            group.start(f"m{w.consumers + 1}")

        def done() -> bool:
            live = group.live()
            return (len(live) == w.consumers and group.settled_above(generation if leave_and_join else 0) is not None
                    and group.done_producing() and group.all_consumed())

        completed = first and group.wait_until(done, deadline - time.monotonic())
        group.note("every record consumed, the group settled" if completed else "timed out")
    finally:
        codes = group.close()
    return summarize(group, w, completed, codes)


def summarize(group: Group, w: Workload, completed: bool, codes: dict[str, Optional[int]]) -> RunResult:
    """The run's events checked against the promise, with its timing and what the members left behind."""
    events = tuple(sorted(group.events, key=lambda e: e.t))
    verdict = check(events)
    produced_t = [e.t for e in events if e.ev == "produced"]
    first_seen: dict[str, float] = {}
    for e in events:
        if e.ev == "consumed":
            first_seen.setdefault(e["key"], e.t)
    seconds = max(first_seen.values()) - min(produced_t) if produced_t and first_seen else 0.0
    return RunResult(w, verdict, completed, seconds, codes, tuple(group.notes),
                     {n: tuple(m.stderr[-20:]) for n, m in group.members.items()},
                     tuple(b for m in group.members.values() for b in m.bad_lines), events)

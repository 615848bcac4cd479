"""`groupspec fuzz`: model-drawn request sequences against a broker, judged, shrunk, classified.

    groupspec fuzz --target tansu|serve|kafka://HOST:PORT|kafka-3.9 [--minutes M]
                   [--max-requests N] [--seed S] [--parallel P] [--report DIR] [--bug NAME]
                   [--config KEY=VALUE ...] [--allow-remote] [--no-shrink] [--no-commits]

Exit status: 0 nothing found, 1 findings, 2 bad usage, 3 the target was unreachable or nothing
could be judged, 130 interrupted (the report says so).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

from model.coordinator_api import CoordinatorConfig
from model.table import CLASSIC_TABLE
from wire.errors import RemoteHostRefused, WireError

from conformance.cli import run_scenarios

from fuzz.actions import Action, Timing, action_to_json
from fuzz.client import Broker
from fuzz.engine import Budget, Generator, RunSettings, SequenceResult, run_sequence
from fuzz.judge import CONTEXT_SEP, Finding, Tolerance
from fuzz.shrink import scenario_document, shrink

COVERAGE_LAG = 8  # windows of parallel/4 sequences
EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

_CONFIG_KEYS = {
    "group.min.session.timeout.ms": "group_min_session_timeout_ms",
    "group.max.session.timeout.ms": "group_max_session_timeout_ms",
    "group.max.size": "group_max_size",
    "group.initial.rebalance.delay.ms": "group_initial_rebalance_delay_ms",
}
# Kafka's settings a fuzz run assumes when none are given: short timeouts so timers fire within a
# sequence (Tansu has no session bounds; serve and Kafka 3.9 are started with these).
FUZZ_CONFIG = {"group.min.session.timeout.ms": 100, "group.max.session.timeout.ms": 60000,
               "group.initial.rebalance.delay.ms": 0}


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"groupspec fuzz: {message}")


def _parser() -> _Parser:
    p = _Parser(prog="groupspec fuzz", description=__doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("--target", required=True,
                   help="tansu (started for the run), serve (groupspec serve in this process), "
                        "kafka://HOST:PORT, or kafka-3.9")
    p.add_argument("--minutes", type=float, default=1.0)
    p.add_argument("--max-requests", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parallel", type=int, default=64, help="groups fuzzed at once")
    p.add_argument("--report", default=None, metavar="DIR")
    p.add_argument("--bug", action="append", default=[], help="seeded bug of --target serve")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="the target's group.* settings (default: " +
                        ", ".join(f"{k}={v}" for k, v in FUZZ_CONFIG.items()) + ")")
    p.add_argument("--allow-remote", action="store_true")
    p.add_argument("--no-shrink", action="store_true")
    p.add_argument("--shrink-seconds", type=float, default=None,
                   help="how long shrinking may go on after the run (default: a tenth, >= 30 s)")
    p.add_argument("--no-commits", action="store_true",
                   help="no OffsetCommit/OffsetFetch (targets that check topic existence)")
    p.add_argument("--late-ms", type=int, default=Tolerance().late_ms)
    p.add_argument("--response-bound-ms", type=int, default=Tolerance().response_bound_ms)
    p.add_argument("--quiet", action="store_true")
    return p


def parse_config(items: list[str]) -> CoordinatorConfig:
    values: dict[str, int] = dict(FUZZ_CONFIG)
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in _CONFIG_KEYS or not re.fullmatch(r"\d+", value):
            raise UsageError(f"groupspec fuzz: --config {item!r}: expected KEY=INTEGER with KEY one of "
                             f"{', '.join(_CONFIG_KEYS)}")
        values[key] = int(value)
    c = CoordinatorConfig()
    fields: dict[str, Any] = {_CONFIG_KEYS[k]: v for k, v in values.items()}
    return dataclasses.replace(c, **fields)


@dataclass
class ClassRecord:
    key: str
    finding: Finding
    count: int
    first_seen_s: float
    actions: list[Action]
    minimal: Optional[list[Action]] = None
    minimal_finding: Optional[Finding] = None
    scenario: Optional[str] = None
    scenario_check: str = "not checked"
    shrink_runs: int = 0
    group_ids: list[str] = field(default_factory=list)


@dataclass
class Stats:
    started: float
    requests: int = 0
    sequences: int = 0
    running: int = 0
    inconclusive: int = 0
    errors: int = 0
    last_error: str = ""
    rows: set[str] = field(default_factory=set)
    findings: int = 0
    barriers_tried: int = 0
    barriers_held: int = 0
    max_loop_lag_s: float = 0.0


def atomic_write(path: str, text: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Fuzzer:
    def __init__(self, host: str, port: int, target: str, args: argparse.Namespace,
                 config: CoordinatorConfig) -> None:
        self.host, self.port, self.target, self.args, self.config = host, port, target, args, config
        self.prefix = f"groupspec-fuzz-{uuid.uuid4().hex[:8]}-"
        self.tol = Tolerance(late_ms=args.late_ms, response_bound_ms=args.response_bound_ms)
        self.timing = Timing.for_config(
            config, settle_ms=self.tol.late_ms + self.tol.process_ms + self.tol.response_bound_ms + 500)
        self.settings = RunSettings(config, self.timing, self.tol, seed=str(args.seed),
                                    budget=Budget(args.max_requests))
        self.stats = Stats(time.monotonic())
        self.classes: dict[str, ClassRecord] = {}
        self.shrinks: list[asyncio.Task[None]] = []
        self.broker = Broker(host, port, allow_remote=args.allow_remote)
        self.shrink_ids = 0
        self.shrink_stop = float("inf")
        self.covered_by: dict[int, frozenset[str]] = {}
        self.durations: list[float] = []

    async def run(self) -> None:
        await self.broker.start()
        gen = Generator(self.args.seed, self.config, self.timing, self.broker.versions,
                        commits=not self.args.no_commits)
        deadline = self.stats.started + self.args.minutes * 60
        # shrinking may run on for a tenth of the run (at least 30 s) after the fuzzing ends
        extra = self.args.shrink_seconds if self.args.shrink_seconds is not None else max(
            30.0, self.args.minutes * 6)
        self.shrink_stop = deadline + extra
        progress = asyncio.get_running_loop().create_task(self._progress())
        lag = asyncio.get_running_loop().create_task(self._lag())
        p = self.args.parallel
        running: dict[int, asyncio.Task[None]] = {}
        index = 0
        try:
            while time.monotonic() < deadline and self.settings.budget.left > 0:
                # Sequence i (of window w = i // q, q = p/4) is drawn from the coverage of every
                # sequence before window w - LAG: a pure function of the seed and those sequences,
                # so a seeded run generates the same requests however the target's timing
                # interleaves them, while the pool of `p` groups stays full (a slow sequence holds
                # the pool back only while 2p later ones have started).
                q = max(1, p // 4)
                done_before = max(0, (index // q - COVERAGE_LAG) * q)
                while (len(running) >= p or any(i < done_before for i in running)) and \
                        time.monotonic() < deadline:
                    await asyncio.wait(list(running.values()), timeout=max(0.01, deadline - time.monotonic()),
                                       return_when=asyncio.FIRST_COMPLETED)
                    for i in [i for i, t in running.items() if t.done()]:
                        running.pop(i).result()
                if time.monotonic() >= deadline:
                    break
                covered: set[str] = set()
                for i in range(done_before):
                    covered |= self.covered_by.get(i, frozenset())
                actions = gen.stream(index, frozenset(covered))
                running[index] = asyncio.get_running_loop().create_task(self._one(index, actions))
                index += 1
                self.stats.running = len(running)
                if self.stats.sequences >= 8 and self.stats.errors == self.stats.sequences:
                    break
            if running:
                await asyncio.wait(list(running.values()))
                for t in running.values():
                    t.result()
            self.stats.running = 0
            if self.shrinks:
                await asyncio.gather(*self.shrinks)
        finally:
            for t in running.values():
                t.cancel()
            progress.cancel()
            lag.cancel()
            self.broker.close()

    async def _one(self, index: int, actions: Iterable[Action]) -> None:
        gid = f"{self.prefix}{index}"
        r = await run_sequence(self.broker, gid, index, actions, self.settings)
        self._account(r)
        if r.finding is not None:
            self._classify(r)

    def _account(self, r: SequenceResult) -> None:
        self.durations.append(r.seconds)
        self.covered_by[r.index] = r.covered
        self.stats.requests += r.requests
        self.stats.sequences += 1
        self.stats.rows |= {k for k in r.covered if CONTEXT_SEP not in k}
        self.stats.barriers_tried += r.barriers[0]
        self.stats.barriers_held += r.barriers[1]
        if r.inconclusive:
            self.stats.inconclusive += 1
        if r.error:
            self.stats.errors += 1
            self.stats.last_error = r.error

    def _classify(self, r: SequenceResult) -> None:
        assert r.finding is not None
        self.stats.findings += 1
        key = r.finding.class_key()
        rec = self.classes.get(key)
        if rec is not None:
            rec.count += 1
            return
        rec = ClassRecord(key, r.finding, 1, time.monotonic() - self.stats.started, list(r.actions))
        self.classes[key] = rec
        if self.args.no_shrink:
            rec.minimal, rec.minimal_finding = list(r.actions), r.finding
            self._write_scenario(rec, r)
        else:
            self.shrinks.append(asyncio.get_running_loop().create_task(self._shrink(rec, r)))

    async def _shrink(self, rec: ClassRecord, original: SequenceResult) -> None:
        async def run(actions: list[Action]) -> SequenceResult:
            self.shrink_ids += 1
            gid = f"{self.prefix}s{self.shrink_ids}"
            res = await run_sequence(self.broker, gid, -1, actions, self.settings)
            self.stats.requests += res.requests
            return res

        minimal, best, runs = await shrink(rec.actions, rec.key, run, stop_at=self.shrink_stop)
        rec.shrink_runs = runs
        if best is None:  # did not reproduce: keep the original run as the scenario
            best = original
            minimal = list(original.actions)
            rec.scenario_check = "the divergence did not reproduce when re-run (timing)"
        rec.minimal, rec.minimal_finding = minimal, best.finding
        self._write_scenario(rec, best)
        if rec.scenario is not None:
            await self._check_scenario(rec, rec.scenario)

    async def _check_scenario(self, rec: ClassRecord, path: str) -> None:
        """Replay the scenario with `groupspec scenario run`: it should fail on this target and,
        for a seeded bug of `--target serve`, pass on the correct reference."""
        def replay(port: int) -> int:
            return run_scenarios([path, "--target", f"kafka://{self.host}:{port}"],
                                 out=io.StringIO(), err=io.StringIO())

        def on_correct() -> int:
            from server.run import start_in_thread
            with start_in_thread(self.config) as handle:
                return replay(handle.port)

        here = await asyncio.to_thread(replay, self.port)
        text = ("fails on the target, as found" if here == 1 else
                "passes on the target when replayed (the divergence depends on timing)" if here == 0
                else f"replay exit status {here}")
        if self.args.bug and self.target in ("serve", "reference"):
            good = await asyncio.to_thread(on_correct)
            text += ("; passes on the correct reference" if good == 0 else
                     "; fails on the correct reference too (timing-sensitive scenario)")
        rec.scenario_check = text

    def _write_scenario(self, rec: ClassRecord, r: SequenceResult) -> None:
        if not self.args.report or r.finding is None:
            return
        n = list(self.classes).index(rec.key)
        name = f"fuzz-class-{n + 1:02d}"
        doc = scenario_document(r, r.finding, self.config, name, self.target)
        path = os.path.join(self.args.report, "scenarios", f"{name}.json")
        atomic_write(path, json.dumps(doc, indent=1) + "\n")
        rec.scenario = path

    async def _lag(self) -> None:
        """How late this process's event loop wakes up (judging many groups stalls it): a stall
        delays reading answers, so the report shows it next to any no-response finding."""
        while True:
            t = time.monotonic()
            await asyncio.sleep(0.05)
            self.stats.max_loop_lag_s = max(self.stats.max_loop_lag_s, time.monotonic() - t - 0.05)

    async def _progress(self) -> None:
        while True:
            await asyncio.sleep(5)
            if not self.args.quiet:
                print(self.progress_line(), file=sys.stderr, flush=True)

    def progress_line(self) -> str:
        s = self.stats
        el = max(1e-9, time.monotonic() - s.started)
        return (f"groupspec fuzz: {el:.0f} s, {s.requests / el:.1f} requests/s, "
                f"{s.sequences / el:.1f} sequences/s, {s.running} groups running, "
                f"{s.sequences} sequences, rows covered {len(s.rows)}/{len(CLASSIC_TABLE.rows)}, "
                f"classes {len(self.classes)}, findings {s.findings}, inconclusive {s.inconclusive}")

    # ------------------------------------------------------------------ report

    def report(self, interrupted: bool) -> dict[str, Any]:
        s = self.stats
        el = time.monotonic() - s.started
        classes = []
        for i, rec in enumerate(self.classes.values()):
            f = rec.minimal_finding or rec.finding
            classes.append({
                "class": rec.key, "api": f.api, "api_version": f.api_version,
                "state": list(f.state), "rows": list(f.rows), "expected": list(f.expected),
                "actual": f.actual, "count": rec.count, "first_seen_s": round(rec.first_seen_s, 3),
                "scenario": rec.scenario, "steps": [action_to_json(a) for a in (rec.minimal or rec.actions)],
                "original_steps": len(rec.actions), "shrink_runs": rec.shrink_runs,
                "scenario_check": rec.scenario_check,
            })
        return {
            "target": self.target, "seed": self.args.seed, "config": {
                k: getattr(self.config, v) for k, v in _CONFIG_KEYS.items()},
            "tolerance": {"early_ms": self.tol.early_ms, "late_ms": self.tol.late_ms,
                          "response_bound_ms": self.tol.response_bound_ms},
            "interrupted": interrupted, "seconds": round(el, 1), "requests": s.requests,
            "requests_per_s": round(s.requests / max(el, 1e-9), 1), "sequences": s.sequences,
            "sequences_per_s": round(s.sequences / max(el, 1e-9), 2), "parallel": self.args.parallel,
            "rows_covered": sorted(s.rows), "rows_total": len(CLASSIC_TABLE.rows),
            "inconclusive_groups": s.inconclusive, "errors": s.errors, "last_error": s.last_error,
            "read_barriers": {"tried": s.barriers_tried, "held": s.barriers_held},
            "max_event_loop_lag_s": round(s.max_loop_lag_s, 3),
            "findings": s.findings, "classes": classes,
            "sequence_seconds": _percentiles(self.durations),
            "api_versions": {k.name: list(v) for k, v in self.broker.versions.items()},
        }


def _percentiles(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    ys = sorted(xs)
    return {f"p{q}": round(ys[min(len(ys) - 1, int(len(ys) * q / 100))], 2) for q in (10, 50, 90, 99)}


def markdown(doc: dict[str, Any]) -> str:
    lines = [f"# groupspec fuzz report: {doc['target']}", ""]
    if doc["interrupted"]:
        lines += ["**Interrupted**: this report is incomplete.", ""]
    lines += [f"- seed {doc['seed']}, {doc['seconds']} s, {doc['requests']} requests "
              f"({doc['requests_per_s']}/s), {doc['sequences']} sequences ({doc['sequences_per_s']}/s), "
              f"{doc['parallel']} groups in parallel",
              f"- rows covered {len(doc['rows_covered'])}/{doc['rows_total']}; inconclusive groups "
              f"{doc['inconclusive_groups']}; target errors {doc['errors']}",
              f"- read barriers held {doc['read_barriers']['held']} of {doc['read_barriers']['tried']} "
              "(the others: the parked request's effect was invisible to DescribeGroups or came late)",
              f"- findings {doc['findings']} in {len(doc['classes'])} classes", ""]
    for c in doc["classes"]:
        lines += [f"## {c['api']} v{c['api_version']}: {c['class'].split('|')[-1]}", "",
                  f"- count {c['count']}, first seen at {c['first_seen_s']} s",
                  f"- model state before: {', '.join(c['state'])}",
                  f"- rows: {', '.join(f'`{r}`' for r in c['rows'])}",
                  f"- expected (model allows): `{json.dumps(c['expected'])}`",
                  f"- actual: `{json.dumps(c['actual'])}`",
                  f"- minimal sequence ({len(c['steps'])} of {c['original_steps']} actions, "
                  f"{c['shrink_runs']} shrink runs): `{json.dumps(c['steps'])}`",
                  f"- scenario: `{c['scenario']}` ({c['scenario_check']})", ""]
    return "\n".join(lines) + "\n"


def write_report(directory: str, doc: dict[str, Any]) -> None:
    atomic_write(os.path.join(directory, "report.json"), json.dumps(doc, indent=1) + "\n")
    atomic_write(os.path.join(directory, "report.md"), markdown(doc))


@contextlib.contextmanager
def _target(spec: str, config: CoordinatorConfig, bugs: list[str]) -> Iterator[tuple[str, int]]:
    if bugs and spec not in ("reference", "serve"):
        raise UsageError("groupspec fuzz: --bug needs --target serve (or run `groupspec serve --bug`)")
    if spec in ("reference", "serve"):
        from reference.bugs import BUGS
        unknown = sorted(set(bugs) - set(BUGS))
        if unknown:
            raise UsageError(f"groupspec fuzz: unknown --bug {unknown}; known: {', '.join(sorted(BUGS))}")
        # `groupspec serve` in its own process (its timers must not wait for this one's GIL)
        cmd = [sys.executable, "-m", "groupspec.cli", "serve", "--port", "0"]
        for k, v in _CONFIG_KEYS.items():
            cmd += ["--config", f"{k}={getattr(config, v)}"]
        for b in bugs:
            cmd += ["--bug", b]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line.startswith("groupspec serve: listening on "):
                raise WireError(f"groupspec serve did not start: {line.strip() or proc.wait(10)}")
            host, _, port = line.rsplit(" ", 1)[1].strip().rpartition(":")
            yield host, int(port)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    elif spec == "tansu":
        from wire.tansu import TansuBroker
        with TansuBroker() as tb:
            yield tb.host, tb.port
    elif spec.startswith("kafka-"):
        from wire.kafka_broker import KafkaBroker
        from fuzz.actions import PARTITIONS
        topics = {PARTITIONS[0].topic: len(PARTITIONS)}  # Kafka checks that committed topics exist
        with KafkaBroker(spec[len("kafka-"):], config, topics=topics) as kb:
            host, _, port = kb.address().rpartition(":")
            yield host, int(port)
    else:
        from wire import parse_address
        try:
            yield parse_address(spec)
        except ValueError as e:
            raise UsageError(f"groupspec fuzz: --target: {e}") from None


def fuzz_main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
        config = parse_config(args.config)
        if args.minutes <= 0 or args.parallel < 1 or args.max_requests < 1:
            raise UsageError("groupspec fuzz: --minutes, --parallel and --max-requests must be positive")
        if args.report and os.path.exists(args.report) and not os.path.isdir(args.report):
            raise UsageError(f"groupspec fuzz: --report {args.report} exists and is not a directory")
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    fuzzer: Optional[Fuzzer] = None
    interrupted = False
    try:
        with _target(args.target, config, args.bug) as (host, port):
            fuzzer = Fuzzer(host, port, args.target, args, config)
            try:
                asyncio.run(fuzzer.run())
            except KeyboardInterrupt:
                interrupted = True
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        interrupted = True
    except RemoteHostRefused as e:
        print(f"groupspec fuzz: --target {args.target}: {e} (use --allow-remote)", file=sys.stderr)
        return EXIT_USAGE
    except (WireError, OSError) as e:
        print(f"groupspec fuzz: target {args.target} unreachable: {e}", file=sys.stderr)
        if fuzzer is None or fuzzer.stats.sequences == 0:
            return EXIT_INCOMPLETE
    if fuzzer is None:
        print("groupspec fuzz: interrupted before the target was up", file=sys.stderr)
        return EXIT_INTERRUPTED
    doc = fuzzer.report(interrupted)
    if args.report:
        write_report(args.report, doc)
    if not args.quiet:
        print(fuzzer.progress_line(), file=sys.stderr)
    for c in doc["classes"]:
        print(f"CLASS x{c['count']}: {c['class']}  scenario {c['scenario']}")
    print(f"groupspec fuzz: {doc['findings']} findings in {len(doc['classes'])} classes, "
          f"{doc['sequences']} sequences, {doc['requests']} requests, "
          f"{doc['inconclusive_groups']} inconclusive groups")
    if interrupted:
        print("groupspec fuzz: interrupted; the report is marked interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if doc["findings"]:
        return EXIT_FOUND
    if doc["sequences"] == 0 or doc["errors"] == doc["sequences"]:
        print(f"groupspec fuzz: nothing could be judged ({doc['last_error']})", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


"""What `groupspec fuzz` runs: model-drawn request sequences against a broker, judged, shrunk,
classified (groupspec/commands/fuzz.py parses the arguments).

    groupspec fuzz --target tansu|serve|kafka://HOST:PORT|kafka-3.9|kafka-4 [--minutes M]
                   [--max-requests N] [--seed S] [--parallel P] [--report DIR] [--bug NAME]
                   [--config KEY=VALUE ...] [--allow-remote] [--no-shrink] [--no-commits]
                   [--table PROFILE|MODULE:NAME] [--session-ms MS] [--accept FILE] ...

`fuzz` returns 0 if nothing was found, 1 for findings, 130 if interrupted (the report says so); a
bad target, bug or allowance name raises a BadInput (exit 2); a run that judged too little raises an
Incomplete (exit 3, never 0): the target was unreachable or errored, nothing could be judged, or
more than `MAX_INCONCLUSIVE` of the groups were inconclusive. The target is judged with the
allowances of its profile (fuzz/allowances.py) plus `--allow`, and by its profile's table (or
`--table`); the report names them.
"""

from __future__ import annotations

import io
import asyncio
import json
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Final, Iterable, Optional

from check.profiles import Urgent
from model.atomic import write_text_atomic
from model.coordinator_api import CoordinatorConfig
from model.dsl import Table
from model.errors import EXIT_FINDING, EXIT_INTERRUPTED, EXIT_OK, BadInput, BoundaryError, Incomplete
from server.config import kafka_properties
from wire.errors import RemoteHostRefused, WireError

from conformance.cli import run_files

from fuzz.accept import AcceptList, load_accept, write_accept_document
from fuzz.actions import Action, Timing, action_to_json
from fuzz.allowances import ALLOWANCES, allowances_in_force, judged_table, profile_for
from fuzz.client import Broker
from fuzz.engine import Budget, Generator, Hazards, RunSettings, SequenceResult, run_sequence
from fuzz.families import families
from fuzz.judge import CONTEXT_SEP, Finding, Tolerance
from fuzz.probe import TargetSettings, read_settings, reconcile
from fuzz.targets import start_target
from fuzz.replay import replay as replay_finding
from render.findings import write_report_html

from fuzz.shrink import scenario_document, shrink

COVERAGE_LAG = 8  # windows of parallel/4 sequences
MAX_INCONCLUSIVE: Final = 0.05  # a larger share of inconclusive groups: the run is incomplete
CANCEL_GRACE_S: Final = 5.0  # how long sequences cancelled by an error may take to delete their groups

# Kafka's settings a fuzz run assumes when none are given: short timeouts so timers fire within a
# sequence (Tansu has no session bounds; serve and Kafka 3.9 are started with these).
FUZZ_CONFIG: Final = CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=60000,
                                       group_initial_rebalance_delay_ms=0)


@dataclass(frozen=True, slots=True)
class FuzzOptions:
    target: str  # tansu, serve, kafka://HOST:PORT or kafka-3.9
    minutes: float = 1.0
    max_requests: int = 1_000_000
    stop_after_classes: Optional[int] = None  # stop once this many finding classes are known
    seed: int = 0
    parallel: int = 64  # groups fuzzed at once
    report: Optional[str] = None  # directory: report.json, report.md, scenarios/
    bugs: tuple[str, ...] = ()  # seeded bugs of --target serve
    allow_remote: bool = False
    shrink: bool = True
    shrink_seconds: Optional[float] = None  # default: a tenth of the run, >= 30 s
    commits: bool = True  # OffsetCommit/OffsetFetch (off for targets that check topic existence)
    late_ms: int = Tolerance().late_ms
    response_bound_ms: int = Tolerance().response_bound_ms
    quiet: bool = False
    allow: tuple[str, ...] = ()  # allowances beyond the target's profile (`--allow`)
    config_given: tuple[str, ...] = ()  # the properties `--config` set (the others: as found)
    probe: bool = True  # read or probe the target's group settings first (fuzz/probe.py)
    # going deep past known differences (--accept), and what a run leaves for the next one
    accept: Optional[str] = None  # accept file: classes whose findings are adopted, not reported
    write_accept: Optional[str] = None  # write this run's classes (and the accepted) as an accept file
    accept_families: bool = False  # --write-accept: one entry per family, not per class
    guided: bool = True  # coverage-guided generation (False: measure what guidance gives)
    session_ms: int = 600  # the fuzzed clients' usual session timeout (fuzz.actions.Timing)
    # --table: judge by this table (its name, the table, its urgent events); default the profile's
    table: Optional[tuple[str, Table, Urgent]] = None


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
    as_found: Optional[bool] = None  # the scenario replayed fails at the departing step, same class
    shrink_runs: int = 0
    group_ids: list[str] = field(default_factory=list)


@dataclass
class AcceptedRecord:
    """An accepted class of a run: the entry that accepted it, how often, and how often the judge
    went on (a model state explained the answer) rather than ending the sequence."""

    entry: str
    finding: Finding
    count: int = 0
    continued: int = 0


@dataclass
class Stats:
    started: float
    requests: int = 0
    judged: int = 0  # requests whose answer (or its absence) the judge ruled on
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


class Fuzzer:
    def __init__(self, host: str, port: int, options: FuzzOptions, config: CoordinatorConfig) -> None:
        self.host, self.port, self.options, self.config = host, port, options, config
        self.target = options.target
        self.prefix = f"groupspec-fuzz-{uuid.uuid4().hex[:8]}-"
        self.profile = profile_for(options.target)
        # the table the target is judged by, everywhere: judge, generation, shrinking, scenarios
        self.table_name, self.table, urgent = options.table or judged_table(options.target)
        self.tol = Tolerance(late_ms=options.late_ms, response_bound_ms=options.response_bound_ms,
                             allowances=allowances_in_force(options.target, options.allow))
        self.target_error = ""  # the target failed mid-run (the run is then incomplete)
        self.stopped_early = ""  # why the run ended before its time (--stop-after-classes), or ""
        self.found: Optional[TargetSettings] = None  # the target's settings, read or probed
        self.timing = Timing.for_config(
            config, base_ms=options.session_ms, settle_ms=self.tol.late_ms + self.tol.process_ms + self.tol.response_bound_ms + 500)
        self.accept: Optional[AcceptList] = load_accept(options.accept) if options.accept else None
        self.settings = RunSettings(config, self.timing, self.tol, seed=str(options.seed),
                                    budget=Budget(options.max_requests), accept=self.accept,
                                    table=self.table, urgent=urgent)
        self.stats = Stats(time.monotonic())
        self.classes: dict[str, ClassRecord] = {}
        self.shrinks: list[asyncio.Task[None]] = []
        self.broker = Broker(host, port, allow_remote=options.allow_remote)
        self.shrink_ids = 0
        self.shrink_stop = float("inf")
        self.covered_by: dict[int, frozenset[str]] = {}
        # actions consumed, where judging ended, the model state each action was drawn in
        self.ended_by: dict[int, tuple[list[Action], int, list[str]]] = {}
        self.generator: Optional[Generator] = None
        self.hazards = Hazards()  # what the generation learned (reported)
        # why each sequence's judging ended: finding, accepted-unexplained, inconclusive, error, complete
        self.ends: dict[str, int] = {}
        self.durations: list[float] = []
        self.row_counts: dict[str, int] = {r.id: 0 for r in self.table.rows}  # sequences firing it
        self.accepted: dict[str, AcceptedRecord] = {}
        self.inconclusive_reasons: dict[str, int] = {}

    async def run(self) -> None:
        await self.broker.start()
        gen = Generator(self.options.seed, self.config, self.timing, self.broker.versions,
                        commits=self.options.commits, table=self.table)
        gen.guided = self.options.guided
        self.generator = gen
        deadline = self.stats.started + self.options.minutes * 60
        # shrinking may run on for a tenth of the run (at least 30 s) after the fuzzing ends
        extra = self.options.shrink_seconds if self.options.shrink_seconds is not None else max(
            30.0, self.options.minutes * 6)
        self.shrink_stop = deadline + extra
        progress = asyncio.get_running_loop().create_task(self._progress())
        lag = asyncio.get_running_loop().create_task(self._lag())
        p = self.options.parallel
        running: dict[int, asyncio.Task[None]] = {}
        index = 0
        hazards, hazards_upto = self.hazards, 0
        try:
            while time.monotonic() < deadline and self.settings.budget.left > 0 and not self._enough():
                # Sequence i (of window w = i // q, q = p/4) is drawn from the coverage of every
                # sequence before window w - LAG: a pure function of the seed and those sequences,
                # so a seeded run generates the same requests however the target's timing
                # interleaves them, while the pool of `p` groups stays full (a slow sequence holds
                # the pool back only while 2p later ones have started).
                q = max(1, p // 4)
                done_before = max(0, (index // q - COVERAGE_LAG) * q)
                while (len(running) >= p or any(i < done_before for i in running)) and \
                        time.monotonic() < deadline and not self._enough():
                    await asyncio.wait(list(running.values()), timeout=max(0.01, deadline - time.monotonic()),
                                       return_when=asyncio.FIRST_COMPLETED)
                    for i in [i for i, t in running.items() if t.done()]:
                        running.pop(i).result()
                if time.monotonic() >= deadline or self._enough():
                    break
                covered: set[str] = set()
                for i in range(done_before):
                    covered |= self.covered_by.get(i, frozenset())
                for i in range(hazards_upto, done_before):
                    if i in self.ended_by:
                        hazards.observe(*self.ended_by[i])
                hazards_upto = max(hazards_upto, done_before)
                actions = gen.stream(index, frozenset(covered), hazards.copy() if gen.guided else None)
                running[index] = asyncio.get_running_loop().create_task(self._one(index, actions))
                index += 1
                self.stats.running = len(running)
                if self.stats.sequences >= 8 and self.stats.errors == self.stats.sequences:
                    break
            if running and self._enough():
                # the sequences still running are abandoned unjudged: the report says the run stopped
                for t in running.values():
                    t.cancel()
                await asyncio.wait(list(running.values()))
                self.stopped_early = (f"stopped after {len(self.classes)} finding classes "
                                      f"(--stop-after-classes {self.options.stop_after_classes}); "
                                      f"{len(running)} sequences still running were abandoned unjudged")
            elif self._enough():
                self.stopped_early = (f"stopped after {len(self.classes)} finding classes "
                                      f"(--stop-after-classes {self.options.stop_after_classes})")
            if running and not self.stopped_early:
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
            # a cancelled sequence still deletes its group: the connection stays open until the
            # sequences have ended (else each ends in an error of its own, printed at exit)
            ending = [t for t in running.values() if not t.done()]
            if ending:
                await asyncio.wait(ending, timeout=CANCEL_GRACE_S)
                for t in ending:
                    if t.done() and not t.cancelled():
                        t.exception()  # retrieved: what it raised on the way out is not news
            self.broker.close()

    def _enough(self) -> bool:
        n = self.options.stop_after_classes
        return n is not None and len(self.classes) >= n

    async def _one(self, index: int, actions: Iterable[Action]) -> None:
        gid = f"{self.prefix}{index}"
        r = await run_sequence(self.broker, gid, index, actions, self.settings)
        self._account(r)
        if r.finding is not None:
            self._classify(r)

    def _account(self, r: SequenceResult) -> None:
        self.durations.append(r.seconds)
        self.covered_by[r.index] = r.covered
        contexts = self.generator.contexts.pop(r.index, []) if self.generator is not None else []
        self.ended_by[r.index] = (list(r.actions), r.ended_action, contexts)
        self.stats.requests += r.requests
        self.stats.judged += r.judged
        self.stats.sequences += 1
        self.stats.rows |= {k for k in r.covered if CONTEXT_SEP not in k}
        for k in r.covered:
            if CONTEXT_SEP not in k:
                self.row_counts[k] = self.row_counts.get(k, 0) + 1
        for a in r.accepted:
            rec = self.accepted.setdefault(a.finding.class_key(), AcceptedRecord(a.entry, a.finding))
            rec.count += 1
            rec.continued += a.continued
        self.stats.barriers_tried += r.barriers[0]
        self.stats.barriers_held += r.barriers[1]
        end = ("error" if r.error else "inconclusive" if r.inconclusive else "finding" if r.finding is not None
               else "accepted-unexplained" if any(not a.continued for a in r.accepted) else "complete")
        self.ends[end] = self.ends.get(end, 0) + 1
        if r.inconclusive:
            self.stats.inconclusive += 1
            why = re.sub(r"\d+", "N", r.inconclusive)
            self.inconclusive_reasons[why] = self.inconclusive_reasons.get(why, 0) + 1
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
        if not self.options.shrink:
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
            try:
                return run_files([path], f"kafka://{self.host}:{port}", out=io.StringIO())
            except BoundaryError as e:
                return e.exit_code

        def on_correct() -> int:
            from server.run import start_in_thread
            with start_in_thread(self.config) as handle:
                return replay(handle.port)

        # as found: it fails at the step where the target departed, with the finding's class
        here = await asyncio.to_thread(replay_finding, path, f"kafka://{self.host}:{self.port}")
        rec.as_found = here.as_found
        text = here.text
        if self.options.bugs and self.target in ("serve", "reference"):
            good = await asyncio.to_thread(on_correct)
            text += ("; passes on the correct reference" if good == 0 else
                     "; fails on the correct reference too (timing-sensitive scenario)")
        rec.scenario_check = text

    def _write_scenario(self, rec: ClassRecord, r: SequenceResult) -> None:
        if not self.options.report or r.finding is None:
            return
        n = list(self.classes).index(rec.key)
        name = f"fuzz-class-{n + 1:02d}"
        doc = scenario_document(r, r.finding, self.config, name, self.target, table=self.table_name)
        directory = os.path.join(self.options.report, "scenarios")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"{name}.json")
        write_text_atomic(path, json.dumps(doc, indent=1) + "\n")
        rec.scenario = path

    async def _lag(self) -> None:
        """How late this process's event loop wakes up (judging many groups stalls it): a stall
        delays reading answers, so the report shows it, and a group judged late across a stall is
        inconclusive (`engine.Stalls`)."""
        while True:
            t = time.monotonic()
            await asyncio.sleep(0.05)
            woke = time.monotonic()
            self.stats.max_loop_lag_s = max(self.stats.max_loop_lag_s, woke - t - 0.05)
            self.settings.stalls.note(t + 0.05, woke)  # (a finding about time across it is not judged)

    async def _progress(self) -> None:
        while True:
            await asyncio.sleep(5)
            if not self.options.quiet:
                print(self.progress_line(), file=sys.stderr, flush=True)

    def progress_line(self) -> str:
        s = self.stats
        el = max(1e-9, time.monotonic() - s.started)
        return (f"groupspec fuzz: {el:.0f} s, {s.requests / el:.1f} requests/s, "
                f"{s.sequences / el:.1f} sequences/s, {s.running} groups running, "
                f"{s.sequences} sequences, rows covered {len(s.rows)}/{len(self.table.rows)}, "
                f"classes {len(self.classes)}, findings {s.findings}, inconclusive {s.inconclusive}, "
                f"judged requests {s.judged}")

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
                "scenario_check": rec.scenario_check, "replays_as_found": rec.as_found,
            })
        return {
            "target": self.target, "seed": self.options.seed, "config": kafka_properties(self.config),
            "tolerance": {"early_ms": self.tol.early_ms, "late_ms": self.tol.late_ms,
                          "response_bound_ms": self.tol.response_bound_ms,
                          "neighbour_ms": self.tol.neighbour_ms, "stale_expiry_ms": self.tol.stale_expiry_ms},
            "profile": self.profile.name, "table": self.table_name,
            "allowances": {a: ALLOWANCES[a] for a in sorted(self.tol.allowances)},
            "judged_requests": s.judged, "target_error": self.target_error,
            "target_settings": self.found.as_json() if self.found is not None else "not read (--no-probe)",
            "interrupted": interrupted, "stopped_early": self.stopped_early,
            "seconds": round(el, 1), "requests": s.requests,
            "requests_per_s": round(s.requests / max(el, 1e-9), 1), "sequences": s.sequences,
            "sequences_per_s": round(s.sequences / max(el, 1e-9), 2), "parallel": self.options.parallel,
            "rows_covered": sorted(s.rows), "rows_total": len(self.table.rows),
            "inconclusive_groups": s.inconclusive, "inconclusive_reasons": self.inconclusive_reasons,
            "errors": s.errors, "last_error": s.last_error,
            "read_barriers": {"tried": s.barriers_tried, "held": s.barriers_held},
            "max_event_loop_lag_s": round(s.max_loop_lag_s, 3),
            "findings": s.findings, "families": families(classes), "classes": classes,
            "accept_file": self.options.accept, "accepted": self._accepted_report(),
            "guided": self.options.guided,
            "replay": _replay_share(self.classes.values()),
            "row_counts": dict(sorted(self.row_counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            "sequence_seconds": _percentiles(self.durations),
            "sequence_ends": dict(sorted(self.ends.items(), key=lambda kv: -kv[1])),
            "hazards": _hazards_report(self.hazards),
            "api_versions": {k.name: list(v) for k, v in self.broker.versions.items()},
        }


    def _accepted_report(self) -> list[dict[str, Any]]:
        out = []
        for key, rec in sorted(self.accepted.items(), key=lambda kv: -kv[1].count):
            f = rec.finding
            out.append({"class": key, "entry": rec.entry, "count": rec.count,
                        "continued": rec.continued, "ended": rec.count - rec.continued,
                        "expected": list(f.expected), "actual": f.actual})
        return out


def _hazards_report(h: Hazards, top: int = 15) -> list[dict[str, Any]]:
    """The actions (in a model state, `kind@State`) where judging ended most often, as the
    generation learned them (engine.Hazards), with the chance it keeps drawing each."""
    keyed = sorted((k for k in h.ended if "@" in k), key=lambda k: (-h.ended[k], k))[:top]
    return [{"action": k, "sent": h.sent.get(k, 0), "ended": h.ended[k],
             "kept": round(max(Hazards.FLOOR, 1 - h.ended[k] / max(1, h.sent.get(k, 0)))
                           if h.sent.get(k, 0) >= Hazards.MIN_SEEN else 1.0, 2)} for k in keyed]


def _replay_share(records: Iterable[ClassRecord]) -> dict[str, Any]:
    """How many classes' scenarios were replayed, and how many of them failed as found."""
    checked = [r for r in records if r.as_found is not None]
    found = sum(1 for r in checked if r.as_found)
    return {"checked": len(checked), "as_found": found,
            "share": round(found / len(checked), 3) if checked else None}


def _percentiles(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    ys = sorted(xs)
    return {f"p{q}": round(ys[min(len(ys) - 1, int(len(ys) * q / 100))], 2) for q in (10, 50, 90, 99)}


def markdown(doc: dict[str, Any]) -> str:
    lines = [f"# groupspec fuzz report: {doc['target']}", ""]
    if doc["interrupted"]:
        lines += ["**Interrupted**: this report is incomplete.", ""]
    if doc.get("stopped_early"):
        lines += [f"**Stopped early**: {doc['stopped_early']}.", ""]
    lines += [f"- seed {doc['seed']}, {doc['seconds']} s, {doc['requests']} requests "
              f"({doc['requests_per_s']}/s), {doc['sequences']} sequences ({doc['sequences_per_s']}/s), "
              f"{doc['parallel']} groups in parallel",
              "- target settings: " + (", ".join(
                  f"{k}={v['value'] if v['value'] is not None else '?'} ({v['source']})"
                  for k, v in doc["target_settings"].items())
                  if isinstance(doc["target_settings"], dict) else str(doc["target_settings"]))
              + f"; judged with {', '.join(f'{k}={v}' for k, v in doc['config'].items())}",
              f"- judged with profile `{doc['profile']}`, table `{doc.get('table', 'kafka-3.9')}`; allowances in force: "
              + (", ".join(f"`{a}` ({why})" for a, why in doc["allowances"].items()) or "none (strict)"),
              f"- rows covered {len(doc['rows_covered'])}/{doc['rows_total']}; judged requests "
              f"{doc['judged_requests']}; inconclusive groups {doc['inconclusive_groups']} of "
              f"{doc['sequences']}; target errors {doc['errors']}"
              + (f" (the target failed: {doc['target_error']})" if doc["target_error"] else ""),
              f"- read barriers held {doc['read_barriers']['held']} of {doc['read_barriers']['tried']} "
              "(the others: the parked request's effect was invisible to DescribeGroups or came late)",
              f"- findings {doc['findings']} in {len(doc['classes'])} classes, "
              f"{len(doc['families'])} families; scenarios replayed as found "
              f"{doc['replay']['as_found']} of {doc['replay']['checked']}"]
    if doc.get("sequence_ends"):
        lines += ["- sequences' judging ended: " + ", ".join(f"{k} {v}" for k, v in doc["sequence_ends"].items())]
    lines += [""] + _hazards_markdown(doc)
    return "\n".join(lines + findings_markdown(doc) + _rows_markdown(doc)) + "\n"


def findings_markdown(doc: dict[str, Any]) -> list[str]:
    """A report's accepted differences, families and classes as Markdown (fuzz and observe)."""
    lines = _accepted_markdown(doc) + _families_markdown(doc)
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
    return lines


def _hazards_markdown(doc: dict[str, Any]) -> list[str]:
    if not doc.get("hazards"):
        return []
    lines = ["## Where sequences ended (what generation learned)", "",
             "Action kinds, in the model state they were drawn in, at which judging ended most often; "
             "the generator keeps each drawn one with the chance shown (engine.Hazards).", "",
             "| action @ state | sent | ended | kept |", "|---|---|---|---|"]
    lines += [f"| `{h['action']}` | {h['sent']} | {h['ended']} | {h['kept']} |" for h in doc["hazards"]]
    return lines + [""]


def _accepted_markdown(doc: dict[str, Any]) -> list[str]:
    acc = doc.get("accepted") or []
    if not doc.get("accept_file"):
        return []
    total = sum(a["count"] for a in acc)
    ended = sum(a["ended"] for a in acc)
    lines = [f"## Accepted differences ({doc['accept_file']})", "",
             f"{total} accepted findings in {len(acc)} classes; the judge adopted the target's answer "
             f"and went on in {total - ended}; in {ended} no model state explained the answer and "
             "the sequence ended there.", ""]
    if acc:
        lines += ["| count | went on | ended | class |", "|---|---|---|---|"]
        lines += [f"| {a['count']} | {a['continued']} | {a['ended']} | `{_cell(a['class'])}` |" for a in acc]
        lines.append("")
    return lines


def _cell(text: str) -> str:
    """Text for a Markdown table cell (a class key's `|` would end the cell)."""
    return text.replace("|", "\\|")


def _families_markdown(doc: dict[str, Any]) -> list[str]:
    if not doc["families"]:
        return []
    lines = ["## Families (root causes)", "",
             "Classes of one API grouped by what differs: the same fields, or the same expected -> "
             "actual error pair, across rows.", ""]
    for i, f in enumerate(doc["families"], 1):
        ex = f["example"]
        lines += [f"### {i}. {f['api']}: {f['differs']}", "",
                  f"- {f['count']} findings in {len(f['classes'])} classes; rows: "
                  + ", ".join(f"`{r}`" for r in f["rows"]),
                  f"- example (`{ex['class']}`): {len(ex['steps'])} actions `{json.dumps(ex['steps'])}`; "
                  f"scenario `{ex['scenario']}` ({ex['scenario_check']})",
                  f"- expected `{json.dumps(ex['expected'])}`, actual `{json.dumps(ex['actual'])}`", ""]
    return lines + ["## Classes", ""]


def _rows_markdown(doc: dict[str, Any]) -> list[str]:
    counts: dict[str, int] = doc["row_counts"]
    fired = [(r, n) for r, n in counts.items() if n]
    never = sorted(r for r, n in counts.items() if not n)
    lines = ["## Rows fired", "",
             f"{len(fired)} of {len(counts)} rows fired on the target (coverage guidance "
             f"{'on' if doc.get('guided', True) else 'off'}); count = sequences in which the row fired "
             "in every hypothesis still standing.", "", "| row | sequences |", "|---|---|"]
    lines += [f"| `{r}` | {n} |" for r, n in fired]
    lines += ["", f"Never fired ({len(never)}): " + ", ".join(f"`{r}`" for r in never), ""]
    return lines


def write_report(directory: str, doc: dict[str, Any]) -> None:
    write_text_atomic(os.path.join(directory, "report.json"), json.dumps(doc, indent=1) + "\n")
    write_text_atomic(os.path.join(directory, "report.md"), markdown(doc))
    write_report_html(directory)  # each finding's scenario as a sequence diagram (report.html)


def write_accept_file(path: str, doc: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(doc, indent=1) + "\n")


def accept_from_report(directory: str, target: str, out: str, by_family: bool = False) -> int:
    """`--write-accept OUT --from-report DIR`: DIR's report classes (and the entries it ran with)
    as an accept file, without a run."""
    path = os.path.join(directory, "report.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        classes = doc["classes"]
        fams = doc["families"] if by_family else None
        kept = load_accept(doc["accept_file"]).entries if doc.get("accept_file") else ()
    except OSError as e:
        raise BadInput(f"--from-report {path}: cannot read: {e.strerror}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise BadInput(f"--from-report {path}: not a fuzz report ({type(e).__name__}: {e})") from None
    write_accept_file(out, write_accept_document(target, classes, kept, source=path, families=fams))
    print(f"groupspec fuzz: wrote {out} ({len(classes)} classes of {path})")
    return EXIT_OK


def fuzz(options: FuzzOptions, config: CoordinatorConfig) -> int:
    """One fuzz run on `options.target` configured with `config`; the summary on stdout, the report
    in `options.report` (a directory that exists) if given."""
    fuzzer: Optional[Fuzzer] = None
    interrupted = False
    try:
        with start_target(options.target, config, options.bugs) as (host, port):
            found = None
            if options.probe:
                found = read_settings(host, port, allow_remote=options.allow_remote)
                given = {k: v for k, v in kafka_properties(config).items() if k in options.config_given}
                config = reconcile(found, given, config)  # a contradiction: BadInput, exit 2
                if not options.quiet:
                    print(f"groupspec fuzz: target settings: {found.line()}", file=sys.stderr)
            fuzzer = Fuzzer(host, port, options, config)
            fuzzer.found = found
            try:
                asyncio.run(fuzzer.run())
            except KeyboardInterrupt:
                interrupted = True
    except KeyboardInterrupt:
        if fuzzer is None:
            raise  # before the target was up: nothing to report
        interrupted = True
    except RemoteHostRefused as e:
        raise BadInput(f"--target {options.target}: {e} (use --allow-remote)") from None
    except (WireError, OSError) as e:
        if fuzzer is None or fuzzer.stats.sequences == 0:
            raise Incomplete(f"target {options.target} unreachable: {e}") from None
        print(f"groupspec fuzz: target {options.target} unreachable: {e}", file=sys.stderr)
        fuzzer.target_error = f"unreachable: {e}"
    assert fuzzer is not None
    return _conclude(fuzzer, options, interrupted)


def _conclude(fuzzer: Fuzzer, options: FuzzOptions, interrupted: bool) -> int:
    doc = fuzzer.report(interrupted)
    if options.report:
        write_report(options.report, doc)
    if options.write_accept:
        kept = fuzzer.accept.entries if fuzzer.accept is not None else ()
        write_accept_file(options.write_accept, write_accept_document(
            options.target, doc["classes"], kept, source=f"a run against {options.target}",
            families=doc["families"] if options.accept_families else None))
    if not options.quiet:
        print(fuzzer.progress_line(), file=sys.stderr)
    for c in doc["classes"]:
        print(f"CLASS x{c['count']}: {c['class']}  scenario {c['scenario']}")
    print(summary_line(doc))
    if interrupted:
        print("groupspec fuzz: interrupted; the report is marked interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if doc["findings"]:
        return EXIT_FINDING
    incomplete = why_incomplete(doc)
    if incomplete:
        raise Incomplete(incomplete)
    return EXIT_OK


def summary_line(doc: dict[str, Any]) -> str:
    """The one line a run ends with: what was found and how much was judged."""
    allowances = ", ".join(doc["allowances"]) or "none"
    return (f"groupspec fuzz: {doc['findings']} findings in {len(doc['classes'])} classes, "
            f"{doc['sequences']} sequences, {doc['requests']} requests ({doc['judged_requests']} judged), "
            f"{doc['inconclusive_groups']} inconclusive groups, {doc['errors']} target errors; "
            f"profile {doc['profile']}, table {doc.get('table', 'kafka-3.9')}, allowances: {allowances}")


def why_incomplete(doc: dict[str, Any]) -> str:
    """Why a run without findings judged too little to pass ("" when it did not)."""
    if doc["sequences"] == 0 or doc["errors"] == doc["sequences"]:
        return f"nothing could be judged ({doc['last_error'] or doc['target_error'] or 'no sequence ran'})"
    if doc["target_error"] or doc["errors"]:
        return (f"the target errored in {doc['errors']} of {doc['sequences']} sequences "
                f"({doc['target_error'] or doc['last_error']}): the run is incomplete")
    share = doc["inconclusive_groups"] / doc["sequences"]
    if share > MAX_INCONCLUSIVE:
        return (f"{doc['inconclusive_groups']} of {doc['sequences']} groups ({share:.1%}) were "
                f"inconclusive, more than {MAX_INCONCLUSIVE:.0%}: the run is incomplete")
    return ""

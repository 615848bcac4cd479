"""Randomized workloads recorded as traces: `groupspec traces generate`.

Each group gets its own coordinator from the factory and a few simulated clients (dynamic or
static) that behave like Kafka's consumer: join (MEMBER_ID_REQUIRED then rejoin), sync, heartbeat,
commit, leave, and react to errors by rejoining. Faults are client misbehaviour, named as in
`groupspec check --faults`: `crash` (stops without leaving: session timeout), `session` (pauses
heartbeats past the session timeout, then resumes), `rebalance` (rejoins late), `lost` (ignores one
response and retries), `leave` (leaves and maybe comes back). The older names session-timeout,
rebalance-timeout and lost-response are accepted as aliases. The virtual clock advances between actions.

A chosen fraction of groups runs with a named coordinator bug. The manifest lists them, and which of
them the bug visibly changed: the same group is re-run without the bug and the two traces are
compared (member ids aside), so "the job flags exactly the bugged groups" can be checked honestly.
"""

from __future__ import annotations

import json
import queue
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Final, Optional, Protocol, TextIO

from model.coordinator_api import Coordinator, CoordinatorConfig, Recorder
from model.atomic import open_staged
from model.errors import BadInput
from model.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    ProtocolMetadata,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartition,
)
from model.vocabulary import Error
from traces import codec
from traces.output import AtomicOutput
from traces.recorder import InternalEventsOnly, RecordingCoordinator, TraceRecorder
from traces.schema import EventKind, TraceEvent

FAULTS: Final = ("crash", "session", "rebalance", "lost", "leave")  # the names `check --faults` uses
FAULT_ALIASES: Final = {"session-timeout": "session", "rebalance-timeout": "rebalance", "lost-response": "lost"}
SESSION_TIMEOUT_MS: Final = 10000
REBALANCE_TIMEOUT_MS: Final = 15000
HEARTBEAT_INTERVAL_MS: Final = 3000


class GenerateError(BadInput, ValueError):
    """Bad generator options (exit 2)."""


class CoordinatorFactory(Protocol):
    def __call__(
        self, config: CoordinatorConfig, recorder: Optional[Recorder] = ..., bugs: frozenset[str] = ...
    ) -> Coordinator: ...


def model_factory(
    config: CoordinatorConfig, recorder: Optional[Recorder] = None, bugs: frozenset[str] = frozenset()
) -> Coordinator:
    """The model as a trace producer (the seeded bugs belong to the reference coordinator)."""
    if bugs:
        raise GenerateError("the model has no seeded bugs; inject bugs with the reference coordinator")
    from model.concrete import ModelCoordinator

    return ModelCoordinator(config, recorder=recorder)


@dataclass(frozen=True, slots=True)
class GeneratorOptions:
    groups: int
    seed: int = 0
    faults: frozenset[str] = frozenset(FAULTS)
    bugs: tuple[str, ...] = ()
    bug_fraction: float = 0.1
    steps: int = 40
    fmt: str = "jsonl"
    files: int = 1

    @classmethod
    def from_args(cls, *, groups: int, seed: int, faults: str, bugs: tuple[str, ...], bug_fraction: float,
                  steps: int, fmt: str, files: int) -> "GeneratorOptions":
        if groups < 1:
            raise GenerateError("--groups must be >= 1")
        if not 0.0 <= bug_fraction <= 1.0:
            raise GenerateError("--bug-fraction must be in [0, 1]")
        if steps < 1 or files < 1:
            raise GenerateError("--steps and --files must be >= 1")
        names = {"all": set(FAULTS), "none": set()}.get(faults)
        if names is None:
            names = {FAULT_ALIASES.get(f.strip(), f.strip()) for f in faults.split(",") if f.strip()}
            unknown = sorted(names - set(FAULTS))
            if unknown:
                raise GenerateError(f"unknown fault(s) {unknown}; known: {', '.join(FAULTS)}")
        return cls(groups, seed, frozenset(names), bugs, bug_fraction, steps, fmt, files)


@dataclass(slots=True)
class _Client:
    name: str
    instance_id: Optional[str]
    member_id: str = ""
    generation: int = -1
    phase: str = "new"  # new | rejoin | waiting | sync | stable | paused | crashed | left
    leader: bool = False
    members: tuple[str, ...] = ()
    resume_at: int = 0
    drop_next: bool = False
    on_ok: str = "stable"  # phase after a successful heartbeat/commit (sync while a sync is owed)


@dataclass(slots=True)
class _Group:
    group_id: str
    rng: random.Random
    faults: frozenset[str]
    coordinator: Coordinator
    clients: list[_Client] = field(default_factory=list)

    def send(self, client: _Client, request: Any) -> None:
        client.phase = "waiting"

        def on_response(response: Response) -> None:
            if client.drop_next:  # lost: the client never sees it and retries later
                client.drop_next = False
                client.phase = "rejoin" if client.member_id else "new"
                return
            self._react(client, response)

        self.coordinator.handle(request, on_response)

    def _react(self, c: _Client, r: Response) -> None:
        if c.phase in ("crashed", "left"):
            return
        error = getattr(r, "error", Error.NONE)
        if isinstance(r, JoinGroupResponse):
            if error == Error.MEMBER_ID_REQUIRED:
                c.member_id, c.phase = r.member_id, "rejoin"
            elif error == Error.NONE:
                c.member_id, c.generation = r.member_id, r.generation_id
                c.leader = r.leader == r.member_id
                c.members = tuple(m.member_id for m in r.members)
                c.phase = "sync"
            elif error == Error.FENCED_INSTANCE_ID:
                c.phase = "crashed"
            else:
                c.member_id = "" if error == Error.UNKNOWN_MEMBER_ID else c.member_id
                c.phase = "rejoin" if c.member_id else "new"
        elif isinstance(r, (SyncGroupResponse, HeartbeatResponse)):
            if error == Error.NONE:
                c.phase = c.on_ok if isinstance(r, HeartbeatResponse) else "stable"
                c.on_ok = "stable"
            elif error == Error.UNKNOWN_MEMBER_ID:
                c.member_id, c.phase = "", "new"
            elif error == Error.FENCED_INSTANCE_ID:
                c.phase = "crashed"
            else:
                c.phase = "rejoin"
        else:  # commit / leave answers change nothing for the client
            if c.phase == "waiting":
                c.phase, c.on_ok = c.on_ok, "stable"

    def join(self, c: _Client) -> None:
        self.send(c, JoinGroupRequest(
            group_id=self.group_id, member_id=c.member_id, protocol_type="consumer",
            protocols=(ProtocolMetadata("range", c.name.encode()), ProtocolMetadata("roundrobin")),
            session_timeout_ms=SESSION_TIMEOUT_MS, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            group_instance_id=c.instance_id, client_id=c.name,
        ))

    def act(self, c: _Client, now: int) -> None:
        rng = self.rng
        if c.phase == "paused" and now >= c.resume_at:
            c.phase = "stable"
        if c.phase in ("new", "rejoin"):
            if "rebalance" in self.faults and c.phase == "rejoin" and rng.random() < 0.1:
                c.phase, c.resume_at = "paused", now + REBALANCE_TIMEOUT_MS + 2000
                return
            self.join(c)
        elif c.phase == "sync" and rng.random() < 0.2:
            # The consumer's background thread heartbeats (or commits) while a sync is owed.
            c.on_ok = "sync"
            if rng.random() < 0.5:
                self.send(c, HeartbeatRequest(self.group_id, c.member_id, c.generation, c.instance_id))
            else:
                tp = TopicPartition("events", 0)
                self.send(c, OffsetCommitRequest(self.group_id, c.member_id, c.generation, ((tp, 1),), c.instance_id))
        elif c.phase == "sync":
            assignments = tuple((m, f"a:{m}".encode()) for m in c.members) if c.leader else ()
            self.send(c, SyncGroupRequest(self.group_id, c.member_id, c.generation, c.instance_id,
                                          "consumer", "range", assignments))
        elif c.phase == "stable":
            roll = rng.random()
            if "crash" in self.faults and roll < 0.02:
                c.phase = "crashed"
            elif "leave" in self.faults and roll < 0.05:
                self.send(c, LeaveGroupRequest(self.group_id, (MemberIdentity(c.member_id, c.instance_id),)))
                c.phase = "left" if rng.random() < 0.5 else "new"
                c.member_id = "" if c.phase == "new" and c.instance_id is None else c.member_id
            elif "session" in self.faults and roll < 0.08:
                c.phase, c.resume_at = "paused", now + SESSION_TIMEOUT_MS + 3000
            elif roll < 0.25:
                tp = TopicPartition("events", rng.randrange(3))
                self.send(c, OffsetCommitRequest(self.group_id, c.member_id, c.generation,
                                                 ((tp, rng.randrange(1000)),), c.instance_id))
            else:
                if "lost" in self.faults and rng.random() < 0.03:
                    c.drop_next = True
                self.send(c, HeartbeatRequest(self.group_id, c.member_id, c.generation, c.instance_id))


def _config(rng: random.Random) -> CoordinatorConfig:
    return CoordinatorConfig(group_initial_rebalance_delay_ms=rng.choice((0, 3000)))


def run_group(group_id: str, seed: str, options: GeneratorOptions, factory: CoordinatorFactory,
              bugs: frozenset[str], source: str) -> list[TraceEvent]:
    """One group's whole life, recorded."""
    rng = random.Random(seed)
    events: list[TraceEvent] = []
    recorder = TraceRecorder(events.append, source)
    config = _config(rng)
    recorder._emit(group_id, ts_ms=0, kind=EventKind.config, payload=codec.dumps_config(config))
    inner = factory(config, InternalEventsOnly(recorder), bugs) if bugs else factory(config, InternalEventsOnly(recorder))
    proxy = RecordingCoordinator(inner, recorder, group_id)
    group = _Group(group_id, rng, options.faults, proxy)
    static = rng.random() < 0.3
    for k in range(rng.randint(1, 4)):
        group.clients.append(_Client(f"{group_id}-c{k}", f"{group_id}-i{k}" if static and rng.random() < 0.7 else None))
    for _ in range(options.steps):
        now = proxy.now_ms()
        ready = [c for c in group.clients if c.phase not in ("waiting", "crashed", "left")
                 and not (c.phase == "paused" and now < c.resume_at)]
        if not ready or rng.random() < 0.35:
            proxy.advance(rng.choice((50, 500, HEARTBEAT_INTERVAL_MS, 3100, 6000, 12000)))
            continue
        group.act(rng.choice(ready), now)
    proxy.advance(REBALANCE_TIMEOUT_MS + 1)  # let pending timers fire before the trace ends
    return events


def visible_projection(events: list[TraceEvent]) -> list[tuple[Any, ...]]:
    """What a bug can visibly change: responses and transitions (timers are internal), member ids aside."""
    return [(e.kind, e.ts_ms, e.api, e.error, e.generation if e.kind != EventKind.request else None,
             e.from_state, e.to_state) for e in events if e.kind != EventKind.timer]


def generate(options: GeneratorOptions, factory: CoordinatorFactory, out_dir: Path, overwrite: bool = False,
             source: str = "reference", jobs: int = 1, progress: Optional[TextIO] = None) -> dict[str, Any]:
    """Record `options.groups` groups into `options.files` files; group i goes to file i % files.

    `jobs` > 1 writes the files in that many processes (each process owns whole files, so the
    output is byte for byte the one a single process writes). `progress`: a stream that gets a
    line every few seconds (groups done, rate, time left).
    """
    if jobs < 1:
        raise GenerateError("--jobs must be >= 1")
    if options.bugs:  # the factory decides which bug names exist: ask it once, before any work
        try:
            factory(CoordinatorConfig(), None, frozenset(options.bugs))
        except ValueError as e:
            raise GenerateError(str(e)) from None
    chooser = random.Random(f"{options.seed}:bugs")
    bugged = frozenset(i for i in range(options.groups) if options.bugs and chooser.random() < options.bug_fraction)
    manifest: dict[str, Any] = {
        "schema": "groupspec.trace/1", "source": source, "seed": options.seed, "groups": options.groups,
        "steps": options.steps, "faults": sorted(options.faults), "bugs": list(options.bugs),
        "bug_fraction": options.bug_fraction, "bugged_groups": [], "bug_observable_groups": [], "events": 0,
        "files": [],
    }
    with AtomicOutput(out_dir, overwrite) as out:
        names = [f"part-{i:05d}.{options.fmt}" for i in range(options.files)]
        shares = [[(f, out.path(names[f])) for f in range(w, options.files, jobs)] for w in range(min(jobs, options.files))]
        work = _FileWork(options, factory, bugged, source)
        results = _run_shares(work, shares, options.groups, progress)
        for events, bugged_ids, observable_ids in results:
            manifest["events"] += events
            manifest["bugged_groups"] += bugged_ids
            manifest["bug_observable_groups"] += observable_ids
        for key in ("bugged_groups", "bug_observable_groups"):
            manifest[key] = [_group_id(i) for i in sorted(manifest[key])]
        manifest["files"] = names
        out.write("manifest.json", json.dumps(manifest, indent=2) + "\n")
        out.commit({"groups": options.groups, "events": manifest["events"]})
    return manifest


def _group_id(i: int) -> str:
    return f"g{i:07d}"


_ShareResult = tuple[int, list[int], list[int]]  # events written, bugged group numbers, observable ones


@dataclass(frozen=True, slots=True)
class _FileWork:
    """What one process needs to write its files (picklable: the factory is a class or a function)."""

    options: GeneratorOptions
    factory: CoordinatorFactory
    bugged: frozenset[int]
    source: str

    def write(self, files: list[tuple[int, Path]], done: Callable[[], None]) -> _ShareResult:
        o = self.options
        events_total, bugged_ids, observable_ids = 0, [], []
        for index, path in files:
            writer = _writer(path, o.fmt)
            try:
                for i in range(index, o.groups, o.files):
                    group_id, seed = _group_id(i), f"{o.seed}:{i}"
                    bugs = frozenset(o.bugs) if i in self.bugged else frozenset()
                    events = run_group(group_id, seed, o, self.factory, bugs, self.source)
                    if bugs:
                        bugged_ids.append(i)
                        clean = run_group(group_id, seed, o, self.factory, frozenset(), self.source)
                        if visible_projection(clean) != visible_projection(events):
                            observable_ids.append(i)
                    writer.write(events)
                    events_total += len(events)
                    done()
            finally:
                writer.close()
        return events_total, bugged_ids, observable_ids


PROGRESS_EVERY_S: Final = 5.0


def _run_shares(work: _FileWork, shares: list[list[tuple[int, Path]]], groups: int,
                progress: Optional[TextIO]) -> list[_ShareResult]:
    report = _ProgressLine(groups, progress)
    if len(shares) == 1:
        return [work.write(shares[0], report.one_done)]
    import multiprocessing as mp

    # not "fork": the caller may have threads (a Spark gateway, a test's broker), and a forked child
    # could inherit one of their locks held; the fork server is a fresh single-threaded process
    ctx = mp.get_context("forkserver") if "forkserver" in mp.get_all_start_methods() else mp.get_context("spawn")
    counter = ctx.Value("q", 0)
    results = ctx.Queue()
    procs = [ctx.Process(target=_share_main, args=(work, share, counter, results), daemon=True) for share in shares]
    for p in procs:
        p.start()
    collected: list[_ShareResult] = []
    try:
        while len(collected) < len(procs):
            try:
                outcome = results.get(timeout=PROGRESS_EVERY_S)
            except queue.Empty:
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"a generator process died (exit code {dead[0].exitcode})") from None
                report.show(counter.value)
                continue
            if isinstance(outcome, str):  # a defect, not bad input: not a GenerateError (exit 2)
                raise RuntimeError(f"a generator process failed: {outcome}")
            collected.append(outcome)
        report.show(counter.value, final=True)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join()
    return collected


def _share_main(work: _FileWork, share: list[tuple[int, Path]], counter: Any, results: Any) -> None:
    def done() -> None:
        with counter.get_lock():
            counter.value += 1

    try:
        results.put(work.write(share, done))
    except BaseException as e:  # reported to the parent, which stops the run
        results.put(f"{type(e).__name__}: {e}")


class _ProgressLine:
    def __init__(self, groups: int, stream: Optional[TextIO]) -> None:
        self._groups = groups
        self._stream = stream
        self._start = time.monotonic()
        self._last = self._start
        self._done = 0

    def one_done(self) -> None:
        self._done += 1
        now = time.monotonic()
        if now - self._last >= PROGRESS_EVERY_S or self._done == self._groups:
            self.show(self._done, final=self._done == self._groups)

    def show(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        self._last = now
        if self._stream is None:
            return
        elapsed = now - self._start
        rate = done / elapsed if elapsed > 0 else 0.0
        left = f", {(self._groups - done) / rate:.0f}s left" if rate > 0 and not final else ""
        print(f"[{elapsed:6.0f}s] generated {done:,}/{self._groups:,} groups ({rate:,.0f}/s{left})",
              file=self._stream, flush=True)


class _Writer(Protocol):
    def write(self, events: list[TraceEvent]) -> None: ...
    def close(self) -> None: ...


# The part files are created inside the output directory being built (`open_staged`: the worker
# processes are handed their paths in it), so they appear only when the whole directory is published.


class _JsonlWriter:
    def __init__(self, path: Path) -> None:
        self._handle = open_staged(path)

    def write(self, events: list[TraceEvent]) -> None:
        for e in events:
            row = {k: v for k, v in e.to_row().items() if v is not None}
            self._handle.write(json.dumps(row, separators=(",", ":")) + "\n")

    def close(self) -> None:
        self._handle.close()


class _ParquetWriter:
    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        from traces.schema import arrow_schema

        self._schema = arrow_schema()
        self._handle = open_staged(path, binary=True)
        self._writer = pq.ParquetWriter(self._handle, self._schema)
        self._rows: list[dict[str, Any]] = []

    def write(self, events: list[TraceEvent]) -> None:
        self._rows.extend(e.to_row() for e in events)
        if len(self._rows) >= 100_000:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self._schema))
            self._rows = []

    def close(self) -> None:
        try:
            self._flush()
            self._writer.close()
        finally:
            self._handle.close()


def _writer(path: Path, fmt: str) -> _Writer:
    return _JsonlWriter(path) if fmt == "jsonl" else _ParquetWriter(path)


Generate = Callable[[GeneratorOptions, CoordinatorFactory, Path], dict[str, Any]]

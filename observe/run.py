"""What `groupspec observe` runs (groupspec/commands/observe.py parses the arguments).

The upstream is started (fuzz/targets.py) or named; its group settings are read or probed the way
`groupspec fuzz` reads them (fuzz/probe.py) and reconciled with `--config`; then the proxy listens,
prints `groupspec observe: listening on HOST:PORT` (flushed) and runs until SIGTERM or Ctrl-C, or
until the upstream fails (it refuses connections: two failed checks a second apart). It then
writes the report and returns 0 (no findings), 1 (findings) or raises Incomplete (exit 3: the
upstream failed; the report, written first, says so).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Optional

from model.coordinator_api import CoordinatorConfig
from model.errors import EXIT_FINDING, EXIT_OK, BadInput, Incomplete
from server.config import kafka_properties
from wire.errors import RemoteHostRefused, WireError
from wire.transport import check_loopback

from fuzz.accept import AcceptList, load_accept
from fuzz.allowances import PROFILES, Profile, allowances_in_force, profile_for
from fuzz.judge import Tolerance
from fuzz.probe import Setting, TargetSettings, read_settings, reconcile
from fuzz.targets import start_target
from observe.judging import MAX_HYPOTHESES, OBSERVATION_MS, PROXY_OVERTAKE_MS, TICK_S
from observe.worker import JudgeProcess, JudgeSettings
from observe.proxy import Proxy
from observe.report import summary_line

HEALTH_EVERY_S = 1.0  # how often the upstream is checked (a TCP connect)
HEALTH_FAILURES = 2  # consecutive failed checks that mean the upstream failed


@dataclass(frozen=True, slots=True)
class ObserveOptions:
    upstream: str  # serve, kafka-3.9, kafka-4, tansu or kafka://HOST:PORT
    report: str  # directory
    listen_host: str = "127.0.0.1"
    listen_port: int = 0
    profile: Optional[str] = None  # default: the upstream's (fuzz/allowances.py profile_for)
    allow: tuple[str, ...] = ()
    accept: Optional[str] = None
    bugs: tuple[str, ...] = ()
    config_given: tuple[str, ...] = ()
    probe: bool = True
    allow_remote: bool = False
    quiet: bool = False
    table: Optional[str] = None  # --table: a profile or package.module:NAME; default the profile's


def profile_of(options: ObserveOptions) -> Profile:
    if options.profile is None:
        return profile_for(options.upstream)
    if options.profile not in PROFILES:
        raise BadInput(f"--profile {options.profile}: unknown; known: {', '.join(sorted(PROFILES))}")
    return PROFILES[options.profile]


def observe(options: ObserveOptions, config: CoordinatorConfig) -> int:
    profile = profile_of(options)
    tol = Tolerance(allowances=allowances_in_force(profile.name, options.allow), min_overtake_ms=PROXY_OVERTAKE_MS,
                    max_observation_ms=OBSERVATION_MS, max_hypotheses=MAX_HYPOTHESES)
    accept = load_accept(options.accept) if options.accept else None
    try:
        with start_target(options.upstream, config, options.bugs) as (host, port):
            check_loopback(host, port, options.allow_remote)
            found: Optional[TargetSettings] = None
            if options.upstream in ("serve", "reference"):
                # observe started it with `config`: known exactly (a timed probe of the initial
                # delay is only known to +-250 ms, and the judge holds the broker to the value)
                found = TargetSettings(tuple(Setting(k, v, "set by observe, which started serve with it")
                                             for k, v in kafka_properties(config).items()))
            elif options.probe:
                try:
                    found = read_settings(host, port, allow_remote=options.allow_remote)
                except (WireError, OSError) as e:
                    raise Incomplete(f"--upstream {options.upstream}: cannot read its settings: {e}") from None
                given = {k: v for k, v in kafka_properties(config).items() if k in options.config_given}
                config = reconcile(found, given, config)
                if not options.quiet:
                    print(f"groupspec observe: upstream settings: {found.line()}", file=sys.stderr, flush=True)
            session = _Session(options, config, tol, profile, accept, (host, port), found)
            asyncio.run(session.run())
    except RemoteHostRefused as e:
        raise BadInput(f"--upstream {options.upstream}: {e} (use --allow-remote)") from None
    except (WireError, OSError) as e:
        raise Incomplete(f"--upstream {options.upstream}: could not start or reach it: {e}") from None
    return session.conclude()


class _Session:
    def __init__(self, options: ObserveOptions, config: CoordinatorConfig, tol: Tolerance, profile: Profile,
                 accept: Optional[AcceptList], upstream: tuple[str, int], found: Optional[TargetSettings]) -> None:
        self.options, self.tol, self.profile, self.found = options, tol, profile, found
        self.accept = accept  # (read, so that a bad file stops the run before the proxy starts)
        self.upstream = upstream
        self.judge = JudgeProcess(JudgeSettings(config, tol, options.upstream, options.report, options.accept,
                                                options.quiet, time.monotonic(), options.table or profile.table))
        self.proxy = Proxy(upstream, options.listen_host, self.judge,
                           grace_s=tol.process_ms / 1000.0, on_refused=self._refused)
        self.stop = asyncio.Event()
        self.stopped_by = ""
        self.upstream_error = ""
        self.listen = ""
        self.check_now = asyncio.Event()

    def _log(self, line: str) -> None:
        if not self.options.quiet:
            print(f"groupspec observe: {line}", file=sys.stderr, flush=True)

    def _refused(self, why: str) -> None:
        self.check_now.set()  # a client could not be connected upstream: check it at once

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")):
            loop.add_signal_handler(sig, self._stop, name)
        try:
            port = await self.proxy.start(self.options.listen_port)
        except OSError as e:
            raise BadInput(f"--listen {self.options.listen_host}:{self.options.listen_port}: cannot bind: "
                           f"{e.strerror or e}") from None
        self.listen = f"{self.options.listen_host}:{port}"
        print(f"groupspec observe: listening on {self.listen}", flush=True)
        tasks = [loop.create_task(self._ticks()), loop.create_task(self._health())]
        try:
            await self.stop.wait()
        finally:
            for t in tasks:
                t.cancel()
            await self.proxy.close()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    def _stop(self, why: str) -> None:
        if not self.stopped_by:
            self.stopped_by = why
        self.stop.set()

    async def _ticks(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            self.judge.tick(time.monotonic())
            if self.judge.ended():  # the judging ended: conclude reports why
                self._stop("the judge ending")
                return

    async def _health(self) -> None:
        failures = 0
        while True:
            try:
                await asyncio.wait_for(self.check_now.wait(), HEALTH_EVERY_S)
            except asyncio.TimeoutError:
                pass
            self.check_now.clear()
            try:
                _, w = await asyncio.wait_for(asyncio.open_connection(*self.upstream), 5.0)
                w.close()
                failures = 0
            except (OSError, asyncio.TimeoutError) as e:
                failures += 1
                if failures >= HEALTH_FAILURES:
                    self.upstream_error = (f"{self.upstream[0]}:{self.upstream[1]} refuses connections "
                                           f"({e or 'timeout'})")
                    self._log(f"the upstream failed: {self.upstream_error}")
                    self._stop("the upstream failing")
                    return
                await asyncio.sleep(HEALTH_EVERY_S / 2)

    def conclude(self) -> int:
        doc = self.judge.finish(counts=self.proxy.counts, target=self.options.upstream,
                                upstream=f"{self.upstream[0]}:{self.upstream[1]}", listen=self.listen,
                                profile=self.profile, tol=self.tol, found=self.found, accept_file=self.options.accept,
                                upstream_error=self.upstream_error, stopped_by=self.stopped_by or "?")
        for c in doc["classes"]:  # (the report names its scenario files relative to its directory)
            scenario = os.path.join(self.options.report, c["scenario"]) if c["scenario"] else None
            print(f"CLASS x{c['count']}: {c['class']}  scenario {scenario}")
        print(summary_line(doc), flush=True)
        if self.upstream_error:
            raise Incomplete(f"the upstream failed: {self.upstream_error} (report in {self.options.report})")
        return EXIT_FINDING if doc["findings"] else EXIT_OK


__all__ = ["ObserveOptions", "observe"]

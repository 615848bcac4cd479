"""`groupspec clients`: real client libraries in one consumer group against a broker, with churn,
checked against the end-to-end promise (clients/churn.py, clients/promise.py, clients/report.py).

Exit 0 the promise held and the group drained, 1 a violation, 2 bad input, 3 incomplete (the group
did not drain, a member never printed its events, or the target could not be started), 130
interrupted by Ctrl-C or SIGTERM (members are stopped; no report).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from typing import Final

from model.coordinator_api import CoordinatorConfig
from model.errors import EXIT_BAD_INPUT, EXIT_OK, BadInput, Incomplete

from groupspec.options import add_config_option, load_table_or_profile, output_dir, parse_config

HELP: Final = "real clients (kafka-python, librdkafka, Java) in one group with churn, end to end"
DESCRIPTION: Final = (
    "Start real consumer processes of one client library in one group on a topic of several partitions; "
    "each produces, consumes and commits while members are stopped, killed, paused past their session "
    "timeout and restarted at random times from a seed; then check that every acknowledged record was "
    "consumed, no partition had two owners in one generation, and commits never went backwards.")
EPILOG: Final = ("Exit status: 0 the promise held, 1 a violation, 2 bad input, 3 incomplete, 130 interrupted. "
                 "The report (report.json, report.md, events.jsonl) goes to --report DIR.")
EXIT_VIOLATION: Final = 1
OBSERVE_DEFAULT: Final = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    from clients.churn import KINDS
    from clients.group import CLIENTS
    from clients.java import DEFAULT_VERSION

    p.epilog = EPILOG
    p.add_argument("--target", required=True,
                   help="serve (groupspec serve, started for the run), kafka://HOST:PORT, kafka-3.9, kafka-4 "
                        "(Apache Kafka, started for the run) or tansu")
    p.add_argument("--client", required=True, choices=CLIENTS, help="the client library of every member")
    p.add_argument("--java-version", default=DEFAULT_VERSION, metavar="V",
                   help=f"kafka-clients version of --client java (default {DEFAULT_VERSION}; .kafka-jars/V)")
    p.add_argument("--consumers", type=int, default=3, metavar="N", help="members in the group (default 3)")
    p.add_argument("--minutes", type=float, default=1.0, metavar="M", help="minutes of churn (default 1)")
    p.add_argument("--static", type=int, nargs="?", const=-1, default=0, metavar="K",
                   help="static members (group.instance.id per slot; restarts come back as the same member): "
                        "all of them, or the first K (the others dynamic: a mixed group)")
    p.add_argument("--churn", default=None, metavar="KINDS",
                   help=f"comma-separated churn kinds of {', '.join(KINDS)}, or none (default: stop,kill,pause,"
                        "restart, plus static-restart with --static)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the churn schedule (default 0)")
    p.add_argument("--partitions", type=int, default=6, metavar="P", help="partitions of the topic (default 6)")
    p.add_argument("--rate", type=float, default=50.0, metavar="R",
                   help="records a second each member produces (default 50)")
    p.add_argument("--session-timeout-ms", type=int, default=10000, metavar="MS",
                   help="the members' session.timeout.ms (default 10000)")
    p.add_argument("--drain-seconds", type=float, default=None, metavar="S",
                   help="seconds the group gets after the churn to settle and consume every record "
                        "(default 3 x the session timeout + 60)")
    add_config_option(p, CoordinatorConfig())
    p.add_argument("--bug", action="append", default=[], metavar="NAME",
                   help="seeded bug of --target serve (repeatable)")
    p.add_argument("--observe", action=argparse.BooleanOptionalAction, default=OBSERVE_DEFAULT,
                   help="route every member's traffic through `groupspec observe` (the judging proxy) started in "
                        "front of the target, and count its findings (default: %(default)s)")
    p.add_argument("--observe-profile", default=None, metavar="P",
                   help="observe's --profile (default: kafka-3.9 and kafka-4 for those targets, else observe's "
                        "default for a kafka:// upstream, strict)")
    p.add_argument("--observe-table", default=None, metavar="PROFILE|MODULE:NAME",
                   help="observe's --table: judge by this transition table, a profile (kafka-3.9, kafka-4) or "
                        "package.module:NAME (default: observe's, the profile's table)")
    p.add_argument("--observe-accept", default=None, metavar="FILE", help="observe's --accept FILE (known differences)")
    p.add_argument("--allow-remote", action="store_true", help="allow a kafka://HOST:PORT target off loopback")
    p.add_argument("--report", required=True, metavar="DIR", help="write report.json, report.md, events.jsonl in DIR")


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(a: argparse.Namespace) -> int:
    from clients.churn import DYNAMIC_KINDS, KINDS, ChurnPlan, churn_run
    from clients.group import Workload, unavailable
    from clients.observer import ObserveFailed, observing
    from clients.report import OBSERVE_DIR, write_report
    from fuzz.targets import start_target
    from server.config import kafka_properties

    if (a.consumers < 1 or a.minutes < 0 or a.partitions < 1 or a.rate <= 0 or a.session_timeout_ms < 1
            or (a.drain_seconds is not None and a.drain_seconds <= 0)):
        raise BadInput("--consumers, --partitions, --rate, --session-timeout-ms and --drain-seconds must be positive, "
                       "--minutes >= 0")
    config = parse_config(a.config)  # the group settings of a target started for the run (serve, kafka-*)
    static = a.consumers if a.static == -1 else a.static
    if not 0 <= static <= a.consumers:
        raise BadInput(f"--static {a.static}: between 0 and --consumers ({a.consumers})")
    if a.churn is None:
        kinds = DYNAMIC_KINDS + (("static-restart",) if static else ())
    elif a.churn == "none":
        kinds = ()
    else:
        kinds = tuple(k.strip() for k in a.churn.split(",") if k.strip())
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown:
            raise BadInput(f"--churn: unknown kind(s) {', '.join(unknown)}; known: {', '.join(KINDS)}")
        if "static-restart" in kinds and not static:
            raise BadInput("--churn static-restart needs --static")
    reason = unavailable(a.client, a.java_version)
    if reason is not None:
        raise BadInput(f"--client {a.client}: {reason}")
    if a.target.startswith("kafka://") and not a.allow_remote:
        host = a.target[len("kafka://"):].rpartition(":")[0]
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise BadInput(f"--target {a.target}: not on loopback (use --allow-remote)")
    if a.observe_table is not None:
        if not a.observe:
            raise BadInput("--observe-table: the members are not observed (--no-observe)")
        load_table_or_profile(a.observe_table, "--observe-table")  # bad input before anything starts
    if a.observe_accept is not None and not os.path.isfile(a.observe_accept):
        raise BadInput(f"--observe-accept {a.observe_accept}: no such file")
    output_dir(a.report, "--report", "report.json", create=True)
    signal.signal(signal.SIGTERM, _terminated)  # like Ctrl-C: stop the members (own sessions) and the target
    plan = ChurnPlan(minutes=a.minutes, seed=a.seed, kinds=kinds)
    with contextlib.ExitStack() as stack:
        try:
            host, port = stack.enter_context(start_target(a.target, config, tuple(a.bug)))
        except BadInput:
            raise
        except Exception as exc:  # noqa: BLE001 - a target that cannot start makes the run incomplete
            raise Incomplete(f"--target {a.target}: could not start or reach it: {type(exc).__name__}: {exc}") from None
        proxy = None
        bootstrap = f"{host}:{port}"
        if a.observe:
            try:
                profile = a.observe_profile or (a.target if a.target in ("kafka-3.9", "kafka-4") else None)
                # a target started for the run has known settings: observe judges with them
                started = a.target in ("serve", "reference") or a.target.startswith("kafka-")
                known = kafka_properties(config) if started else None
                proxy = stack.enter_context(observing(bootstrap, os.path.join(a.report, OBSERVE_DIR),
                                                      profile, a.observe_accept, known, a.observe_table))
            except ObserveFailed as exc:
                raise Incomplete(f"--observe: {exc}") from None
            bootstrap = proxy.bootstrap
        w = Workload(client=a.client, bootstrap=bootstrap, partitions=a.partitions, consumers=a.consumers,
                     rate=a.rate, session_timeout_ms=a.session_timeout_ms,
                     heartbeat_interval_ms=max(1, a.session_timeout_ms // 10), java_version=a.java_version)
        # observe ending by itself (e.g. --observe-table's atom raised) ends the churn too
        result = churn_run(w, plan, static=static, drain_s=a.drain_seconds,
                           stopped=proxy.ended if proxy is not None else lambda: False)
    # the ExitStack has stopped observe (its report written) and then the target
    observed = proxy.outcome if proxy is not None else None
    doc = write_report(a.report, result, a.target, observed.summary() if observed is not None else None)
    v = result.result.verdict
    judged = (f"observe {observed.findings} findings in {len(observed.classes)} classes; "
              if observed is not None else "not observed; ")
    sys.stdout.write(f"groupspec clients: {doc['client']} x{a.consumers} against {a.target}: "
                     f"{v.produced} records acknowledged, {v.consumed} consumed, {len(v.generations)} generations, "
                     f"churn {doc['churn']['actions_by_kind'] or 'none'}; {judged}violations "
                     f"{doc['violations_by_kind']}; report in {a.report}\n")
    # observe ending by itself comes first: the members lost their proxy with it, so what they did
    # not consume after that is not the target's doing
    if observed is not None and observed.exit_code == EXIT_BAD_INPUT:  # e.g. --observe-table's atom raised
        said = observed.stderr_tail[-1] if observed.stderr_tail else "no message"
        raise BadInput(f"observe stopped: {said.removeprefix('groupspec observe: ')}")
    if observed is not None and observed.exit_code not in (0, 1):
        raise Incomplete(f"groupspec observe ended with exit {observed.exit_code} (3: the upstream failed); "
                         f"see {a.report}/observe")
    if v.violations or (observed is not None and observed.findings):
        return EXIT_VIOLATION
    if not result.drain_completed or result.result.bad_lines:
        raise Incomplete("the group did not drain after the churn (or a member printed lines that are not "
                         f"events); see {a.report}/report.md")
    return EXIT_OK

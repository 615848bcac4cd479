"""`groupspec clients`: real client libraries in one consumer group against a broker, with churn,
checked against the end-to-end promise (clients/churn.py, clients/promise.py, clients/report.py).

Exit 0 the promise held and the group drained, 1 a violation, 2 bad input, 3 incomplete (the group
did not drain, a member never printed its events, or the target could not be started), 130
interrupted (members are stopped; no report).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Final

from model.coordinator_api import CoordinatorConfig
from model.errors import EXIT_OK, BadInput, Incomplete

from groupspec.options import output_dir

HELP: Final = "real clients (kafka-python, librdkafka, Java) in one group with churn, end to end"
DESCRIPTION: Final = (
    "Start real consumer processes of one client library in one group on a topic of several partitions; "
    "each produces, consumes and commits while members are stopped, killed, paused past their session "
    "timeout and restarted at random times from a seed; then check that every acknowledged record was "
    "consumed, no partition had two owners in one generation, and commits never went backwards.")
EPILOG: Final = ("Exit status: 0 the promise held, 1 a violation, 2 bad input, 3 incomplete, 130 interrupted. "
                 "The report (report.json, report.md, events.jsonl) goes to --report DIR.")
EXIT_VIOLATION: Final = 1


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
    p.add_argument("--static", action="store_true",
                   help="static members (group.instance.id per slot; restarts come back as the same member)")
    p.add_argument("--churn", default=None, metavar="KINDS",
                   help=f"comma-separated churn kinds of {', '.join(KINDS)}, or none (default: stop,kill,pause,"
                        "restart, plus static-restart with --static)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the churn schedule (default 0)")
    p.add_argument("--partitions", type=int, default=6, metavar="P", help="partitions of the topic (default 6)")
    p.add_argument("--rate", type=float, default=50.0, metavar="R",
                   help="records a second each member produces (default 50)")
    p.add_argument("--session-timeout-ms", type=int, default=10000, metavar="MS",
                   help="the members' session.timeout.ms (default 10000)")
    p.add_argument("--bug", action="append", default=[], metavar="NAME",
                   help="seeded bug of --target serve (repeatable)")
    p.add_argument("--allow-remote", action="store_true", help="allow a kafka://HOST:PORT target off loopback")
    p.add_argument("--report", required=True, metavar="DIR", help="write report.json, report.md, events.jsonl in DIR")


def run(a: argparse.Namespace) -> int:
    from clients.churn import DYNAMIC_KINDS, KINDS, ChurnPlan, churn_run
    from clients.group import Workload, unavailable
    from clients.report import write_report
    from fuzz.targets import start_target as _target

    if a.consumers < 1 or a.minutes < 0 or a.partitions < 1 or a.rate <= 0 or a.session_timeout_ms < 1:
        raise BadInput("--consumers, --partitions, --rate and --session-timeout-ms must be positive, "
                       "--minutes >= 0")
    if a.churn is None:
        kinds = DYNAMIC_KINDS + (("static-restart",) if a.static else ())
    elif a.churn == "none":
        kinds = ()
    else:
        kinds = tuple(k.strip() for k in a.churn.split(",") if k.strip())
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown:
            raise BadInput(f"--churn: unknown kind(s) {', '.join(unknown)}; known: {', '.join(KINDS)}")
        if "static-restart" in kinds and not a.static:
            raise BadInput("--churn static-restart needs --static")
    reason = unavailable(a.client, a.java_version)
    if reason is not None:
        raise BadInput(f"--client {a.client}: {reason}")
    if a.target.startswith("kafka://") and not a.allow_remote:
        host = a.target[len("kafka://"):].rpartition(":")[0]
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise BadInput(f"--target {a.target}: not on loopback (use --allow-remote)")
    output_dir(a.report, "--report", "report.json", create=True)
    plan = ChurnPlan(minutes=a.minutes, seed=a.seed, kinds=kinds)
    with contextlib.ExitStack() as stack:
        try:
            host, port = stack.enter_context(_target(a.target, CoordinatorConfig(), tuple(a.bug)))
        except BadInput:
            raise
        except Exception as exc:  # noqa: BLE001 - a target that cannot start makes the run incomplete
            raise Incomplete(f"--target {a.target}: could not start or reach it: {type(exc).__name__}: {exc}") from None
        w = Workload(client=a.client, bootstrap=f"{host}:{port}", partitions=a.partitions, consumers=a.consumers,
                     rate=a.rate, session_timeout_ms=a.session_timeout_ms,
                     heartbeat_interval_ms=max(1, a.session_timeout_ms // 10), java_version=a.java_version)
        result = churn_run(w, plan, static=a.static)
    doc = write_report(a.report, result, a.target)
    v = result.result.verdict
    sys.stdout.write(f"groupspec clients: {doc['client']} x{a.consumers} against {a.target}: "
                     f"{v.produced} records acknowledged, {v.consumed} consumed, {len(v.generations)} generations, "
                     f"churn {doc['churn']['actions_by_kind'] or 'none'}; violations "
                     f"{doc['violations_by_kind']}; report in {a.report}\n")
    if v.violations:
        return EXIT_VIOLATION
    if not result.drain_completed or result.result.bad_lines:
        raise Incomplete("the group did not drain after the churn (or a member printed lines that are not "
                         f"events); see {a.report}/report.md")
    return EXIT_OK

"""`groupspec fuzz`: model-drawn request sequences against a broker, judged, shrunk, classified
(fuzz/cli.py). Exit 0 nothing found, 1 findings, 2 bad usage, 3 incomplete (the target was
unreachable or errored, nothing could be judged, or more than 5 % of the groups were
inconclusive), 130 interrupted (the report says so).
"""

from __future__ import annotations

import argparse
from typing import Final

from model.atomic import check_writable
from model.errors import BadInput

from fuzz.allowances import ALLOWANCES, PROFILES, allowances_in_force
from fuzz.cli import FUZZ_CONFIG, FuzzOptions
from groupspec.options import add_config_option, add_quiet, load_table_or_profile, output_dir, parse_config

HELP: Final = "fuzz a broker's coordinator with model-drawn request sequences"
DESCRIPTION: Final = "Model-drawn request sequences against a broker, judged, shrunk, classified."

_DEFAULT: Final = FuzzOptions(target="")


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = _DEFAULT
    p.add_argument("--target", required=True,
                   help="tansu (started for the run), serve (groupspec serve in this process), "
                        "kafka://HOST:PORT, or kafka-3.9 / kafka-4 (a Kafka broker started for the run)")
    p.add_argument("--minutes", type=float, default=d.minutes, metavar="M", help=f"how long to fuzz (default {d.minutes:g})")
    p.add_argument("--max-requests", type=int, default=d.max_requests, metavar="N",
                   help=f"stop after this many requests (default {d.max_requests:,})")
    p.add_argument("--stop-after-classes", type=int, default=None, metavar="N",
                   help="stop as soon as N finding classes are known (the sequences still running are "
                        "abandoned; the report says the run stopped early); default: run the whole time")
    p.add_argument("--seed", type=int, default=d.seed, metavar="S",
                   help=f"seed of the generated sequences (default {d.seed})")
    p.add_argument("--parallel", type=int, default=d.parallel, metavar="P",
                   help=f"groups fuzzed at once (default {d.parallel})")
    p.add_argument("--report", default=None, metavar="DIR",
                   help="write report.json, report.md and each class's minimal scenario (scenarios/) in DIR")
    p.add_argument("--bug", action="append", default=[], metavar="NAME",
                   help="seeded bug of --target serve (repeatable)")
    add_config_option(p, FUZZ_CONFIG)
    p.add_argument("--allow-remote", action="store_true", help="allow a kafka://HOST:PORT target off loopback")
    p.add_argument("--no-shrink", action="store_true", help="keep each class's first sequence, unshrunk")
    p.add_argument("--shrink-seconds", type=float, default=None, metavar="S",
                   help="how long shrinking may go on after the run (default: a tenth, >= 30 s)")
    p.add_argument("--no-commits", action="store_true",
                   help="no OffsetCommit/OffsetFetch (targets that check topic existence)")
    p.add_argument("--late-ms", type=int, default=d.late_ms, metavar="MS",
                   help=f"constant part of the timing slack: a timer due at d must have fired by d + the latency "
                        f"of the request that armed it + this + the latency of the neighbouring answers "
                        f"(default {d.late_ms})")
    p.add_argument("--response-bound-ms", type=int, default=d.response_bound_ms, metavar="MS",
                   help=f"an answer the model makes at t must come by t + this + the slack: the right answer "
                        f"later is a finding 'answered too late', none at all a no-response finding "
                        f"(default {d.response_bound_ms})")
    # timing: allowances and the target's settings (issue 22)
    p.add_argument("--allow", action="append", default=[], metavar="NAME",
                   help="also allow this departure from the model's timers (repeatable): "
                        + ", ".join(sorted(ALLOWANCES)) + ", or a profile's set ("
                        + ", ".join(sorted(PROFILES)) + "); the target's profile (kafka-3.9, kafka-4, "
                        "else strict) gives its own, and the report lists every one in force")
    p.add_argument("--table", default=None, metavar="PROFILE|MODULE:NAME",
                   help="judge by this transition table: a profile (kafka-3.9, kafka-4) or package.module:NAME; "
                        "default the target's profile's (kafka-4 for --target kafka-4, else kafka-3.9); the "
                        "generated sequences, the shrinking and the scenarios written follow it")
    p.add_argument("--session-ms", type=int, default=d.session_ms, metavar="MS",
                   help=f"the usual session timeout of the fuzzed clients (at least the minimum the broker "
                        f"allows); their rebalance timeouts and waits follow it. Longer suits a target that "
                        f"holds JoinGroups long (Tansu) (default {d.session_ms})")
    p.add_argument("--no-probe", action="store_true",
                   help="do not read the target's group settings first (DescribeConfigs, else probes "
                        "of the session bounds and the initial delay; a --config they contradict exits 2, "
                        "a property not given is judged as found); judge with --config and the defaults")
    add_quiet(p)
    _add_depth_arguments(p)


def _add_depth_arguments(p: argparse.ArgumentParser) -> None:
    """Going deep past known differences (docs/fuzz-accept.md)."""
    g = p.add_argument_group("known differences")
    g.add_argument("--accept", default=None, metavar="FILE",
                   help="accept file (docs/fuzz-accept.md): findings of the classes it lists are counted "
                        "and reported as accepted, and the judge adopts the target's answer and goes on")
    g.add_argument("--write-accept", default=None, metavar="FILE",
                   help="write an accept file listing this run's classes (and the --accept entries in force) "
                        "when the run ends; with --from-report DIR, from that report instead, without a run")
    g.add_argument("--from-report", default=None, metavar="DIR",
                   help="with --write-accept: read the classes from DIR/report.json of an earlier run "
                        "(no fuzzing; --target names whom the file is for)")
    g.add_argument("--accept-families", action="store_true",
                   help="with --write-accept: one entry per family (any row; the shared error pair or "
                        "differing fields) instead of one per class")
    g.add_argument("--no-guidance", action="store_true",
                   help="draw each action at random instead of steering towards rows not fired yet "
                        "(to measure what coverage guidance gives)")


def _check_depth_options(a: argparse.Namespace) -> None:
    from fuzz.accept import load_accept
    if a.from_report is not None and a.write_accept is None:
        raise BadInput("--from-report needs --write-accept FILE")
    if a.accept is not None:
        load_accept(a.accept)  # bad input before the target is started
    if a.write_accept is not None:
        check_writable(a.write_accept, "--write-accept")


def run(a: argparse.Namespace) -> int:
    _check_depth_options(a)
    if a.from_report is not None:
        from fuzz.cli import accept_from_report
        return accept_from_report(a.from_report, a.target, a.write_accept, a.accept_families)
    config = parse_config(a.config, FUZZ_CONFIG)
    if a.minutes <= 0 or a.parallel < 1 or a.max_requests < 1 or a.session_ms < 1 or (
            a.stop_after_classes is not None and a.stop_after_classes < 1):
        raise BadInput("--minutes, --parallel, --max-requests, --session-ms and --stop-after-classes must be positive")
    output_dir(a.report, "--report", "report.json", create=True)
    allowances_in_force(a.target, a.allow)  # an unknown --allow name: BadInput before anything starts
    table = (a.table, *load_table_or_profile(a.table, "--table")) if a.table else None
    options = FuzzOptions(target=a.target, minutes=a.minutes, max_requests=a.max_requests, seed=a.seed,
                          stop_after_classes=a.stop_after_classes,
                          parallel=a.parallel, report=a.report, bugs=tuple(a.bug), allow_remote=a.allow_remote,
                          shrink=not a.no_shrink, shrink_seconds=a.shrink_seconds, commits=not a.no_commits,
                          late_ms=a.late_ms, response_bound_ms=a.response_bound_ms, quiet=a.quiet,
                          allow=tuple(a.allow), probe=not a.no_probe,
                          config_given=tuple(c.partition("=")[0].strip() for c in a.config),
                          accept=a.accept, write_accept=a.write_accept, guided=not a.no_guidance,
                          accept_families=a.accept_families, table=table,
                          session_ms=a.session_ms)
    from fuzz.cli import fuzz
    return fuzz(options, config)

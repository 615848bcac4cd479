"""`groupspec observe`: a transparent Kafka proxy that judges a broker's group coordinator under
whatever traffic passes it (observe/run.py). Exit 0 no findings, 1 findings (after SIGTERM or
Ctrl-C, the report written), 2 bad usage, 3 the upstream failed or could not be started.
"""

from __future__ import annotations

import argparse
import os
from typing import Final

from model.coordinator_api import CoordinatorConfig
from model.errors import BadInput

from fuzz.allowances import ALLOWANCES, PROFILES, allowances_in_force
from groupspec.options import add_config_option, add_quiet, load_table_or_profile, output_dir, parse_config

HELP: Final = "a judging Kafka proxy: a broker's group coordinator under real client traffic"
DESCRIPTION: Final = (
    "Forward every request and answer between clients and a broker unchanged (Metadata and "
    "FindCoordinator answers point at the proxy's listeners), and judge every group API exchange in "
    "real time with the fuzzer's judge, using the broker's own group settings.")
EPILOG: Final = (
    "The first stdout line is 'groupspec observe: listening on 127.0.0.1:PORT'. On SIGTERM or Ctrl-C "
    "the report (report.json, report.md, report.html, scenarios/) is written to --report DIR. Exit "
    "status: 0 no findings, 1 findings, 2 bad usage, 3 the upstream failed (the report says so) or "
    "could not be started.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.add_argument("--listen", default="127.0.0.1:0", metavar="127.0.0.1:PORT",
                   help="where clients connect (default 127.0.0.1:0: a free port, printed on the first line)")
    p.add_argument("--upstream", required=True, metavar="TARGET",
                   help="the broker judged: kafka://HOST:PORT, or one started and stopped for the run: serve "
                        "(groupspec serve, with --bug), kafka-3.9, kafka-4, tansu")
    p.add_argument("--profile", default=None, choices=sorted(PROFILES),
                   help="the allowances the judge gives the broker (default: kafka-3.9 and kafka-4 for those "
                        "upstreams, strict for every other)")
    p.add_argument("--allow", action="append", default=[], metavar="NAME",
                   help="also allow this departure from the model's timers (repeatable): "
                        + ", ".join(sorted(ALLOWANCES)) + ", or a profile's set")
    p.add_argument("--table", default=None, metavar="PROFILE|MODULE:NAME",
                   help="judge by this transition table: a profile (kafka-3.9, kafka-4) or package.module:NAME "
                        "(a table of your own, or a mutant of check.mutants); default the profile's (kafka-4 for "
                        "kafka-4, else kafka-3.9). The report and each finding's scenario file name it")
    p.add_argument("--accept", default=None, metavar="FILE",
                   help="accept file (docs/fuzz-accept.md): findings of the classes it lists are reported as "
                        "accepted and the judge goes on")
    add_config_option(p, CoordinatorConfig())
    p.add_argument("--no-probe", action="store_true",
                   help="do not read the upstream's group settings first (DescribeConfigs, else probes); "
                        "judge with --config and the defaults")
    p.add_argument("--bug", action="append", default=[], metavar="NAME",
                   help="seeded bug of --upstream serve (repeatable; reference/bugs.py)")
    p.add_argument("--allow-remote", action="store_true", help="allow a kafka://HOST:PORT upstream off loopback")
    p.add_argument("--report", required=True, metavar="DIR",
                   help="write report.json, report.md, report.html and each finding's scenario (scenarios/) in DIR")
    add_quiet(p)


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise BadInput(f"--listen {text}: expected 127.0.0.1:PORT with PORT in 0..65535")
    if host not in ("127.0.0.1", "localhost"):
        raise BadInput(f"--listen {text}: observe listens on 127.0.0.1 only")
    return "127.0.0.1", int(port)


def run(a: argparse.Namespace) -> int:
    from fuzz.accept import load_accept
    from observe.run import ObserveOptions, observe

    host, port = _listen(a.listen)
    config = parse_config(a.config)
    if a.table is not None:
        load_table_or_profile(a.table, "--table")  # bad input before the upstream is started
    if a.accept is not None:
        load_accept(a.accept)  # bad input before the upstream is started
    allowances_in_force(a.profile or a.upstream, a.allow)  # an unknown --allow name: exit 2 now
    output_dir(a.report, "--report", "report.json", create=True)
    # (absolute: the report names its scenario files relative to it, whatever the working directory)
    options = ObserveOptions(upstream=a.upstream, report=os.path.abspath(a.report), listen_host=host, listen_port=port,
                             profile=a.profile, allow=tuple(a.allow), accept=a.accept, bugs=tuple(a.bug),
                             config_given=tuple(c.partition("=")[0].strip() for c in a.config),
                             probe=not a.no_probe, allow_remote=a.allow_remote, quiet=a.quiet,
                             table=a.table)
    return observe(options, config)

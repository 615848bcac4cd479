"""`groupspec scenario render FILE --html OUT [--itf OUT] [--scenario NAME] [--profile P | --table T]`.

Runs a scenario file on the model's concrete mode and draws each scenario as a sequence diagram
(render/sequence.py), or writes it as ITF (render/itf.py). Exit status: 0 every scenario ran clean
on the model; 1 some scenario's expectation failed on the model (it is drawn, the failing step
named); 2 bad input (no such file, a malformed one, an unknown scenario, table or path).
"""

from __future__ import annotations

import argparse
from typing import Final

from model.errors import BadInput

from groupspec.options import load_table_or_profile, output_file

HELP: Final = "draw scenario files as sequence diagrams (HTML) and export them as ITF"
DESCRIPTION: Final = (
    "Run a scenario file on the model and draw each scenario as a sequence diagram: clients and "
    "the coordinator as lifelines, requests, responses and timers as arrows, and beside each step "
    "the table rows it fired and the group state after it. The page is one self-contained HTML "
    "file that opens from file:// offline. --itf writes the same traces in the Apalache/Quint ITF "
    "JSON format.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="a scenario file (kafka-classic-group-conformance/1)")
    p.add_argument("--html", default=None, metavar="OUT",
                   help="write the sequence diagrams to this HTML page (every scenario of the file, "
                        "one section each)")
    p.add_argument("--itf", default=None, metavar="OUT",
                   help="write each scenario as an ITF trace: the first to OUT, the others beside it "
                        "numbered (s.itf.json, s-2.itf.json, ...)")
    p.add_argument("--scenario", default=None, metavar="NAME",
                   help="only the scenario of this name (default: every scenario of the file)")
    p.add_argument("--table", default=None, metavar="TABLE",
                   help="run on another table: a profile (kafka-3.9, kafka-4) or package.module:NAME "
                        "such as check.mutants:no-delayed-sync (default: the classic table)")
    p.add_argument("--site-root", default=None, metavar="URL",
                   help="link each row id to its page under this site root (the output of "
                        "groupspec render), e.g. ../site")


def run(a: argparse.Namespace) -> int:
    if a.html is None and a.itf is None:
        raise BadInput("nothing to write: give --html OUT, --itf OUT or both")
    output_file(a.html, "--html")
    output_file(a.itf, "--itf")
    table = load_table_or_profile(a.table, "--table")[0] if a.table is not None else None
    from render.itf import write_itfs
    from render.sequence import write_page
    from render.trace import trace_of_scenario, traces_of_scenarios
    traces = ([trace_of_scenario(a.file, a.scenario, table=table)] if a.scenario is not None
              else traces_of_scenarios(a.file, table=table))
    failed = [t for t in traces if t.violation is not None]
    for t in traces:
        verdict = f"FAILS on the model: {t.violation.message}" if t.violation is not None else "ok"
        print(f"{t.title}: {len(t.steps)} step(s), {verdict}")
    if a.html is not None:
        write_page(traces, a.html, a.site_root, title=f"{a.file}" if len(traces) > 1 else None,
                   empty=f"{a.file} holds no scenario.")
        print(f"page: {a.html}")
    if a.itf is not None:
        print(f"ITF: {', '.join(write_itfs(traces, a.itf))}")
    return 1 if failed else 0

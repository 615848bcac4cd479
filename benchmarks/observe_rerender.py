"""Re-render committed `groupspec clients` / `groupspec observe` reports from their report.json, so
that every file they name is relative to the report's directory (reports written before that rule
named their scenario files by absolute paths into the worktree that ran them).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/observe_rerender.py docs/clients/tansu-java ...

Each DIR is a `groupspec clients` report (report.json, report.md; observe's report in DIR/observe)
or an observe report itself (report.json with `traffic`). observe's report.json, report.md,
report.html and itf/ are rewritten by observe.report.write_report; the clients report's
report.json and report.md by clients.report (events.jsonl is left as it is). Run on
docs/clients/tansu-* on 2026-11-26 (commit 7db8213).
"""

from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from clients.report import OBSERVE_DIR, markdown, observe_relative  # noqa: E402
from model.atomic import write_text_atomic  # noqa: E402
from observe.report import write_report  # noqa: E402


def rerender_observe(directory: str) -> None:
    with open(os.path.join(directory, "report.json"), encoding="utf-8") as f:
        write_report(directory, json.load(f))


def rerender(directory: str) -> None:
    with open(os.path.join(directory, "report.json"), encoding="utf-8") as f:
        doc = json.load(f)
    if "traffic" in doc:
        rerender_observe(directory)
        return
    observe = doc.get("observe")
    inside = os.path.join(directory, OBSERVE_DIR)
    if observe and os.path.exists(os.path.join(inside, "report.json")):
        rerender_observe(inside)
        with open(os.path.join(inside, "report.json"), encoding="utf-8") as f:
            named = {c["class"]: c["scenario"] for c in json.load(f)["classes"]}
        # observe's summary as `groupspec clients` got it (scenarios named from observe's directory)
        observe = {**observe, "classes": [{**c, "scenario": named.get(c["class"], c.get("scenario"))}
                                          for c in observe["classes"]]}
    doc["observe"] = observe_relative(directory, observe)
    write_text_atomic(os.path.join(directory, "report.json"), json.dumps(doc, indent=1) + "\n")
    write_text_atomic(os.path.join(directory, "report.md"), markdown(doc))


def main(argv: list[str]) -> int:
    for directory in argv:
        rerender(directory)
        print(f"re-rendered {directory}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A fuzz report's findings as one page: report.html beside report.json.

Each class of finding in report.json names its scenario file (the shrunk sequence, written with
the model's answers as expectations). Run on the model, that scenario is the trace the target
should have followed; the page draws it and names, at the step where the target departed, what
the model allows and what the target answered.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any, Optional

from model.dsl import Table
from model.errors import BadInput

from render.itf import write_itf
from render.sequence import RowLink, write_page
from render.trace import Trace, Violation, trace_of_scenario


def _finding_step(t: Trace, scenario_path: str, api: str) -> Optional[int]:
    """The trace step of the request whose answer the scenario's last expectation checks."""
    try:
        with open(scenario_path, encoding="utf-8") as f:
            steps = json.load(f)["scenarios"][0]["steps"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        steps = []
    ids = {s.get("id"): i for i, s in enumerate(steps) if isinstance(s, dict) and s.get("id")}
    checked = [i for i, s in enumerate(steps) if isinstance(s, dict) and "expect" in s]
    if checked:
        last = steps[checked[-1]]
        index = ids.get(last.get("id"), checked[-1]) if last.get("op") == "check_response" else checked[-1]
        for s in t.steps:
            if s.note.startswith(f"scenario step {index} ("):
                return s.index
    mine = [s.index for s in t.steps if s.cause.kind == "request" and s.cause.label.startswith(api)]
    return mine[-1] if mine else None


def relative_to(directory: str, path: Optional[str]) -> Optional[str]:
    """A finding's scenario file as a report in `directory` names it: relative to that directory,
    so that the report still points at it once the directory is moved or committed. An absolute path
    outside `directory` (a report moved since it was written) names its file in `directory`'s
    scenarios/ if that holds one of the same name."""
    if path is None or not os.path.isabs(path):
        return path
    here = os.path.abspath(directory)
    if os.path.commonpath([here, path]) == here:
        return os.path.relpath(path, here)
    moved = os.path.join("scenarios", os.path.basename(path))
    return moved if os.path.exists(os.path.join(here, moved)) else path


def scenario_file(report_dir: str, cls: dict[str, Any]) -> tuple[str, str]:
    """A class's scenario file: (the path to open, the name the page gives it: relative to
    report_dir, so that no page or ITF file points outside its report). report.json names it
    relative to its own directory (observe) or as the fuzzer wrote it (relative to where it ran,
    or absolute)."""
    named = str(cls["scenario"])
    path = named
    if not os.path.isabs(named):
        inside = os.path.join(report_dir, named)
        path = inside if os.path.exists(inside) or not os.path.exists(named) else named
    return path, os.path.relpath(path, report_dir)


def trace_of_finding(report_dir: str, cls: dict[str, Any], target: str, table: Optional[Table] = None) -> Trace:
    """One class of report.json as a trace: its scenario on the model (running `table`, the one the
    target was judged by; None: Kafka 3.9's), the finding named."""
    path, shown = scenario_file(report_dir, cls)
    t = replace(trace_of_scenario(path, kind="finding", table=table), source=shown)
    api = str(cls.get("api", ""))
    expected = json.dumps(cls.get("expected"))
    actual = json.dumps(cls.get("actual"))
    text = f"{api}: the model allows {expected}; {target} answered {actual}"
    if t.violation is not None:  # the sequence does not even run as recorded on the model
        text += f" (and on the model the scenario fails: {t.violation.message})"
    rows = ", ".join(cls.get("rows", [])) or "(none recorded)"
    v = Violation(f"{target} departs from the model",
                  f"Every answer must be one the model allows; here the model's rows are {rows}.",
                  text, _finding_step(t, path, api))
    notes = (f"Seen {cls.get('count', 1)} time(s); shrunk from {cls.get('original_steps', '?')} actions to "
             f"{len(cls.get('steps', []))}. Scenario check: {cls.get('scenario_check', 'not checked')}.",
             f"The diagram is the model's run of {shown}: what {target} should have answered.")
    return replace(t, title=f"{api}: {str(cls.get('class', '')).split('|')[-1]}", violation=v,
                   notes=notes + t.notes)


def _facts(doc: dict[str, Any]) -> list[str]:
    """What the report says of its run, in words: a fuzz run's seed, time, requests and sequences;
    observe's time, forwarded requests and how much of its groups' traffic was judged."""
    if "group_requests" in doc:  # groupspec observe: real traffic, no seed, groups instead of sequences
        groups = doc.get("groups")
        facts = [f"{doc['seconds']} s" if doc.get("seconds") is not None else "",
                 f"{doc['requests']} requests forwarded" if doc.get("requests") is not None else "",
                 f"{len(groups) if isinstance(groups, list) else '?'} group(s): {doc['group_requests']} group requests, "
                 f"{doc.get('judged_requests', '?')} answers judged, "
                 + (f"{doc['closed_unanswered']} never answered (connection closed), " if "closed_unanswered" in doc else "")
                 + f"{doc.get('inconclusive_groups', '?')} group(s) inconclusive"]
        return [f for f in facts if f]
    return [f"{label} {doc[key]}" if label.startswith("seed") else f"{doc[key]} {label}"
            for key, label in (("seed", "seed"), ("seconds", "s"), ("requests", "requests"), ("sequences", "sequences"))
            if doc.get(key) is not None]


def write_report_html(report_dir: str, site_root: Optional[str] = None,
                      row_link: Optional[RowLink] = None) -> str:
    """Read report_dir/report.json and the findings' scenario files; write report_dir/report.html
    with each finding's sequence diagram, and each finding's trace as ITF under report_dir/itf/. Returns its path. A missing or malformed report.json is
    BadInput."""
    path = os.path.join(report_dir, "report.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        target = str(doc["target"])
        classes = list(doc["classes"])
    except OSError as e:
        raise BadInput(f"{path}: cannot read the fuzz report: {e.strerror or e}") from e
    except (ValueError, KeyError, TypeError) as e:
        raise BadInput(f"{path}: not a groupspec fuzz report ({type(e).__name__}: {e})") from e
    table, drawn_on = _judged_table(doc)
    traces, undrawn = [], []
    for c in classes:
        if c.get("scenario"):
            traces.append(trace_of_finding(report_dir, c, target, table))
            _write_finding_itf(report_dir, str(c["scenario"]), traces[-1])
        else:
            undrawn.append(str(c.get("class")))
    facts = _facts(doc)
    intro = [f"Target {target}, {', '.join(facts)}; {doc.get('findings')} finding(s) in "
             f"{len(classes)} class(es)" + (" (interrupted: incomplete)" if doc.get("interrupted") else "") + "."]
    if drawn_on:
        intro.append(drawn_on)
    if undrawn:
        intro.append(f"{len(undrawn)} class(es) have no scenario file and are not drawn: {'; '.join(undrawn)}.")
    out = os.path.join(report_dir, "report.html")
    write_page(traces, out, site_root, title=f"{doc.get('tool', 'groupspec fuzz')} report: {target}", row_link=row_link,
               intro=intro, empty="No finding: the target answered as the model allows.")
    return out


def _judged_table(doc: dict[str, Any]) -> tuple[Optional[Table], str]:
    """The table the report's target was judged by (report.json `table`: a profile or
    package.module:NAME, as --table took it), to draw its findings on, and a sentence for the page
    when it is not Kafka 3.9's: which table, or that it could not be loaded here (a user's module not
    importable where the report is rendered) and the diagrams show Kafka 3.9's model instead."""
    from check.profiles import table_or_profile

    name = doc.get("table")
    if not isinstance(name, str) or name == "kafka-3.9":
        return None, ""
    try:
        return table_or_profile(name, "the report's table")[0], f"Judged by table {name}; the diagrams run it."
    except BadInput as e:
        return None, (f"Judged by table {name}, which cannot be loaded here ({e}): the diagrams run "
                      "Kafka 3.9's table instead, so they may not show what the target was held to.")


def _write_finding_itf(report_dir: str, scenario: str, t: Trace) -> None:
    """The finding's trace as ITF: report_dir/itf/NAME.itf.json for scenario NAME.json (a folder of
    its own, so that `scenario run DIR/scenarios/*.json` never picks ITF files up)."""
    folder = os.path.join(report_dir, "itf")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise BadInput(f"{folder}: cannot create the ITF folder: {e.strerror or e}") from e
    stem = os.path.basename(scenario).removesuffix(".json")
    write_itf(t, os.path.join(folder, f"{stem}.itf.json"))


__all__ = ["relative_to", "scenario_file", "trace_of_finding", "write_report_html"]

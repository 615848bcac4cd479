"""The report of a `groupspec clients` run: report.json, report.md and events.jsonl in one directory.

report.json holds the workload, the churn plan and what was done when, the promise's verdict (counts
per kind and every violation), what each member did (events by kind, exit code) and the driver's
timeline. report.md says the same for a person. events.jsonl is every event every member printed,
in time order (clients/events.py), so a violation can be traced back to the lines behind it.
Files are written by model.atomic (the one writer).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import asdict
from typing import Any, Final, Optional

from model.atomic import write_text_atomic
from render.findings import relative_to

from clients.churn import ChurnRun
from clients.promise import KINDS

LISTED: Final = 200  # violations listed in report.md (report.json lists all)
OBSERVE_DIR: Final = "observe"  # observe's report, inside the run's report directory


def report_doc(run: ChurnRun, target: str, observe: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    r = run.result
    v = r.verdict
    w = r.workload
    members: dict[str, dict[str, Any]] = {}
    for name, code in r.exit_codes.items():
        kinds = Counter(e.ev for e in r.events if e.name == name)
        members[name] = {"exit_code": code, "events": dict(sorted(kinds.items())),
                         "client": next((e["client"] for e in r.events if e.name == name and e.ev == "started"), None)}
    return {
        "target": target,
        "client": w.client if w.client != "java" else f"java (kafka-clients {w.java_version})",
        "workload": {k: val for k, val in asdict(w).items() if k != "bootstrap"},
        "static": run.static,
        "churn": {"minutes": run.plan.minutes, "seed": run.plan.seed, "kinds": list(run.plan.kinds),
                  "gap_s": list(run.plan.gap_s), "down_s": list(run.plan.down_s),
                  "actions": [asdict(a) for a in run.actions],
                  "actions_by_kind": dict(sorted(Counter(a.kind for a in run.actions).items()))},
        "drained": run.drain_completed,
        "produced": v.produced, "consumed": v.consumed, "deliveries": v.deliveries, "duplicates": v.duplicates,
        "generations": list(v.generations), "commits": v.commits,
        "commit_failures": sum(1 for e in r.events if e.ev == "commit_failed"),
        "client_errors": sum(1 for e in r.events if e.ev == "error"),
        "client_logs": sum(1 for e in r.events if e.ev == "client_log"),
        "violations_by_kind": {k: v.count(k) for k in KINDS},
        "observe": observe,  # the judging proxy's summary (clients/observer.py), or None: not observed
        "violations": [asdict(x) for x in v.violations],
        "members": members,
        "bad_event_lines": list(r.bad_lines),
        "exits": [asdict(a) for a in run.exits],
        "timeline": list(r.notes),
    }


def markdown(doc: dict[str, Any]) -> str:
    churn = doc["churn"]
    verdict = "kept" if not doc["violations"] else f"**broken: {len(doc['violations'])} violation(s)**"
    lines = [f"# groupspec clients: {doc['client']} against {doc['target']}", "",
             f"- {doc['workload']['consumers']} members{_static(doc)}, topic "
             f"{doc['workload']['topic']} ({doc['workload']['partitions']} partitions), {churn['minutes']:g} min "
             f"of churn, seed {churn['seed']}; churn done: "
             f"{', '.join(f'{k} {n}' for k, n in churn['actions_by_kind'].items()) or 'none'}",
             f"- the end-to-end promise: {verdict} "
             f"({', '.join(f'{k} {n}' for k, n in doc['violations_by_kind'].items())})",
             f"- records: {doc['produced']} acknowledged, {doc['consumed']} consumed, {doc['duplicates']} "
             f"duplicate deliveries; {len(doc['generations'])} generations; {doc['commits']} commits, "
             f"{doc['commit_failures']} commit failures; {doc['client_errors']} client errors, "
             f"{doc.get('client_logs', 0)} client warnings logged",
             f"- drained after the churn: {'yes' if doc['drained'] else 'no (timed out)'}",
             f"- {_observed(doc.get('observe'))}", ""]
    observe = doc.get("observe")
    if observe and observe["classes"]:
        lines += ["## observe's findings (report in observe/)", "", "| count | class | scenario |", "|---|---|---|"]
        lines += [f"| {c['count']} | {str(c['class']).replace('|', chr(92) + '|')} | "
                  + (f"[{c['scenario']}]({c['scenario']})" if c["scenario"] else "-") + " |"
                  for c in observe["classes"]]
        lines.append("")
    if doc["violations"]:
        lines += ["## Violations", ""]
        lines += [f"- {x['kind']}: {x['detail']}" for x in doc["violations"][:LISTED]]
        if len(doc["violations"]) > LISTED:
            lines.append(f"- ... {len(doc['violations']) - LISTED} more in report.json")
        lines.append("")
    lines += ["## Members", "", "| member | client | exit | events |", "|---|---|---|---|"]
    for name, m in doc["members"].items():
        events = ", ".join(f"{k} {n}" for k, n in m["events"].items())
        lines.append(f"| {name} | {m['client'] or '-'} | {m['exit_code']} | {events} |")
    lines += ["", "## Timeline", "", "```", *doc["timeline"], "```", ""]
    return "\n".join(lines)


def _observed(observe: Optional[dict[str, Any]]) -> str:
    if not observe:
        return "judged by observe: no (the members talked to the target directly)"
    extra = ", ".join(f"{k.replace('_', ' ')} {observe[k]}" for k in
                      ("requests", "group_requests", "judged_requests", "closed_unanswered", "inconclusive_groups",
                       "unparsed")
                      if observe.get(k) is not None)
    table = f", table {observe['table']}" if observe.get("table") else ""
    return (f"judged by observe (profile {observe.get('profile')}{table}; every request of the members went through it): "
            f"**{observe['findings']} findings** in {len(observe['classes'])} classes, exit {observe['exit_code']}"
            + (f"; {extra}" if extra else "") + (f"; upstream error: {observe['target_error']}"
                                                 if observe.get("target_error") else ""))


def _static(doc: dict[str, Any]) -> str:
    k, n = doc["static"], doc["workload"]["consumers"]
    return "" if not k else " (static)" if k == n else f" ({k} static, {n - k} dynamic)"


def observe_relative(directory: str, observe: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """observe's summary with each finding's scenario file named relative to `directory` (observe's
    report, in OBSERVE_DIR inside `directory`, names them relative to its own directory)."""
    if not observe:
        return observe
    inside = os.path.join(directory, OBSERVE_DIR)

    def named(path: Optional[str]) -> Optional[str]:
        path = relative_to(inside, path)
        return os.path.join(OBSERVE_DIR, path) if path and not os.path.isabs(path) else path

    return {**observe, "classes": [{**c, "scenario": named(c.get("scenario"))} for c in observe["classes"]]}


def write_report(directory: str, run: ChurnRun, target: str,
                 observe: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    doc = report_doc(run, target, observe_relative(directory, observe))
    write_text_atomic(os.path.join(directory, "report.json"), json.dumps(doc, indent=1) + "\n")
    write_text_atomic(os.path.join(directory, "report.md"), markdown(doc))
    write_text_atomic(os.path.join(directory, "events.jsonl"), "".join(
        json.dumps({"ev": e.ev, "t": e.t, "name": e.name, **e.fields}) + "\n" for e in run.result.events))
    return doc

"""observe's report: the fuzz report's format (classes, families, accepted differences; JSON,
Markdown and the findings page), with what passed the proxy in place of what the fuzzer sent."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from model.atomic import write_text_atomic
from server.config import kafka_properties

from fuzz.allowances import ALLOWANCES, Profile
from fuzz.cli import findings_markdown
from fuzz.families import families
from fuzz.judge import Tolerance
from fuzz.probe import TargetSettings
from observe.judging import Judging, accepted_json
from render.findings import relative_to, write_report_html

@dataclass
class Counts:
    """What passed the proxy, for the report."""

    connections: int = 0
    requests: int = 0  # request frames forwarded
    # request frames forwarded per API (Kafka's name; "key N" for an API neither the codec nor the
    # data plane names): which traffic went through the proxy (Fetch and Produce only do if
    # Metadata's broker addresses were rewritten)
    requests_by_api: dict[str, int] = field(default_factory=dict)
    answers: int = 0  # answer frames forwarded
    bytes_up: int = 0
    bytes_down: int = 0
    rewritten: dict[str, int] = field(default_factory=lambda: {"Metadata": 0, "FindCoordinator": 0})
    unparsed_requests: int = 0
    unparsed_answers: int = 0
    unframed_streams: int = 0  # connections whose bytes stopped being frames (forwarded raw)
    unparsed_examples: list[str] = field(default_factory=list)
    upstream_refused: int = 0

    def request(self, api: str) -> None:
        self.requests += 1
        self.requests_by_api[api] = self.requests_by_api.get(api, 0) + 1

    def unparsed(self, what: str) -> None:
        if len(self.unparsed_examples) < 20:
            self.unparsed_examples.append(what)


SCENARIO_CHECK = ("not shrunk, not replayed: real traffic cannot be re-run; the scenario is the group's "
                  "exchange up to the finding, its pauses as advance steps")


def report(judging: Judging, counts: Counts, *, backlog: int, judge_cpu_s: float, unjudged: int, target: str,
           upstream: str, listen: str, profile: Profile,
           tol: Tolerance, found: Optional[TargetSettings], accept_file: Optional[str], upstream_error: str,
           stopped_by: str) -> dict[str, Any]:
    el = time.monotonic() - judging.started
    classes = []
    for rec in judging.classes.values():
        f = rec.finding
        group = judging.groups[rec.group_id]
        steps = [f"{ev.request.api_key.name} v{ev.version}" for ev in group.events
                 if ev.kind == "send" and ev.request is not None]
        classes.append({
            "class": rec.key, "api": f.api, "api_version": f.api_version, "state": list(f.state),
            "rows": list(f.rows), "expected": list(f.expected), "actual": f.actual, "count": rec.count,
            "first_seen_s": round(rec.first_seen_s, 3), "group": rec.group_id, "scenario": rec.scenario,
            "steps": steps, "original_steps": len(steps), "shrink_runs": 0,
            "scenario_check": SCENARIO_CHECK, "replays_as_found": None})
    groups = [{"group": g.group_id, "requests": g.requests, "judged": g.judge.judged,
               "closed_unanswered": g.closed, "judging": "ended: " + g.ended if g.ended else "to the end"}
              for g in judging.groups.values()]
    rows = judging.covered_rows()
    return {
        "tool": "groupspec observe", "target": target, "upstream": upstream, "listen": listen,
        # (what the findings page, render/findings.py, says in its first line)
        "seed": "none (real traffic)", "requests": counts.requests, "sequences": len(groups),
        "stopped_by": stopped_by, "interrupted": False, "seconds": round(el, 1),
        "config": kafka_properties(judging.config),
        "tolerance": {"early_ms": tol.early_ms, "late_ms": tol.late_ms,
                      "response_bound_ms": tol.response_bound_ms, "neighbour_ms": tol.neighbour_ms,
                      "stale_expiry_ms": tol.stale_expiry_ms},
        "profile": profile.name, "table": judging.table_name,
        "allowances": {a: ALLOWANCES[a] for a in sorted(tol.allowances)},
        "target_settings": found.as_json() if found is not None else "not read (--no-probe)",
        "target_error": upstream_error,
        "traffic": {"connections": counts.connections, "requests": counts.requests, "answers": counts.answers,
                    "bytes_up": counts.bytes_up, "bytes_down": counts.bytes_down,
                    "rewritten": dict(counts.rewritten), "upstream_refused": counts.upstream_refused,
                    "requests_by_api": dict(sorted(counts.requests_by_api.items()))},
        "unparsed": {"requests": counts.unparsed_requests, "answers": counts.unparsed_answers,
                     "unframed_streams": counts.unframed_streams, "examples": list(counts.unparsed_examples)},
        "group_requests": judging.requests, "judged_requests": judging.judged(),
        # requests whose connection closed before an answer (a member killed or gone): none to judge
        "closed_unanswered": sum(g.closed for g in judging.groups.values()),
        "judge_seconds": round(judging.judge_seconds, 3), "judge_cpu_s": round(judge_cpu_s, 3),
        "judge_backlog_max": backlog, "unjudged_at_stop": unjudged,
        "groups": groups, "inconclusive_groups": sum(1 for g in judging.groups.values()
                                                     if g.ended.startswith("inconclusive")),
        "inconclusive_reasons": judging.inconclusive_reasons,
        "rows_covered": sorted(rows), "rows_total": len(judging.table.rows),
        "findings": judging.findings, "families": families(classes), "classes": classes,
        "accept_file": accept_file, "accepted": accepted_json(judging.accepted),
    }


def markdown(doc: dict[str, Any]) -> str:
    t, u = doc["traffic"], doc["unparsed"]
    settings = doc["target_settings"]
    lines = [f"# groupspec observe report: {doc['target']}", "",
             f"- {doc['seconds']} s through {doc['listen']} to {doc['upstream']}; stopped by {doc['stopped_by']}"
             + (f"; **the upstream failed**: {doc['target_error']}" if doc["target_error"] else ""),
             f"- traffic: {t['connections']} connections, {t['requests']} requests, {t['answers']} answers "
             f"({t['bytes_up']} bytes up, {t['bytes_down']} down); answers rewritten: "
             + ", ".join(f"{k} {v}" for k, v in t["rewritten"].items())
             + ("; requests by API: " + ", ".join(f"{k} {v}" for k, v in t["requests_by_api"].items())
                if t.get("requests_by_api") else ""),
             f"- not parsed, forwarded unchanged: {u['requests']} requests, {u['answers']} answers, "
             f"{u['unframed_streams']} streams that stopped being frames"
             + ("".join(f"\n  - {x}" for x in u["examples"]) if u["examples"] else ""),
             "- target settings: " + (", ".join(
                 f"{k}={v['value'] if v['value'] is not None else '?'} ({v['source']})" for k, v in settings.items())
                 if isinstance(settings, dict) else str(settings))
             + f"; judged with {', '.join(f'{k}={v}' for k, v in doc['config'].items())}",
             f"- judged with profile `{doc['profile']}` (table `{doc.get('table', 'kafka-3.9')}`); allowances in force: "
             + (", ".join(f"`{a}` ({why})" for a, why in doc["allowances"].items()) or "none (strict)"),
             f"- group API requests judged {doc['group_requests']} ({doc['judged_requests']} answers judged"
             + (f", {doc['closed_unanswered']} never answered: their connection closed first" if "closed_unanswered" in doc
                else ", never-answered requests not counted (an older report)") + ") in "
             f"{len(doc['groups'])} groups, {doc['inconclusive_groups']} inconclusive; rows covered "
             f"{len(doc['rows_covered'])}/{doc['rows_total']}; judging took {doc['judge_seconds']} s" + _judge_load(doc),
             f"- findings {doc['findings']} in {len(doc['classes'])} classes, {len(doc['families'])} families",
             "", "## Groups", "", "| group | requests | answers judged | never answered (closed) | judging |",
             "|---|---|---|---|---|"]
    lines += [f"| `{g['group']}` | {g['requests']} | {g['judged']} | {g.get('closed_unanswered', 'not counted')} | "
              f"{g['judging'].replace('|', chr(92) + '|')} |" for g in doc["groups"]]
    lines.append("")
    return "\n".join(lines + findings_markdown(doc)) + "\n"


def _judge_load(doc: dict[str, Any]) -> str:
    """What the judge process's load was, as far as the report holds it (reports written before its
    own process have none of it)."""
    parts = []
    if doc.get("judge_cpu_s") is not None:
        parts.append(f"{doc['judge_cpu_s']} s CPU in its own process")
    if doc.get("judge_backlog_max") is not None:
        parts.append(f"at most {doc['judge_backlog_max']} observations waited for it")
    if doc.get("unjudged_at_stop"):
        parts.append(f"**{doc['unjudged_at_stop']} observations still queued a minute after the stop were left "
                     "unjudged**")
    return f" ({'; '.join(parts)})" if parts else ""


def write_report(directory: str, doc: dict[str, Any]) -> None:
    """report.json, report.md and report.html (with its itf/) in `directory`; the scenario files
    the doc names are made relative to `directory` first (in `doc` itself)."""
    for c in doc["classes"]:
        c["scenario"] = relative_to(directory, c.get("scenario"))
    for f in doc["families"]:
        f["example"]["scenario"] = relative_to(directory, f["example"].get("scenario"))
    write_text_atomic(os.path.join(directory, "report.json"), json.dumps(doc, indent=1) + "\n")
    write_text_atomic(os.path.join(directory, "report.md"), markdown(doc))
    write_report_html(directory)


def summary_line(doc: dict[str, Any]) -> str:
    u = doc["unparsed"]
    return (f"groupspec observe: {doc['findings']} findings in {len(doc['classes'])} classes, "
            f"{doc['group_requests']} group requests judged in {len(doc['groups'])} groups "
            f"({doc['inconclusive_groups']} inconclusive), {doc['traffic']['requests']} requests forwarded, "
            f"{u['requests'] + u['answers']} frames not parsed"
            + (f", {doc['unjudged_at_stop']} observations left unjudged at the stop" if doc["unjudged_at_stop"] else "")
            + f"; profile {doc['profile']}, table {doc.get('table', 'kafka-3.9')}")


__all__ = ["Counts", "markdown", "report", "summary_line", "write_report"]

"""A trace as ITF, the Informal Trace Format of Apalache and Quint (JSON).

`{"#meta": ..., "vars": [...], "states": [...]}`: one state for the initial group and one after
each step, every state holding every variable. Integers are `{"#bigint": "..."}` (as Quint
writes them), sets `{"#set": [...]}`, maps `{"#map": [[key, value], ...]}`, records JSON
objects, lists JSON arrays; "no value" is the empty string (ITF has no null). The variables:

- `step` (0 for the initial state), `time_ms` (-1 when untimed, as in a check counterexample);
- `action`: the step's cause, a record {kind, source, target, label, detail};
- `responses`: the responses the step made, a list of records {to, label, error, late, lost};
- `rows`: the table rows fired, in order;
- `group`: the group after the step, a record {id, state, generation, protocol, leader,
  members (a map from member id to {instance, leader, join_parked, sync_parked, new}), pending
  (a set), timers (a list)};
- `violation`: the violated property's name in the state where it breaks, else "".
"""

from __future__ import annotations

import json
from typing import Any, Final, Optional

from model.atomic import write_text_atomic

from render.trace import GroupSnapshot, Message, Trace, TraceStep

VARS: Final = ("step", "time_ms", "action", "responses", "rows", "group", "violation")
FORMAT_DESCRIPTION: Final = "https://apalache-mc.org/docs/adr/015adr-trace.html"


def _int(n: int) -> dict[str, str]:
    return {"#bigint": str(n)}


def _group(g: Optional[GroupSnapshot]) -> dict[str, Any]:
    if g is None:
        return {"id": "", "state": "Missing", "generation": _int(0), "protocol": "", "leader": "",
                "members": {"#map": []}, "pending": {"#set": []}, "timers": []}
    return {
        "id": g.group_id, "state": g.state, "generation": _int(g.generation),
        "protocol": g.protocol or "", "leader": g.leader or "",
        "members": {"#map": [[m.member_id, {"instance": m.instance_id or "", "leader": m.leader,
                                            "join_parked": m.join_parked, "sync_parked": m.sync_parked,
                                            "new": m.is_new}] for m in g.members]},
        "pending": {"#set": sorted(g.pending)},
        "timers": list(g.timers),
    }


def _action(m: Optional[Message]) -> dict[str, Any]:
    if m is None:
        return {"kind": "init", "source": "", "target": "", "label": "initial state", "detail": ""}
    return {"kind": m.kind, "source": m.source, "target": m.target, "label": m.label, "detail": m.detail}


def _responses(s: Optional[TraceStep]) -> list[dict[str, Any]]:
    if s is None:
        return []
    return [{"to": a.target, "label": a.label, "error": a.error or "", "late": a.late, "lost": a.lost}
            for a in s.answers]


def itf(trace: Trace) -> dict[str, Any]:
    """The ITF document of a trace."""
    breaks_at = None
    if trace.violation is not None:
        breaks_at = trace.violation.step if trace.violation.step is not None else len(trace.steps)
    states: list[dict[str, Any]] = []
    group = trace.initial
    for i, s in enumerate((None, *trace.steps)):
        if s is not None and s.group is not None:
            group = s.group
        states.append({
            "#meta": {"index": i},
            "step": _int(i),
            "time_ms": _int(-1 if s is None or s.time_ms is None else s.time_ms),
            "action": _action(s.cause if s is not None else None),
            "responses": _responses(s),
            "rows": list(s.rows) if s is not None else [],
            "group": _group(group),
            "violation": trace.violation.name if trace.violation is not None and i == breaks_at else "",
        })
    meta: dict[str, Any] = {
        "format": "ITF", "format-description": FORMAT_DESCRIPTION,
        "source": trace.source, "description": trace.title, "kind": trace.kind, "table": trace.table,
        "clients": list(trace.clients),
    }
    if trace.violation is not None:
        meta["violated"] = trace.violation.name
        meta["message"] = trace.violation.message
    return {"#meta": meta, "vars": list(VARS), "states": states}


def dumps(trace: Trace) -> str:
    return json.dumps(itf(trace), indent=1, ensure_ascii=False) + "\n"


def write_itf(trace: Trace, path: str) -> None:
    """The trace's ITF document written atomically to `path`."""
    write_text_atomic(path, dumps(trace))


def numbered(path: str, k: int) -> str:
    """Where the k-th (1-based) of several traces goes: `path` itself for the first, then
    `NAME-2.EXT`, `NAME-3.EXT`, ... beside it (`cex.itf.json` -> `cex-2.itf.json`)."""
    if k == 1:
        return path
    head, sep, tail = path.rpartition("/")
    name = tail if sep else path
    stem, dot, ext = name.partition(".")
    out = f"{stem}-{k}{dot}{ext}"
    return f"{head}{sep}{out}" if sep else out


def write_itfs(traces: list[Trace], path: str) -> list[str]:
    """Each trace as ITF: the first to `path`, the others numbered beside it; the paths written."""
    written = []
    for k, t in enumerate(traces, 1):
        write_itf(t, numbered(path, k))
        written.append(numbered(path, k))
    return written


__all__ = ["VARS", "dumps", "itf", "numbered", "write_itf", "write_itfs"]

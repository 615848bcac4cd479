"""Shrinking a diverging sequence and writing it as a scenario file.

`shrink` is delta debugging (ddmin) over the action list, then over its timing (each wait made
shorter while the divergence stays), every candidate re-run against the target on a fresh group;
a candidate is kept when it shows a finding of the same class. The candidates of one ddmin round
run in parallel (groups are independent).

`scenario_document` turns the events of a run into a scenario file in the shared format
(`kafka-classic-group-conformance/1`): every request is sent with `await: later` and examined by a
`check_response` when its answer arrived (or a `check_pending` where the model expected none);
answers the model allowed are expected as they came; the diverging answer is expected as the model
has it. Member ids become `$M<n>` bindings; waits become `advance` steps.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any, Awaitable, Callable, Optional

from model import messages as m
from model.coordinator_api import CoordinatorConfig

from fuzz.actions import Action, Wait
from fuzz.engine import Event, SequenceResult
from fuzz.judge import NO_RESPONSE, Finding

Runner = Callable[[list[Action]], Awaitable[SequenceResult]]


async def shrink(actions: list[Action], key: str, run: Runner, *, max_runs: int = 80,
                 stop_at: float = float("inf")) -> tuple[list[Action], Optional[SequenceResult], int]:
    """The smallest action list found that still shows a finding of class `key`, the run that
    showed it, and how many runs it took."""
    runs = 0
    best: Optional[SequenceResult] = None

    async def test(candidates: list[list[Action]]) -> Optional[tuple[list[Action], SequenceResult]]:
        nonlocal runs
        runs += len(candidates)
        results = await asyncio.gather(*(run(c) for c in candidates))
        for c, r in zip(candidates, results):
            if r.finding is not None and r.finding.class_key() == key:
                return c, r
        return None

    cur = list(actions)
    first = await test([cur, cur, cur])  # three tries at once: timing-dependent divergences
    if first is None:
        return cur, None, runs
    best = first[1]
    if 0 <= best.finding_action < len(cur):
        cut = cur[: best.finding_action + 1]
        got = await test([cut])
        if got is not None:
            cur, best = got
    n = 2
    while len(cur) >= 2 and runs < max_runs and time.monotonic() < stop_at:
        size = max(1, len(cur) // n)
        chunks = [cur[i:i + size] for i in range(0, len(cur), size)]
        complements = [[a for j, ch in enumerate(chunks) if j != i for a in ch]
                       for i in range(len(chunks))]
        got = await test([c for c in complements if c])
        if got is not None:
            cur, best = got
            n = max(n - 1, 2)
            continue
        if n >= len(cur):
            break
        n = min(len(cur), 2 * n)
    # timing: shorter waits
    for i, a in enumerate(list(cur)):
        if runs >= max_runs or time.monotonic() >= stop_at:
            break
        if isinstance(a, Wait) and a.ms > 0:
            cand = cur[:i] + [Wait(ms=0)] + cur[i + 1:]
            got = await test([cand])
            if got is not None:
                cur, best = got
    return cur, best, runs


# ------------------------------------------------------------------------------ scenario files


def _hex(b: bytes) -> str:
    return b.hex()


class _Names:
    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def ref(self, mid: str) -> str:
        return f"${self.names[mid]}" if mid in self.names else mid

    def bind(self, mid: str) -> Optional[str]:
        if not mid or mid in self.names or mid.startswith("ghost"):
            return None
        name = f"M{len(self.names)}"
        self.names[mid] = name
        return name


def _request_step(n: int, r: m.Request, names: _Names) -> dict[str, Any]:
    s: dict[str, Any] = {"id": f"r{n}", "await": "later"}
    if isinstance(r, m.JoinGroupRequest):
        s.update(op="join", member=names.ref(r.member_id), protocol_type=r.protocol_type,
                 protocols=[{"name": p.name, "metadata": _hex(p.metadata)} for p in r.protocols],
                 session_timeout_ms=r.session_timeout_ms, rebalance_timeout_ms=r.rebalance_timeout_ms,
                 require_known_member_id=r.require_known_member_id,
                 supports_skip_assignment=r.supports_skip_assignment)
        if r.group_instance_id is not None:
            s["instance_id"] = r.group_instance_id
    elif isinstance(r, m.SyncGroupRequest):
        s.update(op="sync", member=names.ref(r.member_id), generation=r.generation_id,
                 assignments={names.ref(k): _hex(v) for k, v in r.assignments})
        if r.group_instance_id is not None:
            s["instance_id"] = r.group_instance_id
        if r.protocol_type is not None:
            s["protocol_type"] = r.protocol_type
        if r.protocol_name is not None:
            s["protocol_name"] = r.protocol_name
    elif isinstance(r, m.HeartbeatRequest):
        s.update(op="heartbeat", member=names.ref(r.member_id), generation=r.generation_id)
        if r.group_instance_id is not None:
            s["instance_id"] = r.group_instance_id
    elif isinstance(r, m.LeaveGroupRequest):
        members = []
        for x in r.members:
            item: dict[str, Any] = {"member_id": names.ref(x.member_id)}
            if x.group_instance_id is not None:
                item["instance_id"] = x.group_instance_id
            members.append(item)
        s.update(op="leave", members=members)
    elif isinstance(r, m.OffsetCommitRequest):
        s.update(op="commit", member=names.ref(r.member_id), generation=r.generation_id,
                 offsets={str(tp): off for tp, off in r.offsets})
        if r.group_instance_id is not None:
            s["instance_id"] = r.group_instance_id
    elif isinstance(r, m.OffsetFetchRequest):
        s.update(op="fetch_offsets",
                 partitions=None if r.partitions is None else [str(tp) for tp in r.partitions])
    elif isinstance(r, m.DescribeGroupsRequest):
        s.update(op="describe")
    elif isinstance(r, m.DeleteGroupsRequest):
        s.update(op="delete_groups", groups=["g"])
    return s


_EXPECT_KEYS = {"join": ("error", "generation", "member_id", "leader", "protocol_type",
                         "protocol_name", "skip_assignment"),
                "sync": ("error", "assignment", "protocol_type", "protocol_name"),
                "describe": ("error", "state", "protocol_type", "protocol"),
                "fetch_offsets": ("error",)}


def _expected_step(op: str, expected: dict[str, Any], names: _Names) -> dict[str, Any]:
    """The model's answer (rendered by the judge) as scenario `expect` keys."""
    out: dict[str, Any] = {}
    for k in _EXPECT_KEYS.get(op, ("error",)):
        if k not in expected:
            continue
        v = expected[k]
        if k in ("member_id", "leader"):
            if isinstance(v, str) and v in names.names:
                out[k] = names.ref(v)
            continue
        out[k] = v
    if op == "leave" and "member_errors" in expected and expected["member_errors"]:
        out["member_errors"] = expected["member_errors"]
    if op in ("commit", "delete_groups") and "errors" in expected:
        errs = expected["errors"]
        out["errors"] = {"g": errs[0]} if op == "delete_groups" and isinstance(errs, list) else errs
    return out


def scenario_document(result: SequenceResult, finding: Finding, config: CoordinatorConfig,
                      name: str, target: str) -> dict[str, Any]:
    names = _Names()
    steps: list[dict[str, Any]] = []
    ops: dict[int, str] = {}
    for ev in _until(result.events, finding):
        if ev.kind == "wait":
            if ev.ms > 0:
                steps.append({"op": "advance", "ms": ev.ms})
        elif ev.kind == "send" and ev.request is not None:
            step = _request_step(ev.number, ev.request, names)
            ops[ev.number] = step["op"]
            steps.append(step)
        elif ev.kind == "recv" and ev.number in ops:
            check: dict[str, Any] = {"op": "check_response", "id": f"r{ev.number}"}
            if ev.number == finding.number:
                break
            # Earlier answers are only waited for where they bind a member id: their exact
            # values depend on real time, which the scenario runner spends differently (it
            # waits for every request), so expecting them would fail correct targets too.
            if isinstance(ev.response, m.JoinGroupResponse):
                bound = names.bind(ev.response.member_id)
                if bound is not None:
                    check["bind"] = {"member_id": bound}
                    steps.append(check)
    # the diverging request: what the model allows
    rid = f"r{finding.number}"
    op = ops.get(finding.number, "")
    exp = finding.expected[0] if finding.expected else {}
    if "response" in exp:  # the model has no answer for it (parked or superseded)
        steps.append({"op": "check_pending", "id": rid})
    else:
        if finding.actual == NO_RESPONSE:
            steps.append({"op": "advance", "ms": 1})
        steps.append({"op": "check_response", "id": rid, "expect": _expected_step(op, exp, names)})
    return {
        "format": "kafka-classic-group-conformance/1",
        "defaults": {"group": "g", "config": {
            "group_min_session_timeout_ms": config.group_min_session_timeout_ms,
            "group_max_session_timeout_ms": config.group_max_session_timeout_ms,
            "group_max_size": config.group_max_size,
            "group_initial_rebalance_delay_ms": config.group_initial_rebalance_delay_ms,
            "new_member_join_timeout_ms": config.new_member_join_timeout_ms}},
        "conventions": {"generated_by": f"groupspec fuzz against {target}",
                        "class": finding.class_key()},
        "scenarios": [{"name": name, "source": f"groupspec fuzz ({target})",
                       "tags": ["fuzz", "timing-real"], "steps": steps,
                       "notes": f"{finding.api} v{finding.api_version}: model allows "
                                f"{finding.expected}; target answered {finding.actual}"}],
    }


def _until(events: list[Event], finding: Finding) -> list[Event]:
    out: list[Event] = []
    for ev in events:
        out.append(ev)
        if ev.kind == "send" and ev.number == finding.number:
            # keep the answers that arrived before the diverging one
            continue
    return out


def replace_finding(r: SequenceResult, f: Finding) -> SequenceResult:
    return dataclasses.replace(r, finding=f)

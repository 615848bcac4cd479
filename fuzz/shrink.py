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

from conformance.dump import Script, document, expects
from conformance.scenario import (AdvanceStep, CheckPendingStep, CheckResponseStep, Defaults, Expect,
                                  ScenarioFile, step_op)
from fuzz.actions import Action, Wait
from fuzz.engine import Event, SequenceResult
from fuzz.judge import NO_RESPONSE, Finding

Runner = Callable[[list[Action]], Awaitable[SequenceResult]]
ANSWER_SLACK_MS = 500  # a replayed check waits as long as the answer took in the run, and this
GROUP = "g"  # the scenario runs on a group of its own


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


_EXPECT_KEYS = {"join": ("error", "generation", "member_id", "leader", "protocol_type",
                         "protocol_name", "skip_assignment"),
                "sync": ("error", "assignment", "protocol_type", "protocol_name"),
                "describe": ("error", "state", "protocol_type", "protocol"),
                "fetch_offsets": ("error",)}


def _expected(op: str, expected: dict[str, Any], names: _Names) -> dict[str, Any]:
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
        out["errors"] = {GROUP: errs[0]} if op == "delete_groups" and isinstance(errs, list) else errs
    return out


def scenario_document(result: SequenceResult, finding: Finding, config: CoordinatorConfig,
                      name: str, target: str, table: str = "kafka-3.9",
                      tool: str = "groupspec fuzz") -> dict[str, Any]:
    names = _Names()
    script = Script()
    ops: dict[int, str] = {}
    steps: dict[int, int] = {}  # request number -> its step index
    sent_at = {ev.number: ev.at_ms for ev in result.events if ev.kind == "send"}
    took = {ev.number: ev.at_ms - sent_at[ev.number] for ev in result.events
            if ev.kind == "recv" and ev.number in sent_at}

    def wait(number: int) -> tuple[int, str]:
        """A check's real-clock tolerance: as long as the target took to answer in the run."""
        if number not in took:
            return 0, ""
        return took[number] + ANSWER_SLACK_MS, f"the target answered after {took[number]} ms in the run"

    for ev in _until(result.events, finding):
        if ev.kind == "wait":
            if ev.ms > 0:
                script.add(AdvanceStep, ev.ms)
        elif ev.kind == "send" and ev.request is not None:
            step = script.request(ev.request, names.ref, id=f"r{ev.number}", group=GROUP, await_later=True,
                                  api_version=ev.version)
            ops[ev.number] = step_op(step)
            steps[ev.number] = len(script.steps) - 1
        elif ev.kind == "recv" and ev.number in ops:
            if ev.number == finding.number:
                break
            # Earlier answers are only waited for where they bind a member id: their exact
            # values depend on real time, which the scenario runner spends differently (it
            # waits for every request), so expecting them would fail correct targets too.
            if isinstance(ev.response, m.JoinGroupResponse):
                bound = names.bind(ev.response.member_id)
                if bound is not None:
                    script.add(CheckResponseStep, f"r{ev.number}", ops[ev.number], (), bound, *wait(ev.number))
    # the diverging request: every answer the model allows (or that it has none yet)
    rid = f"r{finding.number}"
    op = ops.get(finding.number, "")
    answers = _unique([expects(_expected(op, e, names)) for e in finding.expected if "response" not in e])
    if not answers:  # the model has no answer for it (parked or superseded)
        script.add(CheckPendingStep, rid)
    else:
        if finding.actual == NO_RESPONSE:
            script.add(AdvanceStep, 1)
        late = wait(finding.number) if finding.actual != NO_RESPONSE else (0, "")
        if len(answers) == 1:
            script.add(CheckResponseStep, rid, op, answers[0], None, *late)
        else:
            script.add(CheckResponseStep, rid, op, (), None, *late, tuple(answers))
    departs = len(script.steps) - 1
    notes = (f"{finding.api} v{finding.api_version}: model allows {finding.expected}; target answered "
             f"{finding.actual}; the target departs at step {departs}")
    scenario = script.scenario(name, source=f"{tool} ({target})", config=config,
                               tags=("fuzz", "timing-real"), notes=notes)
    file = ScenarioFile("", (scenario,), Defaults(GROUP, config))
    return document(file, conventions={
        "generated_by": f"{tool} against {target}", "class": finding.class_key(),
        "judged_with_table": table,  # the model answers below are this table's
        # where and how the target departed (fuzz/replay.py: "fails as found" means the replay
        # fails at this step with this class)
        "departs_at_step": departs, "departs_request_step": steps.get(finding.number, -1),
        "api": finding.api, "api_version": finding.api_version, "shape": finding.shape,
        "expected": list(finding.expected)})


def _unique(xs: list[tuple[Expect, ...]]) -> list[tuple[Expect, ...]]:
    out: list[tuple[Expect, ...]] = []
    for x in xs:
        if x not in out:
            out.append(x)
    return out


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

"""A `groupspec check` counterexample as a trace.

The explorer reports a violation as the printed path from the initial world (check/explore.py
`render_trace`). Here that path is followed again through the abstract model: at each step the
successor whose action, rows fired, lost responses and resulting group print exactly as the
report says is taken, so the trace is re-executed, not parsed from text, and a report that does
not re-execute is refused (ValueError) instead of being drawn.
"""

from __future__ import annotations

import re
from typing import Final, Optional, cast

from check.abstract import (
    AbstractModel, Action, Bounds, Successor, World, client_name, render_response,
)
from check.explore import LIVENESS, PATH_PROPERTIES, WELL_FORMED, Violation, describe_group
from check.profiles import Urgent
from model.dsl import Superseded, Table
from model.invariants import INVARIANTS
from model.messages import Request, Response
from model.step import Transition
from model.vocabulary import TimerEvent

from render.trace import (
    ADMIN, COORDINATOR, Message, Trace, TraceStep, Violation as TraceViolation, describe_request,
    describe_response, snapshot,
)

_STEP: Final = re.compile(r"^\s*(\d+)\. (.*)$")
_NO_ALIASES: Final[dict[str, str]] = {}
_COORDINATOR_FAULTS: Final = frozenset({TimerEvent.PartitionUnload.value, TimerEvent.PartitionLoad.value,
                                        TimerEvent.OffsetsExpire.value})
_CLIENT_EVENTS: Final = {"crash": "crashes (a new life, no member id)",
                         "stall": "stalls: heartbeats only, never sends SyncGroup",
                         "request-timeout": "gives up waiting (request timeout)"}


def statement_of(name: str) -> str:
    """What the named property says, in words."""
    if name in INVARIANTS:
        return INVARIANTS[name].doc or name
    if name in PATH_PROPERTIES:
        return PATH_PROPERTIES[name]
    if name == WELL_FORMED:
        return "the table is well formed: exactly one row matches every input that occurs"
    return name


def _parse(lines: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """The numbered steps of a printed counterexample: (action label, the lines under it)."""
    steps: list[tuple[str, list[str]]] = []
    for line in lines:
        m = _STEP.match(line)
        if m is not None:
            steps.append((m.group(2), []))
        elif steps:
            steps[-1][1].append(line.strip())
    return steps


def _matches(model: AbstractModel, s: Successor, label: str, details: list[str]) -> bool:
    if s.action.label(model.bounds) != label:
        return False
    rows = next((d[len("rows: "):] for d in details if d.startswith("rows: ")), None)
    group = next((d[len("group: "):] for d in details if d.startswith("group: ")), None)
    lost = "(a response to the client is lost)" in details
    if rows is not None and (s.transition is None or ", ".join(s.transition.rows) != rows):
        return False
    if rows is None and s.transition is not None and s.transition.rows:
        return False
    if any(s.action.variant) != lost:
        return False
    if [d for d in details if d.startswith(("<= ", "(parked "))] != _answer_lines(s):
        return False
    return group is None or describe_group(s.world.group) == group


def _answer_lines(s: Successor) -> list[str]:
    """The response lines check/explore.py prints under a step (the same words)."""
    t = s.transition
    if t is None:
        return []
    lines = [f"<= {render_response(t.reply)}"] if t.reply is not None else []
    for o in t.outputs:
        who = f"request of {o.member_id}" if o.member_id else f"request {o.request_id}"
        lines.append(f"(parked {who} dropped without a response)" if isinstance(o.response, Superseded)
                     else f"<= (parked {who}) {render_response(o.response)}")
    return lines


def trace_of_counterexample(table: Table, urgent: Urgent, bounds: Bounds, violation: Violation, *,
                            title: Optional[str] = None, source: str = "groupspec check") -> Trace:
    """The counterexample of `violation`, found by exploring `table` within `bounds`, as a trace.
    Raises ValueError when the printed path does not re-execute on the table."""
    model = AbstractModel(table, urgent, bounds)
    world = model.initial()
    first = violation.trace[0] if violation.trace else ""
    if first.startswith("initial: ") and first[len("initial: "):] != describe_group(world.group):
        raise ValueError(f"the counterexample starts from {first!r}, not from the initial world")
    steps: list[TraceStep] = []
    clients: list[str] = []
    for k, (label, details) in enumerate(_parse(violation.trace), 1):
        found = next((s for a in _enabled(model, world) if a.label(model.bounds) == label
                      for s in model.apply(world, a) if _matches(model, s, label, details)), None)
        if found is None:
            raise ValueError(f"step {k} of the {violation.invariant} counterexample does not re-execute "
                             f"on table {table.name}: {label}")
        step = _step(model, world, found, k)
        for who in (step.cause.source, step.cause.target, *(a.target for a in step.answers)):
            if who != COORDINATOR and who not in clients:
                clients.append(who)
        steps.append(step)
        world = found.world
    ordered = sorted((c for c in clients if c != ADMIN), key=_client_order) + ([ADMIN] if ADMIN in clients else [])
    v = TraceViolation(violation.invariant, statement_of(violation.invariant), violation.message,
                       step=len(steps) or None)
    notes: tuple[str, ...] = (f"Explored within the bounds: {bounds.describe()}.",
             "Untimed: in the abstract model every armed timer may fire at any moment.")
    if violation.invariant in (LIVENESS, *PATH_PROPERTIES):
        notes += ("A path property: the trace leads to a state from which the property fails; "
                  "the message says what cannot be reached from it.",)
    return Trace(title=title or f"{violation.invariant} violated on table {table.name}",
                 kind="counterexample", source=source, table=table.name, clients=tuple(ordered),
                 initial=snapshot(model.initial().group, _NO_ALIASES, timed=False), steps=tuple(steps),
                 violation=v, notes=notes)


def _client_order(name: str) -> tuple[int, int]:
    return (0 if name.startswith("c") else 1, int(name[1:]) if name[1:].isdigit() else 0)


def _enabled(model: AbstractModel, world: World) -> list[Action]:
    """Every action enabled in the world; several may print alike (open mode's variants), and
    apply() tries each one's lost-response variants."""
    return [v for a in model.actions(world) for v in model.variants(a)]


def _step(model: AbstractModel, world: World, s: Successor, index: int) -> TraceStep:
    a, t = s.action, s.transition
    who = client_name(model.bounds, a.client) if a.client >= 0 else ADMIN if a.kind == "admin" else COORDINATOR
    if a.request is not None:
        label, detail = describe_request(cast(Request, a.request), _NO_ALIASES)
        if a.append_fails:
            label += " — log append fails"
        if a.kind == "impersonate":
            label = "impersonates: " + label
        cause = Message("request", who, COORDINATOR, label, detail)
    elif a.kind in _CLIENT_EVENTS:
        cause = Message("fault", who, who, _CLIENT_EVENTS[a.kind], a.label(model.bounds))
    else:
        about = f"({a.member_id})" if a.member_id else ""
        kind = "fault" if a.kind in _COORDINATOR_FAULTS else "timer"
        cause = Message(kind, COORDINATOR, COORDINATOR, f"{a.kind}{about}", a.label(model.bounds))
    answers: list[Message] = []
    if t is not None:
        deliveries = model._deliveries(world, t, a)  # those that reach a live client, in order
        k = 0
        for rid, response, late in _responses(t):
            target = _route(model, a, rid, who)
            delivered = k < len(deliveries) and deliveries[k][1] is response
            gone = delivered and k < len(a.variant) and a.variant[k]
            k += delivered
            text, detail, error = describe_response(response, _NO_ALIASES)
            if not delivered and target != ADMIN:
                text += " (to an earlier life of the client: unread)"
            answers.append(Message("response", COORDINATOR, target, text, detail, error, late=late, lost=gone))
        for o in t.outputs:
            if isinstance(o.response, Superseded):
                answers.append(Message("response", COORDINATOR, _route(model, a, o.request_id, who),
                                       "(parked request dropped without a response)",
                                       f"superseded request {o.request_id} of {o.member_id}", None, late=True))
    return TraceStep(index, None, cause, tuple(answers), t.rows if t is not None else (),
                     snapshot(s.world.group, _NO_ALIASES, timed=False))


def _responses(t: Transition) -> list[tuple[int, Response, bool]]:
    """(request id, response, answers an earlier step's request) made by a transition, in the
    order the abstract model delivers them: the input's own reply, then the parked ones."""
    out: list[tuple[int, Response, bool]] = []
    if t.reply is not None:
        out.append((t.inp.request_id, t.reply, False))
    out += [(o.request_id, o.response, True) for o in t.outputs if not isinstance(o.response, Superseded)]
    return out


def _route(model: AbstractModel, a: Action, rid: int, who: str) -> str:
    """The lifeline a response goes to: the sender of the input for its own reply, otherwise the
    client whose request id it is (request ids are 1 + client + clients * epoch)."""
    if a.kind == "admin":
        return ADMIN if rid == 0 else client_name(model.bounds, (rid - 1) % model.n)
    if rid >= 1 and model.n:
        return client_name(model.bounds, (rid - 1) % model.n)
    return who if who != COORDINATOR else ADMIN


__all__ = ["statement_of", "trace_of_counterexample"]

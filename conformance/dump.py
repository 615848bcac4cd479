"""The one scenario writer: records of scenario.py written back as a scenario file, the inverse of
parse.py (`parse_text(dump(f), f.path) == f`; tests/conformance/test_dump.py checks it for
generated records and for every file under tests/).

A record holds resolved values (a join step carries every field, a scenario its whole config); the
writer leaves out what the file's `defaults` already say, so that a file reads as a person would
write it. `document` gives the JSON-ready objects, `dump` the text.

Everything that writes a scenario from a run (the lockstep of reference and model, the differences
between two tables, shrunk fuzz findings) builds its steps as records with a `Script`: requests
from the model's request records (`request_step`), expectations from plain JSON values (`expects`).
"""

from __future__ import annotations

import json
from dataclasses import fields, replace
from typing import Any, Callable, Mapping, Optional, TypeVar

from model.coordinator_api import CoordinatorConfig, MemberSpec
from model.messages import (
    DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest, ProtocolMetadata, Request,
    SyncGroupRequest,
)
from model.vocabulary import Error

from conformance import scenario as sc
from conformance.actions import group_of
from conformance.expect import thaw
from conformance.parse import freeze

Json = dict[str, Any]
_S = TypeVar("_S", bound=sc.Step)


def dump(file: sc.ScenarioFile, **extra: Any) -> str:
    """The scenario file as text; `extra` top-level keys (`conventions`, `finding`, ...) are
    written before `scenarios` (runners ignore them)."""
    return json.dumps(document(file, **extra), indent=1) + "\n"


def document(file: sc.ScenarioFile, **extra: Any) -> Json:
    """The scenario file as JSON-ready objects."""
    doc: Json = {"format": sc.FORMAT}
    defaults = _defaults(file.defaults)
    if defaults:
        doc["defaults"] = defaults
    doc.update(extra)
    doc["scenarios"] = [scenario_json(s, file.defaults) for s in file.scenarios]
    return doc


def scenario_json(s: sc.Scenario, defaults: sc.Defaults) -> Json:
    out: Json = {"name": s.name}
    if s.source:
        out["source"] = s.source
    if s.tags:
        out["tags"] = list(s.tags)
    config = _config(s.config, defaults.config)
    if config:
        out["config"] = config
    if s.notes:
        out["notes"] = s.notes
    out["steps"] = [step_json(step, defaults) for step in s.steps]
    return out


def _defaults(d: sc.Defaults) -> Json:
    out: Json = {}
    if d.group is not None:
        out["group"] = d.group
    config = _config(d.config, CoordinatorConfig())
    if config:
        out["config"] = config
    join = {k: v for k, v in _join_fields(d.join).items() if v != _join_fields(sc.JoinDefaults())[k]}
    if join:
        out["join"] = join
    return out


def _config(c: CoordinatorConfig, base: CoordinatorConfig) -> Json:
    """The keys of `c` that differ from `base` (what a scenario's `config` is merged over)."""
    out: Json = {}
    for f in fields(CoordinatorConfig):
        value = getattr(c, f.name)
        if value != getattr(base, f.name):
            out[f.name] = (value.name if isinstance(value, Error) else
                           sorted(value) if isinstance(value, frozenset) else value)
    return out


def _protocols(protocols: tuple[ProtocolMetadata, ...]) -> list[Json]:
    return [{"name": p.name, "metadata": p.metadata.hex()} for p in protocols]


def _join_fields(j: sc.JoinDefaults | sc.JoinStep) -> Json:
    """The fields `defaults.join` supplies, as written."""
    return {"client_id": j.client_id, "protocol_type": j.protocol_type, "protocols": _protocols(j.protocols),
            "session_timeout_ms": j.session_timeout_ms, "rebalance_timeout_ms": j.rebalance_timeout_ms,
            "require_known_member_id": j.require_known_member_id,
            "supports_skip_assignment": j.supports_skip_assignment}


def _expect(expect: tuple[sc.Expect, ...]) -> Json:
    return {e.key: thaw(e.value) for e in expect}


def _generation(g: sc.GenerationRef) -> int | str:
    return g.value if g.value is not None else str(g)


def _member_fields(member: sc.MemberRef, generation: Optional[sc.GenerationRef],
                   instance_id: Optional[str]) -> Json:
    out: Json = {"member": member.text}
    if generation is not None:
        out["generation"] = _generation(generation)
    if instance_id is not None:
        out["instance_id"] = instance_id
    return out


def _request_fields(step: sc.RequestStep, d: sc.Defaults) -> Json:
    """The op-specific fields of a request step."""
    if isinstance(step, sc.JoinStep):
        out = _member_fields(step.member, None, step.instance_id)
        defaults = _join_fields(d.join)
        out.update((k, v) for k, v in _join_fields(step).items() if v != defaults[k])
        if step.append_error is not None:
            out["append_error"] = step.append_error.name
        return out
    if isinstance(step, sc.SyncStep):
        out = _member_fields(step.member, step.generation, step.instance_id)
        if step.assignments:
            out["assignments"] = {m.text: b.hex() for m, b in step.assignments}
        for key in ("protocol_type", "protocol_name"):
            if getattr(step, key) is not None:
                out[key] = getattr(step, key)
        return out
    if isinstance(step, sc.HeartbeatStep):
        return _member_fields(step.member, step.generation, step.instance_id)
    if isinstance(step, sc.CommitStep):
        out = _member_fields(step.member, step.generation, step.instance_id)
        out["offsets"] = {str(tp): offset for tp, offset in step.offsets}
        return out
    if isinstance(step, sc.LeaveStep):
        return {"members": [{"member_id": m.text, **({} if i is None else {"instance_id": i})}
                            for m, i in step.members]}
    if isinstance(step, sc.FetchOffsetsStep):
        return {"partitions": None if step.partitions is None else [str(tp) for tp in step.partitions]}
    if isinstance(step, sc.ListGroupsStep):
        return {"states": list(step.states)} if step.states else {}
    if isinstance(step, sc.DeleteGroupsStep):
        return {"groups": list(step.groups)}
    return {}  # describe


def _request_json(step: sc.RequestStep, d: sc.Defaults) -> Json:
    meta = step.meta
    out: Json = {"op": sc.step_op(step)}
    if meta.id is not None:
        out["id"] = meta.id
    if not isinstance(step, (sc.ListGroupsStep, sc.DeleteGroupsStep)) and meta.group != d.group:
        out["group"] = meta.group
    out.update(_request_fields(step, d))
    if meta.await_later:
        out["await"] = "later"
    if meta.expect:
        out["expect"] = _expect(meta.expect)
    if meta.bind is not None:
        out["bind"] = {"member_id": meta.bind}
    if meta.api_version is not None:
        out["api_version"] = meta.api_version
    return out


def _tolerance(ms: int, why: str) -> Json:
    return {"tolerance_ms": ms, "tolerance_why": why} if why else {}


def _setup_member(m: MemberSpec, j: sc.JoinDefaults) -> Json:
    out: Json = {"id": m.member_id}
    if m.group_instance_id is not None:
        out["instance_id"] = m.group_instance_id
    if m.protocols != tuple((p.name, p.metadata) for p in j.protocols):
        out["protocols"] = [{"name": n, "metadata": b.hex()} for n, b in m.protocols]
    if m.session_timeout_ms != j.session_timeout_ms:
        out["session_timeout_ms"] = m.session_timeout_ms
    if m.rebalance_timeout_ms != j.rebalance_timeout_ms:
        out["rebalance_timeout_ms"] = m.rebalance_timeout_ms
    return out


def _setup_fields(step: sc.Step, j: sc.JoinDefaults) -> Json:
    """The fields of a backdoor step (beside `group` and `backdoor`)."""
    if isinstance(step, sc.SetupAddGroupStep):
        out: Json = {"state": step.state.name}
        if step.members:
            out["members"] = [_setup_member(m, j) for m in step.members]
        if step.protocol_type != j.protocol_type:
            out["protocol_type"] = step.protocol_type
        return out
    if isinstance(step, sc.SetupForceTransitionStep):
        return {"state": step.state.name}
    return {}


def _selection(expect: tuple[Optional[str], ...]) -> Any:
    return expect[0] if len(expect) == 1 else list(expect)


def _unit_fields(step: sc.UnitTransitionsStep | sc.UnitSelectProtocolStep) -> Json:
    if isinstance(step, sc.UnitTransitionsStep):
        out: Json = {"start": step.start.name,
                     "cases": [{"path": [s.name for s in c.path], "ok": c.ok} for c in step.cases]}
        if step.can_rebalance is not None:
            out["can_rebalance"] = step.can_rebalance
        return out
    out = {"cases": [{"members": [list(m) for m in c.members],
                      **({} if c.protocol_type == "consumer" else {"protocol_type": c.protocol_type}),
                      "expect": _selection(c.expect)} for c in step.cases]}
    if step.supports_protocols:
        out["supports_protocols"] = [
            {"group_members": [list(m) for m in c.group_members],
             **({} if c.group_protocol_type == "consumer" else {"group_protocol_type": c.group_protocol_type}),
             **({} if c.protocol_type == "consumer" else {"protocol_type": c.protocol_type}),
             "protocols": list(c.protocols), "ok": c.ok}
            for c in step.supports_protocols]
    return out


def _check_fields(step: sc.Step) -> Json:
    """The fields of a check step that names requests by id."""
    if isinstance(step, sc.CheckResponseStep):
        out: Json = {"id": step.id}
        if step.expect:
            out["expect"] = _expect(step.expect)
        if step.expect_any:
            out["expect_any"] = [_expect(e) for e in step.expect_any]
        if step.bind is not None:
            out["bind"] = {"member_id": step.bind}
        return out | _tolerance(step.tolerance_ms, step.tolerance_why)
    if isinstance(step, sc.CheckPendingStep):
        return {"id": step.id} | _tolerance(step.tolerance_ms, step.tolerance_why)
    if isinstance(step, sc.CheckErrorCountsStep):
        return {"ids": list(step.ids), "counts": {e.name: n for e, n in step.counts}}
    if isinstance(step, sc.CheckSameErrorsStep):
        return {"pairs": [list(p) for p in step.pairs]}
    assert isinstance(step, sc.CheckOneOfStep)
    follower = _expect(step.follower_expect)
    if step.leader_is_other:
        follower["leader_is_other"] = True
    return {"ids": list(step.ids), "leader_expect": _expect(step.leader_expect), "follower_expect": follower}


def step_json(step: sc.Step, d: sc.Defaults) -> Json:
    """One step as written in a file with defaults `d`."""
    if isinstance(step, sc.REQUEST_STEP_TYPES):
        return _request_json(step, d)
    out: Json = {"op": sc.step_op(step)}
    if isinstance(step, sc.AdvanceStep):
        out["ms"] = step.ms
    elif isinstance(step, sc.CheckGroupStep):
        if step.group != d.group:
            out["group"] = step.group
        out["expect"] = _expect(step.expect)
        out.update(_tolerance(step.tolerance_ms, step.tolerance_why))
    elif isinstance(step, sc.SETUP_STEPS):
        if step.group != d.group:
            out["group"] = step.group
        out.update(_setup_fields(step, d.join))
        out["backdoor"] = True
    elif isinstance(step, (sc.UnitTransitionsStep, sc.UnitSelectProtocolStep)):
        out.update(_unit_fields(step))
    else:
        out.update(_check_fields(step))
    return out


# ------------------------------------------------------------------------ writing a run as steps


def expects(values: Mapping[str, Any]) -> tuple[sc.Expect, ...]:
    """`expect` entries from plain JSON values (as a scenario file has them)."""
    return tuple(sc.Expect(k, freeze(v)) for k, v in values.items())


def request_step(index: int, request: Request, ref: Callable[[str], str], *, id: Optional[str] = None,
                 group: Optional[str] = None, await_later: bool = False,
                 expect: tuple[sc.Expect, ...] = (), bind: Optional[str] = None,
                 api_version: Optional[int] = None) -> sc.RequestStep:
    """The step that sends `request`; `ref` writes a member id as the scenario knows it (a `$X`
    binding or the literal id); `group` renames the request's group (a run on a group of its own)."""
    g = group if group is not None else group_of(request)
    listing = isinstance(request, (ListGroupsRequest, DeleteGroupsRequest))
    meta = sc.RequestMeta(index, id, "" if listing else g, await_later, expect, bind, api_version)

    def member(member_id: str) -> sc.MemberRef:
        return sc.MemberRef(ref(member_id))

    r = request
    if isinstance(r, JoinGroupRequest):
        return sc.JoinStep(meta, member(r.member_id), r.group_instance_id, r.protocol_type, r.protocols,
                           r.session_timeout_ms, r.rebalance_timeout_ms, r.require_known_member_id,
                           r.supports_skip_assignment, r.client_id, None)
    if isinstance(r, SyncGroupRequest):
        return sc.SyncStep(meta, member(r.member_id), sc.GenerationRef(r.generation_id), r.group_instance_id,
                           tuple((member(m), b) for m, b in r.assignments), r.protocol_type, r.protocol_name)
    if isinstance(r, HeartbeatRequest):
        return sc.HeartbeatStep(meta, member(r.member_id), sc.GenerationRef(r.generation_id),
                                r.group_instance_id)
    if isinstance(r, OffsetCommitRequest):
        return sc.CommitStep(meta, member(r.member_id), sc.GenerationRef(r.generation_id), r.group_instance_id,
                             r.offsets)
    if isinstance(r, LeaveGroupRequest):
        return sc.LeaveStep(meta, tuple((member(x.member_id), x.group_instance_id) for x in r.members))
    if isinstance(r, OffsetFetchRequest):
        return sc.FetchOffsetsStep(meta, r.partitions)
    if isinstance(r, DescribeGroupsRequest):
        return sc.DescribeStep(meta)
    if isinstance(r, ListGroupsRequest):
        return sc.ListGroupsStep(meta, r.states_filter)
    if isinstance(r, DeleteGroupsRequest):
        return sc.DeleteGroupsStep(meta, (g,) if group is not None else r.group_ids)
    raise ValueError(f"no scenario step for {type(r).__name__}")


class Script:
    """The steps of a scenario being written from a run, numbered as they are added."""

    def __init__(self) -> None:
        self.steps: list[sc.Step] = []

    def add(self, kind: Callable[..., _S], *values: Any) -> _S:
        """Append a step that is not a request: `kind(index, *values)`."""
        step = kind(len(self.steps), *values)
        self.steps.append(step)
        return step

    def request(self, request: Request, ref: Callable[[str], str], **meta: Any) -> sc.RequestStep:
        """Append the step that sends `request` (`meta`: request_step's keywords)."""
        step = request_step(len(self.steps), request, ref, **meta)
        self.steps.append(step)
        return step

    def amend(self, index: int, **meta: Any) -> None:
        """Change what the request step at `index` carries besides its fields (`await_later`,
        `expect`, `bind`), once its answer is known."""
        step = self.steps[index]
        assert isinstance(step, sc.REQUEST_STEP_TYPES), step
        self.steps[index] = replace(step, meta=replace(step.meta, **meta))

    def scenario(self, name: str, *, source: str = "", config: CoordinatorConfig = CoordinatorConfig(),
                 tags: tuple[str, ...] = (), notes: str = "") -> sc.Scenario:
        return sc.Scenario(name, 0, source, config, tags, tuple(self.steps), notes)

"""Wire probes for the group internals DescribeGroups does not carry (generation, leader).

A black-box target answers `check_group` through DescribeGroups, which has no generation and no
leader. A request can reveal them, but a request can also change the group. A probe is inserted
before a `check_group` only when both hold, decided case by case on the model itself:

- it reveals the value: a **follower's JoinGroup in Stable** with its own protocols is answered at
  once with the group's generation and leader and changes nothing (Kafka 3.9
  GroupCoordinator.handleJoinGroup, Stable, `!isLeader && member.matches(protocols)`: no rebalance,
  no session re-arm); a **Heartbeat at the expected generation** by a member of the group answers
  NONE or REBALANCE_IN_PROGRESS only if the generation is that one (handleHeartbeat checks the
  member, then the generation), and re-arms that member's session;
- it changes nothing the scenario goes on to check: the scenario with the probe inserted (its keys
  taken off the check_group) still passes on the model (`model.concrete.ModelCoordinator`, the
  virtual clock), every later expectation included. A leader's JoinGroup (a rebalance) or a
  heartbeat whose re-arm keeps a member the scenario expects to expire fails this and is not used.

What no probe reveals stays unobservable (docs/realclock.md): pending and new members, member
timeouts, a leader outside Stable, the generation of an Empty group or one whose only re-arm would
change what follows.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator, Optional

from model.concrete import ModelCoordinator
from model.coordinator_api import CoordinatorConfig

from conformance.scenario import (
    CheckGroupStep, CheckResponseStep, Expect, Frozen, GenerationRef, HeartbeatStep, JoinStep, MemberRef, RequestMeta,
    Scenario, Step,
)

PROBED_KEYS = ("generation", "leader")
PROBE_ID = "probe-"  # request ids of inserted probes: probe-<check_group index>-<key>


def is_probe(request_id: Optional[str]) -> bool:
    return bool(request_id) and str(request_id).startswith(PROBE_ID)


def with_probes(scenario: Scenario) -> tuple[Scenario, list[str]]:
    """The scenario with a probe before each check_group whose generation/leader a request can
    reveal without changing what follows (on the model); the notes say which."""
    if not _passes_on_model(scenario):
        return scenario, []
    current = scenario
    notes: list[str] = []
    for original in scenario.steps:
        if not isinstance(original, CheckGroupStep):
            continue
        wanted: dict[str, Frozen] = {e.key: e.value for e in original.expect if e.key in PROBED_KEYS and e.value is not None}
        if not wanted:
            continue
        position = current.steps.index(original)
        for probe, keys in _candidates(current, position, original, wanted):
            cut = dataclasses.replace(original, expect=tuple(e for e in original.expect if e.key not in keys))
            steps = current.steps[:position] + (probe,) + (cut,) + current.steps[position + 1:]
            trial = dataclasses.replace(current, steps=steps)
            if _passes_on_model(trial):
                current = trial
                what = "JoinGroup (a follower in Stable)" if isinstance(probe, JoinStep) else "Heartbeat"
                notes.append(f"step {original.index} check_group.{'/'.join(keys)} by a {what}")
                break
    return current, notes


def _passes_on_model(scenario: Scenario) -> bool:
    from conformance.runner import Outcome, run_scenario

    def factory(config: CoordinatorConfig) -> ModelCoordinator:
        return ModelCoordinator(config)

    return run_scenario("<probe>", scenario, factory).outcome is Outcome.PASS


def _members_before(scenario: Scenario, position: int, group: str) -> dict[str, JoinStep]:
    """Bindings of the group's members joined before `position`, each with its last JoinStep."""
    last: dict[str, JoinStep] = {}
    joins: dict[str, JoinStep] = {}  # request id -> its join
    for s in scenario.steps[:position]:
        if isinstance(s, CheckResponseStep) and s.bind is not None and s.id in joins:
            last[s.bind] = joins[s.id]  # bound when its answer is checked
            continue
        if not isinstance(s, JoinStep) or s.meta.group != group or s.append_error is not None:
            continue
        if s.meta.id is not None:
            joins[s.meta.id] = s
        name = s.meta.bind or s.member.binding
        if name is not None:
            last[name] = s
    return last


def _meta(step: CheckGroupStep, key: str, expect: tuple[Expect, ...]) -> RequestMeta:
    return RequestMeta(step.index, f"{PROBE_ID}{step.index}-{key}", step.group, False, expect, None)


def _candidates(scenario: Scenario, position: int, step: CheckGroupStep,
                wanted: dict[str, Frozen]) -> Iterator[tuple[Step, tuple[str, ...]]]:
    members = _members_before(scenario, position, step.group)
    leader = wanted.get("leader")
    keys = tuple(k for k in PROBED_KEYS if k in wanted)
    for name, join in members.items():
        if f"${name}" == leader:
            continue  # the leader's JoinGroup in Stable starts a rebalance
        expect = tuple(Expect(k, wanted[k]) for k in keys) + (Expect("error", "NONE"),)
        yield dataclasses.replace(join, meta=_meta(step, "join", expect), member=MemberRef(f"${name}")), keys
    generation = wanted.get("generation")
    if generation is None:
        return
    ref = (GenerationRef(join_id=generation[len("$gen:"):]) if isinstance(generation, str)
           else GenerationRef(value=generation) if isinstance(generation, int) else None)
    if ref is None:
        return
    for name, join in members.items():
        for error in ("NONE", "REBALANCE_IN_PROGRESS"):
            meta = _meta(step, "heartbeat", (Expect("error", error),))
            yield HeartbeatStep(meta, MemberRef(f"${name}"), ref, join.instance_id), ("generation",)


__all__ = ["PROBED_KEYS", "is_probe", "with_probes"]

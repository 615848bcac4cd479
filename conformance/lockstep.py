"""Differential testing: the reference coordinator and the model's concrete mode, in lockstep.

One `Lockstep` owns a `ReferenceCoordinator` and a `ModelCoordinator` with the same configuration
and applies the same `Action`s to both (requests built from the reference's point of view, member
ids translated to the model's through an `IdMap` bijection learned from paired responses). After
every action it compares every response delivered during the action (immediate ones and later
answers of parked requests, keyed by request), every group's white-box view, and runs the model's
named invariants on every transition the model took. The first difference raises `Divergence`,
which carries the run as a scenario file in the shared format (the reference's answers as
`expect`), ready to replay with `groupspec scenario run`.

Actions are small records of integer choices, so the same engine is driven by Hypothesis
(`lockstep_machine`, shrinking included) and by a seeded `random.Random` (`random_action`, used by
`conformance.soak`). Hypothesis is imported only inside `lockstep_machine`.

Where Kafka's order is arbitrary (hash-map iteration: leader choice after a removal or at join
completion, member order), the reference takes insertion order and the model's concrete mode takes
choice 0, which is insertion order too: they are compared strictly. Timers with equal deadlines
fire in an unspecified order in Kafka (scenario-format.md "Time"): the reference fires them in
arming order, the model in (join, sync, member, pending) order. When timers of one group tie in
an advance and the outcome differs, the model is rewound and the advance replayed with the
opposite tie-break; if that agrees, it is kept (counted as `timing-tie-order` in `tolerated`).
A divergence that no order explains is labelled `...-after-timing-tie` and its scenario tagged
`timing-tie`, so a reader knows the order may still be involved (three or more tied timers).

Differences that have been analysed and attributed are listed, with the reason, in
`KNOWN_DIFFERENCES` (the one place); everything else is compared strictly.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, Callable, ClassVar, Final, Optional, Sequence, TypeAlias

from model.concrete import ModelCoordinator, armed_timers
from model.coordinator_api import CoordinatorConfig
from model.invariants import check_state, check_transition
from model.step import Transition
from model.messages import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    GroupView,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    ProtocolMetadata,
    Request,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartition,
)
from model.vocabulary import ApiKey, Error
from reference.coordinator import ReferenceCoordinator

from conformance.actions import (IN_PROCESS, INSTANCES, Action, Assign, Commit, Count, Describe, Dialect, Everyone,
                                  Fetch, Gen, Heartbeat, Inst, Join, Leave, Pick, Sync, SyncProtocol, Wait, group_of, op_of, picks,
                                  rename_members, resolve)
from conformance.dump import Script, document, expects
from conformance.scenario import (AdvanceStep, CheckGroupStep, CheckPendingStep, CheckResponseStep, Defaults,
                                  Expect, ScenarioFile, Step)

# ------------------------------------------------------------------------------ vocabulary of a run

GROUPS: Final = ("g0", "g1")
GHOST: Final = "ghost"  # a member id neither coordinator ever generates
LITERAL_IDS: Final = frozenset({"", GHOST})
PROTOCOL_CHOICES: Final[tuple[tuple[str, tuple[ProtocolMetadata, ...]], ...]] = (
    ("consumer", (ProtocolMetadata("range", b"\x01"),)),
    ("consumer", (ProtocolMetadata("roundrobin", b"\x02"), ProtocolMetadata("range", b"\x01"))),
    ("consumer", (ProtocolMetadata("roundrobin", b"\x02"),)),
    ("connect", (ProtocolMetadata("range", b"\x01"),)),  # wrong protocol type
    ("consumer", (ProtocolMetadata("range", b"\x09"),)),  # same protocol, changed metadata
)
# Configured range is [1000, 30000]: 500 and 40000 are INVALID_SESSION_TIMEOUT. The valid values
# differ from each other, from the rebalance timeouts and from the new-member join timeout in their
# last digits, so that two timers of different kinds rarely fall due at the same instant (Kafka's
# order for equal deadlines is unspecified; see the module docstring).
SESSION_CHOICES: Final = (2003, 5011, 5011, 500, 40000)
REBALANCE_CHOICES: Final = (1517, 4007, 9029)
ADVANCE_CHOICES: Final = (1001, 1, 499, 1999, 2001, 4001, 9001, 1001)
TOPICS: Final = (TopicPartition("t", 0), TopicPartition("t", 1))


@dataclass(frozen=True, slots=True)
class RunConfig:
    """The broker configuration of one run (drawn per run; the session range is fixed)."""

    initial_delay: int = 1  # index into (0, 1000)
    max_size: int = 2  # index into (2, 3, 100)

    RANGES: ClassVar[dict[str, int]] = {"initial_delay": 2, "max_size": 3}

    def coordinator_config(self) -> CoordinatorConfig:
        return CoordinatorConfig(
            group_min_session_timeout_ms=1000,
            group_max_session_timeout_ms=30000,
            group_max_size=(2, 3, 100)[self.max_size],
            group_initial_rebalance_delay_ms=(0, 1000)[self.initial_delay],
            new_member_join_timeout_ms=8101,
        )


# ------------------------------------------------------------------------------------------- actions
#
# The lockstep's dialect of the action vocabulary (conformance.actions). Its client sees the
# reference's groups: `who` (JoinGroup): 0-3 = "" (a new member), 4 = a ghost id, 5-8 = a current
# member or pending id the client side knows (one bound from a JoinGroup response), 9 = any id ever
# bound (maybe gone); `who` (other requests): 0-5 = a current known member or pending id, 6 = "",
# 7 = a ghost id, 8-9 = any id ever bound. `inst`: 0 = the member's own instance id (None for "" and
# dynamic members), 1 = none, 2/3 = i1/i2. `gen`: 0-1 = the group's generation, 2 = one less, 3 = one
# more, 4 = -1. `assign`: 0 = every known member, 1 = none, 2 = only itself. Sync `proto`: 0 = no
# protocol type/name, 1 = the group's, 2 = a wrong name. Leave `count`: 0-1 = one member, 2 = two.

LOCKSTEP: Final = Dialect(
    kinds={
        Join: {"group": 2, "who": 10, "inst": 4, "proto": 5, "session": 5, "rebalance": 3, "known_id": 4,
               "skip": 2},
        Sync: {"group": 2, "who": 10, "gen": 5, "inst": 4, "assign": 3, "proto": 3},
        Heartbeat: {"group": 2, "who": 10, "gen": 5, "inst": 4},
        Leave: {"group": 2, "count": 3, "who": 10, "inst": 4, "who2": 10, "inst2": 4},
        Commit: {"group": 2, "who": 10, "gen": 5, "inst": 4, "offset": 3},
        Fetch: {"group": 2, "all": 2},
        Describe: {"group": 2},
        Everyone: {"group": 2, "what": 3, "proto": 2},
        Wait: {"ms": len(ADVANCE_CHOICES)},
    },
    # joins and syncs drive the interesting states
    weights=(6, 4, 3, 2, 2, 1, 1, 3, 4),
    join_who=picks(*[Pick.NEW] * 4, Pick.GHOST, *[(Pick.CURRENT, i) for i in range(5, 9)], (Pick.KNOWN, 9)),
    who=picks(*[(Pick.CURRENT, i) for i in range(6)], Pick.NEW, Pick.GHOST, (Pick.KNOWN, 8), (Pick.KNOWN, 9)),
    join_inst=(Inst.OWN, Inst.NONE, Inst.I1, Inst.I2),
    inst=(Inst.OWN, Inst.NONE, Inst.I1, Inst.I2),
    leave_inst=(Inst.OWN, Inst.NONE, Inst.I1, Inst.I2),
    gen=(Gen.SAME, Gen.SAME, Gen.OLDER, Gen.NEWER, Gen.MINUS_ONE),
    assign=(Assign.MEMBERS, Assign.NONE, Assign.SELF),
    sync_protocol=(SyncProtocol.NONE, SyncProtocol.GROUP, SyncProtocol.BOGUS),
    count=(Count.ONE, Count.ONE, Count.TWO),
    protocols=PROTOCOL_CHOICES,
    partitions=TOPICS,
    ghost=GHOST,
    versions=False,
    # Everyone: JoinGroup with its own id and instance id (the protocols of `proto`), SyncGroup at
    # the current generation naming the group's protocol (the leader with an assignment for every
    # known member), Heartbeat
    everyone=lambda a, leads, instance: (
        Join(group=a.group, inst=_inst_choice(instance), proto=a.proto, rebalance=1),
        Sync(group=a.group, proto=1), Heartbeat(group=a.group))[a.what],
)


def _inst_choice(instance_id: Optional[str]) -> int:
    """The `inst` choice that sends this instance id (1 = none)."""
    return 1 if instance_id is None else 2 + INSTANCES.index(instance_id)


# Scripted starts (group g0), so that deep states are reached in few generated steps. Each is
# ordinary actions, compared like any other. Members join with session 2003 ms, rebalance 4007 ms.
_NEW = dict(inst=1, session=0, rebalance=1, known_id=1)  # a dynamic member, JoinGroup v4+
PROLOGUES: Final[tuple[tuple[Action, ...], ...]] = (
    (),
    # two dynamic members (KIP-394 two-phase joins), the initial delay, SyncGroups: Stable, gen 1
    (Join(who=0, **_NEW), Join(who=5, **_NEW), Join(who=0, **_NEW), Join(who=5, **_NEW),
     Wait(ms=0), Wait(ms=0), Everyone(what=1)),
    # a static member (i1) and a dynamic one: Stable, generation 1
    (Join(who=0, **dict(_NEW, inst=2)), Join(who=0, **_NEW), Join(who=5, **_NEW), Wait(ms=0), Wait(ms=0),
     Everyone(what=1)),
    # two dynamic members, joined, no SyncGroup yet: CompletingRebalance, generation 1
    (Join(who=0, **_NEW), Join(who=5, **_NEW), Join(who=0, **_NEW), Join(who=5, **_NEW), Wait(ms=0),
     Wait(ms=0)),
)


def random_config(rng: random.Random) -> RunConfig:
    return RunConfig(**{name: rng.randrange(n) for name, n in RunConfig.RANGES.items()})


def random_action(rng: random.Random, groups: int = 2) -> Action:
    """One action with every choice drawn from `rng` (the soak driver's generator)."""
    return LOCKSTEP.draw(rng, groups)


# ------------------------------------------------------------------------------ known differences

Normalize = Callable[[Request, Response, Response], Optional[Response]]
PatchModel = Callable[[ModelCoordinator, Transition], bool]
Excuse = Callable[[str, Transition], bool]


@dataclass(frozen=True, slots=True)
class KnownDifference:
    """An analysed disagreement, tolerated so that the comparison stays meaningful for the rest.

    Each entry does exactly one narrow thing, and counts every time it applies:
    - `normalize(request, reference_response, model_response)`: the model's response with the
      known difference replaced by the reference's value (None: not this case);
    - `patch_model(model, transition)`: called after every model transition, sets the model's
      state to what Kafka does in the known case (True: it did), so later steps stay comparable;
    - `excuse(invariant_name, transition)`: a model invariant violation that is the known case."""

    reason: str
    normalize: Optional[Normalize] = None
    patch_model: Optional[PatchModel] = None
    excuse: Optional[Excuse] = None


# The one place where differences between the reference and the model that have been analysed
# (see ../shared/reference/kafka-classic-semantics.md) are tolerated, by name, with the reason.
KNOWN_DIFFERENCES: Final[dict[str, KnownDifference]] = {
    # Empty: every disagreement found so far was a model defect and has been fixed
    # (tests/scenarios/lockstep-regressions.json keeps them as regressions).
}


# ------------------------------------------------------------------------------------ divergences

class Divergence(AssertionError):
    """The reference and the model disagree (or one of them broke, or a model invariant failed).

    `scenario` is the run so far as a scenario document whose expectations are the reference's
    answers; `str(d)` ends with it as JSON, so a Hypothesis failure prints a runnable file.
    """

    def __init__(self, kind: str, message: str, scenario: dict[str, Any], actions: tuple[Action, ...]) -> None:
        self.kind = kind
        self.message = message
        self.scenario = scenario
        self.actions = actions
        super().__init__(f"{kind}: {message}\n--- scenario file ---\n{self.render()}")

    def render(self) -> str:
        return json.dumps(self.scenario, indent=1) + "\n"


class IdMap:
    """The bijection between the member ids the reference made and those the model made."""

    def __init__(self) -> None:
        self.to_model: dict[str, str] = {}
        self.to_ref: dict[str, str] = {}

    def model_id(self, ref_id: str) -> str:
        if ref_id in LITERAL_IDS:
            return ref_id
        got = self.to_model.get(ref_id)
        if got is None:
            raise KeyError(f"reference member id {ref_id!r} was never paired with a model id")
        return got

    def pair(self, ref_id: str, model_id: str, where: str) -> Optional[str]:
        """Learn or check one correspondence; a sentence describing the conflict, or None."""
        if ref_id in LITERAL_IDS or model_id in LITERAL_IDS:
            if ref_id != model_id:
                return f"{where}: reference has {ref_id!r}, model has {model_id!r}"
            return None
        known = self.to_model.get(ref_id)
        if known is not None:
            if known != model_id:
                return (f"{where}: reference id {ref_id!r} is paired with model id {known!r}, "
                        f"but here the model has {model_id!r}")
            return None
        if model_id in self.to_ref:
            return (f"{where}: model id {model_id!r} is paired with reference id "
                    f"{self.to_ref[model_id]!r}, but here the reference has {ref_id!r}")
        if _id_prefix(ref_id) != _id_prefix(model_id):
            return f"{where}: member id prefixes differ: reference {ref_id!r}, model {model_id!r}"
        self.to_model[ref_id] = model_id
        self.to_ref[model_id] = ref_id
        return None


def _id_prefix(member_id: str) -> str:
    """`consumer-<uuid>` -> `consumer` (GM:416: clientId or groupInstanceId, a dash, a UUID)."""
    head, sep, _ = member_id.rpartition("-")
    if sep and len(member_id) > 37 and member_id[-37] == "-":
        return member_id[:-37]
    return head if sep else member_id


_MEMBER_ID_FIELDS: Final = frozenset({"member_id", "leader"})


def _compare(ref: Any, model: Any, where: str, ids: IdMap, out: list[str]) -> None:
    """Field-by-field comparison; member-id fields are compared through the bijection."""
    if is_dataclass(ref) and not isinstance(ref, type):
        if type(ref) is not type(model):
            out.append(f"{where}: reference {type(ref).__name__}, model {type(model).__name__}")
            return
        for f in fields(ref):
            a, b = getattr(ref, f.name), getattr(model, f.name)
            sub = f"{where}.{f.name}"
            if f.name in _MEMBER_ID_FIELDS and isinstance(a, str) and isinstance(b, str):
                msg = ids.pair(a, b, sub)
                if msg is not None:
                    out.append(msg)
            else:
                _compare(a, b, sub, ids, out)
        return
    if isinstance(ref, tuple) and isinstance(model, tuple):
        if len(ref) != len(model):
            out.append(f"{where}: reference has {len(ref)} entries {_show(ref)}, model {len(model)} {_show(model)}")
            return
        for i, (a, b) in enumerate(zip(ref, model)):
            _compare(a, b, f"{where}[{i}]", ids, out)
        return
    if ref != model:
        out.append(f"{where}: reference {_show(ref)}, model {_show(model)}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


def _compare_views(gid: str, ref: Optional[GroupView], model: Optional[GroupView], ids: IdMap) -> list[str]:
    out: list[str] = []
    if ref is None or model is None:
        if ref is not model:
            out.append(f"group {gid}: reference {_summary(ref)}, model {_summary(model)}")
        return out
    w = f"group {gid}"
    for name in ("state", "generation_id", "protocol_type", "protocol_name"):
        a, b = getattr(ref, name), getattr(model, name)
        if a != b:
            out.append(f"{w}.{name}: reference {_show(a)}, model {_show(b)}")
    if len(ref.members) != len(model.members):
        out.append(f"{w}.members: reference {[m.member_id for m in ref.members]}, "
                   f"model {[m.member_id for m in model.members]}")
        return out
    for i, (a, b) in enumerate(zip(ref.members, model.members)):
        # Unpaired ids meet here first only for members whose JoinGroup is still parked.
        msg = ids.pair(a.member_id, b.member_id, f"{w}.members[{i}].member_id")
        if msg is not None:
            out.append(msg)
        for name in ("group_instance_id", "session_timeout_ms", "rebalance_timeout_ms",
                     "awaiting_join", "awaiting_sync", "is_new", "assignment"):
            x, y = getattr(a, name), getattr(b, name)
            if x != y:
                out.append(f"{w}.members[{i}] ({a.member_id}).{name}: reference {_show(x)}, model {_show(y)}")
    if (ref.leader is None) != (model.leader is None):
        out.append(f"{w}.leader: reference {ref.leader!r}, model {model.leader!r}")
    elif ref.leader is not None and model.leader is not None:
        msg = ids.pair(ref.leader, model.leader, f"{w}.leader")
        if msg is not None:
            out.append(msg)
    ref_pending = sorted(ids.to_model.get(p, f"<unpaired {p}>") for p in ref.pending_members)
    if ref_pending != sorted(model.pending_members):
        out.append(f"{w}.pending_members: reference {list(ref.pending_members)} "
                   f"(as model ids {ref_pending}), model {list(model.pending_members)}")
    return out


def _summary(view: Optional[GroupView]) -> str:
    if view is None:
        return "no group"
    return f"{view.state.name} generation {view.generation_id} with {len(view.members)} members"


# ------------------------------------------------------------------------------ scenario transcript

class Transcript:
    """The run as scenario steps, from the reference's side: requests with the reference's
    answers as `expect`, `check_response` for answers that came later, `check_group` after every
    action. Member ids the reference generated become `$M<n>`, bound where they were answered."""

    def __init__(self, config: RunConfig, bugs: frozenset[str], seed: int) -> None:
        self.config = config
        self.bugs = bugs
        self.seed = seed
        self.script = Script()
        self.names: dict[str, str] = {}  # reference member id -> binding name
        self.ops: dict[int, str] = {}  # request number -> op

    @property
    def steps(self) -> list[Step]:
        return self.script.steps

    def ref(self, member_id: str) -> str:
        """A member id as a scenario value: `$M<n>` if bound, else the literal id."""
        name = self.names.get(member_id)
        return f"${name}" if name is not None else member_id

    def bound(self, member_id: str) -> bool:
        return member_id in self.names

    def _bind(self, response: Response) -> Optional[str]:
        """A binding for the member id a JoinGroup response hands out first."""
        if isinstance(response, JoinGroupResponse):
            mid = response.member_id
            if mid not in LITERAL_IDS and mid not in self.names:
                self.names[mid] = f"M{len(self.names)}"
                return self.names[mid]
        return None

    def request(self, number: int, request: Request, op: str, response: Optional[Response]) -> None:
        self.ops[number] = op
        expect: tuple[Expect, ...] = ()
        bind = None
        if response is not None:
            expect = expects(self._expect(response, group_of(request)))  # before the new id is bound
            bind = self._bind(response)
        self.script.request(request, self.ref, id=f"r{number}", await_later=response is None, expect=expect,
                            bind=bind)

    def later(self, number: int, response: Response, gid: str) -> None:
        expect = expects(self._expect(response, gid))
        self.script.add(CheckResponseStep, f"r{number}", self.ops[number], expect, self._bind(response))

    def pending(self, number: int) -> None:
        self.script.add(CheckPendingStep, f"r{number}")

    def advance(self, ms: int) -> None:
        self.script.add(AdvanceStep, ms)

    def group(self, gid: str, view: Optional[GroupView]) -> None:
        expect: dict[str, Any]
        if view is None:
            expect = {"state": "Missing"}
        else:
            ids = [m.member_id for m in view.members]
            expect = {
                "state": view.state.name,
                "generation": view.generation_id,
                "members_count": len(ids),
                "pending_members_count": len(view.pending_members),
                "new_members_count": sum(1 for m in view.members if m.is_new),
                "dynamic_members_count": sum(1 for m in view.members if m.group_instance_id is None),
                "static_instance_ids": sorted(m.group_instance_id for m in view.members
                                              if m.group_instance_id is not None),
            }
            if all(self.bound(i) for i in ids):
                expect["member_ids"] = [self.ref(i) for i in ids]
            elif any(self.bound(i) for i in ids):
                expect["has_members"] = [self.ref(i) for i in ids if self.bound(i)]
            if view.leader is None:
                expect["leader"] = None
            elif self.bound(view.leader):
                expect["leader"] = self.ref(view.leader)
            else:
                expect["leader_is_not_null"] = True
            timeouts = {self.ref(m.member_id): {"session_timeout_ms": m.session_timeout_ms,
                                                "rebalance_timeout_ms": m.rebalance_timeout_ms}
                        for m in view.members if self.bound(m.member_id)}
            if timeouts:
                expect["member_timeouts"] = timeouts
        self.script.add(CheckGroupStep, gid, expects(expect))

    def _expect(self, response: Response, gid: str) -> dict[str, Any]:
        if isinstance(response, JoinGroupResponse):
            e: dict[str, Any] = {
                "error": response.error.name,
                "generation": response.generation_id,
                "members_count": len(response.members),
                "member_instance_ids": sorted((m.group_instance_id for m in response.members),
                                              key=lambda v: (v is not None, v or "")),
                "protocol_type": response.protocol_type,
                "protocol_name": response.protocol_name,
                "skip_assignment": response.skip_assignment,
            }
            mid = response.member_id
            if mid in LITERAL_IDS or self.bound(mid):
                e["member_id"] = self.ref(mid)
            else:
                e["member_id_prefix"] = _id_prefix(mid) + "-"
            if response.leader == mid and mid not in LITERAL_IDS:
                e["leader"] = "self"
            elif response.leader in LITERAL_IDS or self.bound(response.leader):
                e["leader"] = self.ref(response.leader)
            return e
        if isinstance(response, SyncGroupResponse):
            return {"error": response.error.name, "assignment": response.assignment.hex(),
                    "protocol_type": response.protocol_type, "protocol_name": response.protocol_name}
        if isinstance(response, HeartbeatResponse):
            return {"error": response.error.name}
        if isinstance(response, LeaveGroupResponse):
            return {"error": response.error.name, "member_errors": [m.error.name for m in response.members]}
        if isinstance(response, OffsetCommitResponse):
            return {"errors": {str(tp): err.name for tp, err in response.partitions}}
        if isinstance(response, OffsetFetchResponse):
            return {"error": response.error.name, "offsets": {str(tp): off for tp, off, _ in response.partitions}}
        assert isinstance(response, DescribeGroupsResponse)
        g = response.groups[0]
        d: dict[str, Any] = {
            "error": g.error.name, "state": g.state, "protocol_type": g.protocol_type,
            "protocol": g.protocol, "members_count": len(g.members),
            "member_instance_ids": sorted((m.group_instance_id for m in g.members),
                                          key=lambda v: (v is not None, v or "")),
            "members_metadata_and_assignment_empty": all(not m.metadata and not m.assignment for m in g.members),
        }
        if g.members and all(self.bound(m.member_id) for m in g.members):
            d["member_ids"] = [self.ref(m.member_id) for m in g.members]
            d["first_member_id"] = self.ref(g.members[0].member_id)
        return d

    def document(self, kind: str, message: str, actions: tuple[Action, ...]) -> dict[str, Any]:
        bugs = f" with seeded bugs {sorted(self.bugs)}" if self.bugs else ""
        scenario = self.script.scenario(
            f"lockstep-{kind}",
            source=f"conformance.lockstep, reference{bugs} vs model, seed {self.seed}",
            tags=("lockstep", "finding") + (("timing-tie",) if "timing-tie" in kind else ()),
            config=self.config.coordinator_config(),
            notes=(f"Expectations are the reference's answers{bugs}; the last action is where "
                   f"the model differed: {kind}: {message}"))
        finding = {
            "found_by": "conformance.lockstep (reference vs model)",
            "kind": kind,
            "message": message,
            "seed": self.seed,
            "bugs": sorted(self.bugs),
            "actions": [LOCKSTEP.text(a) for a in actions],
        }
        return document(ScenarioFile("", (scenario,), Defaults(GROUPS[0])), finding=finding)


# ----------------------------------------------------------------------------------- the lockstep

def _uuid_source(seed: int) -> Callable[[], str]:
    rng = random.Random(f"reference-{seed}")

    def make() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    return make


@dataclass
class _Arrivals:
    """Responses handed to callbacks during one action, per side, keyed by request number."""

    ref: dict[int, list[Response]] = field(default_factory=dict)
    model: dict[int, list[Response]] = field(default_factory=dict)


@dataclass(frozen=True)
class _GroupClient:
    """The lockstep's client side of one group (conformance.actions.Client): it sees the
    reference's group, and knows the member ids the transcript has bound."""

    ls: "Lockstep"
    group_id: str

    @property
    def dialect(self) -> Dialect:
        return LOCKSTEP

    def _view(self) -> Optional[GroupView]:
        return self.ls.reference.group_view(self.group_id)

    def known(self) -> list[str]:
        return list(self.ls.transcript.names)

    def current(self) -> list[str]:
        view = self._view()
        ids = [m.member_id for m in view.members] + list(view.pending_members) if view is not None else []
        return [i for i in ids if self.ls.transcript.bound(i)]

    def members(self) -> list[str]:
        view = self._view()
        return [m.member_id for m in (view.members if view else ()) if self.ls.transcript.bound(m.member_id)]

    def leader(self) -> str:
        view = self._view()
        return view.leader or "" if view is not None else ""

    def instance_of(self, member_id: str) -> Optional[str]:
        view = self._view()
        m = view.member(member_id) if view is not None else None
        return m.group_instance_id if m is not None else None

    def generation(self) -> int:
        view = self._view()
        return view.generation_id if view is not None else 0

    def last_join(self) -> tuple[str, ...]:
        return tuple(self.members())

    def protocol(self) -> tuple[Optional[str], Optional[str]]:
        view = self._view()
        return (view.protocol_type, view.protocol_name) if view is not None else (None, None)

    def version(self, api: ApiKey, choice: int, lo: int = 0) -> Optional[int]:
        return IN_PROCESS

    def timeouts(self, session: int, rebalance: int) -> tuple[int, int]:
        return SESSION_CHOICES[session], REBALANCE_CHOICES[rebalance]

    def assignments(self, targets: Sequence[str]) -> tuple[tuple[str, bytes], ...]:
        self.ls._offset += 1
        return tuple((m, bytes([0xA0 + self.ls._offset % 16, i])) for i, m in enumerate(targets))

    def offsets(self, choice: int) -> tuple[tuple[TopicPartition, int], ...]:
        self.ls._offset += 1
        return tuple((TOPICS[i], self.ls._offset * 10 + i) for i in range(1 + choice % 2))


class Lockstep:
    """The reference and the model side by side, compared after every action."""

    def __init__(self, config: RunConfig = RunConfig(), *, bugs: frozenset[str] = frozenset(),
                 seed: int = 0, groups: int = 2,
                 known: Optional[dict[str, KnownDifference]] = None) -> None:
        self.config = config
        self.bugs = frozenset(bugs)
        self.seed = seed
        self.groups = GROUPS[:groups]
        self.known = KNOWN_DIFFERENCES if known is None else known
        cc = config.coordinator_config()
        self.reference = ReferenceCoordinator(cc, bugs=self.bugs, uuid_source=_uuid_source(seed))
        self.model = ModelCoordinator(cc, seed=seed)
        self.model.listeners.append(self._patch)
        self.ids = IdMap()
        self.transcript = Transcript(config, self.bugs, seed)
        self.actions: list[Action] = []
        self.steps = 0
        self.tolerated: dict[str, int] = {}  # known differences seen, by name
        self.explore_tie_orders = True
        self._number = 0
        self._arrivals = _Arrivals()
        self._requests: dict[int, tuple[str, str, Request]] = {}  # number -> (group, op, request)
        self._parked: set[int] = set()  # request numbers not answered yet
        self._seen_transitions = 0
        self._offset = 0
        self._tie_note: list[str] = []

    # -- actions

    def apply(self, action: Action) -> None:
        """Run one action on both sides and compare; raises Divergence on the first difference."""
        self.actions.append(action)
        self.steps += 1
        if isinstance(action, Wait):
            self._advance(ADVANCE_CHOICES[action.ms])
            return
        gid = self.groups[getattr(action, "group") % len(self.groups)]
        for request, _ in resolve(action, _GroupClient(self, gid)):
            self._send(request)

    def _callback(self, side: str, number: int) -> Callable[[Response], None]:
        def deliver(response: Response) -> None:
            arrivals = self._arrivals.ref if side == "ref" else self._arrivals.model
            arrivals.setdefault(number, []).append(response)
        return deliver

    def _send(self, request: Request) -> None:
        self._number += 1
        number = self._number
        model_request = rename_members(request, self.ids.model_id)
        gid, op = group_of(request), op_of(request)
        self._requests[number] = (gid, op, request)
        self._parked.add(number)
        ref_error = self._run(lambda: self.reference.handle(request, self._callback("ref", number)))
        model_error = self._run(lambda: self.model.handle(model_request, self._callback("model", number)))
        immediate = self._arrivals.ref.get(number)
        self.transcript.request(number, request, op, immediate[0] if immediate else None)
        self._check(f"{op} request r{number}", ref_error, model_error, own=number, touched=gid)

    def _advance(self, ms: int) -> None:
        self._tie_note = self._ties(ms)
        snapshot = self._snapshot() if self._tie_note else None
        ref_error = self._run(lambda: self.reference.advance(ms))
        model_error = self._run(lambda: self.model.advance(ms))
        if (snapshot is not None and self.explore_tie_orders and ref_error is None and model_error is None
                and self._differs()):
            # Kafka fires equal deadlines in an unspecified order: the model, rewound, fires the
            # tied timers in the opposite order; if that agrees with the reference, it is kept.
            default = self._snapshot()
            self._restore(snapshot)
            model_error = self._run(lambda: self._model_advance(ms, reverse=True))
            if model_error is None and not self._differs():
                self._count("timing-tie-order")
                self._tie_note = []
            else:
                self._restore(default)
                model_error = None
        self.transcript.advance(ms)
        self._check(f"advance {ms} ms", ref_error, model_error, own=None)
        self._tie_note = []

    # -- equal deadlines: the model's advance with the opposite tie-break, on a rewound state.

    def _snapshot(self) -> tuple[Any, ...]:
        return (self.model.snapshot(), {k: list(v) for k, v in self._arrivals.model.items()},
                dict(self.tolerated))

    def _restore(self, snap: tuple[Any, ...]) -> None:
        model_snap, arrivals, tolerated = snap
        self.model.restore(model_snap)
        self._arrivals.model = {k: list(v) for k, v in arrivals.items()}
        self.tolerated = dict(tolerated)

    def _model_advance(self, ms: int, reverse: bool) -> None:
        self.model.advance(ms, reverse_ties=reverse)

    def _differs(self) -> bool:
        """Whether responses or groups differ now (a trial comparison on a copy of the id map)."""
        trial = IdMap()
        trial.to_model, trial.to_ref = dict(self.ids.to_model), dict(self.ids.to_ref)
        counts = dict(self.tolerated)
        try:
            return bool(self._diff(self._arrivals, trial))
        finally:
            self.tolerated = counts

    def _ties(self, ms: int) -> list[str]:
        """Timers of one group that fire in this advance with equal deadlines (read from the
        model's state; the reference exposes none). Kafka's order for them is unspecified."""
        now = self.model.now_ms()
        out: list[str] = []
        for gid in self.groups:
            due: dict[int, list[str]] = {}
            for d, _, event, member in armed_timers(self.model.group(gid)):
                if d < now + ms:
                    due.setdefault(d, []).append(f"{event}({member})" if member else event)
            out.extend(f"{gid} at {d} ms: {', '.join(evs)}" for d, evs in sorted(due.items()) if len(evs) > 1)
        return out

    @staticmethod
    def _run(call: Callable[[], None]) -> Optional[BaseException]:
        try:
            call()
        except Exception as e:  # a crash of either side is a finding, reported by _check
            return e
        return None

    # -- comparison

    def _check(self, what: str, ref_error: Optional[BaseException], model_error: Optional[BaseException],
               own: Optional[int], touched: Optional[str] = None) -> None:
        arrivals, self._arrivals = self._arrivals, _Arrivals()
        problems: list[tuple[str, str]] = []
        if ref_error is not None or model_error is not None:
            if ref_error is not None:
                problems.append(("reference-raised", f"{type(ref_error).__name__}: {ref_error}"))
            if model_error is not None:
                problems.append(("model-raised", f"{type(model_error).__name__}: {model_error}"))
            self._fail(what, problems)
        problems.extend(self._diff(arrivals, self.ids))
        for number in arrivals.ref:
            if number != own and number in self._parked:
                gid = self._requests[number][0]
                self.transcript.later(number, arrivals.ref[number][0], gid)
        self._parked -= set(arrivals.ref)  # the reference's view: what a scenario file can check
        for gid in self.groups:
            if touched is None or gid == touched:
                self.transcript.group(gid, self.reference.group_view(gid))
        # The model's named invariants on every transition it took.
        new = self.model.transitions[self._seen_transitions:]
        self._seen_transitions = len(self.model.transitions)
        for t in new:
            for name, msg in check_transition(self.model.table, t) + check_state(t.after):
                if not self._excused(name, t):
                    problems.append(("invariant", f"{name} ({t.after.group_id}, rows {list(t.rows)}): {msg}"))
        if problems:
            self._fail(what, problems)

    def _diff(self, arrivals: _Arrivals, ids: IdMap) -> list[tuple[str, str]]:
        """Every difference in the responses delivered (in request order) and in the groups."""
        problems: list[tuple[str, str]] = []
        for number in sorted(set(arrivals.ref) | set(arrivals.model)):
            rs, ms_ = arrivals.ref.get(number, []), arrivals.model.get(number, [])
            gid, op, request = self._requests[number]
            label = f"response to r{number} ({op})"
            if len(rs) > 1 or len(ms_) > 1:
                problems.append(("answered-twice", f"{label}: reference answered {len(rs)}x, model {len(ms_)}x"))
                continue
            if not rs or not ms_:
                side = "reference" if rs else "model"
                other = "model" if rs else "reference"
                problems.append(("response-missing", f"{label}: answered by the {side} only; the {other} "
                                 f"{'keeps it parked' if number in self._parked else 'answered it earlier'}"))
                continue
            diffs: list[str] = []
            _compare(rs[0], self._normalize(request, rs[0], ms_[0]), label, ids, diffs)
            problems.extend(("response-differs", d) for d in diffs)
        for gid in self.groups:
            diffs = _compare_views(gid, self.reference.group_view(gid), self.model.group_view(gid), ids)
            problems.extend(("group-differs", d) for d in diffs)
        return problems

    def _count(self, name: str) -> None:
        self.tolerated[name] = self.tolerated.get(name, 0) + 1

    def _patch(self, t: Transition) -> None:
        for name, known in self.known.items():
            if known.patch_model is not None and known.patch_model(self.model, t):
                self._count(name)

    def _excused(self, invariant: str, t: Transition) -> bool:
        for name, known in self.known.items():
            if known.excuse is not None and known.excuse(invariant, t):
                self._count(name)
                return True
        return False

    def _normalize(self, request: Request, ref: Response, model: Response) -> Response:
        for name, known in self.known.items():
            if known.normalize is None:
                continue
            fixed = known.normalize(request, ref, model)
            if fixed is not None:
                self._count(name)
                return fixed
        return model

    def _fail(self, what: str, problems: list[tuple[str, str]]) -> None:
        for number in sorted(self._parked):
            self.transcript.pending(number)
        kind = problems[0][0]
        message = f"after {what} (action {len(self.actions)}): " + "; ".join(m for _, m in problems)
        if self._tie_note:
            kind = f"{kind}-after-timing-tie"
            message += ("; NOTE timers with equal deadlines fired in this advance, in an order Kafka "
                        "leaves unspecified: " + "; ".join(self._tie_note))
        actions = tuple(self.actions)
        raise Divergence(kind, message, self.transcript.document(kind, message, actions), actions)


def run_actions(actions: list[Action] | tuple[Action, ...], config: RunConfig = RunConfig(), *,
                bugs: frozenset[str] = frozenset(), seed: int = 0, groups: int = 2) -> Lockstep:
    """Replay a list of actions; raises Divergence at the first difference."""
    ls = Lockstep(config, bugs=bugs, seed=seed, groups=groups)
    for a in actions:
        ls.apply(a)
    return ls


# ------------------------------------------------------------------------------------ Hypothesis

def lockstep_machine(bugs: frozenset[str] = frozenset(), groups: int = 2) -> type:
    """A Hypothesis RuleBasedStateMachine class running a `Lockstep` (reference with `bugs`): one
    rule per kind of action of the lockstep's dialect.

    Hypothesis is imported here so that the engine (and `groupspec soak`) work without it. The
    class's source text seeds Hypothesis's derandomized runs (hypothesis.stateful digests it), so
    it is kept as it was: the examples the pinned budgets of tests/lockstep were measured on stay.
    """
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

    Advance: TypeAlias = Wait  # the class's name for it

    def strategy(cls: type) -> Any:
        if cls is RunConfig:  # sampled_from: uniform choices (st.integers favours boundaries), shrinking to 0
            return st.builds(cls, **{name: st.sampled_from(range(n)) for name, n in RunConfig.RANGES.items()})
        return LOCKSTEP.strategy(cls, groups)

    class LockstepMachine(RuleBasedStateMachine):
        """Reference vs model: requests valid and invalid, clock advances, one or two groups."""

        def __init__(self) -> None:
            super().__init__()
            self.ls = Lockstep(RunConfig(), bugs=bugs, groups=groups)

        @initialize(config=strategy(RunConfig), prologue=st.sampled_from(range(len(PROLOGUES))))
        def configure(self, config: RunConfig, prologue: int) -> None:
            self.ls = Lockstep(config, bugs=bugs, groups=groups)
            for a in PROLOGUES[prologue]:
                self.ls.apply(a)

        @rule(a=strategy(Join))
        def join(self, a: Join) -> None:
            self.ls.apply(a)

        @rule(a=strategy(Sync))
        def sync(self, a: Sync) -> None:
            self.ls.apply(a)

        @rule(a=strategy(Heartbeat))
        def heartbeat(self, a: Heartbeat) -> None:
            self.ls.apply(a)

        @rule(a=strategy(Leave))
        def leave(self, a: Leave) -> None:
            self.ls.apply(a)

        @rule(a=strategy(Commit))
        def commit(self, a: Commit) -> None:
            self.ls.apply(a)

        @rule(a=strategy(Fetch))
        def fetch(self, a: Fetch) -> None:
            self.ls.apply(a)

        @rule(a=strategy(Describe))
        def describe(self, a: Describe) -> None:
            self.ls.apply(a)

        @rule(a=strategy(Everyone))
        def everyone(self, a: Everyone) -> None:
            self.ls.apply(a)

        @rule(a=strategy(Advance))
        def advance(self, a: Advance) -> None:
            self.ls.apply(a)

    LockstepMachine.__name__ = "LockstepMachine" + ("_" + "_".join(sorted(bugs)) if bugs else "")
    return LockstepMachine



# ------------------------------------------------------------------------- shrinking and printing

def replay(actions: tuple[Action, ...], config: RunConfig, *, bugs: frozenset[str] = frozenset(),
           seed: int = 0, groups: int = 2) -> Optional[Divergence]:
    """The divergence a list of actions runs into, or None."""
    try:
        run_actions(actions, config, bugs=bugs, seed=seed, groups=groups)
    except Divergence as d:
        return d
    return None


def shrink(divergence: Divergence, config: RunConfig, *, bugs: frozenset[str] = frozenset(),
           seed: int = 0, groups: int = 2, budget_s: float = 20.0) -> Divergence:
    """A shorter run with the same kind of divergence: drop chunks of actions (halving the chunk
    size) while the replay still diverges the same way, within `budget_s` seconds."""
    best = divergence
    deadline = time.monotonic() + budget_s
    chunk = max(len(best.actions) // 2, 1)
    while time.monotonic() < deadline:
        i = 0
        while i < len(best.actions) and time.monotonic() < deadline:
            candidate = best.actions[:i] + best.actions[i + chunk:]
            found = replay(candidate, config, bugs=bugs, seed=seed, groups=groups) if candidate else None
            if found is not None and found.kind == best.kind and len(found.actions) < len(best.actions):
                best = found
            else:
                i += chunk
        if chunk == 1:
            break
        chunk = max(chunk // 2, 1)
    return best


def finding_text(divergence: Divergence, *, bugs: frozenset[str] = frozenset()) -> str:
    """The divergence as a scenario file. When the printed scenario also fails against the model
    through the scenario runner (the usual case), it is cut at the failing step by
    `conformance.finding` (which adds the observed values); the lockstep's own account is kept
    under `finding.lockstep`. Otherwise the whole transcript is printed."""
    from conformance.finding import finding_document
    from conformance.parse import parse_text
    from conformance.runner import Outcome, run_scenario

    text = divergence.render()
    parsed = parse_text(text, "<lockstep>")
    result = run_scenario(parsed.path, parsed.scenarios[0], lambda c: ModelCoordinator(c))
    if result.outcome is not Outcome.FAIL:
        return text
    doc = finding_document(result, parsed, "model")
    doc["finding"]["lockstep"] = divergence.scenario["finding"]
    return json.dumps(doc, indent=1) + "\n"

"""Spec text: the named invariants every reachable state and every transition must satisfy.

State invariants look at one group; transition invariants look at one step (before, inputs,
rows fired, responses, after). Each returns None when it holds, else a sentence saying what broke.
The names are kebab-case and appear in every report (explorer, proofs, replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Final, Optional, Union

from model.dsl import Superseded, Table
from model.messages import OffsetCommitRequest, OffsetCommitResponse, SyncGroupResponse
from model.state import Group
from model.step import Transition
from model.vocabulary import Error, GroupState, is_valid_transition

P = GroupState.PreparingRebalance
LIVE: Final = frozenset({GroupState.Empty, P, GroupState.CompletingRebalance, GroupState.Stable})

StateCheck = Callable[[Group], Optional[str]]
StepCheck = Callable[[Table, Transition], Optional[str]]


@dataclass(frozen=True, slots=True)
class Invariant:
    name: str
    kind: str  # "state" or "transition"
    check: Union[StateCheck, StepCheck]
    doc: str


INVARIANTS: dict[str, Invariant] = {}


def state_invariant(name: str) -> Callable[[StateCheck], StateCheck]:
    def register(fn: StateCheck) -> StateCheck:
        INVARIANTS[name] = Invariant(name, "state", fn, (fn.__doc__ or "").strip())
        return fn
    return register


def transition_invariant(name: str) -> Callable[[StepCheck], StepCheck]:
    def register(fn: StepCheck) -> StepCheck:
        INVARIANTS[name] = Invariant(name, "transition", fn, (fn.__doc__ or "").strip())
        return fn
    return register


# -------------------------------------------------------------------------- state invariants

@state_invariant("single-delayed-join")
def single_delayed_join(g: Group) -> Optional[str]:
    """At most one DelayedJoin/InitialDelayedJoin per group, and one exists iff the group is
    PreparingRebalance (semantics §3.6: prepareRebalance runs only where canRebalance holds)."""
    n = len(g.join_timers)
    if n > 1:
        return f"{n} join operations armed"
    if (n == 1) != (g.state == P):
        return f"{n} join operations armed in {g.state.name}"
    return None


@state_invariant("single-delayed-sync")
def single_delayed_sync(g: Group) -> Optional[str]:
    """At most one DelayedSync, and only in CompletingRebalance or Stable (§3.6)."""
    n = len(g.sync_timers)
    if n > 1:
        return f"{n} DelayedSync operations armed"
    if n == 1 and g.state not in (GroupState.CompletingRebalance, GroupState.Stable):
        return f"a DelayedSync armed in {g.state.name}"
    return None


@state_invariant("empty-has-no-members")
def empty_has_no_members(g: Group) -> Optional[str]:
    """An Empty, Dead or missing group holds no members (§3.3)."""
    if g.state in (GroupState.Empty, GroupState.Dead, GroupState.Missing) and g.members:
        return f"{g.state.name} group holds {len(g.members)} members"
    return None


@state_invariant("leader-is-member")
def leader_is_member(g: Group) -> Optional[str]:
    """The leader is a member, and a group with members has a leader (§3.7)."""
    if g.leader is not None and not g.has_member(g.leader):
        return f"leader {g.leader} is not a member"
    if g.members and g.leader is None:
        return "members but no leader"
    return None


@state_invariant("stable-members-assigned")
def stable_members_assigned(g: Group) -> Optional[str]:
    """In Stable every member has its assignment: no SyncGroup or JoinGroup is still parked."""
    if g.state == GroupState.Stable:
        for m in g.members:
            if m.awaiting_sync is not None or m.awaiting_join is not None:
                return f"member {m.member_id} still parked in Stable"
    return None


@state_invariant("awaiting-join-only-in-preparing")
def awaiting_join_only_in_preparing(g: Group) -> Optional[str]:
    """Parked JoinGroups exist only in PreparingRebalance (join completion answers them all)."""
    if g.state != P:
        for m in g.members:
            if m.awaiting_join is not None:
                return f"member {m.member_id} parked in JoinGroup in {g.state.name}"
    return None


@state_invariant("awaiting-sync-only-in-completing")
def awaiting_sync_only_in_completing(g: Group) -> Optional[str]:
    """Parked SyncGroups exist only in CompletingRebalance."""
    if g.state != GroupState.CompletingRebalance:
        for m in g.members:
            if m.awaiting_sync is not None:
                return f"member {m.member_id} parked in SyncGroup in {g.state.name}"
    return None


@state_invariant("pending-and-members-disjoint")
def pending_and_members_disjoint(g: Group) -> Optional[str]:
    """A MEMBER_ID_REQUIRED id is never also a member (GM:344, §3.8); ids are unique."""
    ids = [m.member_id for m in g.members]
    if len(set(ids)) != len(ids):
        return "duplicate member ids"
    both = set(ids) & {p.member_id for p in g.pending}
    return f"ids both pending and member: {sorted(both)}" if both else None


@state_invariant("static-mapping-bijective")
def static_mapping_bijective(g: Group) -> Optional[str]:
    """group.instance.id <-> member id is a bijection over static members (GM:243, §3.10)."""
    iids = [m.instance_id for m in g.members if m.instance_id is not None]
    if len(set(iids)) != len(iids):
        return f"an instance id is mapped to two members: {sorted(iids)}"
    return None


@state_invariant("pending-sync-only-members")
def pending_sync_only_members(g: Group) -> Optional[str]:
    """Members awaiting their first SyncGroup exist only in CompletingRebalance/Stable (§3.9)."""
    if g.state not in (GroupState.CompletingRebalance, GroupState.Stable):
        for m in g.members:
            if m.pending_sync:
                return f"member {m.member_id} pending sync in {g.state.name}"
    return None


# -------------------------------------------------------------------------- transition invariants

def _row_source(row_id: str) -> GroupState:
    return GroupState[row_id.split("/", 1)[0]]


def _new_incarnation(table: Table, t: Transition) -> bool:
    return any(table.row(r).new_incarnation for r in t.rows)


@transition_invariant("leader-sync-rejected-in-preparing")
def leader_sync_rejected_in_preparing(table: Table, t: Transition) -> Optional[str]:
    """A SyncGroup processed in PreparingRebalance never stores or returns an assignment."""
    if t.inp.kind != "SyncGroup" or t.before.state != P:
        return None
    if not isinstance(t.reply, SyncGroupResponse) or t.reply.error == Error.NONE or t.reply.assignment:
        return f"SyncGroup in PreparingRebalance answered {t.reply}"
    before = {m.member_id: m.assignment for m in t.before.members}
    for m in t.after.members:
        if before.get(m.member_id, m.assignment) != m.assignment:
            return f"SyncGroup in PreparingRebalance changed {m.member_id}'s assignment"
    return None


@transition_invariant("generation-monotonic")
def generation_monotonic(table: Table, t: Transition) -> Optional[str]:
    """Within one group incarnation the generation never decreases, and it grows by exactly one
    for each completed join phase (PreparingRebalance -> CompletingRebalance/Empty, GM:574)."""
    if _new_incarnation(table, t) or t.after.state == GroupState.Missing:
        return None  # a new group object, or the object was removed from the cache
    completions = sum(
        1 for r in t.rows
        if _row_source(r) == P and table.row(r).next_state in
        (GroupState.CompletingRebalance, GroupState.Empty))
    delta = t.after.generation - t.before.generation
    if delta != completions:
        return (f"generation {t.before.generation} -> {t.after.generation} with "
                f"{completions} join-phase completion(s)")
    return None


@transition_invariant("valid-state-edges")
def valid_state_edges(table: Table, t: Transition) -> Optional[str]:
    """Every state change is allowed by Kafka's validPreviousStates (GM transitionTo). Removal
    from the cache counts as a move to Dead; creating or loading a group starts a new object."""
    for rid in t.rows:
        row = table.row(rid)
        src, dst = _row_source(rid), row.next_state
        if dst is None or row.new_incarnation:
            continue
        if src == GroupState.Missing:
            if dst != GroupState.Missing:
                return f"{rid}: a missing group changed to {dst.name} without a new object"
            continue
        target = GroupState.Dead if dst == GroupState.Missing else dst
        if not is_valid_transition(src, target):
            return f"{rid}: {src.name} -> {dst.name} is not a valid edge"
    return None


@transition_invariant("dead-is-absorbing")
def dead_is_absorbing(table: Table, t: Transition) -> Optional[str]:
    """A Dead group object stays Dead; only a load creates a new object (§1)."""
    if t.before.state == GroupState.Dead and t.after.state != GroupState.Dead:
        if not _new_incarnation(table, t) and t.after.state != GroupState.Missing:
            return f"Dead -> {t.after.state.name}"
    return None


@transition_invariant("one-response-per-request")
def one_response_per_request(table: Table, t: Transition) -> Optional[str]:
    """Every request gets exactly one response: a parked request is answered once, later; a
    request is never answered twice; the only requests left without a response are Kafka's own
    documented cases, marked as superseded (a JoinGroup or SyncGroup replaced by a newer one from
    the same member while parked, GM:518 / GC:600; a SyncGroup whose member was removed while it
    was parked)."""
    parked_before: set[int] = set()
    for m in t.before.members:
        if m.awaiting_join is not None:
            parked_before.add(m.awaiting_join.request_id)
        if m.awaiting_sync is not None:
            parked_before.add(m.awaiting_sync)
    parked_after: set[int] = set()
    for m in t.after.members:
        if m.awaiting_join is not None:
            parked_after.add(m.awaiting_join.request_id)
        if m.awaiting_sync is not None:
            parked_after.add(m.awaiting_sync)
    is_request = t.inp.kind in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup",
                                "OffsetCommit", "OffsetFetch", "DescribeGroups",
                                "ListGroups", "DeleteGroups")
    own = t.inp.request_id if is_request else None
    answered: dict[int, int] = {}
    settled: set[int] = set()
    for o in t.outputs:
        if o.request_id not in parked_before and o.request_id != own:
            return f"response to request {o.request_id}, which was not waiting"
        if isinstance(o.response, Superseded):
            settled.add(o.request_id)
            continue
        answered[o.request_id] = answered.get(o.request_id, 0) + 1
        settled.add(o.request_id)
    if t.reply is not None and own is not None:
        answered[own] = answered.get(own, 0) + 1
        settled.add(own)
    twice = [r for r, n in answered.items() if n > 1]
    if twice:
        return f"requests answered more than once: {twice}"
    for rid in parked_before - parked_after:
        if rid not in settled and rid != own:
            return f"parked request {rid} vanished without a response"
    if own is not None and own not in settled and own not in parked_after:
        return f"the {t.inp.kind} request got no response and is not parked"
    if own is not None and own in parked_after and own in answered:
        return f"the {t.inp.kind} request was answered and is still parked"
    return None


@transition_invariant("commit-fencing")
def commit_fencing(table: Table, t: Transition) -> Optional[str]:
    """An OffsetCommit with a generation other than the group's (>= 0) is never accepted."""
    r = t.inp.request
    if not isinstance(r, OffsetCommitRequest) or r.generation_id < 0:
        return None
    if r.generation_id != t.before.generation or t.before.state not in LIVE:
        if isinstance(t.reply, OffsetCommitResponse) and any(e == Error.NONE for _, e in t.reply.partitions):
            return f"commit with generation {r.generation_id} accepted at generation {t.before.generation}"
    return None


@transition_invariant("only-members-served")
def only_members_served(table: Table, t: Transition) -> Optional[str]:
    """A Heartbeat or SyncGroup is answered NONE only for a member of the group."""
    if t.inp.kind not in ("Heartbeat", "SyncGroup"):
        return None
    mid = str(getattr(t.inp.request, "member_id", ""))
    err = getattr(t.reply, "error", None)
    if err == Error.NONE and not t.before.has_member(mid):
        return f"{t.inp.kind} from non-member {mid!r} answered NONE in {t.before.state.name}"
    return None


def check_state(g: Group, names: Optional[frozenset[str]] = None) -> list[tuple[str, str]]:
    out = []
    for inv in INVARIANTS.values():
        if inv.kind == "state" and (names is None or inv.name in names):
            msg = inv.check(g)  # type: ignore[call-arg,arg-type]
            if msg is not None:
                out.append((inv.name, msg))
    return out


def check_transition(table: Table, t: Transition,
                     names: Optional[frozenset[str]] = None) -> list[tuple[str, str]]:
    out = []
    for inv in INVARIANTS.values():
        if inv.kind == "transition" and (names is None or inv.name in names):
            msg = inv.check(table, t)  # type: ignore[call-arg,arg-type]
            if msg is not None:
                out.append((inv.name, msg))
    return out



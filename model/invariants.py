"""Spec text: the named invariants every reachable state and every transition must satisfy.

State invariants look at one group; transition invariants look at one step (before, inputs,
rows fired, responses, after). Each returns None when it holds, else a sentence saying what broke.
The names are kebab-case and appear in every report (explorer, proofs, replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Final, Optional, Union

from model.dsl import Superseded, Table
from model.atoms import instance_id_of, member_id_of
from model.messages import (
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.state import Group, JoinTimerKind, Member
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


def _parked_outside(g: Group, state: GroupState, api: str, parked: Callable[[Member], object]) -> Optional[str]:
    """The first member with an `api` request parked (`parked(m)` not None) outside `state`."""
    if g.state != state:
        for m in g.members:
            if parked(m) is not None:
                return f"member {m.member_id} parked in {api} in {g.state.name}"
    return None


@state_invariant("awaiting-join-only-in-preparing")
def awaiting_join_only_in_preparing(g: Group) -> Optional[str]:
    """Parked JoinGroups exist only in PreparingRebalance (join completion answers them all)."""
    return _parked_outside(g, P, "JoinGroup", lambda m: m.awaiting_join)


@state_invariant("awaiting-sync-only-in-completing")
def awaiting_sync_only_in_completing(g: Group) -> Optional[str]:
    """Parked SyncGroups exist only in CompletingRebalance."""
    return _parked_outside(g, GroupState.CompletingRebalance, "SyncGroup", lambda m: m.awaiting_sync)


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
    parked_before = t.before.parked_requests()
    parked_after = t.after.parked_requests()
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


# -------------------------------------------------------------------------- the client's contract
#
# Promises the Java consumer (AbstractCoordinator / ConsumerCoordinator) relies on when it handles
# a response, stated over one transition: the request, every response made in the step (the
# input's own reply and the answers to parked requests) and the state before and after. Each
# docstring states the property exactly; the citation says who makes the promise.
# AC = clients/.../AbstractCoordinator.java, CC = ConsumerCoordinator.java (3.9).

C = GroupState.CompletingRebalance
S = GroupState.Stable
GONE: Final = frozenset({GroupState.Dead, GroupState.Missing})


def _sync_answers(t: Transition) -> list[tuple[str, SyncGroupResponse]]:
    """Every SyncGroup response made in the step, with the member id it was sent to."""
    out: list[tuple[str, SyncGroupResponse]] = []
    if isinstance(t.reply, SyncGroupResponse) and isinstance(t.inp.request, SyncGroupRequest):
        out.append((t.inp.request.member_id, t.reply))
    for o in t.outputs:
        if isinstance(o.response, SyncGroupResponse):
            out.append((o.member_id or "", o.response))
    return out


@transition_invariant("sync-answer-is-stored-assignment")
def sync_answer_is_stored_assignment(table: Table, t: Transition) -> Optional[str]:
    """Every SyncGroup answered NONE in a step (the request itself or a parked one) is answered
    once the group is Stable after the step, i.e. once this generation's leader has stored the
    assignment; the answer goes to a member and carries exactly the assignment stored for it and
    the group's selected protocol; a SyncGroup answered NONE at once carries the group's current
    generation. (GC:600-642 doSyncGroup: followers wait for the leader, GC:1262
    propagateAssignment; AC SyncGroupResponseHandler installs the bytes as the member's
    assignment; KIP-559 protocol name check in AC.)"""
    for mid, resp in _sync_answers(t):
        if resp.error != Error.NONE:
            continue
        if t.after.state != S:
            return f"SyncGroup of {mid} answered NONE in {t.after.state.name}, before the leader's assignment"
        m = t.after.member(mid)
        if m is None:
            return f"SyncGroup of non-member {mid} answered NONE"
        if resp.assignment != m.assignment:
            return (f"SyncGroup of {mid} answered {resp.assignment!r}, but the stored assignment "
                    f"is {m.assignment!r}")
        if resp.protocol_name != t.after.protocol_name:
            return f"SyncGroup of {mid} answered protocol {resp.protocol_name!r}, group has {t.after.protocol_name!r}"
    r = t.inp.request
    if (isinstance(r, SyncGroupRequest) and isinstance(t.reply, SyncGroupResponse)
            and t.reply.error == Error.NONE and r.generation_id != t.after.generation):
        return f"SyncGroup of generation {r.generation_id} answered NONE at generation {t.after.generation}"
    return None


@transition_invariant("only-leader-assigns")
def only_leader_assigns(table: Table, t: Transition) -> Optional[str]:
    """A member's stored assignment changes only (a) by the SyncGroup of the current generation's
    leader while the group is CompletingRebalance, or (b) when a rebalance clears every
    assignment (the step put the group into PreparingRebalance and no member has one afterwards:
    the join phase may complete in the same step, e.g. a CompletingRebalance rejoin with changed
    metadata that every member has now sent), or with a new group object / the group leaving the
    cache. Members present before and after are compared by id. (GC:600-617: only the leader's assignments are stored, `if (group.isLeader(memberId))`;
    GC:1252 resetAndPropagateAssignmentError clears them.)"""
    if _new_incarnation(table, t) or t.after.state in GONE:
        return None
    before = {m.member_id: m.assignment for m in t.before.members}
    changed = [m.member_id for m in t.after.members
               if m.member_id in before and before[m.member_id] != m.assignment]
    if not changed:
        return None
    r = t.inp.request
    if (isinstance(r, SyncGroupRequest) and t.before.state == C
            and r.member_id == t.before.leader and r.generation_id == t.before.generation):
        return None
    began_rebalance = t.after.state == P or any(table.row(x).next_state == P for x in t.rows)
    if began_rebalance and all(m.assignment == b"" for m in t.after.members):
        return None
    who = getattr(r, "member_id", None) if r is not None else None
    return (f"{t.inp.kind}{' of ' + who if who else ''} in {t.before.state.name} changed the "
            f"assignment of {sorted(changed)} (leader {t.before.leader})")


@transition_invariant("selected-protocol-supported")
def selected_protocol_supported(table: Table, t: Transition) -> Optional[str]:
    """After every step, a group in CompletingRebalance or Stable with members has a selected
    protocol, and every member lists it among its protocols. (GM:434 selectProtocol picks from
    the candidates every member supports; GM:464 supportsProtocols admits only members that
    support a candidate; GC:1345 a static restart that would change the selection rebalances
    (KAFKA-10284); CC onJoinComplete looks the assignor up by this name.)"""
    g = t.after
    if g.state not in (C, S) or not g.members:
        return None
    if g.protocol_name is None:
        return f"{g.state.name} with members but no selected protocol"
    for m in g.members:
        if g.protocol_name not in m.protocol_names():
            return f"member {m.member_id} does not support the selected protocol {g.protocol_name!r}"
    return None


def _fenced_items(t: Transition) -> list[tuple[str, str, int]]:
    """(member id, instance id, index) of each request item whose group.instance.id is mapped,
    before the step, to another member id. Not counted: a JoinGroup with an empty member id (a
    restart), a LeaveGroup by instance id only (an administrative removal), and a member id that
    is a pending MEMBER_ID_REQUIRED id (Kafka checks pending ids first, GC:692 / GC:424: such an
    id is not an old id of the instance, and removing it touches no member)."""
    g = t.before
    items: list[tuple[str, Optional[str]]] = []
    r = t.inp.request
    if isinstance(r, LeaveGroupRequest):
        items = [(m.member_id, m.group_instance_id) for m in r.members]
    elif t.inp.kind in ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit"):
        mid = member_id_of(t.inp)
        if not (t.inp.kind == "JoinGroup" and mid == ""):
            items = [(mid, instance_id_of(t.inp))]
    out = []
    for i, (mid, iid) in enumerate(items):
        if iid is None or (isinstance(r, LeaveGroupRequest) and mid == ""):
            continue
        current = g.static_member_id(iid)
        if current is not None and current != mid and not g.has_pending(mid):
            out.append((mid, iid, i))
    return out


def _leaves_owner_too(t: Transition, iid: str, owner: str) -> bool:
    """A batched LeaveGroup (v3+) whose other items remove the instance's current member
    legitimately (by its own member id, or by instance id only: an administrative removal): the
    owner leaving is that item's doing, not the fenced item's (GC:652 handles each item alone)."""
    r = t.inp.request
    if not isinstance(r, LeaveGroupRequest):
        return False
    return any(m.group_instance_id in (iid, None) and m.member_id in (owner, "")
               and not (m.member_id == "" and m.group_instance_id is None)
               for m in r.members)


@transition_invariant("static-old-id-fenced")
def static_old_id_fenced(table: Table, t: Transition) -> Optional[str]:
    """A request carrying a group.instance.id that is mapped to another member id (a replaced
    static member's old id, or an impostor; exceptions in _fenced_items) is never answered NONE (for a LeaveGroup: that
    member's result), and the instance's current member stays a member, mapped to it. So two
    live clients never hold the instance's membership at once. (KIP-345; GC:373
    validateCurrentMember -> FENCED_INSTANCE_ID; GM:319 replaceStaticMember; AC treats
    FENCED_INSTANCE_ID as fatal.)"""
    fenced = _fenced_items(t)
    if not fenced:
        return None
    for mid, iid, i in fenced:
        owner = t.before.static_member_id(iid)
        if isinstance(t.reply, LeaveGroupResponse):
            if t.reply.error == Error.NONE and i < len(t.reply.members) and t.reply.members[i].error == Error.NONE:
                return f"LeaveGroup of {mid!r} (instance {iid}, owned by {owner}) answered NONE"
        elif t.reply is not None and getattr(t.reply, "error", None) == Error.NONE:
            return f"{t.inp.kind} of {mid!r} (instance {iid}, owned by {owner}) answered NONE"
        if (t.after.state not in GONE and owner is not None and t.after.static_member_id(iid) != owner
                and not _leaves_owner_too(t, iid, owner)):
            return f"{t.inp.kind} of {mid!r} displaced instance {iid}'s member {owner}"
    return None


@transition_invariant("parked-member-not-expired")
def parked_member_not_expired(table: Table, t: Transition) -> Optional[str]:
    """A member that is not new and has a JoinGroup or SyncGroup parked is not removed when its
    session timer fires: it is waiting for the coordinator, not failing. (MM:93
    hasSatisfiedHeartbeat, GC:1689 tryCompleteHeartbeat; AC disables the heartbeat thread's
    session checks while a JoinGroup/SyncGroup is in flight.)"""
    if t.inp.kind != "MemberSessionExpire" or t.inp.member_id is None:
        return None
    m = t.before.member(t.inp.member_id)
    if m is None or m.is_new or (m.awaiting_join is None and m.awaiting_sync is None):
        return None
    if t.after.state not in GONE and not t.after.has_member(m.member_id):
        return f"member {m.member_id}, parked in {'JoinGroup' if m.awaiting_join else 'SyncGroup'}, expired"
    return None


@transition_invariant("join-completes-when-all-rejoined")
def join_completes_when_all_rejoined(table: Table, t: Transition) -> Optional[str]:
    """When every known member has rejoined and no MEMBER_ID_REQUIRED id is pending, the join
    phase completes in the same step, without waiting for a timer: (a) no step ends in
    PreparingRebalance with a (non-initial) DelayedJoin armed, every member parked in JoinGroup
    and no pending id; (b) a DelayedJoinComplete never leaves the group in PreparingRebalance.
    The InitialDelayedJoin of an Empty group's first rebalance waits on purpose (KIP-134).
    (GC:1527 tryCompleteJoin, GM:392 hasAllMembersJoined; DelayedJoin.tryComplete via
    joinPurgatory.checkAndComplete after every join, leave and expiry, GC:1505/1519.)"""
    for rid in t.rows:
        row = table.row(rid)
        if row.event == "DelayedJoinComplete" and _row_source(rid) == P and row.next_state is None:
            return f"{rid} left the group in PreparingRebalance"
    g = t.after
    if (g.state == P and g.join_timers and g.join_timers[0].kind == JoinTimerKind.DelayedJoin
            and g.has_all_members_joined()):
        return (f"every member ({len(g.members)}) has rejoined and none is pending, but the join "
                f"phase waits for its DelayedJoin")
    return None


@transition_invariant("completing-membership-frozen")
def completing_membership_frozen(table: Table, t: Transition) -> Optional[str]:
    """While a generation is CompletingRebalance its member ids are exactly those the JoinGroup
    responses named to the leader: a step that starts and ends in CompletingRebalance at the same
    generation does not add, remove or re-key a member (a change must start a new rebalance), so
    the leader's assignment covers every member. (GC:1345 updateStaticMemberAndRebalance
    rebalances in CompletingRebalance, KAFKA-9801; GC:1459, GC:1505 maybePrepareRebalance.)"""
    b, a = t.before, t.after
    if b.state != C or a.state != C or b.generation != a.generation:
        return None
    before = {m.member_id for m in b.members}
    after = {m.member_id for m in a.members}
    if before != after:
        return (f"members changed within CompletingRebalance generation {a.generation}: "
                f"-{sorted(before - after)} +{sorted(after - before)}")
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



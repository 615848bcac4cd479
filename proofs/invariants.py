"""The named invariants of model/invariants.py over the symbolic state, plus the auxiliary
invariants the unbounded proofs need (each named, stated here, and proved like the others).

State invariants are formulas over one state; step invariants are violation formulas over one
path (pre-state, input, post-state). Universal statements over member or instance ids take a
`domain`: None for the unbounded proofs (a Z3 quantifier), a list of ids for BMC (a finite
conjunction over the bounded domain).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Final, Optional, Sequence

import z3

from model.dsl import Row
from model.vocabulary import Error, GroupState, TimerEvent, is_valid_transition
from proofs.atoms import known
from proofs.encode import Path
from proofs.symbolic import (
    GSTATE,
    PERS_EMPTY,
    PERS_NONE,
    PERS_STABLE,
    Sym,
    Terms,
    diff,
    empty_like,
    eq,
    inter,
    is_empty,
    mget,
    sel,
    singleton,
    union,
)

E, P, C, S, D, M = (GroupState.Empty, GroupState.PreparingRebalance,
                    GroupState.CompletingRebalance, GroupState.Stable, GroupState.Dead,
                    GroupState.Missing)
# The ids a universal statement ranges over: None for the unbounded proofs (a Z3 quantifier over
# Int ids), else the id terms of a finite representation (a conjunction).
Domain = Optional[Sequence[z3.ExprRef]]


def forall(domain: Domain, body: Callable[[z3.ExprRef], z3.BoolRef], name: str = "m") -> z3.BoolRef:
    if domain is None:
        v = z3.Int(f"{name}!q")
        return z3.ForAll([v], body(v))
    return z3.And([body(k) for k in domain])


def forall2(domain: Domain, body: Callable[[z3.ExprRef, z3.ExprRef], z3.BoolRef]) -> z3.BoolRef:
    if domain is None:
        a, b = z3.Int("a!q"), z3.Int("b!q")
        return z3.ForAll([a, b], body(a, b))
    return z3.And([body(i, j) for i in domain for j in domain])


def st_in(g: Terms, *states: GroupState) -> z3.BoolRef:
    return z3.Or([eq(g["st"], GSTATE[s]) for s in states])


def none_of(g: Terms, a: str) -> z3.BoolRef:
    """No member has the per-member fact `a`."""
    return is_empty(inter(g["mem"], g[a]))


StateFormula = Callable[[Terms, Domain], z3.BoolRef]


@dataclass(frozen=True)
class StateInvariant:
    name: str
    holds: StateFormula
    doc: str
    auxiliary: bool = False


StepFormula = Callable[[Path, Terms, Sym, Terms], z3.BoolRef]


@dataclass(frozen=True)
class StepInvariant:
    name: str
    violated: StepFormula
    doc: str


STATE_INVARIANTS: Final[dict[str, StateInvariant]] = {}
AUXILIARY: Final[dict[str, StateInvariant]] = {}
STEP_INVARIANTS: Final[dict[str, StepInvariant]] = {}
# Named invariants of model/invariants.py without an encoding, and why (reported as unknown).
NOT_ENCODED: Final[dict[str, str]] = {}


def state_inv(name: str, auxiliary: bool = False) -> Callable[[StateFormula], StateFormula]:
    def register(fn: StateFormula) -> StateFormula:
        reg = AUXILIARY if auxiliary else STATE_INVARIANTS
        reg[name] = StateInvariant(name, fn, (fn.__doc__ or "").strip(), auxiliary)
        return fn
    return register


def step_inv(name: str) -> Callable[[StepFormula], StepFormula]:
    def register(fn: StepFormula) -> StepFormula:
        STEP_INVARIANTS[name] = StepInvariant(name, fn, (fn.__doc__ or "").strip())
        return fn
    return register


# -------------------------------------------------------------------------- named state invariants

@state_inv("single-delayed-join")
def _single_delayed_join(g: Terms, d: Domain) -> z3.BoolRef:
    """At most one join operation; one exists iff PreparingRebalance."""
    return z3.And(g["jt"] <= 1, (g["jt"] == 1) == (eq(g["st"], GSTATE[P])))


@state_inv("single-delayed-sync")
def _single_delayed_sync(g: Terms, d: Domain) -> z3.BoolRef:
    """At most one DelayedSync, only in CompletingRebalance or Stable."""
    return z3.And(g["stn"] <= 1, z3.Implies(g["stn"] == 1, st_in(g, C, S)))


@state_inv("empty-has-no-members")
def _empty_has_no_members(g: Terms, d: Domain) -> z3.BoolRef:
    """Empty, Dead and Missing groups hold no members."""
    return z3.Implies(st_in(g, E, D, M), is_empty(g["mem"]))


@state_inv("leader-is-member")
def _leader_is_member(g: Terms, d: Domain) -> z3.BoolRef:
    """The leader is a member; a group with members has a leader."""
    return z3.And(z3.Implies(g["hasl"], sel(g["mem"], g["leader"])),
                  z3.Implies(z3.Not(is_empty(g["mem"])), g["hasl"]))


@state_inv("stable-members-assigned")
def _stable_members_assigned(g: Terms, d: Domain) -> z3.BoolRef:
    """No member is parked in JoinGroup or SyncGroup in Stable."""
    return z3.Implies(eq(g["st"], GSTATE[S]), z3.And(none_of(g, "aj"), none_of(g, "asy")))


@state_inv("awaiting-join-only-in-preparing")
def _awaiting_join_only_in_preparing(g: Terms, d: Domain) -> z3.BoolRef:
    """Parked JoinGroups only in PreparingRebalance."""
    return z3.Implies(z3.Not(eq(g["st"], GSTATE[P])), none_of(g, "aj"))


@state_inv("awaiting-sync-only-in-completing")
def _awaiting_sync_only_in_completing(g: Terms, d: Domain) -> z3.BoolRef:
    """Parked SyncGroups only in CompletingRebalance."""
    return z3.Implies(z3.Not(eq(g["st"], GSTATE[C])), none_of(g, "asy"))


@state_inv("pending-and-members-disjoint")
def _pending_and_members_disjoint(g: Terms, d: Domain) -> z3.BoolRef:
    """No id is both pending and a member (ids are a set here, so never duplicated)."""
    return none_of(g, "pend")


@state_inv("static-mapping-bijective")
def _static_mapping_bijective(g: Terms, d: Domain) -> z3.BoolRef:
    """No two static members share a group.instance.id."""
    mem, hinst, inst = g["mem"], g["hinst"], g["inst"]

    def body(a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
        return z3.Implies(z3.And(sel(mem, a), sel(mem, b), sel(hinst, a),
                                 sel(hinst, b), mget(inst, a) == mget(inst, b)),
                          a == b)
    return forall2(d, body)


@state_inv("pending-sync-only-members")
def _pending_sync_only_members(g: Terms, d: Domain) -> z3.BoolRef:
    """Members pending their first SyncGroup only in CompletingRebalance / Stable."""
    return z3.Implies(z3.Not(st_in(g, C, S)), none_of(g, "psync"))


# -------------------------------------------------------------------------- auxiliary invariants

@state_inv("aux-counts-nonnegative", auxiliary=True)
def _counts(g: Terms, d: Domain) -> z3.BoolRef:
    """Timer counts are never negative."""
    return z3.And(g["jt"] >= 0, g["stn"] >= 0)


@state_inv("aux-static-map-consistent", auxiliary=True)
def _static_map(g: Terms, d: Domain) -> z3.BoolRef:
    """GM staticMembers agrees with the members' instance ids, both ways."""
    return _map_consistent(g, d, "mem", "hinst", "inst", "shas", "smap")


def _map_consistent(g: Terms, d: Domain, mem: str, hinst: str, inst: str, shas: str,
                    smap: str) -> z3.BoolRef:
    def fwd(m: z3.ExprRef) -> z3.BoolRef:
        i = mget(g[inst], m)
        return z3.Implies(z3.And(sel(g[mem], m), sel(g[hinst], m)),
                          z3.And(sel(g[shas], i), mget(g[smap], i) == m))

    def back(i: z3.ExprRef) -> z3.BoolRef:
        m = mget(g[smap], i)
        return z3.Implies(sel(g[shas], i),
                          z3.And(sel(g[mem], m), sel(g[hinst], m), mget(g[inst], m) == i))
    return z3.And(forall(d, fwd, "m"), forall(d, back, "i"))


@state_inv("aux-persisted-consistent", auxiliary=True)
def _persisted(g: Terms, d: Domain) -> z3.BoolRef:
    """The last GroupMetadata record is one a live group could have written: Stable with a
    member leader, or Empty with no members; its static map agrees with its members."""
    return z3.And(
        z3.Implies(eq(g["pers"], PERS_STABLE), z3.And(
            z3.Not(is_empty(g["p_mem"])), g["p_hasl"], sel(g["p_mem"], g["p_leader"]))),
        z3.Implies(eq(g["pers"], PERS_EMPTY), z3.And(is_empty(g["p_mem"]), z3.Not(g["p_hasl"]),
                                                   is_empty(g["p_shas"]))),
        z3.Implies(z3.Not(eq(g["pers"], PERS_NONE)),
                   _map_consistent(g, d, "p_mem", "p_hinst", "p_inst", "p_shas", "p_smap")))


@state_inv("aux-unowned-is-dead-or-missing", auxiliary=True)
def _unowned(g: Terms, d: Domain) -> z3.BoolRef:
    """Only a Dead or Missing group sits on a partition the coordinator does not own."""
    return z3.Implies(z3.Not(g["owned"]), st_in(g, D, M))


@state_inv("aux-nothing-in-dead-or-missing", auxiliary=True)
def _nothing_dead(g: Terms, d: Domain) -> z3.BoolRef:
    """A Dead or Missing group has no pending ids, leader, static map or timers."""
    return z3.Implies(st_in(g, D, M), z3.And(is_empty(g["pend"]), z3.Not(g["hasl"]),
                                             is_empty(g["shas"]), g["jt"] == 0, g["stn"] == 0))


@state_inv("aux-new-members-only-in-preparing", auxiliary=True)
def _new_only_p(g: Terms, d: Domain) -> z3.BoolRef:
    """A member is `isNew` only while the join phase that added it runs."""
    return z3.Implies(z3.Not(eq(g["st"], GSTATE[P])), none_of(g, "isnew"))


@state_inv("aux-empty-has-no-static-map", auxiliary=True)
def _empty_static(g: Terms, d: Domain) -> z3.BoolRef:
    """Without members there is no static mapping and no leader."""
    return z3.Implies(is_empty(g["mem"]), z3.And(is_empty(g["shas"]), z3.Not(g["hasl"])))


@state_inv("aux-sync-timer-generation", auxiliary=True)
def _sync_gen(g: Terms, d: Domain) -> z3.BoolRef:
    """An armed DelayedSync belongs to the current generation."""
    return z3.Implies(g["stn"] > 0, g["st_gen"] == g["gen"])


@state_inv("aux-generation-nonnegative", auxiliary=True)
def _gen_nonneg(g: Terms, d: Domain) -> z3.BoolRef:
    """Generations start at 0 and only grow (also in the persisted record)."""
    return z3.And(g["gen"] >= 0, z3.Implies(z3.Not(eq(g["pers"], PERS_NONE)), g["p_gen"] >= 0))


# -------------------------------------------------------------------------- step invariants

def _static_reply_none(row: Row) -> bool:
    return row.reply.form not in ("park", "none", "continue") and row.reply.error == Error.NONE


@step_inv("leader-sync-rejected-in-preparing")
def _leader_sync_rejected(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """A SyncGroup in PreparingRebalance is answered with an error and stores nothing."""
    row = p.rows[0]
    if row.event != "SyncGroup" or P not in row.states:
        return z3.BoolVal(False)
    bad_reply = row.reply.form in ("park", "stored-assignment") or _static_reply_none(row)
    changed = union(diff(g["asg"], g2["asg"]), diff(g2["asg"], g["asg"]))
    moved = z3.Not(is_empty(inter(inter(g["mem"], g2["mem"]), changed)))
    return z3.And(eq(g["st"], GSTATE[P]), z3.Or(z3.BoolVal(bad_reply), moved))


@step_inv("generation-monotonic")
def _generation_monotonic(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """Outside a new incarnation the generation grows by exactly the join-phase completions
    (checked per input path: urgent completions are their own steps)."""
    if any(r.new_incarnation for r in p.rows):
        return z3.BoolVal(False)  # a new group object
    completions = sum(1 for r in p.rows if P in r.states and r.next_state in (C, E))
    # removal from the cache (-> Missing) ends the incarnation too
    return z3.And(z3.Not(eq(g2["st"], GSTATE[M])), g2["gen"] - g["gen"] != completions)


def row_edge_invalid(row: Row) -> bool:
    """valid-state-edges for one row (a static fact about the row)."""
    dst = row.next_state
    if dst is None or row.new_incarnation:
        return False
    for src in row.states:
        if src == M:
            if dst != M:
                return True
            continue
        target = D if dst == M else dst
        if not is_valid_transition(src, target):
            return True
    return False


@step_inv("valid-state-edges")
def _valid_state_edges(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """Every row's state change is one of Kafka's validPreviousStates edges."""
    return z3.BoolVal(any(row_edge_invalid(r) for r in p.rows))


@step_inv("dead-is-absorbing")
def _dead_is_absorbing(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """A Dead group stays Dead unless removed from the cache or replaced by a load."""
    if any(r.new_incarnation for r in p.rows):
        return z3.BoolVal(False)
    return z3.And(eq(g["st"], GSTATE[D]), z3.Not(eq(g2["st"], GSTATE[D])), z3.Not(eq(g2["st"], GSTATE[M])))


@step_inv("commit-fencing")
def _commit_fencing(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """An OffsetCommit with a generation >= 0 other than the group's is never accepted."""
    row = p.rows[-1]
    if p.rows[0].event != "OffsetCommit":
        return z3.BoolVal(False)
    if not (row.reply.form == "commit-result" and row.reply.error == Error.NONE):
        return z3.BoolVal(False)
    live = st_in(g, E, P, C, S)
    return z3.And(x["gen"] >= 0, z3.Or(x["gen"] != g["gen"], z3.Not(live)), x["aok"], x["offs"])


@step_inv("only-members-served")
def _only_members_served(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """Heartbeat / SyncGroup answered NONE only for a member."""
    row = p.rows[-1]
    if row.event not in ("Heartbeat", "SyncGroup") or not _static_reply_none(row):
        return z3.BoolVal(False)
    return z3.Not(known(g, x))


@state_inv("aux-delayed-sync-armed-in-completing", auxiliary=True)
def _sync_armed(g: Terms, d: Domain) -> z3.BoolRef:
    """CompletingRebalance always has its DelayedSync (KAFKA-12890): a member that never sends
    SyncGroup is removed when it expires. (A safety stand-in for the explorer's liveness check.)"""
    return z3.Implies(eq(g["st"], GSTATE[C]), g["stn"] == 1)


@state_inv("aux-leader-unsynced-in-completing", auxiliary=True)
def _leader_unsynced(g: Terms, d: Domain) -> z3.BoolRef:
    """In CompletingRebalance the leader has not synced yet (its SyncGroup moves the group on),
    so the DelayedSync cannot complete there."""
    return z3.Implies(eq(g["st"], GSTATE[C]), z3.And(g["hasl"], sel(g["psync"], g["leader"])))


@state_inv("aux-empty-id-never-rebalances", auxiliary=True)
def _empty_id(g: Terms, d: Domain) -> z3.BoolRef:
    """A group with the empty id (every JoinGroup to it is answered INVALID_GROUP_ID, GC:1159) is
    never PreparingRebalance, CompletingRebalance or Stable, and has no Stable record to load."""
    return z3.Implies(g["gide"], z3.And(z3.Not(st_in(g, P, C, S)),
                                        z3.Not(eq(g["pers"], PERS_STABLE))))


@state_inv("aux-dead-is-unowned", auxiliary=True)
def _dead_unowned(g: Terms, d: Domain) -> z3.BoolRef:
    """A Dead group object is one whose partition was unloaded (DeleteGroups and offset expiry
    take the group out of the cache: Missing); so a Dead object never sits on an owned partition."""
    return z3.Implies(eq(g["st"], GSTATE[D]), z3.Not(g["owned"]))


@state_inv("aux-missing-has-no-record", auxiliary=True)
def _missing_no_record(g: Terms, d: Domain) -> z3.BoolRef:
    """A group that is not in the cache has no GroupMetadata record and no offsets: it never
    existed, or DeleteGroups / offset expiry wrote tombstones for both."""
    return z3.Implies(eq(g["st"], GSTATE[M]), z3.And(eq(g["pers"], PERS_NONE), z3.Not(g["offs"])))


@state_inv("aux-initial-rebalance-all-parked", auxiliary=True)
def _initial_all_parked(g: Terms, d: Domain) -> z3.BoolRef:
    """During an initial rebalance (InitialDelayedJoin armed) every member joined during it and
    is parked: the group was Empty when it began, and members join parked."""
    return z3.Implies(z3.And(eq(g["st"], GSTATE[P]), g["jt"] > 0, g["jt_init"]),
                      is_empty(diff(g["mem"], g["aj"])))


def all_state_invariants() -> dict[str, StateInvariant]:
    return {**STATE_INVARIANTS, **AUXILIARY}


# Requests are every event that is not a timer / internal event.
_INTERNAL: Final = frozenset(e.value for e in TimerEvent)
_PARKS_IN: Final = {"JoinGroup": "aj", "SyncGroup": "asy"}


@step_inv("one-response-per-request")
def _one_response_per_request(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """Every request gets exactly one response. A parked request is named by its member and
    kind (a member parks at most one JoinGroup and one SyncGroup). Over one input: no output for
    a member with nothing parked, none twice (the path's `bad`); the request itself is answered
    exactly once (by its row's reply, or by an output after it was parked) or stays parked,
    never both; every request parked before is settled (answered, or superseded as Kafka leaves
    it) or still parked, not overwritten; nothing else is parked afterwards."""
    first, last = p.rows[0], p.rows[-1]
    request = first.event not in _INTERNAL
    parks = last.reply.form == "park"
    answers = last.reply.form not in ("park", "none", "continue")
    if request and not (parks or answers):
        return z3.BoolVal(True)  # a request with neither a response nor a parked callback
    if not request and (parks or answers):
        return z3.BoolVal(True)  # a reply with no request to answer
    bad: list[z3.BoolRef] = list(p.bad)
    none = empty_like(g["mem"])
    own_still_parked: list[z3.BoolRef] = []
    for parked in ("aj", "asy"):
        pre = inter(g["mem"], g[parked])
        post = inter(g2["mem"], g2[parked])
        done = p.settled.get(parked, none)
        own = inter(p.own_parked.get(parked, none), post)  # this input's request, parked now
        own_still_parked.append(z3.Not(is_empty(own)))
        waiting = diff(pre, done)  # parked before, not settled by this input
        bad.append(z3.Not(is_empty(diff(post, union(waiting, own)))))  # parked from nowhere
        bad.append(z3.Not(is_empty(inter(waiting, own))))  # overwritten by this request
        bad.append(z3.Not(is_empty(diff(waiting, post))))  # vanished without an output
        bad.append(z3.Not(is_empty(diff(done, pre))))  # settled what was not parked
    own_parked = z3.Or(own_still_parked)
    if parks:  # answered by an output, or still waiting: exactly one of the two
        bad.append(own_parked == p.own_answered)
    elif request:  # the row's reply answers it: no other output, not parked
        bad.append(z3.Or(own_parked, p.own_answered))
    else:
        bad.append(z3.Or(own_parked, p.own_answered))  # nothing of an input that is no request
    return z3.Or(bad)


# -------------------------------------------------------------------------- the client's contract
# Step encodings of the client-contract properties of model/invariants.py (same names). Where the
# symbolic state abstracts a value the property reads (assignment bytes are `asg` = non-empty;
# protocol names are not represented), the encoding says what it proves instead.

_FENCEABLE: Final = ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "LeaveGroup")
_PROTOCOL_CHANGING: Final = ("add-member", "update-and-park-join", "replace-static-member")


def _atom(name: str, g: Terms, x: Sym) -> z3.BoolRef:
    from proofs.atoms import ATOM_ENCODINGS
    return ATOM_ENCODINGS[name](g, x)


def _sym_diff(a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    return union(diff(a, b), diff(b, a))


@step_inv("sync-answer-is-stored-assignment")
def _sync_answer_is_stored_assignment(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """A SyncGroup answered NONE by the row's reply (`stored-assignment`) or by propagation
    (`answer-syncs`) leaves the group Stable; a direct answer goes to a member of the group and
    the request's generation is the group's. That the answer carries exactly the stored bytes is
    the definition of both reply forms (model/replies.py, model/effects.py), which the explorer
    checks on concrete bytes."""
    last = p.rows[-1]
    direct = (last.event == "SyncGroup" and last.reply.form == "stored-assignment"
              and last.reply.error == Error.NONE)
    propagated = any("answer-syncs" in r.effects for r in p.rows)
    bad: list[z3.BoolRef] = []
    if direct or propagated:
        bad.append(z3.Not(eq(g2["st"], GSTATE[S])))
    if direct:
        bad += [z3.Not(known(g2, x)), x["gen"] != g2["gen"]]
    return z3.Or(bad) if bad else z3.BoolVal(False)


@step_inv("only-leader-assigns")
def _only_leader_assigns(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """No member present before and after has its assignment set or cleared, unless the input is
    the current leader's SyncGroup of the current generation in CompletingRebalance, or the group
    ends PreparingRebalance with no member holding an assignment, or leaves the cache, or is a new
    object. (Assignments are abstracted to non-empty / empty: a change between two non-empty
    assignments is the explorer's to find.)"""
    if any(r.new_incarnation for r in p.rows):
        return z3.BoolVal(False)
    changed = z3.Not(is_empty(inter(inter(g["mem"], g2["mem"]), _sym_diff(g["asg"], g2["asg"]))))
    allowed: list[z3.BoolRef] = [
        z3.And(eq(g2["st"], GSTATE[P]), is_empty(inter(g2["mem"], g2["asg"]))),
        st_in(g2, D, M)]
    if p.rows[0].event == "SyncGroup":
        allowed.append(z3.And(eq(g["st"], GSTATE[C]), _atom("is-leader", g, x),
                              _atom("generation-matches", g, x)))
    return z3.And(changed, z3.Not(z3.Or(allowed)))


def row_protocol_unsafe(row: Row) -> bool:
    """selected-protocol-supported for one row (a static fact): a join phase that ends in
    CompletingRebalance selects the protocol, and a row that changes a member's protocols and
    leaves the group CompletingRebalance or Stable requires the selection to stay the same."""
    if row.next_state == C and P in row.states and "select-protocol" not in row.effects:
        return True
    ends = {row.next_state} if row.next_state is not None else set(row.states)
    if ends & {C, S} and any(e in row.effects for e in _PROTOCOL_CHANGING):
        return not any(lit.atom == "selected-protocol-unchanged" and lit.positive
                       for lit in row.guard.literals)
    return False


@step_inv("selected-protocol-supported")
def _selected_protocol_supported(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """Protocol names are not in the symbolic state: proved as the inductive reason the explorer's
    state property holds. Every path into CompletingRebalance selects the protocol over the
    members' lists (GM:434 picks from the candidates all members support, and GM:464 admits a
    member only if it supports a candidate: `protocols-supported`); no path that changes a
    member's protocols leaves the group CompletingRebalance or Stable unless the selection is
    unchanged (`selected-protocol-unchanged`)."""
    return z3.BoolVal(any(row_protocol_unsafe(r) for r in p.rows))


@step_inv("static-old-id-fenced")
def _static_old_id_fenced(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """A request whose instance id is mapped to another member id (excepted: a JoinGroup or
    LeaveGroup with an empty member id, a restart or an administrative removal; a pending
    MEMBER_ID_REQUIRED member id, which Kafka handles before fencing) is not answered NONE, and
    the instance stays mapped to the same member unless the group leaves the cache."""
    first, last = p.rows[0], p.rows[-1]
    if first.event not in _FENCEABLE:
        return z3.BoolVal(False)
    fenced = z3.And(_atom("fenced", g, x), z3.Not(_atom("member-pending", g, x)))
    if first.event in ("JoinGroup", "LeaveGroup"):
        fenced = z3.And(fenced, z3.Not(x["mide"]))
    if _static_reply_none(last):
        return fenced
    if not any("members" in r.modifies() for r in p.rows):
        return z3.BoolVal(False)  # the frame keeps every member and the static map
    owner = mget(g["smap"], x["iid"])
    displaced = z3.And(z3.Not(st_in(g2, D, M)),
                       z3.Not(z3.And(sel(g2["shas"], x["iid"]), mget(g2["smap"], x["iid"]) == owner)))
    return z3.And(fenced, displaced)


@step_inv("parked-member-not-expired")
def _parked_member_not_expired(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """A MemberSessionExpire for a member that is not new and has a JoinGroup or SyncGroup parked
    does not remove it (unless the group leaves the cache)."""
    if p.rows[0].event != "MemberSessionExpire":
        return z3.BoolVal(False)
    m = x["mid"]
    return z3.And(known(g, x), z3.Not(sel(g["isnew"], m)), z3.Or(sel(g["aj"], m), sel(g["asy"], m)),
                  z3.Not(sel(g2["mem"], m)), z3.Not(st_in(g2, D, M)))


@step_inv("join-completes-when-all-rejoined")
def _join_completes_when_all_rejoined(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """A DelayedJoinComplete taken in PreparingRebalance leaves PreparingRebalance. The scheduler
    must take it whenever its URGENT guard holds (a non-initial DelayedJoin armed, every member
    parked in JoinGroup, nothing pending), so together this is the explorer's property: no step
    ends with every member rejoined and the join phase still waiting for its timer."""
    if p.rows[0].event != "DelayedJoinComplete":
        return z3.BoolVal(False)
    return z3.And(eq(g["st"], GSTATE[P]), eq(g2["st"], GSTATE[P]))


@step_inv("completing-membership-frozen")
def _completing_membership_frozen(p: Path, g: Terms, x: Sym, g2: Terms) -> z3.BoolRef:
    """A step that starts and ends CompletingRebalance at the same generation leaves the set of
    member ids unchanged."""
    return z3.And(eq(g["st"], GSTATE[C]), eq(g2["st"], GSTATE[C]), g["gen"] == g2["gen"],
                  z3.Not(is_empty(_sym_diff(g["mem"], g2["mem"]))))

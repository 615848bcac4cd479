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

"""Each effect of model/effects.py, encoded once as an update of the symbolic state.

An encoder returns only the variables it writes; `apply_effect` refuses (EncodingError) any
variable outside the Group fields the effect declares in `modifies`, so the frame condition
("everything else unchanged") comes from the declarations alone. Kafka's hash-map choices
(a new leader) are input variables constrained to the allowed set (`ctx.choose`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Final, Optional

import z3

from model.dsl import EFFECTS
from model.vocabulary import GroupState
from proofs.symbolic import (
    CHOICE_VARS,
    FIELD_VARS,
    GSTATE,
    PERS_EMPTY,
    PERS_NONE,
    PERS_STABLE,
    Encodings,
    Sym,
    compl,
    diff,
    drop_mapped_to,
    empty_like,
    eq,
    inter,
    is_empty,
    lit,
    mget,
    mput,
    put,
    sel,
    singleton,
    union,
    zero_like,
)


class EncodingError(Exception):
    """The encoding cannot represent something in the table (a missing or lying encoder)."""


@dataclass
class EffCtx:
    """Working state while a row's effects are encoded (mirrors model.dsl.Ctx)."""

    g: dict[str, z3.ExprRef]
    x: Sym
    side: list[z3.BoolRef] = field(default_factory=list)  # constraints on the input's choices
    scratch: dict[str, z3.ExprRef] = field(default_factory=dict)
    choices_used: int = 0
    fresh_used: bool = False
    # Responses (model.dsl Ctx.outputs, seen per member). A parked request is named by its
    # member and kind: "aj" (JoinGroup) or "asy" (SyncGroup). `settled`: members whose request
    # parked before this input was answered or superseded; `own_parked`: where this input's
    # own request is parked (if it is); `own_answered`: an output answered it; `bad`: conditions
    # of an output for nothing parked, or a second output for one request.
    settled: dict[str, z3.ExprRef] = field(default_factory=dict)
    own_parked: dict[str, z3.ExprRef] = field(default_factory=dict)
    own_answered: z3.BoolRef = field(default_factory=lambda: z3.BoolVal(False))
    bad: list[z3.BoolRef] = field(default_factory=list)

    def park_own(self, parked: str, m: z3.ExprRef) -> None:
        """This input's request is parked at member m (its callback kept, GM:518 / GC:600)."""
        self.own_parked[parked] = singleton(m)

    def settle(self, parked: str, who: z3.ExprRef) -> None:
        """An output for the parked request ("aj" join, "asy" sync) of each member in `who`
        (answered, or marked superseded as Kafka leaves it unanswered)."""
        none = empty_like(self.g["mem"])
        now = inter(self.g["mem"], self.g[parked])
        done = self.settled.get(parked, none)
        own = self.own_parked.get(parked, none)
        mine, before = inter(who, own), diff(who, own)
        self.bad.append(z3.Not(is_empty(diff(who, now))))  # nothing parked there
        self.bad.append(z3.Not(is_empty(inter(done, before))))  # answered twice
        self.bad.append(z3.And(self.own_answered, z3.Not(is_empty(mine))))
        self.own_answered = z3.Or(self.own_answered, z3.Not(is_empty(mine)))
        self.own_parked[parked] = diff(own, who)
        self.settled[parked] = union(done, before)

    def choose(self, candidates: z3.ExprRef) -> tuple[z3.BoolRef, z3.ExprRef]:
        """A member of `candidates` picked by the environment: (set non-empty, the pick)."""
        if self.choices_used >= len(CHOICE_VARS):
            raise EncodingError("more leader choices in one row than choice variables")
        c = self.x[CHOICE_VARS[self.choices_used]]
        self.choices_used += 1
        nonempty = z3.Not(is_empty(candidates))
        self.side.append(z3.Implies(nonempty, sel(candidates, c)))
        return nonempty, c

    def fresh(self, when: Optional[z3.BoolRef] = None) -> z3.ExprRef:
        """GM:416 a new member id: not a member and not pending (AbstractMode / UUID). `when`:
        the id is only used under this condition, and only then constrained (with a bounded id
        domain an unconditional constraint would block the input when every id is in use)."""
        if self.fresh_used:
            raise EncodingError("two fresh member ids in one row")
        self.fresh_used = True
        f = self.x["fresh"]
        unused = z3.And(z3.Not(sel(self.g["mem"], f)), z3.Not(sel(self.g["pend"], f)))
        self.side.append(unused if when is None else z3.Implies(when, unused))
        return f


Update = dict[str, z3.ExprRef]
EffectEnc = Callable[[EffCtx], Update]
EFFECT_ENCODINGS: Final[Encodings[EffectEnc]] = Encodings("effect")
encodes: Final = EFFECT_ENCODINGS.encodes


def allowed_vars(fields: frozenset[str]) -> frozenset[str]:
    return frozenset(v for f in fields for v in FIELD_VARS[f])


def apply_effect(name: str, ctx: EffCtx) -> None:
    if name not in EFFECT_ENCODINGS:
        raise EncodingError(f"effect {name!r} has no Z3 encoding")
    if name not in EFFECTS:
        raise EncodingError(f"effect {name!r} is not in model.dsl.EFFECTS")
    upd = EFFECT_ENCODINGS[name](ctx)
    extra = set(upd) - allowed_vars(EFFECTS[name].modifies)
    if extra:
        raise EncodingError(f"effect {name!r} writes {sorted(extra)} outside its declared "
                            f"modifies {sorted(EFFECTS[name].modifies)}")
    ctx.g.update(upd)


# -- helpers over sets ---------------------------------------------------------------------

def target(ctx: EffCtx) -> z3.ExprRef:
    """The member an effect acts on: one named by an earlier effect of the row, else the input's."""
    return ctx.scratch.get("member_id", ctx.x["mid"])


def armed(isnew: z3.ExprRef, aj: z3.ExprRef, asy: z3.ExprRef) -> z3.BoolRef:
    """effects.armed_session: armed unless satisfied (not new and parked)."""
    return z3.Not(z3.And(z3.Not(isnew), z3.Or(aj, asy)))


def remove_set(ctx: EffCtx, r: z3.ExprRef, one: Optional[z3.ExprRef] = None,
               dynamic_only: bool = False, answer_joins: bool = True) -> Update:
    """GM:268 remove for every member in `r` (already a subset of the members); the leader, if
    removed, is replaced by a choice among the members left (GM:277). The static map loses the
    removed members' instance ids: nothing when `r` holds only dynamic members, one entry when
    `r` is at most the member `one`, else pointwise (the map agrees with the members:
    aux-static-map-consistent)."""
    g = ctx.g
    if answer_joins:  # UNKNOWN_MEMBER_ID to a removed member's parked JoinGroup
        ctx.settle("aj", inter(r, g["aj"]))
    ctx.settle("asy", inter(r, g["asy"]))  # a removed member's parked SyncGroup: superseded
    mem2 = diff(g["mem"], r)
    if dynamic_only:
        shas2 = g["shas"]
    elif one is not None:
        gone = z3.And(sel(r, one), sel(g["hinst"], one))
        shas2 = z3.If(gone, put(g["shas"], mget(g["inst"], one), False), g["shas"])
    else:
        shas2 = drop_mapped_to(g["shas"], g["smap"], r)
    lost = z3.And(g["hasl"], sel(r, g["leader"]))
    nonempty, c = ctx.choose(mem2)
    return {
        "mem": mem2, "shas": shas2,
        "hasl": z3.If(lost, nonempty, g["hasl"]),
        "leader": z3.If(lost, c, g["leader"]),
    }


def remove_one(ctx: EffCtx, m: z3.ExprRef, when: z3.BoolRef) -> Update:
    """Remove `m` if `when` holds and it is a member (a no-op otherwise)."""
    r = z3.If(z3.And(when, sel(ctx.g["mem"], m)), singleton(m), empty_like(ctx.g["mem"]))
    return remove_set(ctx, r, one=m)


# -- group objects -----------------------------------------------------------------------------

def _cleared(g: dict[str, z3.ExprRef]) -> Update:
    e = empty_like(g["mem"])
    return {"mem": e, "aj": e, "asy": e, "psync": e, "isnew": e, "sarm": e, "asg": e,
            "hinst": e, "shas": e, "pend": e, "jt": zero_like(g["jt"]),
            "stn": zero_like(g["stn"]), "hasl": z3.BoolVal(False), "gen": zero_like(g["gen"]),
            "nma": z3.BoolVal(False)}


@encodes("create-group")
def _create_group(ctx: EffCtx) -> Update:
    return {**_cleared(ctx.g), "st": lit(GSTATE[GroupState.Empty], ctx.g["st"])}


@encodes("remove-group")
def _remove_group(ctx: EffCtx) -> Update:
    return {**_cleared(ctx.g), "offs": z3.BoolVal(False), "pers": lit(PERS_NONE, ctx.g["pers"])}


@encodes("unload-group")
def _unload_group(ctx: EffCtx) -> Update:
    g = ctx.g
    ctx.settle("aj", inter(g["mem"], g["aj"]))  # NOT_COORDINATOR
    ctx.settle("asy", inter(g["mem"], g["asy"]))
    upd = {**_cleared(ctx.g), "owned": z3.BoolVal(False)}
    del upd["gen"]  # the Dead object keeps its generation
    return upd


@encodes("load-group")
def _load_group(ctx: EffCtx) -> Update:
    g = ctx.g
    has = z3.Not(eq(g["pers"], PERS_NONE))
    e = empty_like(g["mem"])

    def pick(a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
        return z3.If(has, a, b)

    return {
        "owned": z3.BoolVal(True),
        "gen": pick(g["p_gen"], g["gen"]), "hasl": pick(g["p_hasl"], g["hasl"]),
        "leader": pick(g["p_leader"], g["leader"]), "mem": pick(g["p_mem"], g["mem"]),
        "aj": pick(e, g["aj"]), "asy": pick(e, g["asy"]), "isnew": pick(e, g["isnew"]),
        "psync": pick(e, g["psync"]), "sarm": pick(g["p_mem"], g["sarm"]),
        "hinst": pick(g["p_hinst"], g["hinst"]), "inst": pick(g["p_inst"], g["inst"]),
        "asg": pick(g["p_asg"], g["asg"]), "shas": pick(g["p_shas"], g["shas"]),
        "smap": pick(g["p_smap"], g["smap"]),
    }


@encodes("claim-partition")
def _claim_partition(ctx: EffCtx) -> Update:
    return {"owned": z3.BoolVal(True)}


@encodes("release-partition")
def _release_partition(ctx: EffCtx) -> Update:
    return {"owned": z3.BoolVal(False)}


@encodes("persist-group")
def _persist_group(ctx: EffCtx) -> Update:
    g = ctx.g
    return {
        "pers": z3.If(is_empty(g["mem"]), lit(PERS_EMPTY, g["pers"]), lit(PERS_STABLE, g["pers"])), "p_gen": g["gen"],
        "p_hasl": g["hasl"], "p_leader": g["leader"], "p_mem": g["mem"], "p_hinst": g["hinst"],
        "p_inst": g["inst"], "p_asg": g["asg"], "p_shas": g["shas"], "p_smap": g["smap"],
    }


# -- JoinGroup ---------------------------------------------------------------------------------

@encodes("add-pending-member")
def _add_pending_member(ctx: EffCtx) -> Update:
    f = ctx.fresh()
    ctx.scratch["member_id"] = f
    return {"pend": put(ctx.g["pend"], f, True)}


@encodes("add-member")
def _add_member(ctx: EffCtx) -> Update:
    g, x = ctx.g, ctx.x
    mid = z3.If(x["mide"], ctx.fresh(when=x["mide"]), x["mid"])
    ctx.scratch["member_id"] = mid
    ctx.park_own("aj", mid)  # a new member's JoinGroup waits (GM:416 add)
    static = x["hiid"]
    return {
        "mem": put(g["mem"], mid, True), "aj": put(g["aj"], mid, True),
        "asy": put(g["asy"], mid, False), "isnew": put(g["isnew"], mid, True),
        "sarm": put(g["sarm"], mid, True), "psync": put(g["psync"], mid, False),
        "asg": put(g["asg"], mid, False), "hinst": put(g["hinst"], mid, static),
        "inst": mput(g["inst"], mid, x["iid"]),
        "shas": z3.If(static, put(g["shas"], x["iid"], True), g["shas"]),
        "smap": z3.If(static, mput(g["smap"], x["iid"], mid), g["smap"]),
        "pend": put(g["pend"], mid, False),
        "hasl": z3.BoolVal(True), "leader": z3.If(g["hasl"], g["leader"], mid),
    }


@encodes("mark-new-member-added")
def _mark_new_member_added(ctx: EffCtx) -> Update:
    return {"nma": z3.Or(ctx.g["nma"], ctx.g["gen"] == 0)}


@encodes("update-and-park-join")
def _update_and_park_join(ctx: EffCtx) -> Update:
    g, m = ctx.g, target(ctx)
    ctx.settle("aj", inter(singleton(m), g["mem"], g["aj"]))  # the earlier one: superseded
    ctx.park_own("aj", m)
    return {"aj": put(g["aj"], m, True)}


@encodes("replace-static-member")
def _replace_static_member(ctx: EffCtx) -> Update:
    g, x = ctx.g, ctx.x
    old = mget(g["smap"], x["iid"])
    new = ctx.fresh()
    ctx.scratch.update(member_id=new, old_member_id=old, old_leader=g["leader"],
                       old_hasl=g["hasl"], old_isnew=sel(g["isnew"], old),
                       old_psync=sel(g["psync"], old), old_asg=sel(g["asg"], old))
    isnew = sel(g["isnew"], old)
    ctx.settle("aj", inter(singleton(old), g["mem"], g["aj"]))  # FENCED_INSTANCE_ID
    ctx.settle("asy", inter(singleton(old), g["mem"], g["asy"]))
    return _move_member(g, x["iid"], old, new, isnew, sel(g["psync"], old), sel(g["asg"], old))


@encodes("revert-static-replacement")
def _revert_static_replacement(ctx: EffCtx) -> Update:
    g, x = ctx.g, ctx.x
    new, old = ctx.scratch["member_id"], ctx.scratch["old_member_id"]
    return _move_member(g, x["iid"], new, old, ctx.scratch["old_isnew"], ctx.scratch["old_psync"],
                        ctx.scratch["old_asg"])


def _move_member(g: dict[str, z3.ExprRef], iid: z3.ExprRef, src: z3.ExprRef, dst: z3.ExprRef,
                 isnew: z3.ExprRef, psync: z3.ExprRef, asg: z3.ExprRef) -> Update:
    """Member `src` becomes `dst` (a static member's id replaced, or the replacement reverted):
    `dst` is a member with nothing parked and the flags given, `src` is gone, and the instance id,
    the instance and the leadership move from `src` to `dst`."""
    def move(a: z3.ExprRef, v: z3.ExprRef) -> z3.ExprRef:
        return put(put(a, src, False), dst, v)

    return {
        "mem": move(g["mem"], z3.BoolVal(True)), "aj": move(g["aj"], z3.BoolVal(False)),
        "asy": move(g["asy"], z3.BoolVal(False)), "isnew": move(g["isnew"], isnew),
        "psync": move(g["psync"], psync), "asg": move(g["asg"], asg),
        "sarm": move(g["sarm"], armed(isnew, z3.BoolVal(False), z3.BoolVal(False))),
        "hinst": move(g["hinst"], sel(g["hinst"], src)),
        "inst": mput(g["inst"], dst, mget(g["inst"], src)),
        "smap": mput(g["smap"], iid, dst),
        "leader": z3.If(z3.And(g["hasl"], g["leader"] == src), dst, g["leader"]),
    }


@encodes("unpark-join")
def _unpark_join(ctx: EffCtx) -> Update:
    return {"aj": put(ctx.g["aj"], target(ctx), False)}


def _arm_join_timer(ctx: EffCtx, initial: z3.BoolRef, rem: z3.BoolRef, drop_first: bool) -> Update:
    """Append a join timer (after dropping the first one if `drop_first`)."""
    g, x = ctx.g, ctx.x
    jt = g["jt"]
    left = z3.If(jt > 0, jt - 1, 0) if drop_first else jt
    # The first timer after the change: the new one if nothing is left in front of it, else the
    # one in front (the old first, or - after dropping it - the second, whose kind is free).
    if drop_first:
        first_init = z3.If(left == 0, initial, x["nxt_init"])
        first_rem = z3.If(left == 0, rem, x["nxt_rem"])
    else:
        first_init = z3.If(left == 0, initial, g["jt_init"])
        first_rem = z3.If(left == 0, rem, g["jt_rem"])
    return {"jt": left + 1, "jt_init": first_init, "jt_rem": first_rem}


@encodes("rebalance")
def _rebalance(ctx: EffCtx) -> Update:
    g, x = ctx.g, ctx.x
    completing = eq(g["st"], GSTATE[GroupState.CompletingRebalance])
    from_empty = eq(g["st"], GSTATE[GroupState.Empty])
    ctx.settle("asy", z3.If(completing, inter(g["mem"], g["asy"]), empty_like(g["mem"])))
    upd = _arm_join_timer(ctx, from_empty, z3.And(from_empty, x["rnz"]), drop_first=False)
    upd.update({
        "asy": z3.If(completing, empty_like(g["mem"]), g["asy"]),
        "sarm": z3.If(completing, rearm_answered_syncs(g), g["sarm"]),
        "asg": z3.If(completing, empty_like(g["mem"]), g["asg"]),
        "psync": empty_like(g["mem"]), "stn": zero_like(g["stn"]),
    })
    return upd


# -- the join phase completes ------------------------------------------------------------------

@encodes("remove-unjoined-dynamic")
def _remove_unjoined_dynamic(ctx: EffCtx) -> Update:
    g = ctx.g
    r = inter(g["mem"], inter(compl(g["hinst"]),
                                                  compl(g["aj"])))
    return remove_set(ctx, r, dynamic_only=True, answer_joins=False)


@encodes("elect-joined-leader")
def _elect_joined_leader(ctx: EffCtx) -> Update:
    g = ctx.g
    keep = z3.And(g["hasl"], sel(g["mem"], g["leader"]), sel(g["aj"], g["leader"]))
    joined = inter(g["mem"], g["aj"])
    nonempty, c = ctx.choose(joined)
    return {"hasl": z3.Or(keep, nonempty), "leader": z3.If(keep, g["leader"], c)}


@encodes("bump-generation")
def _bump_generation(ctx: EffCtx) -> Update:
    return {"gen": ctx.g["gen"] + 1}


@encodes("select-protocol")
def _select_protocol(ctx: EffCtx) -> Update:
    return {}  # protocol_name is abstracted


@encodes("clear-protocol")
def _clear_protocol(ctx: EffCtx) -> Update:
    return {}  # protocol_name is abstracted


@encodes("disarm-join-timer")
def _disarm_join_timer(ctx: EffCtx) -> Update:
    g, x = ctx.g, ctx.x
    return {"jt": z3.If(g["jt"] > 0, g["jt"] - 1, 0), "jt_init": x["nxt_init"],
            "jt_rem": x["nxt_rem"]}


@encodes("answer-joins")
def _answer_joins(ctx: EffCtx) -> Update:
    g = ctx.g
    ctx.settle("aj", inter(g["mem"], g["aj"]))
    return {"aj": empty_like(g["mem"]), "isnew": empty_like(g["mem"]),
            "sarm": diff(g["mem"], g["asy"]), "psync": g["mem"]}


@encodes("arm-delayed-sync")
def _arm_delayed_sync(ctx: EffCtx) -> Update:
    g = ctx.g
    return {"stn": g["stn"] + 1, "st_gen": z3.If(g["stn"] == 0, g["gen"], g["st_gen"])}


@encodes("rearm-delayed-join")
def _rearm_delayed_join(ctx: EffCtx) -> Update:
    return _arm_join_timer(ctx, z3.BoolVal(False), z3.BoolVal(False), drop_first=True)


@encodes("extend-initial-delay")
def _extend_initial_delay(ctx: EffCtx) -> Update:
    upd = _arm_join_timer(ctx, z3.BoolVal(True), ctx.x["rnz"], drop_first=True)
    upd["nma"] = z3.BoolVal(False)
    return upd


# -- SyncGroup ---------------------------------------------------------------------------------

@encodes("park-sync")
def _park_sync(ctx: EffCtx) -> Update:
    g, m = ctx.g, ctx.x["mid"]
    ctx.settle("asy", inter(singleton(m), g["mem"], g["asy"]))  # the earlier one: superseded
    ctx.park_own("asy", m)
    return {"asy": put(g["asy"], m, True)}


@encodes("unpend-sync")
def _unpend_sync(ctx: EffCtx) -> Update:
    return {"psync": put(ctx.g["psync"], ctx.x["mid"], False)}


@encodes("store-assignment")
def _store_assignment(ctx: EffCtx) -> Update:
    return {"asg": inter(ctx.g["mem"], ctx.x["given"])}


def rearm_answered_syncs(g: dict[str, z3.ExprRef]) -> z3.ExprRef:
    """effects._answer_sync: each member whose parked SyncGroup is answered has its session
    re-armed unless satisfied (not new and parked in JoinGroup)."""
    rearmed = union(g["isnew"], compl(g["aj"]))
    return union(diff(g["sarm"], g["asy"]), inter(g["asy"], rearmed))


@encodes("answer-syncs")
def _answer_syncs(ctx: EffCtx) -> Update:
    g = ctx.g
    ctx.settle("asy", inter(g["mem"], g["asy"]))
    return {"asy": empty_like(g["mem"]), "sarm": rearm_answered_syncs(g)}


@encodes("fail-syncs")
def _fail_syncs(ctx: EffCtx) -> Update:
    ctx.settle("asy", inter(ctx.g["mem"], ctx.g["asy"]))
    e = empty_like(ctx.g["mem"])
    return {"asy": e, "asg": e, "sarm": rearm_answered_syncs(ctx.g)}


@encodes("rearm-session")
def _rearm_session(ctx: EffCtx) -> Update:
    g = ctx.g
    m = target(ctx)
    return {"sarm": put(g["sarm"], m, armed(sel(g["isnew"], m), sel(g["aj"], m), sel(g["asy"], m)))}


# -- LeaveGroup, expiry ------------------------------------------------------------------------

@encodes("remove-member")
def _remove_member(ctx: EffCtx) -> Update:
    g, x = ctx.g, ctx.x
    by_instance = z3.And(x["mide"], x["hiid"])
    m = z3.If(by_instance, mget(g["smap"], x["iid"]), x["mid"])
    named = z3.Or(z3.And(by_instance, sel(g["shas"], x["iid"])), z3.Not(x["mide"]))
    return remove_one(ctx, m, named)


@encodes("max-size-reject")
def _max_size_reject(ctx: EffCtx) -> Update:
    g, x = ctx.g, ctx.x
    named = z3.Not(x["mide"])
    upd = remove_one(ctx, x["mid"], named)
    upd["pend"] = z3.If(named, put(g["pend"], x["mid"], False), g["pend"])
    return upd


@encodes("remove-pending")
def _remove_pending(ctx: EffCtx) -> Update:
    return {"pend": put(ctx.g["pend"], ctx.x["mid"], False)}


@encodes("disarm-session")
def _disarm_session(ctx: EffCtx) -> Update:
    return {"sarm": put(ctx.g["sarm"], ctx.x["mid"], False)}


@encodes("remove-unsynced")
def _remove_unsynced(ctx: EffCtx) -> Update:
    return remove_set(ctx, inter(ctx.g["mem"], ctx.g["psync"]))


@encodes("disarm-delayed-sync")
def _disarm_delayed_sync(ctx: EffCtx) -> Update:
    g = ctx.g
    return {"stn": z3.If(g["stn"] > 0, g["stn"] - 1, 0), "st_gen": ctx.x["nxt_sgen"]}


# -- offsets -----------------------------------------------------------------------------------

@encodes("store-offsets")
def _store_offsets(ctx: EffCtx) -> Update:
    return {"offs": z3.Or(ctx.g["offs"], ctx.x["offs"])}

"""Each atom of model/atoms.py, encoded once over the symbolic state and input.

The encodings read the same fields the Python atoms read; where an atom depends only on values
the proofs abstract (protocols, metadata, settings), it is an input boolean (ABSTRACTED_ATOMS).
`within-max-size` keeps its structure (Empty/Dead always accept, a parked member in
PreparingRebalance, a known member in CompletingRebalance/Stable) and leaves only the
comparison with group.max.size to the input (`wms`).
"""

from __future__ import annotations

from typing import Callable, Final

import z3

from model.vocabulary import GroupState
from proofs.symbolic import (
    ABSTRACTED_ATOMS,
    GSTATE,
    PERS_EMPTY,
    PERS_STABLE,
    Encodings,
    Sym,
    Terms,
    eq,
    compl,
    diff,
    inter,
    is_empty,
    mget,
    sel,
)

AtomEnc = Callable[[Terms, Sym], z3.BoolRef]
ATOM_ENCODINGS: Final[Encodings[AtomEnc]] = Encodings("atom")
encodes: Final = ATOM_ENCODINGS.encodes


def _free(var: str) -> AtomEnc:
    return lambda g, x: x[var]


for _atom, _var in ABSTRACTED_ATOMS.items():
    ATOM_ENCODINGS[_atom] = _free(_var)


def in_states(g: Terms, *states: GroupState) -> z3.BoolRef:
    return z3.Or([eq(g["st"], GSTATE[s]) for s in states])


def known(g: Terms, x: Sym) -> z3.BoolRef:
    """The input's member id belongs to a member ("" never does)."""
    return z3.And(z3.Not(x["mide"]), sel(g["mem"], x["mid"]))


def mapped(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(x["hiid"], sel(g["shas"], x["iid"]))


def nonempty_intersection(*sets: z3.ExprRef) -> z3.BoolRef:
    return z3.Not(is_empty(inter(*sets)))


@encodes("owned")
def _owned(g: Terms, x: Sym) -> z3.BoolRef:
    return g["owned"] == True  # noqa: E712  (a BoolRef, not a Python bool)


@encodes("group-id-empty")
def _group_id_empty(g: Terms, x: Sym) -> z3.BoolRef:
    return g["gide"] == True  # noqa: E712


@encodes("member-id-empty")
def _member_id_empty(g: Terms, x: Sym) -> z3.BoolRef:
    return x["mide"] == True  # noqa: E712


@encodes("has-instance-id")
def _has_instance_id(g: Terms, x: Sym) -> z3.BoolRef:
    return x["hiid"] == True  # noqa: E712


@encodes("within-max-size")
def _within_max_size(g: Terms, x: Sym) -> z3.BoolRef:
    parked = z3.And(known(g, x), sel(g["aj"], x["mid"]))
    return z3.If(in_states(g, GroupState.Empty, GroupState.Dead, GroupState.Missing), z3.BoolVal(True),
                 z3.If(eq(g["st"], GSTATE[GroupState.PreparingRebalance]), z3.Or(parked, x["wms"]),
                       z3.Or(known(g, x), x["wms"])))


@encodes("member-pending")
def _member_pending(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(z3.Not(x["mide"]), sel(g["pend"], x["mid"]))


@encodes("member-known")
def _member_known(g: Terms, x: Sym) -> z3.BoolRef:
    return known(g, x)


@encodes("instance-mapped")
def _instance_mapped(g: Terms, x: Sym) -> z3.BoolRef:
    return mapped(g, x)


@encodes("fenced")
def _fenced(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(mapped(g, x), z3.Or(x["mide"], mget(g["smap"], x["iid"]) != x["mid"]))


@encodes("member-valid")
def _member_valid(g: Terms, x: Sym) -> z3.BoolRef:
    instance_ok = z3.Or(z3.Not(x["hiid"]), z3.And(
        sel(g["shas"], x["iid"]), z3.Not(x["mide"]), mget(g["smap"], x["iid"]) == x["mid"]))
    return z3.And(instance_ok, known(g, x))


@encodes("is-leader")
def _is_leader(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(g["hasl"], z3.Not(x["mide"]), g["leader"] == x["mid"])


@encodes("generation-matches")
def _generation_matches(g: Terms, x: Sym) -> z3.BoolRef:
    return x["gen"] == g["gen"]


@encodes("generation-negative")
def _generation_negative(g: Terms, x: Sym) -> z3.BoolRef:
    return x["gen"] < 0


@encodes("commit-has-member-info")
def _commit_has_member_info(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.Or(x["gen"] >= 0, z3.Not(x["mide"]), x["hiid"])


@encodes("all-joined")
def _all_joined(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(is_empty(diff(g["mem"], g["aj"])), is_empty(g["pend"]))


@encodes("join-timer-armed")
def _join_timer_armed(g: Terms, x: Sym) -> z3.BoolRef:
    return g["jt"] > 0


@encodes("join-timer-initial")
def _join_timer_initial(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(g["jt"] > 0, g["jt_init"])


@encodes("initial-delay-extends")
def _initial_delay_extends(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(g["jt"] > 0, g["nma"], g["jt_rem"])


@encodes("any-rejoined")
def _any_rejoined(g: Terms, x: Sym) -> z3.BoolRef:
    return nonempty_intersection(g["mem"], g["aj"])


@encodes("static-absentee")
def _static_absentee(g: Terms, x: Sym) -> z3.BoolRef:
    return nonempty_intersection(g["mem"], g["hinst"], compl(g["aj"]))


@encodes("sync-timer-armed")
def _sync_timer_armed(g: Terms, x: Sym) -> z3.BoolRef:
    return g["stn"] > 0


@encodes("sync-timer-done")
def _sync_timer_done(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(g["stn"] > 0, z3.Or(
        g["st_gen"] != g["gen"],
        z3.Not(in_states(g, GroupState.CompletingRebalance, GroupState.Stable)),
        is_empty(inter(g["mem"], g["psync"]))))


@encodes("session-armed")
def _session_armed(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(known(g, x), sel(g["sarm"], x["mid"]))


@encodes("member-satisfied")
def _member_satisfied(g: Terms, x: Sym) -> z3.BoolRef:
    m = x["mid"]
    return z3.And(known(g, x), z3.Not(sel(g["isnew"], m)),
                  z3.Or(sel(g["aj"], m), sel(g["asy"], m)))


@encodes("pending-armed")
def _pending_armed(g: Terms, x: Sym) -> z3.BoolRef:
    return z3.And(z3.Not(x["mide"]), sel(g["pend"], x["mid"]))


@encodes("has-offsets")
def _has_offsets(g: Terms, x: Sym) -> z3.BoolRef:
    return g["offs"] == True  # noqa: E712


@encodes("persisted-stable")
def _persisted_stable(g: Terms, x: Sym) -> z3.BoolRef:
    return eq(g["pers"], PERS_STABLE)


@encodes("persisted-empty")
def _persisted_empty(g: Terms, x: Sym) -> z3.BoolRef:
    return eq(g["pers"], PERS_EMPTY)

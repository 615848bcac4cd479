"""The symbolic state and input: Z3 variables standing for one group and one input.

Member ids and group.instance.ids are Ints (an unbounded, parametric domain); per-member facts
are Z3 arrays over member ids; the static-member map (GM staticMembers) is an array over
instance ids. Values the table never branches on are abstracted (see docs/proofs.md):
protocols and metadata bytes, timeouts and deadlines, request ids, client ids. Each Group field
of model/state.py maps to the variables that represent it (`FIELD_VARS`), so an effect's
declared `modifies` names exactly the variables it may write: the frame is generated from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Mapping

import z3

from model.dsl import GROUP_FIELDS
from model.table import EVENTS
from model.vocabulary import GroupState

GStateSort, GSTATE_CONSTS = z3.EnumSort("GroupState", [s.name for s in GroupState])
GSTATE: Final[dict[GroupState, z3.ExprRef]] = {s: c for s, c in zip(GroupState, GSTATE_CONSTS)}
EventSort, EVENT_CONSTS = z3.EnumSort("Event", list(EVENTS))
EVENT: Final[dict[str, z3.ExprRef]] = {e: c for e, c in zip(EVENTS, EVENT_CONSTS)}
# PersistedGroup.state: none persisted, Stable (with members) or Empty.
PersSort, (PERS_NONE, PERS_STABLE, PERS_EMPTY) = z3.EnumSort("Persisted", ["NoRecord", "Stable", "Empty"])

INT: Final = z3.IntSort()
BOOL: Final = z3.BoolSort()
SET: Final = z3.ArraySort(INT, BOOL)
MAP: Final = z3.ArraySort(INT, INT)

# name -> sort of every state variable.
STATE_VARS: Final[dict[str, z3.SortRef]] = {
    "st": GStateSort,
    "gen": INT,
    "owned": BOOL,
    "hasl": BOOL, "leader": INT,  # leader is meaningful only when hasl
    # members: is_member and per-member facts (meaningful only on members)
    "mem": SET, "aj": SET, "asy": SET, "hinst": SET, "inst": MAP, "psync": SET, "isnew": SET,
    "sarm": SET, "asg": SET,
    # GM staticMembers: instance id -> member id (derived from members in model/state.py)
    "shas": SET, "smap": MAP,
    "pend": SET,
    "jt": INT, "jt_init": BOOL, "jt_rem": BOOL,  # join timers: count, first one's kind/remaining>0
    "stn": INT, "st_gen": INT,  # sync timers: count, first one's generation
    "offs": BOOL,  # some offsets committed
    "pers": PersSort, "p_gen": INT, "p_hasl": BOOL, "p_leader": INT, "p_mem": SET,
    "p_hinst": SET, "p_inst": MAP, "p_asg": SET, "p_shas": SET, "p_smap": MAP,
    "nma": BOOL,
}

# Group field (model/state.py) -> the variables representing it. protocol_type / protocol_name
# are abstracted away (the guards that read them are input booleans, see INPUT_VARS).
FIELD_VARS: Final[dict[str, tuple[str, ...]]] = {
    "state": ("st",),
    "generation": ("gen",),
    "protocol_type": (),
    "protocol_name": (),
    "leader": ("hasl", "leader"),
    "members": ("mem", "aj", "asy", "hinst", "inst", "psync", "isnew", "sarm", "asg", "shas",
                "smap"),
    "pending": ("pend",),
    "join_timers": ("jt", "jt_init", "jt_rem"),
    "sync_timers": ("stn", "st_gen"),
    "offsets": ("offs",),
    "persisted": ("pers", "p_gen", "p_hasl", "p_leader", "p_mem", "p_hinst", "p_inst", "p_asg",
                  "p_shas", "p_smap"),
    "owned": ("owned",),
    "new_member_added": ("nma",),
}
assert set(FIELD_VARS) == set(GROUP_FIELDS), "every Group field needs a symbolic representation"
assert sorted(v for vs in FIELD_VARS.values() for v in vs) == sorted(STATE_VARS)

# The input: the request's fields and the choices the environment / scheduler / Kafka makes.
INPUT_VARS: Final[dict[str, z3.SortRef]] = {
    "kind": EventSort,
    "mid": INT, "mide": BOOL,  # member id; mide = UNKNOWN_MEMBER_ID ("")
    "hiid": BOOL, "iid": INT,  # group.instance.id given, and which
    "gen": INT,  # generation id of SyncGroup / Heartbeat / OffsetCommit (JoinGroup: -1)
    "offs": BOOL,  # OffsetCommit carries at least one partition
    "given": SET,  # leader's SyncGroup: members given a non-empty assignment
    # Abstracted atoms: facts about request fields and broker settings the table only tests.
    "stv": BOOL,  # session timeout within [min, max] (settings)
    "rkm": BOOL,  # JoinGroup require_known_member_id (v4+)
    "psup": BOOL,  # protocols-supported (protocol type / names vs the group's)
    "mm": BOOL,  # metadata-matches: the same protocols and metadata bytes
    "spu": BOOL,  # selected-protocol-unchanged (selectProtocol outcome is uninterpreted)
    "spc": BOOL,  # sync-protocol-consistent
    "aok": BOOL,  # append-ok: the log append succeeds
    "sfm": BOOL,  # state-filter-matches (ListGroups)
    "wms": BOOL,  # within group.max.size, where it depends on group.max.size
    # Choices resolved by the environment.
    "fresh": INT,  # a new member id (GM:416 generateMemberId)
    "c0": INT, "c1": INT, "c2": INT,  # leader choices (hash-map order), one per choice point
    "rnz": BOOL,  # a new InitialDelayedJoin has remaining rebalance time (settings dependent)
    "nxt_init": BOOL, "nxt_rem": BOOL, "nxt_sgen": INT,  # timers behind the first (if any)
}
CHOICE_VARS: Final = ("c0", "c1", "c2")

# Atoms that the encoding treats as uninterpreted input booleans (the abstraction, stated once).
ABSTRACTED_ATOMS: Final[dict[str, str]] = {
    "session-timeout-valid": "stv", "requires-known-member-id": "rkm",
    "protocols-supported": "psup", "metadata-matches": "mm", "selected-protocol-unchanged": "spu",
    "sync-protocol-consistent": "spc", "append-ok": "aok", "state-filter-matches": "sfm",
}

Terms = Mapping[str, z3.ExprRef]


@dataclass(frozen=True)
class Sym:
    """One symbolic state (or input): its variables by name."""

    v: dict[str, z3.ExprRef]

    def __getitem__(self, name: str) -> z3.ExprRef:
        return self.v[name]


def make_state(tag: str) -> Sym:
    return Sym({n: z3.Const(f"{n}@{tag}", s) for n, s in STATE_VARS.items()})


def make_input(tag: str) -> Sym:
    return Sym({n: z3.Const(f"x.{n}@{tag}", s) for n, s in INPUT_VARS.items()})


def empty_set() -> z3.ArrayRef:
    return z3.K(INT, z3.BoolVal(False))


def is_empty(s: z3.ExprRef) -> z3.BoolRef:
    return s == empty_set()


def member(s: z3.ExprRef, m: z3.ExprRef) -> z3.BoolRef:
    return z3.Select(s, m)


def initial_state(s: Sym) -> z3.BoolRef:
    """Group(group_id) as the explorer starts: Missing, generation 0, nothing, owned."""
    e = empty_set()
    return z3.And(
        s["st"] == GSTATE[GroupState.Missing], s["gen"] == 0, s["owned"], z3.Not(s["hasl"]),
        s["mem"] == e, s["pend"] == e, s["shas"] == e, s["jt"] == 0, s["stn"] == 0,
        z3.Not(s["offs"]), s["pers"] == PERS_NONE, z3.Not(s["nma"]),
        s["aj"] == e, s["asy"] == e, s["psync"] == e, s["isnew"] == e, s["sarm"] == e,
        s["asg"] == e, s["hinst"] == e)

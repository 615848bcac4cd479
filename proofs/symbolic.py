"""The symbolic state and input: Z3 variables standing for one group and one input.

Member ids and group.instance.ids are Ints (an unbounded, parametric domain); per-member facts
are Z3 arrays over member ids; the static-member map (GM staticMembers) is an array over
instance ids. Values the table never branches on are abstracted (see docs/proofs.md):
protocols and metadata bytes, timeouts and deadlines, request ids, client ids. Each Group field
of model/state.py maps to the variables that represent it (`FIELD_VARS`), so an effect's
declared `modifies` names exactly the variables it may write: the frame is generated from it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Final, Mapping, Optional, TypeVar

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

# Two representations of the member-id domain share every encoder (atoms, effects, invariants):
# - unbounded (n_ids None): ids are Ints, sets Int->Bool arrays, maps Int->Int arrays; used by the
#   well-formedness and induction proofs (the parametric domain the issue asks for);
# - finite (n_ids = n): ids are n-bit bit-vectors ranging over 0..n-1, a set is an n-bit vector
#   (bit k = id k), a map is n slots of n bits; used by BMC, where it is far faster for Z3 than
#   arrays (benchmarks/proofs_results.md). Encoders never touch the representation directly: they
#   use the operations below, which dispatch on the sort of their arguments.
# Sort roles of the variables whose sort depends on the representation:
ID_VARS: Final = frozenset({"leader", "p_leader", "mid", "iid", "fresh", "c0", "c1", "c2"})
SET_VARS: Final = frozenset({"mem", "aj", "asy", "hinst", "psync", "isnew", "sarm", "asg", "shas",
                             "pend", "p_mem", "p_hinst", "p_asg", "p_shas", "given"})
MAP_VARS: Final = frozenset({"inst", "smap", "p_inst", "p_smap"})
# Generations and timer counts: Ints, or NUM_BITS-bit signed bit-vectors in the finite
# representation, which makes it entirely finite (bit-vectors, Booleans, enumerations) so that
# Z3's SAT-based QF_FD solver applies. Comparisons in the encoders are signed (z3py's default),
# and BMC depth is limited to MAX_FINITE_DEPTH so that no generation or count can wrap.
NUM_VARS: Final = frozenset({"gen", "jt", "stn", "st_gen", "p_gen", "nxt_sgen"})
NUM_BITS: Final = 8
MAX_FINITE_DEPTH: Final = 100


def _finite(t: z3.ExprRef) -> bool:
    return bool(z3.is_bv_sort(t.sort()))


def _slot(m: z3.ExprRef, k: int, n: int) -> z3.ExprRef:
    return z3.Extract(k * n + n - 1, k * n, m)


def id_val(k: int, n_ids: Optional[int]) -> z3.ExprRef:
    """The id k in the representation of `n_ids` (None: unbounded)."""
    return z3.IntVal(k) if n_ids is None else z3.BitVecVal(k, n_ids)


def id_lt(i: z3.ExprRef, n: int) -> z3.BoolRef:
    """i ranges over 0..n-1."""
    return z3.ULT(i, n) if _finite(i) else z3.And(i >= 0, i < n)


def sel(s: z3.ExprRef, i: z3.ExprRef) -> z3.BoolRef:
    """i is in the set s."""
    if _finite(s):
        return z3.Extract(0, 0, z3.LShR(s, i)) == 1
    return z3.Select(s, i)


def _bit(s: z3.ExprRef, i: z3.ExprRef) -> z3.BitVecRef:
    return z3.BitVecVal(1, s.size()) << i


def put(s: z3.ExprRef, i: z3.ExprRef, v: z3.ExprRef | bool) -> z3.ExprRef:
    """s with i in it (v true) or not (v false)."""
    if _finite(s):
        if v is True or z3.is_true(v):
            return s | _bit(s, i)
        if v is False or z3.is_false(v):
            return s & ~_bit(s, i)
        return z3.If(v, s | _bit(s, i), s & ~_bit(s, i))
    return z3.Store(s, i, v)


def empty_like(s: z3.ExprRef) -> z3.ExprRef:
    """The empty set in the representation of s."""
    return z3.BitVecVal(0, s.size()) if _finite(s) else empty_set()


def singleton(i: z3.ExprRef) -> z3.ExprRef:
    if _finite(i):
        return z3.BitVecVal(1, i.size()) << i
    return z3.Store(empty_set(), i, True)


def union(a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    return a | b if _finite(a) else z3.SetUnion(a, b)


def inter(*sets: z3.ExprRef) -> z3.ExprRef:
    acc = sets[0]
    for s in sets[1:]:
        acc = acc & s if _finite(acc) else z3.SetIntersect(acc, s)
    return acc


def diff(a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
    return a & ~b if _finite(a) else z3.SetDifference(a, b)


def compl(a: z3.ExprRef) -> z3.ExprRef:
    return ~a if _finite(a) else z3.SetComplement(a)


def mget(m: z3.ExprRef, i: z3.ExprRef) -> z3.ExprRef:
    """The map m at i."""
    if not _finite(m):
        return z3.Select(m, i)
    n = i.size()
    out = _slot(m, n - 1, n)
    for k in range(n - 2, -1, -1):
        out = z3.If(i == k, _slot(m, k, n), out)
    return out


def mput(m: z3.ExprRef, i: z3.ExprRef, v: z3.ExprRef) -> z3.ExprRef:
    """m with i mapped to v."""
    if not _finite(m):
        return z3.Store(m, i, v)
    n = i.size()
    slots = [z3.If(i == k, v, _slot(m, k, n)) for k in range(n)]
    return z3.Concat(*reversed(slots)) if n > 1 else slots[0]


def drop_mapped_to(keys: z3.ExprRef, m: z3.ExprRef, gone: z3.ExprRef) -> z3.ExprRef:
    """The keys of `keys` whose image under m is not in `gone`: {i in keys | m(i) not in gone}."""
    if not _finite(keys):
        i = z3.Int("i")
        return z3.Lambda([i], z3.And(z3.Select(keys, i), z3.Not(z3.Select(gone, z3.Select(m, i)))))
    n = keys.size()
    bits = [z3.If(z3.And(sel(keys, z3.BitVecVal(k, n)), z3.Not(sel(gone, _slot(m, k, n)))),
                  z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)) for k in range(n)]
    return z3.Concat(*reversed(bits)) if n > 1 else bits[0]


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
    "gide": BOOL,  # the group id is "" (GC:1159); no row changes it
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
# Group fields no effect may change (GROUP_FIELDS leaves them out): every row keeps them.
CONSTANT_VARS: Final[dict[str, tuple[str, ...]]] = {"group_id": ("gide",)}
assert set(FIELD_VARS) == set(GROUP_FIELDS), "every Group field needs a symbolic representation"
assert sorted(v for vs in (*FIELD_VARS.values(), *CONSTANT_VARS.values()) for v in vs) == \
    sorted(STATE_VARS)

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


def sort_of(name: str, default: z3.SortRef, n_ids: Optional[int]) -> z3.SortRef:
    """A variable's sort in the representation of `n_ids` (None: unbounded)."""
    if n_ids is None:
        return default
    if name in ID_VARS or name in SET_VARS:
        return z3.BitVecSort(n_ids)
    if name in MAP_VARS:
        return z3.BitVecSort(n_ids * n_ids)
    if name in NUM_VARS:
        return z3.BitVecSort(NUM_BITS)
    if name in ENUM_SORTS:
        return z3.BitVecSort(_enum_bits(ENUM_SORTS[name]))
    return default


ENUM_SORTS: Final[dict[str, z3.SortRef]] = {"st": GStateSort, "pers": PersSort, "kind": EventSort}


def _enum_bits(sort: z3.SortRef) -> int:
    return max(1, (int(sort.num_constructors()) - 1).bit_length())


def _enum_index(c: z3.ExprRef) -> int:
    sort = c.sort()
    for i in range(sort.num_constructors()):
        if sort.constructor(i)().eq(c):
            return i
    raise ValueError(f"{c} is not an enumeration constant")


def lit(c: z3.ExprRef, like: z3.ExprRef) -> z3.ExprRef:
    """The enumeration constant c (GSTATE[..], EVENT[..], PERS_..) in the representation of
    `like`: itself, or its index as a bit-vector in the finite representation."""
    return z3.BitVecVal(_enum_index(c), like.size()) if _finite(like) else c


def eq(t: z3.ExprRef, c: z3.ExprRef) -> z3.BoolRef:
    """t (a state, event or persisted-record term) is the enumeration constant c."""
    return t == lit(c, t)


def enum_of(name: str, index: int) -> z3.ExprRef:
    """The enumeration constant with this index (decoding the finite representation)."""
    c: z3.ExprRef = ENUM_SORTS[name].constructor(index)()
    return c


def enum_ranges(sym: "Sym") -> z3.BoolRef:
    """In the finite representation, enumeration variables hold valid indices."""
    parts = [z3.ULT(t, ENUM_SORTS[n].num_constructors())
             for n, t in sym.v.items() if n in ENUM_SORTS and _finite(t)]
    return z3.And(parts)


def zero_like(t: z3.ExprRef) -> z3.ExprRef:
    """The number 0 in the representation of t."""
    return z3.BitVecVal(0, t.size()) if _finite(t) else z3.IntVal(0)


def make_state(tag: str, n_ids: Optional[int] = None) -> Sym:
    return Sym({n: z3.Const(f"{n}@{tag}", sort_of(n, s, n_ids)) for n, s in STATE_VARS.items()})


def make_input(tag: str, n_ids: Optional[int] = None) -> Sym:
    return Sym({n: z3.Const(f"x.{n}@{tag}", sort_of(n, s, n_ids)) for n, s in INPUT_VARS.items()})


def empty_set() -> z3.ArrayRef:
    """The empty set of the unbounded representation (see empty_like for either)."""
    return z3.K(INT, z3.BoolVal(False))


def is_empty(s: z3.ExprRef) -> z3.BoolRef:
    return s == empty_like(s)


def initial_state(s: Sym) -> z3.BoolRef:
    """Group(group_id) as the explorer starts: Missing, generation 0, nothing, owned; any group
    id ("gide" is left free: the empty id, or not)."""
    e = empty_like(s["mem"])
    return z3.And(
        eq(s["st"], GSTATE[GroupState.Missing]), s["gen"] == 0, s["owned"], z3.Not(s["hasl"]),
        s["mem"] == e, s["pend"] == e, s["shas"] == e, s["jt"] == 0, s["stn"] == 0,
        z3.Not(s["offs"]), eq(s["pers"], PERS_NONE), z3.Not(s["nma"]),
        s["aj"] == e, s["asy"] == e, s["psync"] == e, s["isnew"] == e, s["sarm"] == e,
        s["asg"] == e, s["hinst"] == e)


_Enc = TypeVar("_Enc")


class Encodings(dict[str, _Enc]):
    """Name -> encoder (ATOM_ENCODINGS, EFFECT_ENCODINGS): each name is encoded once."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what  # "atom" or "effect", for the message

    def encodes(self, name: str) -> Callable[[_Enc], _Enc]:
        """The decorator that records its function as the encoding of `name`."""
        return functools.partial(self.add, name)

    def add(self, name: str, fn: _Enc) -> _Enc:
        """Record `fn` as the encoding of `name`, refusing a second one."""
        if name in self:
            raise ValueError(f"{self.what} {name!r} encoded twice")
        self[name] = fn
        return fn

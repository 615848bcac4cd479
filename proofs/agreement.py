"""The solver and the explorer reach the same states (issue 3, item 5), at bounds both handle.

Both engines read the same table. The explorer (check.abstract, open mode) steps concrete
groups; the encoding (proofs.encode, finite representation) steps symbolic ones. Each explorer
group is projected onto the symbolic variables (`group_values`, the inverse of
decode.to_group) and compared as a *key*: the values the table can read, with the ones it cannot
(a non-member's flags, the leader when there is none, ...) dropped, up to a renaming of member
and instance ids. The live group and the persisted record are renamed independently: nothing
compares a live id with a persisted one (a load replaces the live group wholesale), so e.g. a
member that left and a new one given the same id are the same state for both engines.

The checks, each a solver query or a series of them (`check_agreement`):
- initial: the explorer's initial group is the solver's initial state;
- quiescent: every explorer state is one where no urgent completion is possible;
- explorer ⊆ solver: every explorer state is reached by a solver step sequence (one input, then
  the forced urgent completions) from the state the explorer first reached it from;
- solver ⊆ explorer: the explorer's states contain the initial state and are closed under that
  step relation: no input takes a state inside the bounds to one the explorer does not have.

Bounds, the same on both sides: `ids` member ids and `instances` instance ids in a live group
and in its persisted record (the solver's finite domain; the explorer cuts an input that would
need one more, e.g. a new member id when `ids` are in use); generation <= `max_generation` (the
explorer's bound: a state beyond it is reached but not expanded, and the solver's steps start
only from states within it). The explorer has `dynamic` dynamic clients and `instances` static
ones; its open mode sends any request at any time, as the solver's environment does, but with
fewer field values. Where it cannot send what the solver can, the solver's input is restricted
explicitly: `RESTRICTIONS`, each named and justified (see docs/proofs.md). The explorer's states
come from check.abstract's own successor function (`explore_states`), explored breadth-first
without the invariant and liveness checks of check.explore.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Final, Iterable, Optional, Sequence

import z3

from check.abstract import (
    FAULTS,
    REBALANCE_MS,
    AbstractModel,
    Action,
    Bounds,
    World,
)
from model.dsl import Guard, Table
from model.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from model.modes import AbstractMode
from model.state import Group, JoinTimerKind, Member
from model.vocabulary import TimerEvent
from proofs.bmc import Unrolling
from proofs.decode import Values, describe_input, describe_values, holds_in, read
from proofs.encode import Path, bounded_input, enabled, paths, quiescent, transition
from proofs.symbolic import (
    EVENT,
    GSTATE,
    PERS_EMPTY,
    PERS_NONE,
    PERS_STABLE,
    STATE_VARS,
    Sym,
    Terms,
    diff,
    eq,
    inter,
    id_lt,
    id_val,
    initial_state,
    is_empty,
    make_input,
    make_state,
    mget,
    sel,
)

# -- the key: what the table can read of a symbolic state ------------------------------------

# Variables by the role of their indices and values (live / persisted).
MEMBER_SETS: Final = ("mem", "pend", "aj", "asy", "psync", "isnew", "sarm", "asg", "hinst")
P_MEMBER_SETS: Final = ("p_mem", "p_hinst", "p_asg")
_ENUMS: Final[dict[str, dict[str, z3.ExprRef]]] = {
    "st": {str(c): c for c in GSTATE.values()},
    "pers": {str(c): c for c in (PERS_NONE, PERS_STABLE, PERS_EMPTY)},
}
NO_RECORD: Final = str(PERS_NONE)


@dataclass(frozen=True)
class Field:
    """One position of a key: a variable, or one id's bit / slot of a set / map variable.
    `kind`: bool, num, enum, member (a member id) or instance (an instance id)."""

    var: str
    index: Optional[int]
    kind: str


Key = tuple[tuple[object, ...], tuple[object, ...]]  # (live part, persisted part)


def layout(n: int, ni: int) -> tuple[list[Field], list[Field]]:
    """The fields of the live part and of the persisted part, conditions before what they
    guard (a don't-care position holds None)."""
    live = [Field("st", None, "enum"), Field("gen", None, "num"), Field("owned", None, "bool"),
            Field("gide", None, "bool"), Field("nma", None, "bool"), Field("offs", None, "bool"), Field("jt", None, "num"),
            Field("jt_init", None, "bool"), Field("jt_rem", None, "bool"),
            Field("stn", None, "num"), Field("st_gen", None, "num"),
            Field("hasl", None, "bool"), Field("leader", None, "member")]
    live += [Field(v, k, "bool") for v in MEMBER_SETS for k in range(n)]
    live += [Field("inst", k, "instance") for k in range(n)]
    live += [f for i in range(ni) for f in (Field("shas", i, "bool"), Field("smap", i, "member"))]
    pers = [Field("pers", None, "enum"), Field("p_gen", None, "num"), Field("p_hasl", None, "bool"),
            Field("p_leader", None, "member")]
    pers += [Field(v, k, "bool") for v in P_MEMBER_SETS for k in range(n)]
    pers += [Field("p_inst", k, "instance") for k in range(n)]
    pers += [f for i in range(ni) for f in (Field("p_shas", i, "bool"), Field("p_smap", i, "member"))]
    return live, pers


def _set(v: Values, name: str) -> frozenset[int]:
    s = v[name]
    assert isinstance(s, frozenset)
    return s


def _map(v: Values, name: str) -> dict[int, int]:
    m = v[name]
    assert isinstance(m, dict)
    return m


def _int(v: Values, name: str) -> int:
    x = v[name]
    assert isinstance(x, int)
    return x


def _cares(v: Values, f: Field) -> bool:
    """The table can read this position of v (else it is don't-care)."""
    if f.var == "leader":
        return bool(v["hasl"])
    if f.var in ("jt_init", "jt_rem"):
        return _int(v, "jt") > 0
    if f.var == "st_gen":
        return _int(v, "stn") > 0
    if f.var in MEMBER_SETS[2:]:
        return f.index in _set(v, "mem")
    if f.var == "inst":
        return f.index in _set(v, "mem") and f.index in _set(v, "hinst")
    if f.var == "smap":
        return f.index in _set(v, "shas")
    if f.var.startswith("p_"):
        if str(v["pers"]) == NO_RECORD:
            return False
        if f.var == "p_leader":
            return bool(v["p_hasl"])
        if f.var in ("p_hinst", "p_asg"):
            return f.index in _set(v, "p_mem")
        if f.var == "p_inst":
            return f.index in _set(v, "p_mem") and f.index in _set(v, "p_hinst")
        if f.var == "p_smap":
            return f.index in _set(v, "p_shas")
    return True


def _value(v: Values, f: Field) -> object:
    if not _cares(v, f):
        return None
    x = v[f.var]
    if f.index is None:
        return str(x) if f.kind == "enum" else x
    if isinstance(x, frozenset):
        return f.index in x
    assert isinstance(x, dict)
    return int(x[f.index])


def flat(v: Values, fields: Sequence[Field]) -> tuple[object, ...]:
    return tuple(_value(v, f) for f in fields)


def _ren(p: Sequence[int], k: int) -> int:
    return p[k] if 0 <= k < len(p) else k  # a don't-care value may lie outside the domain


def rename(v: Values, pm: Sequence[int], pi: Sequence[int], part: str) -> Values:
    """v with member id k renamed pm[k] and instance id i renamed pi[i] in one part ("live" or
    "persisted"); the other part is copied."""
    out = dict(v)
    pre = "" if part == "live" else "p_"
    sets = MEMBER_SETS if part == "live" else P_MEMBER_SETS
    for name in sets:
        out[name] = frozenset(pm[k] for k in _set(v, name))
    out[pre + "shas"] = frozenset(pi[i] for i in _set(v, pre + "shas"))
    inst, smap = _map(v, pre + "inst"), _map(v, pre + "smap")
    out[pre + "inst"] = {pm[k]: _ren(pi, i) for k, i in inst.items()}
    out[pre + "smap"] = {pi[i]: _ren(pm, k) for i, k in smap.items()}
    out[pre + "leader"] = _ren(pm, _int(v, pre + "leader"))
    return out


def _perms(n: int, ni: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    # instance ids beyond `ni` are never used (RESTRICTIONS), so they are not permuted
    inst = [p + tuple(range(ni, n)) for p in itertools.permutations(range(ni))]
    return [(pm, pi) for pm in itertools.permutations(range(n)) for pi in inst]


def variants(v: Values, n: int, ni: int) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The live and persisted parts of v under every renaming (the state's class)."""
    live_f, pers_f = layout(n, ni)
    live = {flat(rename(v, pm, pi, "live"), live_f) for pm, pi in _perms(n, ni)}
    pers = {flat(rename(v, pm, pi, "persisted"), pers_f) for pm, pi in _perms(n, ni)}
    return sorted(live, key=repr), sorted(pers, key=repr)


def describe_state(v: Values, n: int, ni: int) -> str:
    """Every value the table can read, by variable (sets and maps by id)."""
    parts: dict[str, list[str]] = {}
    for f in [f for part in layout(n, ni) for f in part]:
        x = _value(v, f)
        if x is None:
            continue
        if f.index is None:
            parts[f.var] = [str(x)]
        elif f.kind == "bool":
            parts.setdefault(f.var, [])
            if x:
                parts[f.var].append(str(f.index))
        else:
            parts.setdefault(f.var, []).append(f"{f.index}:{x}")
    return " ".join(f"{k}={vs[0]}" if k in v and not isinstance(v[k], (frozenset, dict))
                    else f"{k}={{{','.join(vs)}}}" for k, vs in parts.items())


def state_key(v: Values, n: int, ni: int) -> Key:
    live, pers = variants(v, n, ni)
    return live[0], pers[0]


# -- explorer groups as symbolic values (the inverse of decode.to_group) -----------------------

class NotRepresentable(Exception):
    """A group with more member or instance ids than the solver's domain."""


def _names(members: Sequence[Member], extra: Iterable[Optional[str]]) -> tuple[list[str], list[str]]:
    mids = sorted({m.member_id for m in members} | {x for x in extra if x is not None})
    iids = sorted({m.instance_id for m in members if m.instance_id is not None})
    return mids, iids


def live_ids(g: Group) -> tuple[list[str], list[str]]:
    return _names(g.members, [p.member_id for p in g.pending] + [g.leader])


def persisted_ids(g: Group) -> tuple[list[str], list[str]]:
    p = g.persisted
    return ([], []) if p is None else _names(p.members, [p.leader])


def _numbered(names: list[str], limit: int, what: str) -> dict[str, int]:
    if len(names) > limit:
        raise NotRepresentable(f"{len(names)} {what} ids {names}, the domain has {limit}")
    return {s: k for k, s in enumerate(names)}


def _members_values(members: Sequence[Member], mid: dict[str, int], iid: dict[str, int],
                    n: int, pre: str) -> Values:
    out: Values = {}

    def ids(pred: Callable[[Member], bool]) -> frozenset[int]:
        return frozenset(mid[m.member_id] for m in members if pred(m))

    out[pre + "mem"] = ids(lambda m: True)
    out[pre + "hinst"] = ids(lambda m: m.instance_id is not None)
    out[pre + "asg"] = ids(lambda m: m.assignment != b"")
    inst = {k: 0 for k in range(n)}
    smap = {k: 0 for k in range(n)}
    shas: set[int] = set()
    for m in members:
        if m.instance_id is not None:
            i = iid[m.instance_id]
            inst[mid[m.member_id]] = i
            if i not in shas:  # GM staticMembers: the first member with the instance id
                shas.add(i)
                smap[i] = mid[m.member_id]
    out[pre + "inst"], out[pre + "smap"], out[pre + "shas"] = inst, smap, frozenset(shas)
    if pre == "":
        out["aj"] = ids(lambda m: m.awaiting_join is not None)
        out["asy"] = ids(lambda m: m.awaiting_sync is not None)
        out["psync"] = ids(lambda m: m.pending_sync)
        out["isnew"] = ids(lambda m: m.is_new)
        out["sarm"] = ids(lambda m: m.session_deadline is not None)
    return out


def group_values(g: Group, n: int, ni: int) -> Values:
    """The symbolic state of a model group, member ids numbered in name order (live and
    persisted separately), don't-care values 0 / False. NotRepresentable beyond the domain."""
    mids, iids = live_ids(g)
    mid, iid = _numbered(mids, n, "member"), _numbered(iids, ni, "instance")
    v: Values = {
        "st": g.state.name, "gen": g.generation, "owned": g.owned, "nma": g.new_member_added,
        "gide": g.group_id == "",
        "offs": bool(g.offsets), "hasl": g.leader is not None,
        "leader": 0 if g.leader is None else mid[g.leader],
        "pend": frozenset(mid[p.member_id] for p in g.pending),
        "jt": len(g.join_timers), "jt_init": False, "jt_rem": False,
        "stn": len(g.sync_timers), "st_gen": g.sync_timers[0].generation if g.sync_timers else 0,
    }
    if g.join_timers:
        first = g.join_timers[0]
        v["jt_init"] = first.kind == JoinTimerKind.InitialDelayedJoin
        v["jt_rem"] = first.remaining_ms != 0
    v.update(_members_values(g.members, mid, iid, n, ""))
    p = g.persisted
    pm_names, pi_names = persisted_ids(g)
    pmid, piid = _numbered(pm_names, n, "persisted member"), _numbered(pi_names, ni, "persisted instance")
    v.update(_members_values(p.members if p is not None else (), pmid, piid, n, "p_"))
    v.update({"pers": NO_RECORD, "p_gen": 0, "p_hasl": False, "p_leader": 0})
    if p is not None:
        v.update({"pers": str(PERS_STABLE) if p.state.name == "Stable" else str(PERS_EMPTY),
                  "p_gen": p.generation, "p_hasl": p.leader is not None,
                  "p_leader": 0 if p.leader is None else pmid[p.leader]})
    assert set(v) == set(STATE_VARS), sorted(set(STATE_VARS) ^ set(v))
    return v


Projection = Callable[[Group, int, int], Values]


# -- the explorer side ---------------------------------------------------------------------------

class IdsExhausted(Exception):
    """The input needs a new member id while the domain's ids are all in use."""


class BoundedIdsMode(AbstractMode):
    """AbstractMode whose new member ids run out at `n` live ids, as the solver's do (a fresh id
    is one not among the members and pending members, proofs.effects.EffCtx.fresh)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def new_member_id(self, group: Group, base: str) -> str:
        used = {m.member_id for m in group.members} | {p.member_id for p in group.pending}
        if len(used) >= self.n:
            raise IdsExhausted(base)
        return super().new_member_id(group, base)


@dataclass(frozen=True)
class AgreementBounds:
    ids: int = 2  # member ids in a live group / a persisted record (the solver's domain)
    instances: int = 0  # instance ids: the explorer's static clients
    dynamic: int = 1  # the explorer's dynamic clients
    max_generation: int = 1
    faults: frozenset[str] = frozenset(FAULTS)
    require_known_member_id: bool = True
    max_urgent: int = 4  # urgent completions after one input (longer chains are reported)
    # The explorer's group.initial.rebalance.delay.ms: half the clients' rebalance timeout, so
    # that an InitialDelayedJoin extends at most once (RESTRICTIONS: initial-delay-extends-once).
    initial_delay_ms: int = REBALANCE_MS // 2

    def explorer_bounds(self) -> Bounds:
        return Bounds(dynamic=self.dynamic, static=self.instances, max_generation=self.max_generation,
                      faults=self.faults, mode="open",
                      require_known_member_id=self.require_known_member_id,
                      max_ids_per_client=self.ids)

    def describe(self) -> str:
        return (f"{self.ids} member ids, {self.instances} instance id(s), generation <= "
                f"{self.max_generation}; explorer: open mode, {self.dynamic} dynamic + "
                f"{self.instances} static clients, faults {sorted(self.faults)}")


@dataclass
class ExplorerStates:
    """The explorer's reachable states, projected: every key, the ones expanded (within the
    bounds), and for each key but the initial one the step that first reached it."""

    initial: Key
    keys: set[Key] = field(default_factory=set)
    inside: set[Key] = field(default_factory=set)
    values: dict[Key, Values] = field(default_factory=dict)  # a representative
    parent: dict[Key, tuple[Key, str]] = field(default_factory=dict)
    groups: dict[Key, Group] = field(default_factory=dict)  # a representative
    worlds: int = 0
    edges: int = 0
    cut_inputs: int = 0  # inputs beyond the id domain (request ids, or a new member id)
    cut_states: int = 0  # successors beyond the id domain
    seconds: float = 0.0


def _request_ids(a: Action) -> tuple[set[str], set[str]]:
    """Member ids and instance ids an action's request names."""
    r = a.request
    mids: set[str] = set()
    iids: set[str] = set()
    if isinstance(r, (JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, OffsetCommitRequest)):
        mids.add(r.member_id)
        iids.add(r.group_instance_id or "")
    if isinstance(r, SyncGroupRequest):
        mids.update(m for m, _ in r.assignments)
    if isinstance(r, LeaveGroupRequest):
        for m in r.members:
            mids.add(m.member_id)
            iids.add(m.group_instance_id or "")
    if a.member_id is not None:
        mids.add(a.member_id)
    mids.discard("")
    iids.discard("")
    return mids, iids


def _expressible(live: tuple[set[str], set[str]], a: Action, n: int, ni: int) -> bool:
    """The solver can send this request: its ids fit in the domain with the group's `live`."""
    mids, iids = _request_ids(a)
    return len(live[0] | mids) <= n and len(live[1] | iids) <= ni


def renumber_requests(g: Group) -> Group:
    """The parked requests' ids renumbered 1, 2, ... in member order. They only name responses
    (model/effects.py: ctx.respond, Output), and in open mode no client reads those, so this
    changes no transition of the group: it merges worlds that differ only in request ids."""
    rid = 0
    members: list[Member] = []
    changed = False
    for m in g.members:
        aj, asy = m.awaiting_join, m.awaiting_sync
        if aj is not None:
            rid += 1
            if aj.request_id != rid:
                aj, changed = replace(aj, request_id=rid), True
        if asy is not None:
            rid += 1
            if asy != rid:
                asy, changed = rid, True
        members.append(replace(m, awaiting_join=aj, awaiting_sync=asy)
                       if (aj, asy) != (m.awaiting_join, m.awaiting_sync) else m)
    return replace(g, members=tuple(members)) if changed else g


class ExplorationTooLarge(Exception):
    """More worlds than the caller allowed (e.g. a mutant whose timers pile up unboundedly)."""


def explore_states(table: Table, urgent: Sequence[tuple[str, Guard]], b: AgreementBounds,
                   project: Projection = group_values,
                   max_worlds: Optional[int] = 1_000_000) -> ExplorerStates:
    """Breadth-first over check.abstract's open-mode successors (AbstractModel.actions, variants
    and apply, as AbstractModel.successors combines them), cutting what the
    solver's id domain cannot hold; a world beyond check.abstract's bounds is kept, not expanded."""
    start = time.perf_counter()
    bounds = b.explorer_bounds()
    model = AbstractModel(table, tuple(urgent), bounds)
    model.mode = BoundedIdsMode(b.ids)
    model.settings = replace(model.settings, initial_rebalance_delay_ms=b.initial_delay_ms)
    model.failing_settings = replace(model.failing_settings, initial_rebalance_delay_ms=b.initial_delay_ms)
    init = model.initial()
    iv = project(init.group, b.ids, b.instances)
    ik = state_key(iv, b.ids, b.instances)
    out = ExplorerStates(ik, {ik}, set(), {ik: iv}, groups={ik: init.group})
    # Worlds are deduplicated by their group itself (open-mode clients never change), so this
    # check does not depend on check.abstract.world_key, whose member key once merged members
    # with different protocol lists (finding F3, docs/proofs.md).
    seen: dict[Group, Optional[Key]] = {init.group: ik}
    queue: list[tuple[World, Key]] = [(init, ik)]
    while queue:
        nxt: list[tuple[World, Key]] = []
        for w, k in queue:
            if not model.within_bounds(w):
                continue
            out.inside.add(k)
            live_m, live_i = live_ids(w.group)
            live = (set(live_m), set(live_i))
            for a in model.actions(w):
                if not _expressible(live, a, b.ids, b.instances):
                    out.cut_inputs += 1
                    continue
                for act in model.variants(a):
                    try:
                        succ = model.apply(w, act)
                    except IdsExhausted:
                        out.cut_inputs += 1
                        continue
                    for s in succ:
                        out.edges += 1
                        group = renumber_requests(s.world.group)
                        if group in seen:
                            continue
                        try:
                            v = project(group, b.ids, b.instances)
                        except NotRepresentable:
                            seen[group] = None
                            out.cut_states += 1
                            continue
                        key = state_key(v, b.ids, b.instances)
                        seen[group] = key
                        if max_worlds is not None and len(seen) > max_worlds:
                            raise ExplorationTooLarge(f"more than {max_worlds} worlds")
                        nxt.append((World(group, s.world.clients), key))
                        if key not in out.keys:
                            out.keys.add(key)
                            out.values[key] = v
                            out.groups[key] = group
                            out.parent[key] = (k, s.action.label(bounds))
        queue = nxt
    out.worlds = len(seen)
    out.seconds = time.perf_counter() - start
    return out


# -- restrictions of the solver's environment ---------------------------------------------------

@dataclass(frozen=True)
class Restriction:
    """A named restriction of the solver's inputs to what the explorer's open mode can send."""

    name: str
    why: str
    holds: Callable[[Terms, Sym, AgreementBounds], z3.BoolRef]


def _instances_in_use(g: Terms, x: Sym, b: AgreementBounds) -> z3.BoolRef:
    return z3.Implies(x["hiid"], id_lt(x["iid"], b.instances)) if b.instances else z3.Not(x["hiid"])


def _initial_delay_extends_once(g: Terms, x: Sym, b: AgreementBounds) -> z3.BoolRef:
    extending = eq(x["kind"], EVENT[TimerEvent.InitialDelayedJoinExpire.value])
    return z3.If(extending, z3.Not(x["rnz"]), x["rnz"])


def _assigns_all_or_none(g: Terms, x: Sym, b: AgreementBounds) -> z3.BoolRef:
    return z3.Or(is_empty(diff(g["mem"], x["given"])), is_empty(inter(g["mem"], x["given"])))


RESTRICTIONS: Final[tuple[Restriction, ...]] = (
    Restriction("instance-ids", "requests name only the instance ids of the explorer's static "
                "clients (its instance-id domain is smaller than the member-id domain)",
                _instances_in_use),
    Restriction("initial-delay-extends-once", "the encoding leaves an InitialDelayedJoin's "
                "remaining time to the input (`rnz`); the explorer computes it from fixed "
                "settings, with the initial delay at half the rebalance timeout: a new one has "
                "time left, an extended one has none",
                _initial_delay_extends_once),
    Restriction("assignments-all-or-none", "a SyncGroup assigns (`given`) every member or no "
                "member: the explorer's open-mode SyncGroup carries a non-empty assignment for "
                "each member, or none at all (its `roundrobin` variant)", _assigns_all_or_none),
)


# -- the solver side -----------------------------------------------------------------------------

class FieldTerms:
    """A symbolic state's key fields as terms, and the tests `field == value` (built once)."""

    def __init__(self, s: Terms, fields: Sequence[Field], width: int) -> None:
        self.width = width
        self.fields = fields
        self.terms: list[z3.ExprRef] = []
        for f in fields:
            if f.index is None:
                self.terms.append(s[f.var])
            else:
                i = id_val(f.index, width)
                self.terms.append(sel(s[f.var], i) if f.kind == "bool" else mget(s[f.var], i))
        self._tests: dict[tuple[int, object], z3.BoolRef] = {}

    def test(self, level: int, value: object) -> z3.BoolRef:
        got = self._tests.get((level, value))
        if got is None:
            t, f = self.terms[level], self.fields[level]
            if f.kind == "bool":
                got = t if value else z3.Not(t)
            elif f.kind == "enum":
                got = eq(t, _ENUMS[f.var][str(value)])
            elif f.kind in ("member", "instance"):
                got = t == id_val(int(value), self.width)  # type: ignore[call-overload]
            else:
                got = t == value
            self._tests[(level, value)] = got
        return got


class KeySet:
    """A set of keys as a formula over a symbolic state: a decision diagram over the key's
    fields (shared sub-diagrams), each key present with every renaming (its class)."""

    def __init__(self, keys: Iterable[Key], values: dict[Key, Values], n: int, ni: int) -> None:
        live_f, pers_f = layout(n, ni)
        self.depth = len(live_f) + len(pers_f)
        trie: dict[object, object] = {}
        for k in keys:
            live, pers = variants(values[k], n, ni)
            for lv in live:
                node = trie
                for x in lv:
                    node = node.setdefault(x, {})  # type: ignore[assignment]
                for pv in pers:
                    sub = node
                    for x in pv:
                        sub = sub.setdefault(x, {})  # type: ignore[assignment]
        self._ids: dict[object, int] = {}
        self.nodes: list[tuple[tuple[object, int], ...]] = []  # node -> (value, child) pairs
        self.root = self._intern(trie, 0) if trie else -1

    def _intern(self, node: dict[object, object], level: int) -> int:
        kids: tuple[tuple[object, int], ...] = ()
        if level < self.depth:
            kids = tuple(sorted(((x, self._intern(c, level + 1))  # type: ignore[arg-type]
                                 for x, c in node.items()), key=repr))
        sig = (level, kids)
        got = self._ids.get(sig)
        if got is None:
            got = self._ids[sig] = len(self.nodes)
            self.nodes.append(kids)
        return got

    def holds(self, ft: FieldTerms) -> z3.BoolRef:
        """The state whose fields are `ft` is in the set."""
        if self.root < 0:
            return z3.BoolVal(False)
        memo: dict[int, z3.BoolRef] = {}

        def build(i: int, level: int) -> z3.BoolRef:
            got = memo.get(i)
            if got is not None:
                return got
            node, tests = i, []
            while level < self.depth:  # a run of single branches becomes one conjunction
                kids = self.nodes[node]
                if len(kids) == 1:
                    if kids[0][0] is not None:  # (None: a don't-care position)
                        tests.append(ft.test(level, kids[0][0]))
                elif not (ft.fields[level].kind == "bool" and len(kids) == 2
                          and kids[0][1] == kids[1][1]):  # (else: either value)
                    break
                node, level = kids[0][1], level + 1
            if level < self.depth:
                tests.append(z3.Or([build(c, level + 1) if x is None
                                    else z3.And(ft.test(level, x), build(c, level + 1))
                                    for x, c in self.nodes[node]]))
            got = memo[i] = z3.And(tests) if tests else z3.BoolVal(True)
            return got

        return build(self.root, 0)


@dataclass
class Finding:
    """A disagreement: what, and the concrete states (and input) involved."""

    check: str
    message: str
    lines: list[str] = field(default_factory=list)
    state: Optional[Values] = None  # the state only one engine reaches (or never leaves)

    def render(self, n: int, ni: int) -> str:
        state = [f"state: {describe_state(self.state, n, ni)}"] if self.state is not None else []
        return "\n".join([f"[{self.check}] {self.message}"]
                         + [f"    {x}" for x in self.lines + state])


@dataclass
class AgreementReport:
    bounds: AgreementBounds
    explorer: ExplorerStates
    restrictions: tuple[str, ...]
    findings: list[Finding] = field(default_factory=list)
    queries: int = 0
    solver_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        e = self.explorer
        return (f"{self.bounds.describe()}\n"
                f"explorer: {e.worlds} worlds, {e.edges} steps, {len(e.keys)} symbolic states "
                f"({len(e.inside)} within the bounds); {e.cut_inputs} inputs and {e.cut_states} "
                f"successors cut (beyond the id domain); {e.seconds:.1f}s\n"
                f"solver: {self.queries} queries, {self.solver_seconds:.1f}s; restrictions: "
                f"{', '.join(self.restrictions) or 'none'}\n"
                + (f"agree: the same {len(e.keys)} states" if self.ok else
                   f"{len(self.findings)} disagreement(s):\n"
                   + "\n".join(f.render(self.bounds.ids, self.bounds.instances)
                               for f in self.findings)))


class StepChain:
    """One input from a state `start` (proofs.bmc.Unrolling's step: any input the environment
    may send, restricted), then the urgent completions it forces; a state where none is
    possible stays put, so `final` is the first quiescent state unless the completions go on
    for more than max_urgent steps (`too_long`)."""

    def __init__(self, table: Table, urgent: Sequence[tuple[str, Guard]], b: AgreementBounds,
                 restrictions: Sequence[Restriction]) -> None:
        self.u = Unrolling(table, urgent, b.ids, init=False, tag="agr")
        self.u.ensure(1)
        self.solver = self.u.solver
        w = b.ids
        self.urgent = tuple(urgent)
        self.start = self.u.states[0]
        self.states: list[Sym] = list(self.u.states)
        self.inputs: list[Sym] = list(self.u.inputs)
        self.paths: list[list[Path]] = list(self.u.paths)
        for r in restrictions:
            self.solver.add(r.holds(self.start.v, self.inputs[0], b))
        names = [ev for ev, _ in urgent]
        for j in range(1, b.max_urgent + 1):
            s, x, s2 = self.states[j], make_input(f"agr{j}", w), make_state(f"agr{j + 1}", w)
            ps = paths(table, s.v, x, names)
            self.solver.add(z3.If(
                quiescent(urgent, s.v, x), z3.And([s2[v] == s[v] for v in STATE_VARS]),
                z3.And(enabled(names, urgent, s.v, x), transition(ps, s.v, s2.v),
                       bounded_input(x, b.ids))))
            self.states.append(s2)
            self.inputs.append(x)
            self.paths.append(ps)
        self.final = self.states[-1]
        self.q0 = self.quiescent(self.start)
        self.too_long = z3.Not(self.quiescent(self.final))

    def quiescent(self, s: Sym) -> z3.BoolRef:
        return quiescent(self.urgent, s.v, make_input("agr-q", self.u.width))

    def describe(self, m: z3.ModelRef, domain: Sequence[int]) -> list[str]:
        lines = [f"from: {describe_values(read(m, self.start, domain))}"]
        for j, x in enumerate(self.inputs):
            if j > 0 and z3.is_true(m.eval(self.quiescent(self.states[j]), model_completion=True)):
                break
            chosen = [p for p in self.paths[j] if holds_in(m, p.sel)]
            rows = ", ".join(r.id for p in chosen for r in p.rows)
            lines.append(f"{j + 1}. {describe_input(read(m, x, domain))}  [{rows}]")
            lines.append(f"   -> {describe_values(read(m, self.states[j + 1], domain))}")
        return lines


class _AgreementQueries:
    """The queries that compare an exploration's states with the solver's steps over one
    StepChain; each adds what it finds to the report."""

    def __init__(self, chain: StepChain, ex: ExplorerStates, rep: AgreementReport,
                 b: AgreementBounds) -> None:
        self.chain, self.ex, self.rep = chain, ex, rep
        self.solver = chain.solver
        self.n, self.ni, self.w = b.ids, b.instances, b.ids
        self.max_urgent = b.max_urgent
        self.domain = list(range(self.n))
        self.fields = [f for part in layout(self.n, self.ni) for f in part]
        self.start = FieldTerms(chain.start.v, self.fields, self.w)
        self.final = FieldTerms(chain.final.v, self.fields, self.w)

    def one(self, k: Key, v: Values) -> KeySet:
        return KeySet([k], {k: v}, self.n, self.ni)

    def ask(self, *assumptions: z3.BoolRef) -> Optional[z3.ModelRef]:
        self.rep.queries += 1
        r = self.solver.check(*assumptions)
        if r == z3.unknown:
            raise RuntimeError(f"agreement query unknown: {self.solver.reason_unknown()}")
        return self.solver.model() if r == z3.sat else None

    def check_initial(self) -> None:
        """The explorer's initial group is the solver's."""
        ex, solver = self.ex, self.solver
        init = make_state("agr-init", self.w)
        solver.push()
        # the solver starts from any group id; the explorer's bounds name one
        solver.add(initial_state(init), init["gide"] == bool(ex.values[ex.initial]["gide"]),
                   z3.Not(self.one(ex.initial, ex.values[ex.initial]).holds(
                       FieldTerms(init.v, self.fields, self.w))))
        m = self.ask()
        if m is not None:
            iv = read(m, init, self.domain)
            self.rep.findings.append(Finding("initial", "the solver's initial state is not the explorer's",
                                             [describe_values(iv)], iv))
        solver.pop()

    def check_quiescent(self, inside: z3.BoolRef) -> None:
        """Explorer states are quiescent (what step() returns); assumed from here on."""
        solver = self.solver
        solver.push()
        solver.add(inside, z3.Not(self.chain.q0))
        m = self.ask()
        if m is not None:
            qv = read(m, self.chain.start, self.domain)
            self.rep.findings.append(Finding("quiescent", "an explorer state has an urgent completion pending",
                                             [describe_values(qv)], qv))
        solver.pop()
        solver.add(self.chain.q0)

    def check_solver_steps(self, inside: z3.BoolRef, max_findings: int) -> None:
        """Solver ⊆ explorer: no step from a state within the bounds leaves the explorer's states."""
        ex, solver, chain, rep = self.ex, self.solver, self.chain, self.rep
        solver.push()
        solver.add(inside, z3.Or(chain.too_long,
                                 z3.Not(KeySet(ex.keys, ex.values, self.n, self.ni).holds(self.final))))
        while len(rep.findings) < max_findings:
            m = self.ask()
            if m is None:
                break
            lines = chain.describe(m, self.domain)
            if z3.is_true(m.eval(chain.too_long, model_completion=True)):
                src = read(m, chain.start, self.domain)
                rep.findings.append(Finding("solver-only", f"urgent completions go on for more than "
                                            f"{self.max_urgent} steps", lines, src))
                solver.add(z3.Not(self.one(state_key(src, self.n, self.ni), src).holds(self.start)))
                continue
            fin = read(m, chain.final, self.domain)
            fk = state_key(fin, self.n, self.ni)
            rep.findings.append(Finding("solver-only", "the solver reaches a state the explorer does not",
                                        lines, fin))
            solver.add(z3.Not(self.one(fk, fin).holds(self.final)))
        solver.pop()

    def check_explorer_steps(self, max_findings: int) -> None:
        """Explorer ⊆ solver: each state's first explorer step is a solver step (one query each,
        under an assumption literal, so that what the solver learns is kept between them)."""
        ex, solver, rep = self.ex, self.solver, self.rep
        for i, k in enumerate(sorted(ex.parent, key=repr)):
            if len(rep.findings) >= max_findings:
                break
            pk, label = ex.parent[k]
            edge = z3.Bool(f"agr-edge-{i}")
            solver.add(z3.Implies(edge, z3.And(self.one(pk, ex.values[pk]).holds(self.start),
                                               self.one(k, ex.values[k]).holds(self.final))))
            rep.queries += 1
            verdict = solver.check(edge)
            if verdict == z3.unknown:
                raise RuntimeError(f"agreement query unknown: {solver.reason_unknown()}")
            if verdict == z3.unsat:
                rep.findings.append(Finding(
                    "explorer-only", "an explorer step the solver cannot make",
                    [f"from: {describe_values(ex.values[pk])}", f"step: {label}",
                     f"to:   {describe_values(ex.values[k])}"], ex.values[k]))


def check_agreement(table: Table, urgent: Sequence[tuple[str, Guard]],
                    b: AgreementBounds = AgreementBounds(),
                    explorer_table: Optional[Table] = None,
                    restrictions: Sequence[Restriction] = RESTRICTIONS,
                    project: Projection = group_values,
                    states: Optional[ExplorerStates] = None,
                    max_findings: int = 10) -> AgreementReport:
    """Compare the explorer's reachable states (of `explorer_table`, default `table`) with the
    solver's (of `table`); `states` reuses an exploration (a negative control may edit it)."""
    ex = states if states is not None else explore_states(
        explorer_table or table, urgent, b, project)
    rep = AgreementReport(b, ex, tuple(r.name for r in restrictions))
    t0 = time.perf_counter()
    queries = _AgreementQueries(StepChain(table, urgent, b, restrictions), ex, rep, b)
    queries.check_initial()
    inside = KeySet(ex.inside, ex.values, b.ids, b.instances).holds(queries.start)
    queries.check_quiescent(inside)
    queries.check_solver_steps(inside, max_findings)
    queries.check_explorer_steps(max_findings)
    rep.solver_seconds = time.perf_counter() - t0
    return rep

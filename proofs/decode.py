"""Counterexamples back into the model: symbolic values -> model.state.Group / Input, replayed
through model.step.step (AbstractMode), and compared with the solver's successor state.

Symbolic ids k become member ids `m<k>` and instance ids `i<k>`. Values the encoding abstracts
are realised by search: the replay tries a few concrete requests and settings (protocol lists,
metadata bytes, group.max.size, the initial rebalance delay) and hidden timer fields, and keeps
one whose fired rows and resulting state agree with the solver's. When none does, the encoding
and the table disagree: `ReplayError`, loudly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

import z3

from model.dsl import Guard, SpecDefect, Table
from model.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProtocolMetadata,
    SyncGroupRequest,
    TopicPartition,
)
from model.modes import AbstractMode
from model.state import (
    Group,
    Input,
    JoinTimer,
    JoinTimerKind,
    Member,
    ParkedJoin,
    PendingMember,
    PersistedGroup,
    Settings,
    SyncTimer,
)
from model.step import Transition, step_all
from model.vocabulary import Error, GroupState, TimerEvent
from proofs.symbolic import (
    GSTATE,
    ENUM_SORTS,
    ID_VARS,
    INPUT_VARS,
    MAP_VARS,
    PERS_EMPTY,
    PERS_STABLE,
    SET_VARS,
    STATE_VARS,
    Sym,
    enum_of,
)


class ReplayError(Exception):
    """A solver trace that the model's step function does not reproduce (an encoding bug)."""


Values = dict[str, object]  # python values of one symbolic state or input

LIVE = (GroupState.Empty, GroupState.PreparingRebalance, GroupState.CompletingRebalance,
        GroupState.Stable)
CANON = (ProtocolMetadata("range", b"\x00"), ProtocolMetadata("roundrobin", b"\x00"))
CANON_OTHER_META = (ProtocolMetadata("range", b"\x01"), ProtocolMetadata("roundrobin", b"\x01"))
RR_ONLY = (ProtocolMetadata("roundrobin", b"\x00"),)
PARTITION = TopicPartition("t", 0)
REQUEST_ID = 500
_STATE_BY_CONST = {str(c): s for s, c in GSTATE.items()}


def mname(k: int) -> str:
    return f"m{k}"


def iname(k: int) -> str:
    return f"i{k}"


# -------------------------------------------------------------------------- reading a model

def holds_in(m: z3.ModelRef, f: z3.ExprRef) -> bool:
    """f holds in m. Evaluating a set comparison over the unbounded representation can leave a
    closed term over array literals (Map(and, Store(...)) == ...) that eval does not reduce; a
    solver decides such a closed term."""
    v = m.eval(f, model_completion=True)
    if not (z3.is_true(v) or z3.is_false(v)):
        v = z3.simplify(v)
    if z3.is_true(v) or z3.is_false(v):
        return bool(z3.is_true(v))
    decide = z3.Solver()
    decide.set("timeout", 10000)
    decide.add(z3.Not(v))
    return bool(decide.check() == z3.unsat)


def _val(m: z3.ModelRef, t: z3.ExprRef, name: str = "") -> object:
    v = m.eval(t, model_completion=True)
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_bv_value(v):  # finite representation: ids unsigned, numbers signed
        return v.as_long() if name in ID_VARS else v.as_signed_long()
    return str(v)


def read(m: z3.ModelRef, sym: Sym, domain: Sequence[int]) -> Values:
    """Scalars as they are; sets as frozensets of ids in `domain`; maps as dicts on `domain`."""
    out: Values = {}
    for name, t in sym.v.items():
        sort = t.sort()
        if z3.is_bv_sort(sort) and name in ENUM_SORTS:
            out[name] = str(enum_of(name, m.eval(t, model_completion=True).as_long()))
        elif z3.is_bv_sort(sort) and name in SET_VARS:
            bits = m.eval(t, model_completion=True).as_long()
            out[name] = frozenset(k for k in domain if (bits >> k) & 1)
        elif z3.is_bv_sort(sort) and name in MAP_VARS:
            n = len(domain)
            word = m.eval(t, model_completion=True).as_long()
            out[name] = {k: (word >> (k * n)) & ((1 << n) - 1) for k in domain}
        elif isinstance(sort, z3.ArraySortRef):
            if sort.range() == z3.BoolSort():
                out[name] = frozenset(k for k in domain if z3.is_true(
                    m.eval(z3.Select(t, k), model_completion=True)))
            else:
                out[name] = {k: _val(m, z3.Select(t, k)) for k in domain}
        else:
            out[name] = _val(m, t, name)
    return out


def state_of(v: Values) -> GroupState:
    return _STATE_BY_CONST[str(v["st"])]


def ids_in_model(m: z3.ModelRef, syms: Sequence[Sym]) -> list[int]:
    """The member / instance ids a model talks about (for decoding an unbounded model)."""
    ids: set[int] = set()
    for sym in syms:
        for name, t in sym.v.items():
            sort = t.sort()
            if sort == z3.IntSort() and name in ("mid", "iid", "fresh", "leader", "p_leader",
                                                   "c0", "c1", "c2"):
                val = _val(m, t)
                if isinstance(val, int):
                    ids.add(val)
            if isinstance(sort, z3.ArraySortRef):
                ids.update(_array_indices(m, m.eval(t, model_completion=True)))
    return sorted(ids)


def _array_indices(m: z3.ModelRef, a: z3.ExprRef) -> set[int]:
    """Indices mentioned in a model's array value (Store chains and as-array tables)."""
    out: set[int] = set()
    stack = [a]
    while stack:
        t = stack.pop()
        if z3.is_as_array(t):
            interp = m[z3.get_as_array_func(t)]
            for entry in interp.as_list()[:-1]:
                if z3.is_int_value(entry[0]):
                    out.add(entry[0].as_long())
        elif z3.is_app(t):
            if z3.is_store(t) and z3.is_int_value(t.arg(1)):
                out.add(t.arg(1).as_long())
            stack.extend(t.children())
    return out


# -------------------------------------------------------------------------- values -> model records

def _member(k: int, v: Values, pre: str = "") -> Member:
    def has(a: str) -> bool:
        s = v[pre + a]
        assert isinstance(s, frozenset)
        return k in s
    inst = v[pre + "inst"]
    assert isinstance(inst, dict)
    live = pre == ""
    return Member(
        member_id=mname(k), instance_id=iname(int(inst[k])) if has("hinst") else None,
        client_id="consumer", protocol_type="consumer", protocols=CANON,
        session_timeout_ms=10000, rebalance_timeout_ms=30000,
        awaiting_join=ParkedJoin(PARKED_JOIN_ID + k) if live and has("aj") else None,
        awaiting_sync=PARKED_SYNC_ID + k if live and has("asy") else None,
        is_new=live and has("isnew"), assignment=b"a" if has("asg") else b"",
        session_deadline=0 if (not live or has("sarm")) else None,
        pending_sync=live and has("psync"))


def _set(v: Values, name: str) -> frozenset[int]:
    s = v[name]
    assert isinstance(s, frozenset)
    return s


@dataclass(frozen=True)
class Hidden:
    """Fields of a concrete state the symbolic one does not determine (tried in turn)."""

    first_delay: int = 0
    second_join: tuple[bool, bool] = (False, False)  # (initial, remaining > 0)
    second_sync_gen: int = 0


def to_group(v: Values, h: Hidden) -> Group:
    st = state_of(v)
    members = tuple(_member(k, v) for k in sorted(_set(v, "mem")))
    jt = int(v["jt"])  # type: ignore[call-overload]
    timers: list[JoinTimer] = []
    if jt > 0:
        kind = JoinTimerKind.InitialDelayedJoin if v["jt_init"] else JoinTimerKind.DelayedJoin
        timers.append(JoinTimer(kind, 0, delay_ms=h.first_delay, remaining_ms=1 if v["jt_rem"] else 0))
        for _ in range(jt - 1):
            init, rem = h.second_join
            timers.append(JoinTimer(JoinTimerKind.InitialDelayedJoin if init else JoinTimerKind.DelayedJoin,
                                    0, delay_ms=0, remaining_ms=1 if rem else 0))
    stn = int(v["stn"])  # type: ignore[call-overload]
    syncs = [SyncTimer(int(v["st_gen"]), 0)] if stn > 0 else []  # type: ignore[call-overload]
    syncs += [SyncTimer(h.second_sync_gen, 0) for _ in range(stn - 1)]
    persisted = None
    if str(v["pers"]) in (str(PERS_STABLE), str(PERS_EMPTY)):
        pm = tuple(_member(k, v, "p_") for k in sorted(_set(v, "p_mem")))
        persisted = PersistedGroup(
            state=GroupState.Stable if str(v["pers"]) == str(PERS_STABLE) else GroupState.Empty,
            generation=int(v["p_gen"]), protocol_type="consumer",  # type: ignore[call-overload]
            protocol_name="range" if pm else None,
            leader=mname(int(v["p_leader"])) if v["p_hasl"] else None,  # type: ignore[call-overload]
            members=pm)
    live = st in LIVE
    return Group(
        group_id="" if v["gide"] else "g", state=st,
        generation=int(v["gen"]),  # type: ignore[call-overload]
        protocol_type="consumer" if live else None,
        # no protocol before the first join phase completes (generation 0); after it, the
        # decoder assumes the one protocol every decoded member lists
        protocol_name="range" if live and members and (int(v["gen"]) > 0  # type: ignore[call-overload]
                                                        or st in (GroupState.CompletingRebalance,
                                                                  GroupState.Stable)) else None,
        leader=mname(int(v["leader"])) if v["hasl"] else None,  # type: ignore[call-overload]
        members=members,
        pending=tuple(PendingMember(mname(k), 0) for k in sorted(_set(v, "pend"))),
        join_timers=tuple(timers), sync_timers=tuple(syncs),
        offsets=((PARTITION, 1),) if v["offs"] else (), persisted=persisted,
        owned=bool(v["owned"]), new_member_added=bool(v["nma"]))


def hidden_variants(v: Values, nxt: Values) -> list[Hidden]:
    firsts = [0, 1] if v["jt_init"] and v["jt_rem"] and int(v["jt"]) > 0 else [0]  # type: ignore[call-overload]
    seconds: list[tuple[bool, bool]] = [(a, b) for a in (False, True) for b in (False, True)] \
        if int(v["jt"]) > 1 else [(False, False)]  # type: ignore[call-overload]
    sync2 = [int(nxt["st_gen"]), int(v["gen"])] if int(v["stn"]) > 1 else [0]  # type: ignore[call-overload]
    return [Hidden(a, b, c) for a in firsts for b in seconds for c in sync2]


# -------------------------------------------------------------------------- inputs

def _settings(g: Group, x: Values) -> list[Settings]:
    out = []
    if x["wms"]:
        size = 1 << 30
    elif g.state == GroupState.PreparingRebalance:
        size = g.num_awaiting_join()
    else:
        size = len(g.members)
    for delay in (0, 10 ** 9):
        out.append(Settings(
            min_session_timeout_ms=6000, max_session_timeout_ms=1800000, group_max_size=size,
            initial_rebalance_delay_ms=delay, new_member_join_timeout_ms=300000,
            append_ok=bool(x["aok"]), append_error=None if x["aok"] else Error.NOT_COORDINATOR))
    return out


def input_candidates(kind: str, x: Values, domain: Sequence[int]) -> list[Input]:
    mid = "" if x["mide"] else mname(int(x["mid"]))  # type: ignore[call-overload]
    iid = iname(int(x["iid"])) if x["hiid"] else None  # type: ignore[call-overload]
    gen = int(x["gen"])  # type: ignore[call-overload]
    rid = REQUEST_ID
    if kind == "JoinGroup":
        out = []
        for ptype, protocols in (("consumer", CANON), ("consumer", CANON_OTHER_META),
                                 ("consumer", RR_ONLY), ("", CANON)):
            req = JoinGroupRequest(
                group_id="g", member_id=mid, protocol_type=ptype, protocols=protocols,
                session_timeout_ms=10000 if x["stv"] else 1, rebalance_timeout_ms=30000,
                group_instance_id=iid, require_known_member_id=bool(x["rkm"]))
            out.append(Input(kind, req, request_id=rid))
        return out
    if kind == "SyncGroup":
        given = x["given"]
        assert isinstance(given, frozenset)
        sync = SyncGroupRequest("g", mid, gen, iid, None, None if x["spc"] else "no-such-protocol",
                                tuple((mname(k), b"a") for k in sorted(given)))
        return [Input(kind, sync, request_id=rid)]
    if kind == "Heartbeat":
        return [Input(kind, HeartbeatRequest("g", mid, gen, iid), request_id=rid)]
    if kind == "LeaveGroup":
        return [Input(kind, LeaveGroupRequest("g", (MemberIdentity(mid, iid),)), request_id=rid)]
    if kind == "OffsetCommit":
        offsets = ((PARTITION, 1),) if x["offs"] else ()
        return [Input(kind, OffsetCommitRequest("g", mid, gen, offsets, iid), request_id=rid)]
    if kind == "OffsetFetch":
        return [Input(kind, OffsetFetchRequest("g", None), request_id=rid)]
    if kind == "DescribeGroups":
        return [Input(kind, DescribeGroupsRequest(("g",)), request_id=rid)]
    if kind == "ListGroups":
        return [Input(kind, ListGroupsRequest(() if x["sfm"] else ("NoSuchState",)), request_id=rid)]
    if kind == "DeleteGroups":
        return [Input(kind, DeleteGroupsRequest(("g",)), request_id=rid)]
    if kind in (TimerEvent.MemberSessionExpire.value, TimerEvent.PendingMemberExpire.value):
        return [Input(kind, member_id=mid)]
    return [Input(kind)]


# -------------------------------------------------------------------------- projections

_MID = re.compile(r"^m\d+$")


def project_group(g: Group, fresh: Optional[int]) -> dict[str, object]:
    """A concrete group seen through the encoding's eyes (fresh ids renamed to m<fresh>)."""
    def nm(s: Optional[str]) -> Optional[str]:
        if s is None or _MID.match(s):
            return s
        if fresh is None:
            raise ReplayError(f"unexpected new member id {s!r}")
        return mname(fresh)
    members = tuple(sorted(
        (nm(m.member_id), m.instance_id, m.awaiting_join is not None, m.awaiting_sync is not None,
         m.is_new, m.session_deadline is not None, m.pending_sync, m.assignment != b"")
        for m in g.members))
    static: dict[str, Optional[str]] = {}
    for m in g.members:
        if m.instance_id is not None and m.instance_id not in static:
            static[m.instance_id] = nm(m.member_id)
    p = g.persisted
    pers: object = None
    if p is not None:
        p_static: dict[str, Optional[str]] = {}
        for m in p.members:
            if m.instance_id is not None and m.instance_id not in p_static:
                p_static[m.instance_id] = nm(m.member_id)
        pers = (p.state.name, p.generation, nm(p.leader),
                tuple(sorted((nm(m.member_id), m.instance_id, m.assignment != b"") for m in p.members)),
                tuple(sorted(p_static.items())))
    first = g.join_timers[0] if g.join_timers else None
    return {
        "state": g.state.name, "generation": g.generation, "owned": g.owned,
        "new_member_added": g.new_member_added, "leader": nm(g.leader), "members": members,
        "static": tuple(sorted(static.items())),
        "pending": tuple(sorted(str(nm(p.member_id)) for p in g.pending)),
        "join_timers": len(g.join_timers),
        "first_join_timer": None if first is None else (
            first.kind == JoinTimerKind.InitialDelayedJoin, first.remaining_ms != 0),
        "sync_timers": len(g.sync_timers),
        "first_sync_timer": g.sync_timers[0].generation if g.sync_timers else None,
        "offsets": bool(g.offsets), "persisted": pers,
    }


def project_values(v: Values, instance_domain: Sequence[int]) -> dict[str, object]:
    """The solver's state in the same shape as project_group."""
    g = to_group(v, Hidden())
    out = project_group(g, None)
    shas, smap = _set(v, "shas"), v["smap"]
    assert isinstance(smap, dict)
    out["static"] = tuple(sorted((iname(i), mname(int(smap[i]))) for i in instance_domain if i in shas))
    if out["persisted"] is not None:
        p_shas, p_smap = _set(v, "p_shas"), v["p_smap"]
        assert isinstance(p_smap, dict) and isinstance(out["persisted"], tuple)
        out["persisted"] = out["persisted"][:4] + (tuple(sorted(
            (iname(i), mname(int(p_smap[i]))) for i in instance_domain if i in p_shas)),)
    return out


# -------------------------------------------------------------------------- replay

@dataclass
class MicroStep:
    """One solver step: the input's values, the rows of the path it took and, when known, the
    responses the encoding says the path gives (Path.settled / own_parked / own_answered)."""

    x: Values
    rows: tuple[str, ...]
    uses_fresh: bool
    responses: Optional["Responses"] = None


@dataclass(frozen=True)
class Responses:
    """Per kind ("aj" JoinGroup, "asy" SyncGroup): members whose earlier parked request got an
    output, where the input's own request is parked afterwards; and whether an output answered
    the input's own request."""

    settled: dict[str, frozenset[int]]
    own_parked: dict[str, frozenset[int]]
    own_answered: bool


def read_set(m: z3.ModelRef, t: z3.ExprRef, domain: Sequence[int]) -> frozenset[int]:
    """A set term's value in a model, in either representation."""
    v = m.eval(t, model_completion=True)
    if z3.is_bv_value(v):
        return frozenset(k for k in domain if (v.as_long() >> k) & 1)
    return frozenset(k for k in domain if z3.is_true(m.eval(z3.Select(t, k), model_completion=True)))


# Request ids given to parked requests when a solver state becomes a Group (to_group / _member).
PARKED_JOIN_ID, PARKED_SYNC_ID = 1000, 2000


@dataclass
class Replayed:
    transition: Transition
    settings: Settings
    rows: tuple[str, ...]


@dataclass
class ReplayReport:
    steps: list[Replayed] = field(default_factory=list)


def chains(steps: Sequence[MicroStep], urgent: Sequence[tuple[str, Guard]]) -> list[tuple[int, int]]:
    """[start, end) index ranges: an input followed by the urgent completions it triggered."""
    names = {ev for ev, _ in urgent}
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(steps):
        j = i + 1  # (a chain may itself start with an urgent event: a CTI's single step)
        while j < len(steps) and str(steps[j].x["kind"]) in names:
            j += 1
        out.append((i, j))
        i = j
    return out


def replay(table: Table, urgent: Sequence[tuple[str, Guard]], states: Sequence[Values],
           steps: Sequence[MicroStep], domain: Sequence[int]) -> ReplayReport:
    """Replay every input of a solver trace through model.step.step_all; raise ReplayError
    when no concrete realisation reproduces the rows and the successor state."""
    report = ReplayReport()
    for a, b in chains(steps, urgent):
        pre, post = states[a], states[b]
        first = steps[a]
        want_rows = tuple(r for s in steps[a:b] for r in s.rows)
        fresh = int(first.x["fresh"]) if first.uses_fresh else None  # type: ignore[call-overload]
        want = project_values(post, domain)
        found = _realise(table, urgent, pre, post, first, want_rows, want, fresh, domain, steps[a:b])
        if isinstance(found, str):
            raise ReplayError(f"steps {a}..{b - 1} ({', '.join(want_rows)}) do not replay: {found}")
        report.steps.append(found)
    return report


def expected_outputs(steps: Sequence[MicroStep]) -> Optional[set[int]]:
    """The request ids the model must answer (or mark superseded) over one chain (an input and
    its urgent completions), as the encoding's response accounting says; None if not recorded."""
    want: set[int] = set()
    own_at: set[tuple[str, int]] = set()  # where the chain's own request waits
    base = {"aj": PARKED_JOIN_ID, "asy": PARKED_SYNC_ID}
    for i, st in enumerate(steps):
        r = st.responses
        if r is None:
            return None
        for kind, members in r.settled.items():
            for k in members:
                if i > 0 and (kind, k) in own_at:
                    want.add(REQUEST_ID)
                    own_at.discard((kind, k))
                else:
                    want.add(base[kind] + k)
        if i == 0:
            if r.own_answered:
                want.add(REQUEST_ID)
            own_at = {(kind, k) for kind, ks in r.own_parked.items() for k in ks}
    return want


def _outputs_differ(t: Transition, steps: Sequence[MicroStep]) -> str:
    """The model's outputs against the encoding's response accounting ("" if they agree)."""
    want = expected_outputs(steps)
    if want is None:
        return ""
    got = {o.request_id for o in t.outputs}
    if got != want:
        return (f"same rows and state, different outputs: the model answers request ids "
                f"{sorted(got)}, the encoding says {sorted(want)} (own request {REQUEST_ID}, "
                f"parked joins {PARKED_JOIN_ID}+k, parked syncs {PARKED_SYNC_ID}+k)")
    return ""


def _realise(table: Table, urgent: Sequence[tuple[str, Guard]], pre: Values, post: Values,
             first: MicroStep, want_rows: tuple[str, ...], want: dict[str, object],
             fresh: Optional[int], domain: Sequence[int],
             steps: Sequence[MicroStep] = ()) -> Replayed | str:
    closest = "no candidate input fired the same rows"
    kind = str(first.x["kind"])
    for h in hidden_variants(pre, post):
        g = to_group(pre, h)
        for settings in _settings(g, first.x):
            for inp in input_candidates(kind, first.x, domain):
                try:
                    outcomes = step_all(table, urgent, g, inp, settings, 0, AbstractMode())
                except SpecDefect as e:
                    closest = f"the model raised {e}"
                    continue
                for t in outcomes:
                    if t.rows != want_rows:
                        if closest.startswith("no candidate"):
                            closest = f"the model fired {list(t.rows)}"
                        continue
                    got = project_group(t.after, fresh)
                    if got == want:
                        outputs_differ = _outputs_differ(t, steps)
                        if outputs_differ:
                            return outputs_differ
                        return Replayed(t, settings, t.rows)
                    diff = {k: (got[k], want[k]) for k in want if got.get(k) != want[k]}
                    closest = f"same rows, different state (model, solver): {diff}"
    return closest


def describe_values(v: Values) -> str:
    """A short human description of a symbolic state."""
    st = state_of(v)
    mem = sorted(_set(v, "mem"))
    parts = [f"{st.name} gen {v['gen']}"]
    if mem:
        def flags(k: int) -> str:
            fl = [n for n, a in (("join", "aj"), ("sync", "asy"), ("new", "isnew"),
                                 ("pending-sync", "psync")) if k in _set(v, a)]
            inst = v["inst"]
            assert isinstance(inst, dict)
            static = f" static i{inst[k]}" if k in _set(v, "hinst") else ""
            return mname(k) + static + (f" [{', '.join(fl)}]" if fl else "")
        parts.append("members " + "; ".join(flags(k) for k in mem))
    if v["hasl"]:
        parts.append(f"leader m{v['leader']}")
    if _set(v, "pend"):
        parts.append(f"pending {sorted(mname(k) for k in _set(v, 'pend'))}")
    if int(v["jt"]) > 0:  # type: ignore[call-overload]
        parts.append(f"{v['jt']} join timer(s)")
    if int(v["stn"]) > 0:  # type: ignore[call-overload]
        parts.append(f"{v['stn']} sync timer(s)")
    if not v["owned"]:
        parts.append("not owned")
    if v["gide"]:
        parts.append("group id \"\"")
    return ", ".join(parts)


def describe_input(x: Values) -> str:
    kind = str(x["kind"])
    bits = [kind]
    if kind in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit",
                TimerEvent.MemberSessionExpire.value, TimerEvent.PendingMemberExpire.value):
        bits.append("member " + ('""' if x["mide"] else mname(int(x["mid"]))))  # type: ignore[call-overload]
        if x["hiid"] and kind not in (TimerEvent.MemberSessionExpire.value,
                                      TimerEvent.PendingMemberExpire.value):
            bits.append(f"instance i{x['iid']}")
    if kind in ("SyncGroup", "Heartbeat", "OffsetCommit"):
        bits.append(f"generation {x['gen']}")
    return " ".join(bits)


assert set(INPUT_VARS) and set(STATE_VARS)

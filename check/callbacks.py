"""The native engine's slow path: the Python definitions it calls back into.

A table may name atoms, effects, reply forms and invariants that the Rust engine has no native
version of (a user registers them in model.dsl's registries, or redefines one of the model's).
The engine then asks the object made here, per call:

- `atom(i, group, input, append_ok)`: the registered atom's value;
- `fire(row, group, input, append_ok, choices)`: the whole row applied by model.step (its
  effects in order, the frame check, the next state, the reply), with the engine's remaining
  nondeterministic choices replayed;
- `state_violated` / `transition_violated`: a registered invariant.

Worlds come in as the Python repr the engine writes (the differential tests check it writes
exactly what Python does) and go back as tuples of the engine's codes (`encode_group`,
`encode_response`). A value the abstract model cannot hold (a deadline that is not 0, a
protocol list no client sends, ...) raises `CannotCallBack`; `check.native` then runs the
Python explorer instead and says why in one line.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Optional, Sequence

from check.abstract import PARTITION, PROTOCOLS, AbstractModel, Bounds
from check.user_code import names_used
from model import messages, state
from model.dsl import ATOMS, EFFECTS, REPLY_FORMS, Ctx, Guard, Output, SpecDefect, Superseded, Table
from model.invariants import INVARIANTS
from model.modes import AbstractMode
from model.step import ReplayChooser, Transition, fire
from model.vocabulary import ApiKey, Error, GroupState

NOID = 0xFF
NOINST = 0xFF
UNKNOWN_INST = 0xFE
STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Missing")
PTYPES = {None: 0, "consumer": 1, "connect": 2, "": 3}
PNAMES = {None: 0, "range": 1, "roundrobin": 2}
SPECIAL_FORMS = ("park", "none", "continue")

# Where each kind's own definitions live: a name registered elsewhere (or redefined) is a user's.
HOME = {"atoms": "model.atoms", "effects": "model.effects", "reply_forms": "model.replies",
        "invariants": "model.invariants"}


class CannotCallBack(Exception):
    """A value the engine's abstract world cannot hold came back from a Python definition."""


def _namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {}
    for mod in (state, messages):
        ns.update({k: v for k, v in vars(mod).items() if isinstance(v, type)})
    ns.update(GroupState=GroupState, Error=Error, ApiKey=ApiKey, Output=Output,
              Superseded=Superseded)
    return ns


_NS = _namespace()


@lru_cache(maxsize=1 << 14)
def parse(text: str) -> Any:
    """A record from the repr the engine writes (the engine's reprs are Python's)."""
    return eval(text, dict(_NS))  # noqa: S307 - text made by groupspec_engine, never by a user


# ---------------------------------------------------------------- which names go through Python

def _native(kind: str, name: str, fn: object, have: dict[str, list[str]]) -> bool:
    return name in have[kind] and getattr(fn, "__module__", None) == HOME[kind]


def slow_names(table: Table, urgent: Sequence[tuple[str, Guard]], invariants: Sequence[str],
               have: dict[str, list[str]]) -> dict[str, list[str]]:
    """The atoms, effects, reply forms and invariants of this run the engine must ask Python
    for: those it lacks, and those a user redefined under a name it has."""
    atoms, effects = names_used(table, urgent)
    forms = {r.reply.form for r in table.rows} - set(SPECIAL_FORMS)
    for kind, used, registry in (("atom", atoms, ATOMS), ("effect", effects, EFFECTS),
                                 ("reply form", forms, REPLY_FORMS)):
        unknown = sorted(used - set(registry))
        if unknown:
            raise ValueError(f"the table names {kind}s nothing defines: {unknown}")
    return {
        "atoms": sorted(a for a in atoms if not _native("atoms", a, ATOMS[a].fn, have)),
        "effects": sorted(e for e in effects if not _native("effects", e, EFFECTS[e].fn, have)),
        "reply_forms": sorted(f for f in forms
                              if not _native("reply_forms", f, REPLY_FORMS[f], have)),
        "invariants": [n for n in invariants
                       if not _native("invariants", n, INVARIANTS[n].check, have)],
    }


def describe_slow(slow: dict[str, list[str]]) -> str:
    """`2 effects, 1 atom through Python` (empty when the run is fully native)."""
    parts = []
    for kind, one in (("atoms", "atom"), ("effects", "effect"), ("reply_forms", "reply form"),
                      ("invariants", "invariant")):
        n = len(slow[kind])
        if n:
            parts.append(f"{n} {one if n == 1 else kind.replace('_', ' ')}")
    return f"{', '.join(parts)} through Python" if parts else ""


# ---------------------------------------------------------------- Python records -> engine codes

@dataclass(frozen=True)
class Codes:
    """Names of the abstract world as the engine's small codes (engine/src/model.rs)."""

    dynamic: int
    group_id: str = "g"  # Bounds.group_id: the engine's reprs always say 'g'

    def client(self, base: str) -> int:
        kind, num = base[:1], base[1:]
        if kind in ("c", "s") and num.isdigit():
            i = int(num) + (0 if kind == "c" else self.dynamic)
            if (kind == "s" or int(num) < self.dynamic) and i < 15:
                return i
        raise CannotCallBack(f"{base!r} is not a client of the abstract model")

    def mid(self, member_id: Optional[str]) -> int:
        if member_id is None or member_id == "":
            return NOID
        base, sep, k = member_id.partition("#")
        if not sep or not k.isdigit() or int(k) > 15:
            raise CannotCallBack(f"member id {member_id!r} is not the abstract model's c<i>#k")
        return (self.client(base) << 4) | int(k)

    def inst(self, instance_id: Optional[str]) -> int:
        if instance_id is None:
            return NOINST
        if instance_id == "unknown":
            return UNKNOWN_INST
        return self.client(instance_id)


def _code(table: dict[Any, int], value: object, what: str) -> int:
    if value not in table:
        raise CannotCallBack(f"{what} {value!r} is not one the abstract model knows")
    return table[value]


def _zero(deadline: Optional[int], what: str) -> bool:
    """An abstract deadline: None (not armed) or 0 (armed; it may fire at any moment)."""
    if deadline not in (None, 0):
        raise CannotCallBack(f"{what} deadline {deadline} (the abstract model's are 0 or None)")
    return deadline == 0


def _meta(b: bytes) -> Optional[int]:
    if b == b"":
        return None
    if len(b) != 1:
        raise CannotCallBack(f"metadata {b!r} is not one byte")
    return b[0]


def _assigned(b: bytes) -> bool:
    if b not in (b"", b"a"):
        raise CannotCallBack(f"assignment {b!r} is not the abstract model's b'' or b'a'")
    return b == b"a"


def encode_member(c: Codes, m: state.Member) -> tuple[Any, ...]:
    if m.protocols not in PROTOCOLS:
        raise CannotCallBack(f"member {m.member_id}: protocols {m.protocols!r} no client sends")
    aj = None if m.awaiting_join is None else (m.awaiting_join.request_id,
                                                m.awaiting_join.supports_skip_assignment)
    return (c.mid(m.member_id), c.inst(m.instance_id), c.client(m.client_id),
            _code(PTYPES, m.protocol_type, "protocol type"), PROTOCOLS.index(m.protocols),
            m.session_timeout_ms, m.rebalance_timeout_ms, aj, m.awaiting_sync,
            (m.is_new, _assigned(m.assignment), _zero(m.session_deadline, "session"),
             m.pending_sync))


def encode_group(c: Codes, g: state.Group) -> tuple[Any, ...]:
    if g.group_id != c.group_id:
        raise CannotCallBack(f"group id {g.group_id!r} (the abstract model's group is {c.group_id!r})")
    offsets: Optional[int] = None
    if g.offsets:
        if len(g.offsets) != 1 or g.offsets[0][0] != PARTITION:
            raise CannotCallBack(f"offsets {g.offsets!r} (the abstract model commits t-0 only)")
        offsets = g.offsets[0][1]
    p = g.persisted
    persisted = None if p is None else (
        STATES.index(p.state.name), p.generation, _code(PTYPES, p.protocol_type, "protocol type"),
        _code(PNAMES, p.protocol_name, "protocol"), c.mid(p.leader),
        [encode_member(c, m) for m in p.members])
    for pm in g.pending:
        _zero(pm.deadline, "pending member")
    timers = []
    for t in g.join_timers:
        _zero(t.deadline, "join timer")
        timers.append((t.kind == state.JoinTimerKind.InitialDelayedJoin, t.delay_ms, t.remaining_ms))
    for st in g.sync_timers:
        _zero(st.deadline, "DelayedSync")
    return ((STATES.index(g.state.name), g.generation, _code(PTYPES, g.protocol_type, "protocol type"),
             _code(PNAMES, g.protocol_name, "protocol"), c.mid(g.leader)),
            [encode_member(c, m) for m in g.members], [c.mid(pm.member_id) for pm in g.pending],
            timers, [st.generation for st in g.sync_timers], offsets, persisted, g.owned,
            g.new_member_added)


def encode_response(c: Codes, r: object) -> tuple[Any, ...]:
    m = messages
    if isinstance(r, m.JoinGroupResponse):
        return ("join", r.error.value, r.generation_id, _code(PTYPES, r.protocol_type, "protocol type"),
                _code(PNAMES, r.protocol_name, "protocol"), c.mid(r.leader), c.mid(r.member_id),
                r.skip_assignment, [(c.mid(x.member_id), c.inst(x.group_instance_id), _meta(x.metadata))
                                    for x in r.members])
    if isinstance(r, m.SyncGroupResponse):
        return ("sync", r.error.value, _code(PTYPES, r.protocol_type, "protocol type"),
                _code(PNAMES, r.protocol_name, "protocol"), _assigned(r.assignment))
    if isinstance(r, m.HeartbeatResponse):
        return ("heartbeat", r.error.value)
    if isinstance(r, m.LeaveGroupResponse):
        return ("leave", r.error.value, [(c.mid(x.member_id), c.inst(x.group_instance_id),
                                          x.error.value) for x in r.members])
    if isinstance(r, m.OffsetCommitResponse):
        if len(r.partitions) != 1 or r.partitions[0][0] != PARTITION:
            raise CannotCallBack(f"{r!r} (the abstract model commits t-0 only)")
        return ("commit", r.partitions[0][1].value)
    if isinstance(r, m.OffsetFetchResponse):
        if r.partitions and (len(r.partitions) != 1 or r.partitions[0][0] != PARTITION
                             or r.partitions[0][2] != Error.NONE):
            raise CannotCallBack(f"{r!r} (the abstract model fetches t-0 only)")
        return ("fetch", r.error.value, r.partitions[0][1] if r.partitions else None)
    if isinstance(r, m.DescribeGroupsResponse):
        if len(r.groups) != 1 or r.groups[0].group_id != c.group_id:
            raise CannotCallBack(f"{r!r} (the abstract model describes group {c.group_id!r} only)")
        d = r.groups[0]
        return ("describe", d.error.value, d.state, _code(PTYPES, d.protocol_type, "protocol type"),
                _code(PNAMES, d.protocol or None, "protocol"),
                [(c.mid(x.member_id), c.inst(x.group_instance_id), c.client(x.client_id),
                  _meta(x.metadata), _assigned(x.assignment)) for x in d.members])
    if isinstance(r, m.ListGroupsResponse):
        if len(r.groups) > 1 or any(x.group_id != c.group_id or x.state not in STATES for x in r.groups):
            raise CannotCallBack(f"{r!r} (the abstract model lists group {c.group_id!r} only)")
        listed = None if not r.groups else (_code(PTYPES, r.groups[0].protocol_type, "protocol type"),
                                            STATES.index(r.groups[0].state))
        return ("list", r.error.value, listed)
    if isinstance(r, m.DeleteGroupsResponse):
        if len(r.results) != 1 or r.results[0][0] != c.group_id:
            raise CannotCallBack(f"{r!r} (the abstract model deletes group {c.group_id!r} only)")
        return ("delete", r.results[0][1].value)
    raise CannotCallBack(f"a response the abstract model has no shape for: {r!r}")


def encode_output(c: Codes, o: Output) -> tuple[Any, ...]:
    if o.member_id == "":
        raise CannotCallBack("an output for member id ''")
    resp = None if isinstance(o.response, Superseded) else encode_response(c, o.response)
    return (o.request_id, resp, c.mid(o.member_id))


# ---------------------------------------------------------------- the callbacks

@dataclass
class Callbacks:
    """What groupspec_engine.Engine calls back into; `calls` counts each name's calls."""

    table: Table
    bounds: Bounds
    atoms: list[str]
    invariants: list[tuple[bool, str]]
    calls: Counter[str] = field(default_factory=Counter)
    cannot: str = ""  # why the last call could not be answered (CannotCallBack), if it failed so
    # The exception a Python definition raised (or Ctrl-C while it ran): the engine stops with a
    # RuntimeError, and check.native raises this one instead, as the Python explorer would.
    failure: Optional[BaseException] = None

    def __post_init__(self) -> None:
        model = AbstractModel(self.table, (), self.bounds)
        self.settings = (model.failing_settings, model.settings)
        self.codes = Codes(self.bounds.dynamic, self.bounds.group_id)
        self.mode = AbstractMode()
        self.single: dict[str, Table] = {}

    def _group(self, text: str) -> state.Group:
        """A group the engine sent (its repr names group 'g') under the world's group id."""
        g: state.Group = parse(text)
        return replace(g, group_id=self.codes.group_id)

    def _guarded(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except CannotCallBack as e:
            self.cannot = str(e)
            raise
        except BaseException as e:
            self.failure = e
            raise

    def atom(self, i: int, group: str, inp: str, append_ok: bool) -> bool:
        return bool(self._guarded(self._atom, i, group, inp, append_ok))

    def _atom(self, i: int, group: str, inp: str, append_ok: bool) -> bool:
        name = self.atoms[i]
        self.calls[f"atom {name}"] += 1
        return bool(ATOMS[name].fn(self._group(group), parse(inp), self.settings[append_ok]))

    def _row_table(self, row_id: str) -> Table:
        """The row alone with guard `true`: model.step.fire applies it exactly as it would."""
        t = self.single.get(row_id)
        if t is None:
            row = self.table.row(row_id)
            t = self.single[row_id] = Table(f"{self.table.name}:{row_id}",
                                            (replace(row, guard=Guard()),), self.table.events)
        return t

    def fire(self, row_id: str, group: str, inp: str, append_ok: bool,
             choices: list[int]) -> tuple[Any, ...]:
        return tuple(self._guarded(self._fire, row_id, group, inp, append_ok, choices))

    def _fire(self, row_id: str, group: str, inp: str, append_ok: bool,
              choices: list[int]) -> tuple[Any, ...]:
        self.calls[f"row {row_id}"] += 1
        chooser = ReplayChooser(choices)
        ctx = Ctx(group=self._group(group), inp=parse(inp), settings=self.settings[append_ok], now_ms=0,
                  mode=self.mode, chooser=chooser)
        try:
            _, reply = fire(self._row_table(row_id), ctx)
        except SpecDefect as e:
            return ("defect", str(e))
        c = self.codes
        return ("ok", encode_group(c, ctx.group), [encode_output(c, o) for o in ctx.outputs],
                None if reply is None else encode_response(c, reply), chooser.made, chooser.counts)

    def state_violated(self, i: int, group: str) -> bool:
        return bool(self._guarded(self._state_violated, i, group))

    def _state_violated(self, i: int, group: str) -> bool:
        name = self.invariants[i][1]
        self.calls[f"invariant {name}"] += 1
        check: Any = INVARIANTS[name].check  # a StateCheck: the kind says so
        return check(self._group(group)) is not None

    def transition_violated(self, i: int, rows: list[str], before: str, inp: str, after: str,
                            outputs: list[str], reply: Optional[str]) -> bool:
        return bool(self._guarded(self._transition_violated, i, rows, before, inp, after, outputs,
                                  reply))

    def _transition_violated(self, i: int, rows: list[str], before: str, inp: str, after: str,
                             outputs: list[str], reply: Optional[str]) -> bool:
        name = self.invariants[i][1]
        self.calls[f"invariant {name}"] += 1
        t = Transition(self._group(before), self._group(after), parse(inp), tuple(rows),
                       tuple(parse(o) for o in outputs), None if reply is None else parse(reply))
        check: Any = INVARIANTS[name].check  # a StepCheck: the kind says so
        return check(self.table, t) is not None

"""The table's tiny language: atoms, guards, effects, reply forms and rows.

- An *atom* is a named yes/no question about (group, input, settings), defined once in
  `model/atoms.py`. A *guard* is a conjunction of atoms and negated atoms, written `"a & !b"`.
- An *effect* is a named change to the group, defined once in `model/effects.py`, declaring the
  group fields it `modifies` (so the Z3 frame condition is generated, never written by hand).
- A *reply form* builds the response to the input from the state, defined in `model/replies.py`.
- A *row* joins them: states, event, guard -> reply, next state, effects.

This module holds only the mechanism; the spec text lives in atoms.py, effects.py, replies.py and
table.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Final, Optional, Protocol, Sequence, TypeVar, Union

from model.messages import Response
from model.state import Group, Input, Settings, record_builder
from model.vocabulary import Error, GroupState


class SpecDefect(Exception):
    """The table is wrong: no row or more than one row matches (STYLE: a typed error)."""

    def __init__(self, state: GroupState, event: str, rows: Sequence[str], detail: str) -> None:
        self.state = state
        self.event = event
        self.rows = tuple(rows)
        super().__init__(f"{detail}: state {state.name}, event {event}, rows {list(self.rows)}")


# ---------------------------------------------------------------- registries

_V = TypeVar("_V")


class Registry(dict[str, _V]):
    """A name -> definition dict (ATOMS, EFFECTS, REPLY_FORMS) that counts every change, so that
    the step function's compiled form of a table (model/step.py) is rebuilt when a definition is
    replaced (e.g. by a test's monkeypatch)."""

    changes = 0  # across all registries

    def _changed(self) -> None:
        Registry.changes += 1

    def __setitem__(self, key: str, value: _V) -> None:
        self._changed()
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._changed()
        super().__delitem__(key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._changed()
        super().update(*args, **kwargs)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._changed()
        return super().setdefault(key, default)

    def pop(self, key: str, *default: Any) -> Any:
        self._changed()
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, _V]:
        self._changed()
        return super().popitem()

    def clear(self) -> None:
        self._changed()
        super().clear()

    def __ior__(self, other: Any) -> "Registry[_V]":  # type: ignore[misc,override]
        self._changed()
        super().__ior__(other)
        return self


# ---------------------------------------------------------------- atoms and guards

AtomFn = Callable[[Group, Input, Settings], bool]


@dataclass(frozen=True, slots=True)
class Atom:
    name: str
    fn: AtomFn
    doc: str


ATOMS: Final[dict[str, Atom]] = Registry()


def atom(name: str) -> Callable[[AtomFn], AtomFn]:
    """Register an atom under its kebab-case name; its docstring is the spec text."""

    def register(fn: AtomFn) -> AtomFn:
        if name in ATOMS:
            raise ValueError(f"atom {name!r} defined twice")
        ATOMS[name] = Atom(name, fn, (fn.__doc__ or "").strip())
        return fn

    return register


@dataclass(frozen=True, slots=True)
class Literal:
    atom: str
    positive: bool

    def __str__(self) -> str:
        return self.atom if self.positive else f"!{self.atom}"


@dataclass(frozen=True, slots=True)
class Guard:
    """A conjunction of literals; the empty guard is `true`."""

    literals: tuple[Literal, ...] = ()

    @staticmethod
    def parse(text: str) -> "Guard":
        text = text.strip()
        if text in ("", "true"):
            return Guard(())
        lits = []
        for part in text.split("&"):
            part = part.strip()
            positive = not part.startswith("!")
            name = part.lstrip("!").strip()
            if not name:
                raise ValueError(f"empty atom in guard {text!r}")
            lits.append(Literal(name, positive))
        return Guard(tuple(lits))

    def __and__(self, other: Union["Guard", str]) -> "Guard":
        rhs = Guard.parse(other) if isinstance(other, str) else other
        return Guard(self.literals + rhs.literals)

    def __rand__(self, other: str) -> "Guard":
        return Guard.parse(other) & self

    def holds(self, group: Group, inp: Input, settings: Settings) -> bool:
        for lit in self.literals:
            if ATOMS[lit.atom].fn(group, inp, settings) != lit.positive:
                return False
        return True

    def __str__(self) -> str:
        return " & ".join(str(lit) for lit in self.literals) or "true"


def G(text: str) -> Guard:
    return Guard.parse(text)


# ---------------------------------------------------------------- effects

class Mode(Protocol):
    """How the concrete and abstract modes differ: time, member ids, canonical member order."""

    def deadline(self, now_ms: int, timeout_ms: int) -> int: ...

    def new_member_id(self, group: Group, base: str) -> str: ...


class Chooser(Protocol):
    """Resolves the model's nondeterministic choices (Kafka's hash-map order)."""

    def choose(self, what: str, options: int) -> int: ...


@dataclass(frozen=True, slots=True)
class Superseded:
    """A parked request dropped without a response (Kafka GM:518 updateMember replaces it)."""


@dataclass(frozen=True, slots=True)
class Output:
    request_id: int
    response: Union[Response, Superseded]
    member_id: Optional[str] = None


_new_output: Final = record_builder(Output)


@dataclass(slots=True)
class Ctx:
    """The working state while one row is applied."""

    group: Group
    inp: Input
    settings: Settings
    now_ms: int
    mode: Mode
    chooser: Chooser
    outputs: list[Output] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Values an effect hands to the reply form of the same row (e.g. a freshly made member id).
    scratch: dict[str, object] = field(default_factory=dict)

    def respond(self, request_id: int, response: Response, member_id: Optional[str] = None) -> None:
        self.outputs.append(_new_output(request_id, response, member_id))


EffectFn = Callable[[Ctx], None]

GROUP_FIELDS: Final = frozenset(
    {
        "state",
        "generation",
        "protocol_type",
        "protocol_name",
        "leader",
        "members",
        "pending",
        "join_timers",
        "sync_timers",
        "offsets",
        "persisted",
        "owned",
        "new_member_added",
    }
)


@dataclass(frozen=True, slots=True)
class Effect:
    name: str
    fn: EffectFn
    modifies: frozenset[str]
    responds: bool  # may answer parked requests
    doc: str


EFFECTS: Final[dict[str, Effect]] = Registry()


def effect(name: str, modifies: set[str], responds: bool = False) -> Callable[[EffectFn], EffectFn]:
    """Register an effect; `modifies` names the Group fields it may change (checked at run time)."""
    unknown = set(modifies) - GROUP_FIELDS
    if unknown:
        raise ValueError(f"effect {name!r} declares unknown fields {sorted(unknown)}")

    def register(fn: EffectFn) -> EffectFn:
        if name in EFFECTS:
            raise ValueError(f"effect {name!r} defined twice")
        EFFECTS[name] = Effect(name, fn, frozenset(modifies), responds, (fn.__doc__ or "").strip())
        return fn

    return register


# ---------------------------------------------------------------- replies

ReplyFn = Callable[[Ctx, Error], Response]
REPLY_FORMS: Final[dict[str, ReplyFn]] = Registry()


def reply_form(name: str) -> Callable[[ReplyFn], ReplyFn]:
    def register(fn: ReplyFn) -> ReplyFn:
        if name in REPLY_FORMS:
            raise ValueError(f"reply form {name!r} defined twice")
        REPLY_FORMS[name] = fn
        return fn

    return register


@dataclass(frozen=True, slots=True)
class Reply:
    """The reply column: `form` names how the response is built, `error` is its error code.

    Special forms: `park` (the request waits; an effect of the row parks it), `none` (an internal
    event: nothing to answer), `continue` (the group object was just created: the same input is
    looked up again in the new state, as Kafka's getOrMaybeCreateGroup then handles it).
    """

    form: str
    error: Error = Error.NONE

    def __str__(self) -> str:
        if self.form in ("park", "none", "continue"):
            return self.form
        return f"{self.error.name} ({self.form})"


PARK: Final = Reply("park")
NO_REPLY: Final = Reply("none")
CONTINUE: Final = Reply("continue")


def R(error: Error, form: str = "error") -> Reply:
    return Reply(form, error)


# ---------------------------------------------------------------- rows

SAME: Final = None  # next-state column: the state does not change


@dataclass(frozen=True, slots=True)
class Row:
    id: str
    states: frozenset[GroupState]
    event: str
    guard: Guard
    reply: Reply
    next_state: Optional[GroupState]
    effects: tuple[str, ...]
    cite: str
    note: str = ""
    # Why the row can never fire (kept in the table so that every state x event is covered).
    unreachable: str = ""
    # True when the row replaces the group object (creation from Missing, load): a new incarnation.
    new_incarnation: bool = False
    fault: bool = False  # the event is a fault (not a well-behaved client's or a recovery timer)

    def modifies(self) -> frozenset[str]:
        out: set[str] = set()
        for name in self.effects:
            out |= EFFECTS[name].modifies
        if self.next_state is not None:
            out.add("state")
        return frozenset(out)


@dataclass(frozen=True, slots=True)
class Table:
    """A transition table: the rows plus the event kinds it covers."""

    name: str
    rows: tuple[Row, ...]
    events: tuple[str, ...]

    def rows_for(self, state: GroupState, event: str) -> tuple[Row, ...]:
        return self._index().get((state, event), ())

    def _index(self) -> dict[tuple[GroupState, str], tuple[Row, ...]]:
        cached = _INDEX_CACHE.get(id(self))
        if cached is not None and cached[0] is self:
            return cached[1]
        idx: dict[tuple[GroupState, str], list[Row]] = {}
        for r in self.rows:
            for s in r.states:
                idx.setdefault((s, r.event), []).append(r)
        frozen = {k: tuple(v) for k, v in idx.items()}
        _INDEX_CACHE[id(self)] = (self, frozen)
        return frozen

    def row(self, row_id: str) -> Row:
        cached = _BY_ID_CACHE.get(id(self))
        if cached is None or cached[0] is not self:
            cached = (self, {r.id: r for r in self.rows})
            _BY_ID_CACHE[id(self)] = cached
        return cached[1][row_id]

    def validate(self) -> None:
        """Static checks: unique ids, known atoms/effects/reply forms."""
        seen: set[str] = set()
        for r in self.rows:
            if r.id in seen:
                raise ValueError(f"duplicate row id {r.id}")
            seen.add(r.id)
            for lit in r.guard.literals:
                if lit.atom not in ATOMS:
                    raise ValueError(f"row {r.id}: unknown atom {lit.atom!r}")
            for e in r.effects:
                if e not in EFFECTS:
                    raise ValueError(f"row {r.id}: unknown effect {e!r}")
            if r.reply.form not in ("park", "none", "continue") and r.reply.form not in REPLY_FORMS:
                raise ValueError(f"row {r.id}: unknown reply form {r.reply.form!r}")
            if r.event not in self.events:
                raise ValueError(f"row {r.id}: event {r.event!r} not in the table's events")


_INDEX_CACHE: dict[int, tuple[Table, dict[tuple[GroupState, str], tuple[Row, ...]]]] = {}
_BY_ID_CACHE: dict[int, tuple[Table, dict[str, Row]]] = {}


def _spec_defined(fn: Callable[..., object]) -> bool:
    return getattr(fn, "__module__", "").startswith("model.")


def vocabulary(table: Table) -> tuple[dict[str, Atom], dict[str, Effect], dict[str, ReplyFn]]:
    """The atoms, effects and reply forms a reader of `table` needs, in registration order: those
    its rows use and those the spec itself defines (model/). The registries are global, so what
    another table registered (a historical bug's effect, a test's atom) is left out."""
    atoms = {lit.atom for r in table.rows for lit in r.guard.literals}
    effects = {e for r in table.rows for e in r.effects}
    forms = {r.reply.form for r in table.rows}
    return ({n: a for n, a in ATOMS.items() if n in atoms or _spec_defined(a.fn)},
            {n: e for n, e in EFFECTS.items() if n in effects or _spec_defined(e.fn)},
            {n: f for n, f in REPLY_FORMS.items() if n in forms or _spec_defined(f)})

"""Tables by name: profiles (the coordinator versions `groupspec diff` and `check --refines`
compare) and `package.module:NAME` (a user's table, a mutant), resolved by one function, `table_of`.

A profile is registered with one line, `register(NAME, "package.module:ATTRIBUTE", WHAT)`; its
module is imported only when the profile is used, so a profile module may itself build on
CLASSIC_TABLE (row overrides) without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from check.user_code import import_users_module
from model.dsl import Guard, Table
from model.errors import BadInput

Urgent = tuple[tuple[str, Guard], ...]


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    spec: str  # package.module:ATTRIBUTE of a Table
    description: str


PROFILES: Final[dict[str, Profile]] = {}


def register(name: str, spec: str, description: str) -> None:
    """Register a named table; `spec` is `package.module:ATTRIBUTE`."""
    if name in PROFILES and PROFILES[name].spec != spec:
        raise ValueError(f"profile {name!r} is already registered as {PROFILES[name].spec}")
    PROFILES[name] = Profile(name, spec, description)


class UnknownProfile(LookupError):
    pass


def table_of(spec: str, what: str = "--table") -> tuple[Table, Urgent]:
    """`package.module:NAME` -> the Table NAME of that module (or, for a module with a MUTANTS
    registry such as check.mutants, the mutant of that name), and the module's URGENT if it has
    one (else model.table's). A spec that names no table is BadInput, its message led by `what`."""
    from model.table import URGENT
    mod_name, sep, attr = spec.partition(":")
    if not sep or not mod_name or not attr:
        raise BadInput(f"{what} expects package.module:NAME, got {spec!r}")
    mod = import_users_module(mod_name, what)
    obj = getattr(mod, attr, None)
    if obj is None and "." not in attr and hasattr(mod, "MUTANTS"):
        entry = getattr(mod, "MUTANTS").get(attr)
        obj = entry[0] if entry else None
    if obj is None:
        raise BadInput(f"{what}: {spec!r}: module {mod_name} has no {attr!r} (a transition table)")
    if not isinstance(obj, Table):
        raise BadInput(f"{what}: {spec!r} is not a transition table (it is a {type(obj).__name__})")
    try:
        obj.validate()  # a name nothing registered fails here, not in the middle of a run
    except ValueError as e:
        raise BadInput(f"{what}: {spec!r}: {e}") from e
    return obj, getattr(mod, "URGENT", URGENT)


def table_or_profile(spec: str, flag: str) -> tuple[Table, Urgent]:
    """A profile name (kafka-3.9, kafka-4) or package.module:NAME (a mutant's name too) -> the
    table and its URGENT events; anything else is BadInput, its message led by `flag`. Commands
    (groupspec/options.py `load_table_or_profile`) and the processes a run hands a table's name to
    (observe's judge, Spark's executors) resolve a name with it, so all say the same."""
    from model.table import URGENT
    if spec in PROFILES:
        return profile_table(spec, f"{flag}: profile"), URGENT
    if ":" not in spec:
        raise BadInput(f"{flag}: {spec!r} is neither a profile ({', '.join(sorted(PROFILES))}) "
                       f"nor package.module:NAME")
    return table_of(spec, flag)


def profile_table(name: str, what: str = "profile") -> Table:
    """The table of a registered profile (imports its module on first use)."""
    p = PROFILES.get(name)
    if p is None:
        raise UnknownProfile(f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}")
    return table_of(p.spec, f"{what} {name!r} ({p.spec})")[0]


register("kafka-3.9", "model.table:CLASSIC_TABLE",
         "Kafka 3.9 GroupCoordinator.scala (the classic group coordinator)")
register("kafka-4", "check.profile_kafka4:KAFKA4_TABLE",
         "Kafka 4.x Java GroupMetadataManager/ClassicGroup: kafka-3.9 with row overrides")

"""The `expect` keys of every op: the shape of each value and how it is compared with the target.

`KEYS[op][key]` says what a scenario may write (`Kind`, checked by parse.py) and how the runner
compares it (`Compare`) with the `actual` value of the same name, read from the response (or from
the group view for `check_group`) by `actuals_of`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional, Protocol

from model.messages import DescribedGroup, GroupView, TopicPartition

from model.visible import Actual

from conformance.scenario import Expect, Frozen, FrozenObject, GenerationRef, MemberRef


class Kind(enum.Enum):
    ERROR = "an error name (NONE, REBALANCE_IN_PROGRESS, ...)"
    INT = "an integer"
    GEN = 'an integer or "$gen:<join id>"'
    BOOL = "true or false"
    STR = "a string"
    OPT_STR = "a string or null"
    HEX = "a hex string"
    MEMBER = 'a member id or "$X"'
    OPT_MEMBER = 'a member id, "$X" or null'
    LEADER = '"self", a member id or "$X"'
    MEMBER_LIST = 'a list of member ids or "$X"'
    OPT_STR_LIST = "a list of strings or nulls"
    STR_LIST = "a list of strings"
    STR_OR_BOOL = "an instance id or true/false"
    ERROR_LIST = "a list of error names"
    ERROR_MAP = "an object mapping names to error names"
    OFFSET_MAP = 'an object mapping "topic-N" to integers'
    DESCRIBED_STATE = 'a Kafka state name or ""'
    GROUP_STATE = "a group state name (Empty, PreparingRebalance, ..., Dead, Missing)"
    TIMEOUT_MAP = 'an object {"$X": {"session_timeout_ms": N, "rebalance_timeout_ms": N}}'


class Compare(enum.Enum):
    EQ = "equals"
    NE = "differs from"
    NOT_IN = "is none of"
    PREFIX = "starts with"
    MULTISET = "equals as a multiset"
    CONTAINS_ALL = "contains all of"
    LACKS_ALL = "contains none of"
    HAS = "has"
    SUBMAP = "has these values for"


@dataclass(frozen=True, slots=True)
class KeySpec:
    kind: Kind
    compare: Compare
    actual: str  # name of the actual value it is compared with


# An op's keys: a bare Kind is compared for equality with the actual value of the key's own name.
_KEYS: dict[str, dict[str, Kind | KeySpec]] = {
    "join": {
        "error": Kind.ERROR,
        "generation": Kind.GEN,
        "generation_not": KeySpec(Kind.GEN, Compare.NE, "generation"),
        "member_id": Kind.MEMBER,
        "member_id_not": KeySpec(Kind.MEMBER_LIST, Compare.NOT_IN, "member_id"),
        "member_id_prefix": KeySpec(Kind.STR, Compare.PREFIX, "member_id"),
        "leader": Kind.LEADER,
        "members_count": Kind.INT,
        "member_instance_ids": KeySpec(Kind.OPT_STR_LIST, Compare.MULTISET, "member_instance_ids"),
        "protocol_type": Kind.OPT_STR,
        "protocol_name": Kind.OPT_STR,
        "skip_assignment": Kind.BOOL,
    },
    "sync": {
        "error": Kind.ERROR,
        "assignment": Kind.HEX,
        "protocol_type": Kind.OPT_STR,
        "protocol_name": Kind.OPT_STR,
    },
    "heartbeat": {"error": Kind.ERROR},
    "leave": {
        "error": Kind.ERROR,
        "member_errors": Kind.ERROR_LIST,
    },
    "commit": {"errors": Kind.ERROR_MAP},
    "fetch_offsets": {
        "error": Kind.ERROR,
        "offsets": Kind.OFFSET_MAP,
    },
    "describe": {
        "error": Kind.ERROR,
        "state": Kind.DESCRIBED_STATE,
        "protocol_type": Kind.STR,
        "protocol": Kind.STR,
        "members_count": Kind.INT,
        "member_ids": KeySpec(Kind.MEMBER_LIST, Compare.MULTISET, "member_ids"),
        "member_ids_contain": KeySpec(Kind.MEMBER_LIST, Compare.CONTAINS_ALL, "member_ids"),
        "first_member_id": Kind.MEMBER,
        "member_instance_ids": KeySpec(Kind.OPT_STR_LIST, Compare.MULTISET, "member_instance_ids"),
        "members_metadata_and_assignment_empty": KeySpec(Kind.BOOL, Compare.EQ, "members_empty"),
    },
    "list_groups": {
        "error": Kind.ERROR,
        "count": Kind.INT,
    },
    "delete_groups": {"errors": Kind.ERROR_MAP},
    "check_group": {
        "state": Kind.GROUP_STATE,
        "generation": Kind.GEN,
        "members_count": Kind.INT,
        "member_ids": KeySpec(Kind.MEMBER_LIST, Compare.MULTISET, "member_ids"),
        "has_members": KeySpec(Kind.MEMBER_LIST, Compare.CONTAINS_ALL, "member_ids"),
        "lacks_members": KeySpec(Kind.MEMBER_LIST, Compare.LACKS_ALL, "member_ids"),
        "static_instance_ids": KeySpec(Kind.STR_LIST, Compare.MULTISET, "static_instance_ids"),
        "dynamic_members_count": Kind.INT,
        "pending_members_count": Kind.INT,
        "new_members_count": Kind.INT,
        "leader": Kind.OPT_MEMBER,
        "leader_is_not_null": Kind.BOOL,
        "has_static_member": KeySpec(Kind.STR_OR_BOOL, Compare.HAS, "static_instance_ids"),
        "member_timeouts": KeySpec(Kind.TIMEOUT_MAP, Compare.SUBMAP, "member_timeouts"),
    },
}
KEYS: dict[str, dict[str, KeySpec]] = {
    op: {key: KeySpec(s, Compare.EQ, key) if isinstance(s, Kind) else s for key, s in keys.items()}
    for op, keys in _KEYS.items()
}

# check_group keys a black-box target can answer through DescribeGroups.
DESCRIBE_MAPPABLE_GROUP_KEYS: frozenset[str] = frozenset(
    {
        "state",
        "members_count",
        "member_ids",
        "has_members",
        "lacks_members",
        "static_instance_ids",
        "dynamic_members_count",
        "has_static_member",
    }
)

# Ops whose response carries one error (usable by check_error_counts / check_same_errors).
SINGLE_ERROR_OPS: frozenset[str] = frozenset(
    {"join", "sync", "heartbeat", "leave", "fetch_offsets", "describe", "list_groups"}
)

class Resolver(Protocol):
    def member(self, ref: MemberRef) -> str: ...

    def generation(self, ref: GenerationRef) -> int: ...


def actuals_of_view(view: Optional[GroupView]) -> dict[str, Actual]:
    """check_group actual values from a white-box view (None = no group object: "Missing")."""
    if view is None:
        return {
            "state": "Missing",
            "generation": None,
            "members_count": 0,
            "member_ids": [],
            "static_instance_ids": [],
            "dynamic_members_count": 0,
            "pending_members_count": 0,
            "new_members_count": 0,
            "leader": None,
            "leader_is_not_null": False,
            "member_timeouts": {},
        }
    statics: list[Actual] = [
        i for i in sorted(m.group_instance_id for m in view.members if m.group_instance_id is not None)
    ]
    return {
        "state": view.state.name,
        "generation": view.generation_id,
        "members_count": len(view.members),
        "member_ids": [m.member_id for m in view.members],
        "static_instance_ids": statics,
        "dynamic_members_count": sum(1 for m in view.members if m.group_instance_id is None),
        "pending_members_count": len(view.pending_members),
        "new_members_count": sum(1 for m in view.members if m.is_new),
        "leader": view.leader,
        "leader_is_not_null": view.leader is not None,
        "member_timeouts": {
            m.member_id: {
                "session_timeout_ms": m.session_timeout_ms,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
            }
            for m in view.members
        },
    }


def group_actuals_from_describe(g: DescribedGroup) -> dict[str, Actual]:
    """check_group actual values a black-box target can give (see DESCRIBE_MAPPABLE_GROUP_KEYS).

    An unknown group is described as "Dead" with no members; it is reported as "Missing", the
    pseudo-state of the white-box views, so that the same scenario reads the same on both.
    """
    unknown = g.state == "Dead" and not g.members
    statics: list[Actual] = [
        i for i in sorted(m.group_instance_id for m in g.members if m.group_instance_id is not None)
    ]
    return {
        "state": "Missing" if unknown else g.state,
        "members_count": len(g.members),
        "member_ids": [m.member_id for m in g.members],
        "static_instance_ids": statics,
        "dynamic_members_count": sum(1 for m in g.members if m.group_instance_id is None),
    }


@dataclass(frozen=True, slots=True)
class Mismatch:
    key: str
    expected: Frozen  # as written in the scenario
    resolved: Actual  # after $X / $gen / "self" resolution
    actual: Actual
    compare: Compare

    def describe(self) -> str:
        exp = _show(thaw(self.expected))
        if thaw(self.expected) != self.resolved:
            exp += f" (= {_show(self.resolved)})"
        how = "" if self.compare is Compare.EQ else f"{self.compare.value} "
        return f"{self.key}: expected {how}{exp}, actual {_show(self.actual)}"


def _show(value: Actual) -> str:
    import json

    return json.dumps(value, sort_keys=True)


def thaw(value: Frozen) -> Actual:
    if isinstance(value, FrozenObject):
        return {k: thaw(v) for k, v in value.items}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def resolve(spec: KeySpec, value: Frozen, actual: dict[str, Actual], r: Resolver) -> Actual:
    """The expected value after resolving `$X`, `$gen:` and `"self"`."""
    kind = spec.kind
    if kind is Kind.GEN:
        if isinstance(value, str):
            return r.generation(GenerationRef(join_id=value[len("$gen:") :]))
        return value if isinstance(value, int) else None
    if kind in (Kind.MEMBER, Kind.OPT_MEMBER):
        return None if value is None else r.member(MemberRef(str(value)))
    if kind is Kind.LEADER:
        return actual.get("member_id") if value == "self" else r.member(MemberRef(str(value)))
    if kind is Kind.MEMBER_LIST:
        assert isinstance(value, tuple)
        return [r.member(MemberRef(str(v))) for v in value]
    if kind is Kind.TIMEOUT_MAP:
        assert isinstance(value, FrozenObject)
        return {r.member(MemberRef(k)): thaw(v) for k, v in value.items}
    if kind is Kind.ERROR_MAP or kind is Kind.OFFSET_MAP:
        assert isinstance(value, FrozenObject)
        return {_normal_key(k): thaw(v) for k, v in value.items}
    if kind is Kind.HEX:
        return str(value).lower()
    return thaw(value)


def _normal_key(key: str) -> str:
    try:
        return str(TopicPartition.parse(key))
    except ValueError:
        return key


def _matches(compare: Compare, expected: Actual, actual: Actual) -> bool:
    if compare is Compare.EQ:
        return expected == actual
    if compare is Compare.NE:
        return expected != actual
    if compare is Compare.NOT_IN:
        return isinstance(expected, list) and actual not in expected
    if compare is Compare.PREFIX:
        return isinstance(actual, str) and isinstance(expected, str) and actual.startswith(expected)
    if compare is Compare.MULTISET:
        return (
            isinstance(expected, list)
            and isinstance(actual, list)
            and sorted(map(_sort_key, expected)) == sorted(map(_sort_key, actual))
        )
    if compare is Compare.CONTAINS_ALL:
        return isinstance(expected, list) and isinstance(actual, list) and all(e in actual for e in expected)
    if compare is Compare.LACKS_ALL:
        return isinstance(expected, list) and isinstance(actual, list) and not any(e in actual for e in expected)
    if compare is Compare.HAS:
        if not isinstance(actual, list):
            return False
        return (len(actual) > 0) == expected if isinstance(expected, bool) else expected in actual
    if compare is Compare.SUBMAP:
        if not isinstance(expected, dict) or not isinstance(actual, dict):
            return False
        for member, fields in expected.items():
            got = actual.get(member)
            if not isinstance(fields, dict) or not isinstance(got, dict):
                return False
            if any(got.get(f) != v for f, v in fields.items()):
                return False
        return True
    raise AssertionError(compare)


def _sort_key(v: Actual) -> tuple[bool, str]:
    return (v is not None, str(v))


def evaluate(
    op: str, expects: tuple[Expect, ...], actual: dict[str, Actual], r: Resolver
) -> list[Mismatch]:
    """Every expect entry that the actual values do not satisfy, in the order written."""
    out: list[Mismatch] = []
    for e in expects:
        spec = KEYS[op][e.key]
        got = actual.get(spec.actual)
        want = resolve(spec, e.value, actual, r)
        if not _matches(spec.compare, want, got):
            out.append(Mismatch(e.key, e.value, want, got, spec.compare))
    return out

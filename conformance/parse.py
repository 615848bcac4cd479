"""Load and validate a scenario file into the records of scenario.py.

Every problem is a ScenarioFormatError whose message names the file, the scenario (index and name),
the step index and op, the field, and what was expected. Malformed JSON is reported with its line
and column. Nothing is run before the whole file has been validated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Collection, Optional, TypeVar, cast

from model.coordinator_api import CoordinatorConfig, MemberSpec
from model.errors import BadInput
from model.messages import ProtocolMetadata, TopicPartition
from model.vocabulary import KAFKA_STATES, Error, GroupState

from conformance.expect import KEYS, SINGLE_ERROR_OPS, Kind
from conformance.scenario import (
    FORMAT, REQUEST_STEP_TYPES, AdvanceStep, CheckErrorCountsStep, CheckGroupStep, CheckOneOfStep,
    CheckPendingStep, CheckResponseStep, CheckSameErrorsStep, CommitStep, Defaults, DeleteGroupsStep,
    DescribeStep, Expect, FetchOffsetsStep, Frozen, FrozenObject, GenerationRef, HeartbeatStep,
    JoinDefaults, JoinStep, LeaveStep, ListGroupsStep, MemberRef, RequestMeta, Scenario, ScenarioFile,
    SelectProtocolCase, SetupAddGroupStep, SetupForceTransitionStep, SetupLoadStep,
    SetupPrepareRebalanceStep, SetupUnloadStep, Step, SupportsProtocolsCase, SyncStep, TransitionCase,
    UnitSelectProtocolStep, UnitTransitionsStep,
)

T = TypeVar("T")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_GEN_PREFIX = "$gen:"
_KAFKA_STATE_NAMES = frozenset(s.name for s in KAFKA_STATES)
_DESCRIBED_STATES = _KAFKA_STATE_NAMES | {""}


class ScenarioFormatError(BadInput):
    """A scenario file that does not follow the format; the message says where and what."""


Check = Callable[[Any, str], object]  # checks a value (named for messages); raises ScenarioFormatError


def _raise(e: Exception) -> None:
    raise e


_CONFIG_FIELDS: dict[str, str] = {
    "group_min_session_timeout_ms": "int",
    "group_max_session_timeout_ms": "int",
    "group_max_size": "int",
    "group_initial_rebalance_delay_ms": "int",
    "new_member_join_timeout_ms": "int",
    "not_owned_groups": "str_list",
    "append_result": "error",
}


@dataclass
class _Where:
    """The location used in error messages; `field` paths are dotted (`expect.error`)."""

    path: str
    scenario: Optional[tuple[int, str]] = None
    step: Optional[tuple[int, str]] = None

    def prefix(self) -> str:
        out = self.path
        if self.scenario is not None:
            out += f": scenario {self.scenario[0]} ({self.scenario[1]!r})"
        if self.step is not None:
            out += f": step {self.step[0]} ({self.step[1]})"
        return out

    def fail(self, field_name: str, message: str) -> ScenarioFormatError:
        where = self.prefix() + (f": field '{field_name}'" if field_name else "")
        return ScenarioFormatError(f"{where}: {message}")

    def wrong(self, field_name: str, expected: str, got: object) -> ScenarioFormatError:
        return self.fail(field_name, f"expected {expected}, got {_show(got)}")


def _show(value: object) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass
class _Obj:
    """A JSON object being read: fields are taken out one by one; leftovers are unknown fields."""

    data: dict[str, Any]
    where: _Where
    base: str  # field path prefix
    taken: set[str] = field(default_factory=set)

    def name(self, key: str) -> str:
        return f"{self.base}.{key}" if self.base else key

    def has(self, key: str) -> bool:
        return key in self.data

    def take(self, key: str, conv: Callable[[Any, str], T], default: T) -> T:
        """The converted field, or `default` when it is absent."""
        self.taken.add(key)
        if key not in self.data:
            return default
        return conv(self.data[key], self.name(key))

    def need(self, key: str, conv: Callable[[Any, str], T]) -> T:
        self.taken.add(key)
        if key not in self.data:
            raise self.where.fail(self.name(key), "missing required field")
        return conv(self.data[key], self.name(key))

    def opt(self, key: str, conv: Callable[[Any, str], T]) -> Optional[T]:
        self.taken.add(key)
        if key not in self.data or self.data[key] is None:
            return None
        return conv(self.data[key], self.name(key))

    def finish(self, what: str) -> None:
        extra = sorted(set(self.data) - self.taken)
        if extra:
            allowed = ", ".join(sorted(self.taken)) or "none"
            raise self.where.fail(self.name(extra[0]), f"unknown field for {what} (allowed: {allowed})")


class _Values:
    """Converters from JSON values; each raises a located ScenarioFormatError."""

    def __init__(self, where: _Where) -> None:
        self.w = where

    def obj(self, v: Any, name: str) -> _Obj:
        if not isinstance(v, dict):
            raise self.w.wrong(name, "an object", v)
        return _Obj(v, self.w, name)

    def int_(self, v: Any, name: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.w.wrong(name, "an integer", v)
        return v

    def nonneg(self, v: Any, name: str) -> int:
        n = self.int_(v, name)
        if n < 0:
            raise self.w.wrong(name, "a non-negative integer", v)
        return n

    def bool_(self, v: Any, name: str) -> bool:
        if not isinstance(v, bool):
            raise self.w.wrong(name, "true or false", v)
        return v

    def str_(self, v: Any, name: str) -> str:
        if not isinstance(v, str):
            raise self.w.wrong(name, "a string", v)
        return v

    def list_(self, v: Any, name: str) -> list[Any]:
        if not isinstance(v, list):
            raise self.w.wrong(name, "a list", v)
        return v

    def str_list(self, v: Any, name: str) -> tuple[str, ...]:
        return tuple(self.str_(x, f"{name}[{i}]") for i, x in enumerate(self.list_(v, name)))

    def _name_in(self, v: Any, name: str, names: Collection[str], expected: str) -> str:
        if not isinstance(v, str) or v not in names:
            raise self.w.wrong(name, expected, v)
        return v

    def _text(self, v: Any, name: str, conv: Callable[[str], T], expected: str) -> T:
        s = self.str_(v, name)
        try:
            return conv(s)
        except ValueError:
            raise self.w.wrong(name, expected, v) from None

    def error(self, v: Any, name: str) -> Error:
        return Error[self._name_in(v, name, Error.__members__, "a Kafka error name (NONE, REBALANCE_IN_PROGRESS, ...)")]

    def hex_(self, v: Any, name: str) -> bytes:
        return self._text(v, name, bytes.fromhex, "a hex string")

    def state(self, v: Any, name: str) -> GroupState:
        return GroupState[self._name_in(v, name, _KAFKA_STATE_NAMES, "a Kafka group state name")]

    def partition(self, v: Any, name: str) -> TopicPartition:
        return self._text(v, name, TopicPartition.parse, '"TOPIC-PARTITION" such as "orders-0"')

    def protocols(self, v: Any, name: str) -> tuple[ProtocolMetadata, ...]:
        out = []
        for i, p in enumerate(self.list_(v, name)):
            o = self.obj(p, f"{name}[{i}]")
            out.append(ProtocolMetadata(o.need("name", self.str_), o.take("metadata", self.hex_, b"")))
            o.finish("a protocol")
        return tuple(out)


def freeze(v: Any) -> Frozen:
    if isinstance(v, dict):
        return FrozenObject(tuple((k, freeze(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(freeze(x) for x in v)
    if v is None or isinstance(v, (bool, int, str)):
        return v
    raise TypeError(f"not a JSON value: {v!r}")


@dataclass
class _ScenarioScope:
    """What earlier steps of the scenario made available: bindings and request ids."""

    bound: dict[str, int] = field(default_factory=dict)  # name -> step index that binds it
    requests: dict[str, str] = field(default_factory=dict)  # id -> op


class _StepParser:
    def __init__(self, where: _Where, defaults: Defaults, scope: _ScenarioScope) -> None:
        self.w = where
        self.v = _Values(where)
        self.d = defaults
        self.scope = scope

    # ---- values that refer to earlier steps

    def member(self, v: Any, name: str) -> MemberRef:
        s = self.v.str_(v, name)
        if s.startswith("$"):
            self._check_binding(s, name)
        return MemberRef(s)

    def _check_binding(self, s: str, name: str) -> None:
        binding = s[1:]
        if not _NAME.match(binding):
            raise self.w.wrong(name, '"$X" with X a name bound by an earlier `bind`', s)
        if binding not in self.scope.bound:
            raise self.w.fail(name, f"${binding} is not bound by an earlier step (use bind: {{\"member_id\": \"{binding}\"}})")

    def generation(self, v: Any, name: str) -> GenerationRef:
        if isinstance(v, str):
            self._check_gen(v, name)
            return GenerationRef(join_id=v[len(_GEN_PREFIX) :])
        return GenerationRef(value=self.v.int_(v, name))

    def _check_gen(self, s: str, name: str) -> None:
        if not s.startswith(_GEN_PREFIX):
            raise self.w.wrong(name, 'an integer or "$gen:<id of an earlier join>"', s)
        ref = s[len(_GEN_PREFIX) :]
        if self.scope.requests.get(ref) != "join":
            raise self.w.fail(name, f"{s}: {ref!r} is not the id of an earlier join step")

    def request_id(self, v: Any, name: str) -> str:
        s = self.v.str_(v, name)
        if s not in self.scope.requests:
            raise self.w.fail(name, f"{s!r} is not the id of an earlier request step")
        return s

    # ---- expect values

    def expect(self, op: str, v: Any, name: str, extra: tuple[str, ...] = ()) -> tuple[Expect, ...]:
        o = self.v.obj(v, name)
        keys = KEYS[op]
        out = []
        for key, value in o.data.items():
            if key in extra:
                continue
            spec = keys.get(key)
            if spec is None:
                allowed = ", ".join(keys)
                raise self.w.fail(f"{name}.{key}", f"unknown expect key for {op} (allowed: {allowed})")
            self._check_kind(spec.kind, value, f"{name}.{key}")
            out.append(Expect(key, freeze(value)))
        return tuple(out)

    def _check_kind(self, kind: Kind, value: Any, name: str) -> None:
        """`value` is a valid `kind` here (else a located ScenarioFormatError)."""
        v = self.v

        def optional(check: Check) -> Check:
            return lambda x, n: None if x is None else check(x, n)

        def each(check: Check) -> Check:
            return lambda x, n: [check(y, f"{n}[{i}]") for i, y in enumerate(v.list_(x, n))]

        def entries(check: Callable[[str, Any, str], object]) -> Check:
            return lambda x, n: [check(k, y, f"{n}.{k}") for k, y in v.obj(x, n).data.items()]

        def holds(test: Callable[[Any], bool]) -> Check:
            return lambda x, n: None if test(x) else _raise(self.w.wrong(n, kind.value, x))

        checks: dict[Kind, Check] = {
            Kind.ERROR: v.error, Kind.INT: v.int_, Kind.GEN: self.generation, Kind.BOOL: v.bool_, Kind.STR: v.str_,
            Kind.OPT_STR: optional(v.str_), Kind.HEX: v.hex_, Kind.MEMBER: self.member,
            Kind.OPT_MEMBER: optional(self.member), Kind.LEADER: lambda x, n: x == "self" or self.member(x, n),
            Kind.MEMBER_LIST: each(self.member), Kind.OPT_STR_LIST: each(optional(v.str_)), Kind.STR_LIST: v.str_list,
            Kind.STR_OR_BOOL: holds(lambda x: isinstance(x, (str, bool))),
            Kind.ERROR_LIST: each(v.error), Kind.ERROR_MAP: entries(lambda k, x, n: v.error(x, n)),
            Kind.OFFSET_MAP: entries(lambda k, x, n: (v.partition(k, n), v.int_(x, n))),
            Kind.DESCRIBED_STATE: holds(lambda x: isinstance(x, str) and x in _DESCRIBED_STATES),
            Kind.GROUP_STATE: holds(lambda x: isinstance(x, str) and x in GroupState.__members__),
            Kind.TIMEOUT_MAP: entries(self._member_timeouts),
        }
        checks[kind](value, name)

    def _member_timeouts(self, member: str, value: Any, name: str) -> None:
        self.member(member, name)
        t = self.v.obj(value, name)
        t.take("session_timeout_ms", self.v.int_, 0)
        t.take("rebalance_timeout_ms", self.v.int_, 0)
        t.finish("member timeouts")

    def bind(self, v: Any, name: str, index: int) -> str:
        o = self.v.obj(v, name)
        target = o.need("member_id", self.v.str_)
        o.finish("bind")
        if not _NAME.match(target):
            raise self.w.wrong(f"{name}.member_id", "a binding name such as \"A\" (letters, digits, _)", target)
        if target in self.scope.bound:
            raise self.w.fail(f"{name}.member_id", f"${target} is already bound at step {self.scope.bound[target]}")
        self.scope.bound[target] = index
        return target

    # ---- steps

    def group(self, o: _Obj) -> str:
        g = o.opt("group", self.v.str_)
        if g is None:
            if self.d.group is None:
                raise self.w.fail("group", "missing (and the file has no defaults.group)")
            return self.d.group
        return g

    def meta(self, o: _Obj, op: str, index: int, has_group: bool = True) -> RequestMeta:
        rid = o.opt("id", self.v.str_)
        if rid is not None and rid in self.scope.requests:
            raise self.w.fail("id", f"{rid!r} is already the id of an earlier request step")
        aw = o.take("await", self.v.str_, "immediate")
        if aw not in ("immediate", "later"):
            raise self.w.wrong("await", '"immediate" or "later"', aw)
        later = aw == "later"
        if later and rid is None:
            raise self.w.fail("id", 'missing: an `await: "later"` request needs an id for check_response')
        group = self.group(o) if has_group else ""
        bind: Optional[str] = None
        if o.has("bind"):
            if later:
                raise self.w.fail("bind", 'not allowed on an `await: "later"` request; put it on check_response')
            bind = o.take("bind", lambda x, n: self.bind(x, n, index), None)
        expect: tuple[Expect, ...] = ()
        if o.has("expect"):
            if later:
                raise self.w.fail("expect", 'not allowed on an `await: "later"` request; put it on check_response')
            expect = o.opt("expect", lambda x, n: self.expect(op, x, n)) or ()
        if rid is not None:
            self.scope.requests[rid] = op
        version = o.opt("api_version", self.v.nonneg)
        return RequestMeta(index, rid, group, later, expect, bind, version)

    def parse(self, index: int, raw_step: Any) -> Step:
        if not isinstance(raw_step, dict):
            raise self.w.wrong("", "a step object", raw_step)
        op = raw_step.get("op")
        self.w.step = (index, str(op))
        if "op" not in raw_step:
            raise self.w.fail("op", "missing required field")
        if not isinstance(op, str) or op not in _STEP_PARSERS:
            raise self.w.wrong("op", "one of " + ", ".join(sorted(_STEP_PARSERS)), op)
        o = _Obj(raw_step, self.w, "", {"op"})
        step = _STEP_PARSERS[op](self, o, index)
        o.finish(f"op {op}")
        raw = json.dumps(raw_step, sort_keys=False)
        if isinstance(step, REQUEST_STEP_TYPES):
            return replace(step, meta=replace(step.meta, raw=raw))
        return replace(step, raw=raw)

    def p_join(self, o: _Obj, i: int) -> JoinStep:
        v, j = self.v, self.d.join

        def pick(key: str, conv: Callable[[Any, str], T]) -> T:
            got = o.opt(key, conv)
            return got if got is not None else cast(T, getattr(j, key))

        member = o.need("member", self.member)
        instance_id = o.opt("instance_id", v.str_)
        return JoinStep(
            member=member,
            instance_id=instance_id,
            protocols=pick("protocols", v.protocols),
            protocol_type=pick("protocol_type", v.str_),
            session_timeout_ms=pick("session_timeout_ms", v.int_),
            rebalance_timeout_ms=pick("rebalance_timeout_ms", v.int_),
            require_known_member_id=pick("require_known_member_id", v.bool_),
            supports_skip_assignment=pick("supports_skip_assignment", v.bool_),
            client_id=pick("client_id", v.str_),
            append_error=o.opt("append_error", v.error),
            meta=self.meta(o, "join", i),
        )

    def p_sync(self, o: _Obj, i: int) -> SyncStep:
        v = self.v
        member = o.need("member", self.member)
        generation = o.need("generation", self.generation)
        instance_id = o.opt("instance_id", v.str_)
        assignments: tuple[tuple[MemberRef, bytes], ...] = ()
        if o.has("assignments"):
            a = o.take("assignments", v.obj, None)
            assert a is not None
            assignments = tuple((self.member(k, f"assignments.{k}"), v.hex_(x, f"assignments.{k}")) for k, x in a.data.items())
        pt = o.opt("protocol_type", v.str_)
        pn = o.opt("protocol_name", v.str_)
        return SyncStep(self.meta(o, "sync", i), member, generation, instance_id, assignments, pt, pn)

    def p_heartbeat(self, o: _Obj, i: int) -> HeartbeatStep:
        member = o.need("member", self.member)
        generation = o.need("generation", self.generation)
        instance_id = o.opt("instance_id", self.v.str_)
        return HeartbeatStep(self.meta(o, "heartbeat", i), member, generation, instance_id)

    def p_leave(self, o: _Obj, i: int) -> LeaveStep:
        members = []
        for k, m in enumerate(o.need("members", self.v.list_)):
            mo = self.v.obj(m, f"members[{k}]")
            members.append((mo.need("member_id", self.member), mo.opt("instance_id", self.v.str_)))
            mo.finish("a leaving member")
        return LeaveStep(self.meta(o, "leave", i), tuple(members))

    def p_commit(self, o: _Obj, i: int) -> CommitStep:
        v = self.v
        member = o.need("member", self.member)
        generation = o.need("generation", self.generation)
        instance_id = o.opt("instance_id", v.str_)
        offs = o.need("offsets", v.obj)
        offsets = tuple((v.partition(k, f"offsets.{k}"), v.int_(x, f"offsets.{k}")) for k, x in offs.data.items())
        return CommitStep(self.meta(o, "commit", i), member, generation, instance_id, offsets)

    def p_fetch_offsets(self, o: _Obj, i: int) -> FetchOffsetsStep:
        o.taken.add("partitions")
        if "partitions" not in o.data:
            raise self.w.fail("partitions", "missing required field (a list of \"topic-N\", or null for all)")
        raw_parts = o.data["partitions"]
        parts = None
        if raw_parts is not None:
            parts = tuple(self.v.partition(p, f"partitions[{k}]") for k, p in enumerate(self.v.list_(raw_parts, "partitions")))
        return FetchOffsetsStep(self.meta(o, "fetch_offsets", i), parts)

    def p_describe(self, o: _Obj, i: int) -> DescribeStep:
        return DescribeStep(self.meta(o, "describe", i))

    def p_list_groups(self, o: _Obj, i: int) -> ListGroupsStep:
        states = o.opt("states", self.v.str_list) or ()
        return ListGroupsStep(self.meta(o, "list_groups", i, has_group=False), states)

    def p_delete_groups(self, o: _Obj, i: int) -> DeleteGroupsStep:
        groups = o.need("groups", self.v.str_list)
        return DeleteGroupsStep(self.meta(o, "delete_groups", i, has_group=False), groups)

    def p_advance(self, o: _Obj, i: int) -> AdvanceStep:
        return AdvanceStep(i, o.need("ms", self.v.nonneg))

    def p_check_response(self, o: _Obj, i: int) -> CheckResponseStep:
        rid = o.need("id", self.request_id)
        op = self.scope.requests[rid]
        bind = None
        if o.has("bind"):
            bind = o.take("bind", lambda x, n: self.bind(x, n, i), None)
        expect = o.opt("expect", lambda x, n: self.expect(op, x, n)) or ()
        alternatives: tuple[tuple[Expect, ...], ...] = ()
        if o.has("expect_any"):
            if expect:
                raise self.w.fail("expect_any", "not allowed together with expect")
            raw: list[Any] = o.take("expect_any", self.v.list_, [])
            if not raw:
                raise self.w.fail("expect_any", "expected a non-empty list of expect objects")
            alternatives = tuple(self.expect(op, x, f"expect_any[{k}]") for k, x in enumerate(raw))
        tol_ms, why = self.tolerance(o)
        return CheckResponseStep(i, rid, op, expect, bind, tol_ms, why, alternatives)

    def p_check_pending(self, o: _Obj, i: int) -> CheckPendingStep:
        return CheckPendingStep(i, o.need("id", self.request_id), *self.tolerance(o))

    def tolerance(self, o: _Obj) -> tuple[int, str]:
        """`tolerance_ms` (real-clock targets only) and the `tolerance_why` it needs."""
        ms = o.opt("tolerance_ms", self.v.nonneg)
        if ms is None:
            return 0, ""
        why = o.opt("tolerance_why", self.v.str_)
        if not why:
            raise o.where.fail(o.name("tolerance_why"), "missing: a tolerance_ms needs its reason")
        return ms, why

    def p_check_group(self, o: _Obj, i: int) -> CheckGroupStep:
        group = self.group(o)
        expect = o.need("expect", lambda x, n: self.expect("check_group", x, n))
        return CheckGroupStep(i, group, expect, *self.tolerance(o))

    def _error_ids(self, v: Any, name: str) -> tuple[str, ...]:
        ids = []
        for k, x in enumerate(self.v.list_(v, name)):
            rid = self.request_id(x, f"{name}[{k}]")
            if self.scope.requests[rid] not in SINGLE_ERROR_OPS:
                raise self.w.fail(f"{name}[{k}]", f"{rid!r} is a {self.scope.requests[rid]} request, which has no single error")
            ids.append(rid)
        return tuple(ids)

    def p_check_error_counts(self, o: _Obj, i: int) -> CheckErrorCountsStep:
        ids = o.need("ids", self._error_ids)
        c = o.need("counts", self.v.obj)
        counts = tuple((self.v.error(k, f"counts.{k}"), self.v.nonneg(x, f"counts.{k}")) for k, x in c.data.items())
        if sum(n for _, n in counts) != len(ids):
            raise self.w.fail("counts", f"the counts add up to {sum(n for _, n in counts)} but there are {len(ids)} ids")
        return CheckErrorCountsStep(i, ids, counts)

    def p_check_same_errors(self, o: _Obj, i: int) -> CheckSameErrorsStep:
        pairs = []
        for k, p in enumerate(o.need("pairs", self.v.list_)):
            ids = self._error_ids(p, f"pairs[{k}]")
            if len(ids) != 2:
                raise self.w.wrong(f"pairs[{k}]", "a pair of two request ids", p)
            pairs.append((ids[0], ids[1]))
        return CheckSameErrorsStep(i, tuple(pairs))

    def p_check_one_of(self, o: _Obj, i: int) -> CheckOneOfStep:
        ids = o.need("ids", lambda x, n: tuple(self.request_id(y, f"{n}[{k}]") for k, y in enumerate(self.v.list_(x, n))))
        ops = {self.scope.requests[r] for r in ids}
        if len(ops) != 1:
            raise self.w.fail("ids", f"all ids must name requests of one op, got {sorted(ops)}")
        op = ops.pop()
        leader = o.need("leader_expect", lambda x, n: self.expect(op, x, n))
        fo = o.need("follower_expect", self.v.obj)
        other = fo.take("leader_is_other", self.v.bool_, False)
        if other and op != "join":
            raise self.w.fail("follower_expect.leader_is_other", "only meaningful for join responses")
        follower = self.expect(op, fo.data, "follower_expect", extra=("leader_is_other",))
        return CheckOneOfStep(i, ids, op, leader, follower, bool(other))

    def _require_backdoor(self, o: _Obj) -> None:
        flag = o.need("backdoor", self.v.bool_)
        if flag is not True:
            raise self.w.wrong("backdoor", "true (this step needs a test hook)", flag)

    def p_setup_add_group(self, o: _Obj, i: int) -> SetupAddGroupStep:
        self._require_backdoor(o)
        group = self.group(o)
        state = o.need("state", self.v.state)
        j, v = self.d.join, self.v
        members = []
        raw_members: list[Any] = o.opt("members", v.list_) or []
        for k, m in enumerate(raw_members):
            mo = v.obj(m, f"members[{k}]")
            protos = mo.opt("protocols", v.protocols)
            if protos is None:
                protos = j.protocols
            members.append(
                MemberSpec(
                    member_id=mo.need("id", v.str_),
                    group_instance_id=mo.opt("instance_id", v.str_),
                    protocols=tuple((p.name, p.metadata) for p in protos),
                    session_timeout_ms=mo.take("session_timeout_ms", v.int_, j.session_timeout_ms),
                    rebalance_timeout_ms=mo.take("rebalance_timeout_ms", v.int_, j.rebalance_timeout_ms),
                )
            )
            mo.finish("a setup member")
        ptype = o.take("protocol_type", v.str_, j.protocol_type)
        return SetupAddGroupStep(i, group, state, tuple(members), ptype)

    def p_setup_prepare_rebalance(self, o: _Obj, i: int) -> SetupPrepareRebalanceStep:
        self._require_backdoor(o)
        return SetupPrepareRebalanceStep(i, self.group(o))

    def p_setup_force_transition(self, o: _Obj, i: int) -> SetupForceTransitionStep:
        self._require_backdoor(o)
        return SetupForceTransitionStep(i, self.group(o), o.need("state", self.v.state))

    def p_setup_unload(self, o: _Obj, i: int) -> SetupUnloadStep:
        self._require_backdoor(o)
        return SetupUnloadStep(i, self.group(o))

    def p_setup_load(self, o: _Obj, i: int) -> SetupLoadStep:
        self._require_backdoor(o)
        return SetupLoadStep(i, self.group(o))

    def _allow_backdoor(self, o: _Obj) -> None:
        """unit_* steps need a test hook too; `backdoor: true` may be written, nothing else."""
        if o.has("backdoor"):
            self._require_backdoor(o)

    def p_unit_transitions(self, o: _Obj, i: int) -> UnitTransitionsStep:
        v = self.v
        self._allow_backdoor(o)
        start = o.need("start", v.state)
        cases = []
        for k, c in enumerate(o.need("cases", v.list_)):
            co = v.obj(c, f"cases[{k}]")
            path = co.need("path", lambda x, n: tuple(v.state(s, f"{n}[{q}]") for q, s in enumerate(v.list_(x, n))))
            cases.append(TransitionCase(path, co.need("ok", v.bool_)))
            co.finish("a transition case")
        return UnitTransitionsStep(i, start, tuple(cases), o.opt("can_rebalance", v.bool_))

    def p_unit_select_protocol(self, o: _Obj, i: int) -> UnitSelectProtocolStep:
        v = self.v
        self._allow_backdoor(o)

        def lists(x: Any, n: str) -> tuple[tuple[str, ...], ...]:
            return tuple(v.str_list(m, f"{n}[{q}]") for q, m in enumerate(v.list_(x, n)))

        def selection(x: Any, n: str) -> tuple[Optional[str], ...]:
            if x is None or isinstance(x, str):
                return (x,)
            out = tuple(None if y is None else v.str_(y, f"{n}[{q}]") for q, y in enumerate(v.list_(x, n)))
            if not out:
                raise self.w.wrong(n, "a protocol name, null, or a non-empty list of acceptable ones", x)
            return out

        cases = []
        for k, c in enumerate(o.need("cases", v.list_)):
            co = v.obj(c, f"cases[{k}]")
            co.taken.add("expect")
            if "expect" not in co.data:
                raise self.w.fail(f"cases[{k}].expect", "missing required field")
            cases.append(
                SelectProtocolCase(
                    co.need("members", lists),
                    co.take("protocol_type", v.str_, "consumer"),
                    selection(co.data["expect"], f"cases[{k}].expect"),
                )
            )
            co.finish("a select-protocol case")
        supports = []
        for k, c in enumerate(o.take("supports_protocols", v.list_, [])):
            co = v.obj(c, f"supports_protocols[{k}]")
            supports.append(
                SupportsProtocolsCase(
                    co.need("group_members", lists),
                    co.take("group_protocol_type", v.str_, "consumer"),
                    co.take("protocol_type", v.str_, "consumer"),
                    co.need("protocols", v.str_list),
                    co.need("ok", v.bool_),
                )
            )
            co.finish("a supports-protocols case")
        return UnitSelectProtocolStep(i, tuple(cases), tuple(supports))


_STEP_PARSERS: dict[str, Callable[[_StepParser, _Obj, int], Step]] = {
    "join": _StepParser.p_join,
    "sync": _StepParser.p_sync,
    "heartbeat": _StepParser.p_heartbeat,
    "leave": _StepParser.p_leave,
    "commit": _StepParser.p_commit,
    "fetch_offsets": _StepParser.p_fetch_offsets,
    "describe": _StepParser.p_describe,
    "list_groups": _StepParser.p_list_groups,
    "delete_groups": _StepParser.p_delete_groups,
    "advance": _StepParser.p_advance,
    "check_response": _StepParser.p_check_response,
    "check_pending": _StepParser.p_check_pending,
    "check_group": _StepParser.p_check_group,
    "check_error_counts": _StepParser.p_check_error_counts,
    "check_same_errors": _StepParser.p_check_same_errors,
    "check_one_of": _StepParser.p_check_one_of,
    "setup_add_group": _StepParser.p_setup_add_group,
    "setup_prepare_rebalance": _StepParser.p_setup_prepare_rebalance,
    "setup_force_transition": _StepParser.p_setup_force_transition,
    "setup_unload": _StepParser.p_setup_unload,
    "setup_load": _StepParser.p_setup_load,
    "unit_transitions": _StepParser.p_unit_transitions,
    "unit_select_protocol": _StepParser.p_unit_select_protocol,
}

STEP_OPS: frozenset[str] = frozenset(_STEP_PARSERS)


def _config(values: _Values, merged: dict[str, Any], name: str) -> CoordinatorConfig:
    kwargs: dict[str, Any] = {}
    for key, raw in merged.items():
        kind = _CONFIG_FIELDS.get(key)
        if kind is None:
            raise values.w.fail(f"{name}.{key}", f"unknown config key (allowed: {', '.join(_CONFIG_FIELDS)})")
        if kind == "int":
            kwargs[key] = values.nonneg(raw, f"{name}.{key}")
        elif kind == "str_list":
            kwargs[key] = frozenset(values.str_list(raw, f"{name}.{key}"))
        else:
            kwargs[key] = values.error(raw, f"{name}.{key}")
    return CoordinatorConfig(**kwargs)


def _defaults(top: dict[str, Any], where: _Where) -> tuple[Defaults, dict[str, Any]]:
    """The file's defaults, and its `defaults.config` as written (merged under each scenario's)."""
    v = _Values(where)
    if "defaults" not in top:
        return Defaults(), {}
    d = v.obj(top["defaults"], "defaults")
    group = d.opt("group", v.str_)
    config = d.take("config", v.obj, None)
    join = d.take("join", v.obj, None)
    d.finish("defaults")
    cfg = dict(config.data) if config is not None else {}
    given: dict[str, Any] = {}
    if join is not None:
        conv: dict[str, Callable[[Any, str], Any]] = {
            "client_id": v.str_,
            "protocol_type": v.str_,
            "protocols": v.protocols,
            "session_timeout_ms": v.int_,
            "rebalance_timeout_ms": v.int_,
            "require_known_member_id": v.bool_,
            "supports_skip_assignment": v.bool_,
        }
        for key in join.data:
            if key not in conv:
                raise where.fail(f"defaults.join.{key}", f"unknown join default (allowed: {', '.join(conv)})")
        given = {key: conv[key](raw, f"defaults.join.{key}") for key, raw in join.data.items()}
    # the config is validated here so that an error names `defaults`
    return Defaults(group, _config(v, cfg, "defaults.config"), JoinDefaults(**given)), cfg


def parse_text(text: str, path: str) -> ScenarioFile:
    """Validate a scenario document given as text; `path` is only used in messages."""
    try:
        return _parse_text(text, path)
    except RecursionError:
        raise ScenarioFormatError(f"{path}: JSON nested too deeply to be a scenario file") from None


def _parse_text(text: str, path: str) -> ScenarioFile:
    where = _Where(path)
    try:
        top = json.loads(text)
    except json.JSONDecodeError as e:
        raise ScenarioFormatError(f"{path}: line {e.lineno}, column {e.colno}: invalid JSON: {e.msg}") from None
    if not isinstance(top, dict):
        raise where.wrong("", "a JSON object at the top level", top)
    fmt = top.get("format")
    if fmt != FORMAT:
        raise where.wrong("format", f'"{FORMAT}"', fmt)
    defaults, default_config = _defaults(top, where)
    v = _Values(where)
    raw_scenarios = top.get("scenarios")
    if not isinstance(raw_scenarios, list) or not raw_scenarios:
        raise where.wrong("scenarios", "a non-empty list of scenario objects", raw_scenarios)
    scenarios = []
    names: set[str] = set()
    for k, raw in enumerate(raw_scenarios):
        name = raw.get("name") if isinstance(raw, dict) else None
        where.scenario = (k, name if isinstance(name, str) else "?")
        where.step = None
        so = v.obj(raw, "")
        name = so.need("name", v.str_)
        if name in names:
            raise where.fail("name", f"duplicate scenario name {name!r}")
        names.add(name)
        source = so.take("source", v.str_, "")
        notes = so.take("notes", v.str_, "")
        tags = so.opt("tags", v.str_list) or ()
        own = so.take("config", v.obj, None)
        merged = dict(default_config)
        merged.update(own.data if own is not None else {})
        config = _config(v, merged, "config")
        parser = _StepParser(where, defaults, _ScenarioScope())
        raw_steps = so.need("steps", v.list_)
        steps = tuple(parser.parse(i, s) for i, s in enumerate(raw_steps))
        where.step = None
        so.finish("a scenario")
        scenarios.append(Scenario(name, k, source, config, tags, steps, notes, raw=json.dumps(raw)))
    return ScenarioFile(path, tuple(scenarios), defaults, defaults_raw=json.dumps(top.get("defaults", {})))


def load(path: str) -> ScenarioFile:
    """Read and validate one scenario file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ScenarioFormatError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ScenarioFormatError(f"{path}: not UTF-8 text: {e.reason} at byte {e.start}") from None
    return parse_text(text, path)

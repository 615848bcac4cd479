"""The one scenario writer is the parser's inverse: `parse_text(dump(f)) == f` for generated records
and for every scenario file in the repository; a writer that drops a field is caught."""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from model.coordinator_api import CoordinatorConfig, MemberSpec
from model.messages import ProtocolMetadata, TopicPartition
from model.vocabulary import KAFKA_STATES, Error, GroupState

from conformance import scenario as sc
from conformance.dump import document, dump, expects
from conformance.expect import KEYS, SINGLE_ERROR_OPS, Kind
from conformance.parse import load, parse_text

HERE = os.path.dirname(__file__)
FILES = sorted(glob.glob(os.path.join(HERE, "..", "scenarios", "*.json"))
               + glob.glob(os.path.join(HERE, "..", "scenarios", "kafka-coordinator-test", "*.json"))
               + glob.glob(os.path.join(HERE, "..", "profiles", "*.json")))

Draw = Callable[[st.SearchStrategy[Any]], Any]

NAMES = st.sampled_from(["g", "h", "orders", "i1", "consumer-1", "a b", "ü"])
TEXT = st.text(alphabet="abc-_ $:ü", max_size=6)
INTS = st.integers(-3, 400_000)
NONNEG = st.integers(0, 400_000)
ERRORS = st.sampled_from(sorted(Error, key=lambda e: e.name))
STATES = st.sampled_from(KAFKA_STATES)
PARTITIONS = st.builds(TopicPartition, st.sampled_from(["t", "orders", "my-topic"]), st.integers(0, 12))
PROTOCOLS = st.lists(st.builds(ProtocolMetadata, NAMES, st.binary(max_size=3)), max_size=2).map(tuple)


def configs() -> st.SearchStrategy[CoordinatorConfig]:
    return st.builds(CoordinatorConfig, NONNEG, NONNEG, NONNEG, NONNEG, NONNEG,
                     st.frozensets(NAMES, max_size=2), ERRORS)


def join_defaults() -> st.SearchStrategy[sc.JoinDefaults]:
    return st.one_of(st.just(sc.JoinDefaults()),
                     st.builds(sc.JoinDefaults, TEXT, TEXT, PROTOCOLS, INTS, INTS, st.booleans(), st.booleans()))


@dataclass
class _Scope:
    """What earlier steps made available: binding names, request ids (and their ops)."""

    defaults: sc.Defaults
    bound: list[str] = field(default_factory=list)
    requests: dict[str, str] = field(default_factory=dict)

    def member(self, draw: Draw) -> str:
        choices = ["", "ghost", "consumer-1"] + ["$" + b for b in self.bound]
        text: str = draw(st.sampled_from(choices))
        return text

    def generation(self, draw: Draw) -> int | str:
        joins = [f"$gen:{i}" for i, op in self.requests.items() if op == "join"]
        value: int | str = draw(st.one_of(INTS, st.sampled_from(joins)) if joins else INTS)
        return value

    def new_name(self, draw: Draw, prefix: str) -> str:
        return f"{prefix}{len(self.bound) + len(self.requests)}_{draw(st.integers(0, 9))}"

    def group(self, draw: Draw) -> str:
        choices = [self.defaults.group] if self.defaults.group is not None else []
        g: str = draw(st.sampled_from(choices + ["g", "h2"]))
        return g


def _value(draw: Draw, kind: Kind, s: _Scope) -> Any:
    """A JSON value of `kind` that the parser accepts here."""
    simple: dict[Kind, st.SearchStrategy[Any]] = {
        Kind.ERROR: ERRORS.map(lambda e: e.name), Kind.INT: INTS, Kind.BOOL: st.booleans(), Kind.STR: TEXT,
        Kind.OPT_STR: st.none() | TEXT, Kind.HEX: st.binary(max_size=3).map(bytes.hex),
        Kind.OPT_STR_LIST: st.lists(st.none() | TEXT, max_size=3), Kind.STR_LIST: st.lists(TEXT, max_size=3),
        Kind.STR_OR_BOOL: st.booleans() | TEXT, Kind.ERROR_LIST: st.lists(ERRORS.map(lambda e: e.name), max_size=3),
        Kind.ERROR_MAP: st.dictionaries(TEXT, ERRORS.map(lambda e: e.name), max_size=2),
        Kind.OFFSET_MAP: st.dictionaries(PARTITIONS.map(str), INTS, max_size=2),
        Kind.DESCRIBED_STATE: st.sampled_from([x.name for x in KAFKA_STATES] + [""]),
        Kind.GROUP_STATE: st.sampled_from(list(GroupState.__members__)),
    }
    if kind in simple:
        return draw(simple[kind])
    if kind is Kind.GEN:
        return s.generation(draw)
    if kind is Kind.MEMBER:
        return s.member(draw)
    if kind is Kind.OPT_MEMBER:
        return None if draw(st.booleans()) else s.member(draw)
    if kind is Kind.LEADER:
        return "self" if draw(st.booleans()) else s.member(draw)
    if kind is Kind.MEMBER_LIST:
        return [s.member(draw) for _ in range(draw(st.integers(0, 2)))]
    assert kind is Kind.TIMEOUT_MAP
    timeouts = st.fixed_dictionaries({}, optional={"session_timeout_ms": INTS, "rebalance_timeout_ms": INTS})
    return {s.member(draw): draw(timeouts) for _ in range(draw(st.integers(0, 2)))}


def _expect(draw: Draw, op: str, s: _Scope) -> tuple[sc.Expect, ...]:
    keys = draw(st.lists(st.sampled_from(sorted(KEYS[op])), unique=True, max_size=3))
    return expects({k: _value(draw, KEYS[op][k].kind, s) for k in keys})


def _bind(draw: Draw, s: _Scope) -> Optional[str]:
    if not draw(st.booleans()):
        return None
    name = s.new_name(draw, "B")
    s.bound.append(name)
    return name


def _tolerance(draw: Draw) -> tuple[int, str]:
    return draw(st.sampled_from([(0, ""), (0, "why"), (250, "Kafka's real clock")]))  # type: ignore[no-any-return]


def _meta(draw: Draw, i: int, op: str, s: _Scope, has_group: bool = True) -> sc.RequestMeta:
    later = draw(st.booleans())
    rid = s.new_name(draw, "r") if later or draw(st.booleans()) else None
    group = s.group(draw) if has_group else ""
    bind = None if later else _bind(draw, s)
    expect = () if later else _expect(draw, op, s)
    if rid is not None:
        s.requests[rid] = op
    return sc.RequestMeta(i, rid, group, later, expect, bind, draw(st.none() | st.integers(0, 9)))


def _member_ref(draw: Draw, s: _Scope) -> sc.MemberRef:
    return sc.MemberRef(s.member(draw))


def _request(draw: Draw, i: int, op: str, s: _Scope) -> sc.Step:
    opt_text = st.none() | TEXT
    ref = _member_ref(draw, s)  # drawn before the step's own bind (a binding is not visible to itself)
    if op == "join":
        j = draw(join_defaults()) if draw(st.booleans()) else s.defaults.join
        return sc.JoinStep(_meta(draw, i, op, s), ref, draw(opt_text), j.protocol_type, j.protocols,
                           j.session_timeout_ms, j.rebalance_timeout_ms, j.require_known_member_id,
                           j.supports_skip_assignment, j.client_id, draw(st.none() | ERRORS))
    gen = s.generation(draw)
    generation = sc.GenerationRef(value=gen) if isinstance(gen, int) else sc.GenerationRef(join_id=gen[5:])
    if op == "sync":
        refs = draw(st.lists(st.sampled_from(["", "x"] + ["$" + b for b in s.bound]), unique=True, max_size=2))
        assignments = tuple((sc.MemberRef(r), draw(st.binary(max_size=2))) for r in refs)
        return sc.SyncStep(_meta(draw, i, op, s), ref, generation, draw(opt_text), assignments,
                           draw(opt_text), draw(opt_text))
    if op == "heartbeat":
        return sc.HeartbeatStep(_meta(draw, i, op, s), ref, generation, draw(opt_text))
    if op == "commit":
        offsets = draw(st.lists(st.tuples(PARTITIONS, INTS), unique_by=lambda x: x[0], max_size=2))
        return sc.CommitStep(_meta(draw, i, op, s), ref, generation, draw(opt_text), tuple(offsets))
    if op == "leave":
        members = tuple((_member_ref(draw, s), draw(opt_text)) for _ in range(draw(st.integers(0, 2))))
        return sc.LeaveStep(_meta(draw, i, op, s), members)
    if op == "fetch_offsets":
        parts = draw(st.none() | st.lists(PARTITIONS, max_size=2).map(tuple))
        return sc.FetchOffsetsStep(_meta(draw, i, op, s), parts)
    if op == "describe":
        return sc.DescribeStep(_meta(draw, i, op, s))
    if op == "list_groups":
        return sc.ListGroupsStep(_meta(draw, i, op, s, has_group=False), tuple(draw(st.lists(TEXT, max_size=2))))
    assert op == "delete_groups"
    return sc.DeleteGroupsStep(_meta(draw, i, op, s, has_group=False), tuple(draw(st.lists(NAMES, max_size=2))))


def _check(draw: Draw, i: int, op: str, s: _Scope) -> sc.Step:
    ids = sorted(s.requests)
    if op == "check_response":
        rid = draw(st.sampled_from(ids))
        expect = _expect(draw, s.requests[rid], s)
        # the set of answers a model allows (fuzz findings) instead of one `expect`
        alternatives: tuple[tuple[sc.Expect, ...], ...] = ()
        if not expect and draw(st.booleans()):
            alternatives = tuple(_expect(draw, s.requests[rid], s) for _ in range(draw(st.integers(1, 3))))
        return sc.CheckResponseStep(i, rid, s.requests[rid], expect, _bind(draw, s), *_tolerance(draw),
                                    alternatives)
    if op == "check_pending":
        return sc.CheckPendingStep(i, draw(st.sampled_from(ids)), *_tolerance(draw))
    single = [r for r in ids if s.requests[r] in SINGLE_ERROR_OPS]
    if op == "check_error_counts":
        chosen = tuple(draw(st.lists(st.sampled_from(single), max_size=3))) if single else ()
        errors = draw(st.lists(ERRORS, unique=True, min_size=1, max_size=2))
        counts = [(e, 0) for e in errors[1:]] + [(errors[0], len(chosen))]
        return sc.CheckErrorCountsStep(i, chosen, tuple(counts))
    if op == "check_same_errors":
        pairs = draw(st.lists(st.tuples(st.sampled_from(single), st.sampled_from(single)), max_size=2)) if single else []
        return sc.CheckSameErrorsStep(i, tuple(pairs))
    assert op == "check_one_of"
    first = draw(st.sampled_from(ids))
    same = [r for r in ids if s.requests[r] == s.requests[first]]
    chosen = (first, *draw(st.lists(st.sampled_from(same), max_size=2)))
    kind = s.requests[first]
    return sc.CheckOneOfStep(i, chosen, kind, _expect(draw, kind, s), _expect(draw, kind, s),
                             kind == "join" and draw(st.booleans()))


def _setup(draw: Draw, i: int, op: str, s: _Scope) -> sc.Step:
    if op == "setup_add_group":
        members = tuple(draw(st.builds(
            MemberSpec, NAMES, st.none() | TEXT,
            st.lists(st.tuples(NAMES, st.binary(max_size=2)), max_size=2).map(tuple), INTS, INTS))
            for _ in range(draw(st.integers(0, 2))))
        return sc.SetupAddGroupStep(i, s.group(draw), draw(STATES), members, draw(TEXT))
    if op == "setup_force_transition":
        return sc.SetupForceTransitionStep(i, s.group(draw), draw(STATES))
    if op == "setup_prepare_rebalance":
        return sc.SetupPrepareRebalanceStep(i, s.group(draw))
    return sc.SetupUnloadStep(i, s.group(draw)) if op == "setup_unload" else sc.SetupLoadStep(i, s.group(draw))


def _unit(draw: Draw, i: int, op: str) -> sc.Step:
    lists = st.lists(st.lists(TEXT, max_size=2).map(tuple), max_size=2).map(tuple)
    if op == "unit_transitions":
        cases = st.lists(st.builds(sc.TransitionCase, st.lists(STATES, max_size=3).map(tuple), st.booleans()),
                         max_size=2).map(tuple)
        return sc.UnitTransitionsStep(i, draw(STATES), draw(cases), draw(st.none() | st.booleans()))
    select = st.builds(sc.SelectProtocolCase, lists, TEXT,
                       st.lists(st.none() | TEXT, min_size=1, max_size=2).map(tuple))
    supports = st.builds(sc.SupportsProtocolsCase, lists, TEXT, TEXT, st.lists(TEXT, max_size=2).map(tuple),
                         st.booleans())
    return sc.UnitSelectProtocolStep(i, tuple(draw(st.lists(select, max_size=2))),
                                     tuple(draw(st.lists(supports, max_size=2))))


@st.composite
def steps(draw: Draw, defaults: sc.Defaults) -> tuple[sc.Step, ...]:
    s = _Scope(defaults)
    out: list[sc.Step] = []
    for i in range(draw(st.integers(0, 10))):
        ops = sorted(sc.REQUEST_OPS.values()) + ["advance", "setup_add_group", "setup_prepare_rebalance",
                                                 "setup_force_transition", "setup_unload", "setup_load",
                                                 "unit_transitions", "unit_select_protocol", "check_group"]
        if s.requests:
            ops += ["check_response", "check_pending", "check_error_counts", "check_same_errors", "check_one_of"]
        op = draw(st.sampled_from(ops))
        if op in sc.REQUEST_OPS.values():
            out.append(_request(draw, i, op, s))
        elif op == "advance":
            out.append(sc.AdvanceStep(i, draw(NONNEG)))
        elif op == "check_group":
            out.append(sc.CheckGroupStep(i, s.group(draw), _expect(draw, "check_group", s), *_tolerance(draw)))
        elif op.startswith("check_"):
            out.append(_check(draw, i, op, s))
        elif op.startswith("setup_"):
            out.append(_setup(draw, i, op, s))
        else:
            out.append(_unit(draw, i, op))
    return tuple(out)


@st.composite
def scenario_files(draw: Draw) -> sc.ScenarioFile:
    defaults = sc.Defaults(draw(st.none() | NAMES), draw(configs()), draw(join_defaults()))
    names = draw(st.lists(TEXT, unique=True, min_size=1, max_size=3))
    scenarios = tuple(
        sc.Scenario(name, k, draw(TEXT), draw(st.just(defaults.config) | configs()),
                    tuple(draw(st.lists(TEXT, max_size=2))), draw(steps(defaults)), draw(TEXT))
        for k, name in enumerate(names))
    return sc.ScenarioFile("generated.json", scenarios, defaults)


def round_trips(f: sc.ScenarioFile, write: Callable[[sc.ScenarioFile], str] = dump) -> bool:
    return parse_text(write(f), f.path) == f


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scenario_files())
def test_parse_inverts_dump(f: sc.ScenarioFile) -> None:
    assert parse_text(dump(f), f.path) == f


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_every_scenario_file_survives_parse_dump_parse(path: str) -> None:
    f = load(path)
    text = dump(f)
    assert parse_text(text, path) == f
    assert dump(parse_text(text, path)) == text  # and writing it again changes nothing


def _dropping_instance_ids(f: sc.ScenarioFile) -> str:
    """A faulty writer: the steps lose their `instance_id`."""
    doc = document(f)
    for s in doc["scenarios"]:
        for step in s["steps"]:
            step.pop("instance_id", None)
    return json.dumps(doc)


def _dropping_api_versions(f: sc.ScenarioFile) -> str:
    """A faulty writer: request steps lose their `api_version` (a fuzz finding's replay would
    then run at the broker's choice of version)."""
    doc = document(f)
    for s in doc["scenarios"]:
        for step in s["steps"]:
            step.pop("api_version", None)
    return json.dumps(doc)


def test_a_writer_that_drops_api_versions_fails_the_round_trip() -> None:
    found = find(scenario_files(), lambda f: not round_trips(f, _dropping_api_versions),
                 settings=settings(max_examples=300, deadline=None, database=None, phases=[Phase.generate]))
    assert round_trips(found) and not round_trips(found, _dropping_api_versions)


def test_a_writer_that_drops_a_field_fails_the_round_trip() -> None:
    # negative control: the generator reaches records the faulty writer loses, and the property says so
    found = find(scenario_files(), lambda f: not round_trips(f, _dropping_instance_ids),
                 settings=settings(max_examples=300, deadline=None, database=None, phases=[Phase.generate]))
    assert round_trips(found) and not round_trips(found, _dropping_instance_ids)

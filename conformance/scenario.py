"""Typed records of a scenario file, format `kafka-classic-group-conformance/1`.

See ../shared/scenario-format.md. `parse.py` builds these records from JSON, `dump.py` writes them
back (its inverse: parsing what it writes gives the same records); `runner.py` runs them. The
records hold resolved values: a join step carries every field, the file's `defaults` filled in.
Every step keeps `raw`, the step's JSON as written (not part of its value: records equal as values
whatever the spelling), so that a finding can be printed back as the scenario file it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from model.coordinator_api import CoordinatorConfig, MemberSpec
from model.messages import ProtocolMetadata, TopicPartition
from model.vocabulary import Error, GroupState

FORMAT: str = "kafka-classic-group-conformance/1"

# A JSON value made immutable: lists become tuples, objects become tuples of (key, value) pairs.
Frozen = Union[None, bool, int, str, tuple["Frozen", ...], "FrozenObject"]


@dataclass(frozen=True, slots=True)
class FrozenObject:
    items: tuple[tuple[str, Frozen], ...]

    def get(self, key: str) -> Frozen:
        for k, v in self.items:
            if k == key:
                return v
        return None


@dataclass(frozen=True, slots=True)
class MemberRef:
    """A member id as written in a step: `""` (unknown member), a literal id, or `"$X"`."""

    text: str

    @property
    def binding(self) -> Optional[str]:
        return self.text[1:] if self.text.startswith("$") else None


@dataclass(frozen=True, slots=True)
class GenerationRef:
    """An integer generation, or `"$gen:<id>"`: the generation of that JoinGroup response."""

    value: Optional[int] = None
    join_id: Optional[str] = None

    def __str__(self) -> str:
        return f"$gen:{self.join_id}" if self.join_id is not None else str(self.value)


@dataclass(frozen=True, slots=True)
class JoinDefaults:
    """The fields a `join` step (and a `setup_add_group` member) leaves out: the file's
    `defaults.join` over these built-in values, those of a default Java consumer (KafkaConsumer 3.9:
    JoinGroup v9; session.timeout.ms 45000 is the client default but scenarios here use Kafka's
    test value 10000; max.poll.interval.ms 300000)."""

    client_id: str = "consumer"
    protocol_type: str = "consumer"
    protocols: tuple[ProtocolMetadata, ...] = (ProtocolMetadata("range", b""),)
    session_timeout_ms: int = 10000
    rebalance_timeout_ms: int = 300000
    require_known_member_id: bool = True
    supports_skip_assignment: bool = True


@dataclass(frozen=True, slots=True)
class Defaults:
    """A file's `defaults`: the group id of a step with no `group`, the configuration each
    scenario's `config` is merged over, and the join fields."""

    group: Optional[str] = None
    config: CoordinatorConfig = CoordinatorConfig()
    join: JoinDefaults = JoinDefaults()


@dataclass(frozen=True, slots=True)
class Expect:
    """One `expect` entry: a key of the op's expect table and its (shape-checked) value."""

    key: str
    value: Frozen


@dataclass(frozen=True, slots=True)
class RequestMeta:
    """What every request step carries besides its op-specific fields."""

    index: int
    id: Optional[str]
    group: str
    await_later: bool
    expect: tuple[Expect, ...]
    bind: Optional[str]  # binds $X to the response's member id
    # the API version to send it at, on a target that speaks several (a broker); None: its choice
    api_version: Optional[int] = None
    raw: str = field(default="", compare=False, repr=False, kw_only=True)  # the JSON as written


@dataclass(frozen=True, slots=True)
class _Step:
    """A step that is not a request: its position in the scenario."""

    index: int
    raw: str = field(default="", compare=False, repr=False, kw_only=True)  # the JSON as written


@dataclass(frozen=True, slots=True)
class _GroupStep(_Step):
    group: str


@dataclass(frozen=True, slots=True)
class _RequestStep:
    meta: RequestMeta


@dataclass(frozen=True, slots=True)
class _MemberStep(_RequestStep):
    member: MemberRef


@dataclass(frozen=True, slots=True)
class _GenerationStep(_MemberStep):
    generation: GenerationRef
    instance_id: Optional[str]


@dataclass(frozen=True, slots=True)
class JoinStep(_MemberStep):
    instance_id: Optional[str]
    protocol_type: str
    protocols: tuple[ProtocolMetadata, ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    require_known_member_id: bool
    supports_skip_assignment: bool
    client_id: str
    append_error: Optional[Error]


@dataclass(frozen=True, slots=True)
class SyncStep(_GenerationStep):
    assignments: tuple[tuple[MemberRef, bytes], ...]
    protocol_type: Optional[str]
    protocol_name: Optional[str]


@dataclass(frozen=True, slots=True)
class HeartbeatStep(_GenerationStep):
    pass


@dataclass(frozen=True, slots=True)
class CommitStep(_GenerationStep):
    offsets: tuple[tuple[TopicPartition, int], ...]


@dataclass(frozen=True, slots=True)
class LeaveStep(_RequestStep):
    members: tuple[tuple[MemberRef, Optional[str]], ...]


@dataclass(frozen=True, slots=True)
class FetchOffsetsStep(_RequestStep):
    partitions: Optional[tuple[TopicPartition, ...]]  # None = every committed partition


@dataclass(frozen=True, slots=True)
class DescribeStep(_RequestStep):
    pass


@dataclass(frozen=True, slots=True)
class ListGroupsStep(_RequestStep):
    states: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeleteGroupsStep(_RequestStep):
    groups: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AdvanceStep(_Step):
    ms: int


@dataclass(frozen=True, slots=True)
class CheckResponseStep(_Step):
    id: str
    op: str  # the op of the request step `id` names
    expect: tuple[Expect, ...]
    bind: Optional[str]
    # Real-clock targets (a broker): the response may arrive up to this much real time later
    # (the runner waits for it); `tolerance_why` says why the step needs it. Exact targets ignore it.
    tolerance_ms: int = 0
    tolerance_why: str = ""
    # the response must satisfy one of these (the answers a model allows), instead of `expect`
    expect_any: tuple[tuple[Expect, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class CheckPendingStep(_Step):
    id: str
    # Real-clock targets: a response that arrived at most this much real time ago still passes.
    tolerance_ms: int = 0
    tolerance_why: str = ""


@dataclass(frozen=True, slots=True)
class CheckGroupStep(_GroupStep):
    expect: tuple[Expect, ...]
    # Real-clock targets: when this step directly follows an advance, it runs this much real time
    # before the advance's end (the rest of the advance follows it): a check just before a deadline
    # stays before it on a clock that runs ahead by the time requests took. Exact targets ignore it.
    tolerance_ms: int = 0
    tolerance_why: str = ""


@dataclass(frozen=True, slots=True)
class CheckErrorCountsStep(_Step):
    ids: tuple[str, ...]
    counts: tuple[tuple[Error, int], ...]


@dataclass(frozen=True, slots=True)
class CheckSameErrorsStep(_Step):
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class CheckOneOfStep(_Step):
    ids: tuple[str, ...]
    op: str
    leader_expect: tuple[Expect, ...]
    follower_expect: tuple[Expect, ...]
    leader_is_other: bool  # the others' `leader` is the member id of the one that matched


@dataclass(frozen=True, slots=True)
class SetupAddGroupStep(_GroupStep):
    state: GroupState
    members: tuple[MemberSpec, ...]
    protocol_type: str


@dataclass(frozen=True, slots=True)
class SetupPrepareRebalanceStep(_GroupStep):
    """Forces a rebalance of the group."""


@dataclass(frozen=True, slots=True)
class SetupForceTransitionStep(_GroupStep):
    state: GroupState


@dataclass(frozen=True, slots=True)
class SetupUnloadStep(_GroupStep):
    """Extension of the format: partition emigration (WhiteBoxCoordinator.unload)."""


@dataclass(frozen=True, slots=True)
class SetupLoadStep(_GroupStep):
    """Extension of the format: partition immigration (WhiteBoxCoordinator.load)."""


@dataclass(frozen=True, slots=True)
class TransitionCase:
    path: tuple[GroupState, ...]
    ok: bool


@dataclass(frozen=True, slots=True)
class UnitTransitionsStep(_Step):
    start: GroupState
    cases: tuple[TransitionCase, ...]
    can_rebalance: Optional[bool]


@dataclass(frozen=True, slots=True)
class SelectProtocolCase:
    members: tuple[tuple[str, ...], ...]  # each member's protocol names, in preference order
    protocol_type: str
    expect: tuple[Optional[str], ...]  # acceptable selections (several when Kafka breaks a tie)


@dataclass(frozen=True, slots=True)
class SupportsProtocolsCase:
    group_members: tuple[tuple[str, ...], ...]
    group_protocol_type: str
    protocol_type: str
    protocols: tuple[str, ...]
    ok: bool


@dataclass(frozen=True, slots=True)
class UnitSelectProtocolStep(_Step):
    cases: tuple[SelectProtocolCase, ...]
    supports_protocols: tuple[SupportsProtocolsCase, ...]


RequestStep = Union[
    JoinStep, SyncStep, HeartbeatStep, LeaveStep, CommitStep, FetchOffsetsStep, DescribeStep,
    ListGroupsStep, DeleteGroupsStep,
]
Step = Union[
    RequestStep, AdvanceStep, CheckResponseStep, CheckPendingStep, CheckGroupStep,
    CheckErrorCountsStep, CheckSameErrorsStep, CheckOneOfStep, SetupAddGroupStep,
    SetupPrepareRebalanceStep, SetupForceTransitionStep, SetupUnloadStep, SetupLoadStep,
    UnitTransitionsStep, UnitSelectProtocolStep,
]

REQUEST_STEP_TYPES = (JoinStep, SyncStep, HeartbeatStep, LeaveStep, CommitStep, FetchOffsetsStep,
                      DescribeStep, ListGroupsStep, DeleteGroupsStep)
# The op of each step type, as the file spells it.
REQUEST_OPS: dict[type, str] = dict(zip(REQUEST_STEP_TYPES, (
    "join", "sync", "heartbeat", "leave", "commit", "fetch_offsets", "describe", "list_groups", "delete_groups")))
OP_OF_TYPE: dict[type, str] = {
    **REQUEST_OPS,
    AdvanceStep: "advance",
    CheckResponseStep: "check_response",
    CheckPendingStep: "check_pending",
    CheckGroupStep: "check_group",
    CheckErrorCountsStep: "check_error_counts",
    CheckSameErrorsStep: "check_same_errors",
    CheckOneOfStep: "check_one_of",
    SetupAddGroupStep: "setup_add_group",
    SetupPrepareRebalanceStep: "setup_prepare_rebalance",
    SetupForceTransitionStep: "setup_force_transition",
    SetupUnloadStep: "setup_unload",
    SetupLoadStep: "setup_load",
    UnitTransitionsStep: "unit_transitions",
    UnitSelectProtocolStep: "unit_select_protocol",
}
BACKDOOR_STEPS: tuple[type, ...] = (
    SetupAddGroupStep,
    SetupPrepareRebalanceStep,
    SetupForceTransitionStep,
    UnitTransitionsStep,
    UnitSelectProtocolStep,
)
WHITE_BOX_STEPS: tuple[type, ...] = (SetupUnloadStep, SetupLoadStep)
# the steps that set a group up through a test hook: a group and the `backdoor: true` flag
SETUP_STEPS = (SetupAddGroupStep, SetupPrepareRebalanceStep, SetupForceTransitionStep, SetupUnloadStep,
               SetupLoadStep)


def step_index(step: Step) -> int:
    return step.meta.index if isinstance(step, REQUEST_STEP_TYPES) else step.index


def step_raw(step: Step) -> str:
    return step.meta.raw if isinstance(step, REQUEST_STEP_TYPES) else step.raw


def step_op(step: Step) -> str:
    return OP_OF_TYPE[type(step)]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    index: int
    source: str
    config: CoordinatorConfig
    tags: tuple[str, ...]
    steps: tuple[Step, ...]
    notes: str
    # the scenario object as written (without the file's defaults)
    raw: str = field(default="", compare=False, repr=False, kw_only=True)


@dataclass(frozen=True, slots=True)
class ScenarioFile:
    path: str
    scenarios: tuple[Scenario, ...]
    defaults: Defaults = Defaults()
    # the file's `defaults` object as written ("{}" when absent)
    defaults_raw: str = field(default="{}", compare=False, repr=False, kw_only=True)

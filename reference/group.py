"""GroupMetadata and MemberMetadata, in the shape of Kafka's GroupMetadata.scala / MemberMetadata.scala.

Plain mutable objects guarded by nothing (the reference is single-threaded, Kafka holds the group
lock). Deterministic choices where Kafka iterates a hash map:

* members are kept in **insertion order** (a Python dict); every "any member" / "all members"
  iteration (new leader on removal, new joined leader, leader's member list, propagation order,
  DescribeGroups order) follows it;
* `replace_static_member` keeps the member at its position (Kafka re-keys the same object);
* `select_protocol` breaks vote ties by the protocol whose first vote came earliest in member order.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Final, Optional

from model.messages import JoinGroupMember, JoinGroupResponse, SyncGroupResponse, TopicPartition
from model.vocabulary import Error, GroupState

from reference.errors import IllegalGroupState, IllegalStateTransition

JoinCallback = Callable[[JoinGroupResponse], None]
SyncCallback = Callable[[SyncGroupResponse], None]
Protocols = tuple[tuple[str, bytes], ...]

# GM:37-126, each state's validPreviousStates, written out independently of model/.
_VALID_PREVIOUS: Final[dict[GroupState, frozenset[GroupState]]] = {
    GroupState.PreparingRebalance: frozenset(
        {GroupState.Stable, GroupState.CompletingRebalance, GroupState.Empty}
    ),
    GroupState.CompletingRebalance: frozenset({GroupState.PreparingRebalance}),
    GroupState.Stable: frozenset({GroupState.CompletingRebalance}),
    GroupState.Empty: frozenset({GroupState.PreparingRebalance}),
    GroupState.Dead: frozenset(
        {
            GroupState.Stable,
            GroupState.PreparingRebalance,
            GroupState.CompletingRebalance,
            GroupState.Empty,
            GroupState.Dead,
        }
    ),
}


def valid_previous_states(target: GroupState) -> frozenset[GroupState]:
    return _VALID_PREVIOUS.get(target, frozenset())


@dataclass(eq=False, slots=True)
class MemberMetadata:
    """MM: one member, its protocols, timeouts, parked callbacks and heartbeat flags (mutable, and
    compared by identity, like Kafka's object)."""

    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: Protocols
    assignment: bytes = b""
    awaiting_join_callback: Optional[JoinCallback] = field(default=None, init=False)
    awaiting_sync_callback: Optional[SyncCallback] = field(default=None, init=False)
    is_new: bool = field(default=False, init=False)
    heartbeat_satisfied: bool = field(default=False, init=False)

    @property
    def is_static_member(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync_callback is not None

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.supported_protocols:
            if name == protocol:
                return data
        raise IllegalGroupState(f"Member {self.member_id} does not support protocol {protocol}")

    def has_satisfied_heartbeat(self, parked_counts: bool = True) -> bool:
        """MM:93. `parked_counts=False` is the seeded bug `session-expiry-while-parked`."""
        if self.is_new:
            return self.heartbeat_satisfied
        if parked_counts and (self.is_awaiting_join or self.is_awaiting_sync):
            return True
        return self.heartbeat_satisfied

    def matches(self, protocols: Protocols) -> bool:
        """MM:109: same names, same bytes, same order."""
        return tuple(protocols) == tuple(self.supported_protocols)

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise IllegalGroupState(f"Member {self.member_id} supports none of {sorted(candidates)}")


@dataclass(frozen=True, slots=True)
class PersistedMember:
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes  # metadata of the selected protocol only (GMM groupMetadataValue)
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    """The value of the last GroupMetadata record appended for a group (GMM:1211 reads it back)."""

    generation_id: int
    protocol_type: Optional[str]
    protocol_name: Optional[str]
    leader_id: Optional[str]
    members: tuple[PersistedMember, ...]


class GroupMetadata:
    """GM: one group. `on_transition` is called after every successful `transition_to`."""

    def __init__(
        self,
        group_id: str,
        initial_state: GroupState,
        on_transition: Optional[Callable[["GroupMetadata", GroupState, GroupState], None]] = None,
    ) -> None:
        self.group_id = group_id
        self.state = initial_state
        self.protocol_type: Optional[str] = None
        self.protocol_name: Optional[str] = None
        self.generation_id = 0
        self.leader_id: Optional[str] = None
        self._members: dict[str, MemberMetadata] = {}
        self._static_members: dict[str, str] = {}
        self._pending_members: dict[str, None] = {}  # an ordered set
        self._num_members_awaiting_join = 0
        self._supported_protocols: Counter[str] = Counter()
        self._pending_sync_members: dict[str, None] = {}
        self.offsets: dict[TopicPartition, int] = {}
        self.new_member_added = False
        self._on_transition = on_transition

    # --- basic queries -------------------------------------------------------------------

    def is_(self, state: GroupState) -> bool:
        return self.state == state

    def has(self, member_id: str) -> bool:
        return member_id in self._members

    def get(self, member_id: str) -> MemberMetadata:
        try:
            return self._members[member_id]
        except KeyError:
            raise IllegalGroupState(f"Group {self.group_id} has no member {member_id}") from None

    @property
    def size(self) -> int:
        return len(self._members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def all_members(self) -> list[str]:
        return list(self._members)

    def all_member_metadata(self) -> list[MemberMetadata]:
        return list(self._members.values())

    def all_static_members(self) -> list[str]:
        return list(self._static_members)

    def current_static_member_id(self, instance_id: str) -> Optional[str]:
        return self._static_members.get(instance_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self._pending_members

    def pending_members(self) -> list[str]:
        return list(self._pending_members)

    @property
    def num_awaiting(self) -> int:
        return self._num_members_awaiting_join

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self._members.values()), default=0)

    def can_rebalance(self) -> bool:
        return self.state in valid_previous_states(GroupState.PreparingRebalance)

    def has_all_members_joined(self, count_pending: bool = True) -> bool:
        """GM:392. `count_pending=False` is the seeded bug `pending-ignored-in-join-check`."""
        joined = len(self._members) == self._num_members_awaiting_join
        return joined and (not count_pending or not self._pending_members)

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self._members.values() if not m.is_awaiting_join]

    def has_offsets(self) -> bool:
        return bool(self.offsets)

    # --- state machine -------------------------------------------------------------------

    def transition_to(self, target: GroupState) -> None:
        """GM:428 transitionTo: raise unless the current state is a valid previous state."""
        source = self.state
        if source not in valid_previous_states(target):
            raise IllegalStateTransition(self.group_id, source, target)
        self.state = target
        if self._on_transition is not None:
            self._on_transition(self, source, target)

    # --- membership ----------------------------------------------------------------------

    def add(self, member: MemberMetadata, callback: Optional[JoinCallback] = None) -> None:
        """GM:241 add."""
        if member.group_instance_id is not None:
            if member.group_instance_id in self._static_members:
                raise IllegalGroupState(
                    f"Static member with groupInstanceId={member.group_instance_id} cannot be "
                    f"added to group {self.group_id} since it is already a member"
                )
            self._static_members[member.group_instance_id] = member.member_id
        if not self._members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type or not self.supports_protocols(
            member.protocol_type, {name for name, _ in member.supported_protocols}
        ):
            raise IllegalGroupState(f"Member {member.member_id} is inconsistent with group {self.group_id}")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self._members[member.member_id] = member
        self._supported_protocols.update(name for name, _ in member.supported_protocols)
        member.awaiting_join_callback = callback
        if member.is_awaiting_join:
            self._num_members_awaiting_join += 1
        self._pending_members.pop(member.member_id, None)

    def insert_unchecked(self, member: MemberMetadata) -> None:
        """Put a member in without `add`'s checks (the log loader; scratch groups for pure facts)."""
        self._members[member.member_id] = member
        self._supported_protocols.update(name for name, _ in member.supported_protocols)
        if member.group_instance_id is not None:
            self._static_members[member.group_instance_id] = member.member_id

    def remove(self, member_id: str) -> None:
        """GM:268 remove: no callback is answered here; the leader moves to the first member left."""
        member = self._members.pop(member_id, None)
        if member is not None:
            self._supported_protocols.subtract(name for name, _ in member.supported_protocols)
            if member.is_awaiting_join:
                self._num_members_awaiting_join -= 1
            if member.group_instance_id is not None:
                self._static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self._members), None)
        self._pending_members.pop(member_id, None)
        self._pending_sync_members.pop(member_id, None)

    def maybe_elect_new_joined_leader(self) -> bool:
        """GM:290: a leader that has not rejoined is replaced by the first rejoined member."""
        if self.leader_id is None:
            return False
        if self.get(self.leader_id).is_awaiting_join:
            return True
        for member_id, member in self._members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def replace_static_member(self, instance_id: str, old_member_id: str, new_member_id: str) -> MemberMetadata:
        """GM:319: re-key the member; its parked Join/Sync are answered FENCED_INSTANCE_ID first."""
        if old_member_id not in self._members:
            raise IllegalGroupState(f"Cannot replace non-existing member id {old_member_id}")
        member = self._members[old_member_id]
        self.maybe_invoke_join_callback(member, JoinGroupResponse(Error.FENCED_INSTANCE_ID, member_id=old_member_id))
        self.maybe_invoke_sync_callback(member, SyncGroupResponse(Error.FENCED_INSTANCE_ID))
        member.member_id = new_member_id
        self._members = {
            (new_member_id if key == old_member_id else key): value for key, value in self._members.items()
        }
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self._static_members[instance_id] = new_member_id
        return member

    def add_pending_member(self, member_id: str) -> None:
        if self.has(member_id):
            raise IllegalGroupState(f"Attempt to add pending member {member_id} which is already a member")
        self._pending_members[member_id] = None

    def add_pending_sync_member(self, member_id: str) -> None:
        if not self.has(member_id):
            raise IllegalGroupState(f"Attempt to add a pending sync for non-member {member_id}")
        self._pending_sync_members[member_id] = None

    def remove_pending_sync_member(self, member_id: str) -> None:
        if not self.has(member_id):
            raise IllegalGroupState(f"Attempt to remove a pending sync for non-member {member_id}")
        self._pending_sync_members.pop(member_id, None)

    def has_received_sync_from_all_members(self) -> bool:
        return not self._pending_sync_members

    def all_pending_sync_members(self) -> list[str]:
        return list(self._pending_sync_members)

    def clear_pending_sync_members(self) -> None:
        self._pending_sync_members.clear()

    def update_member(
        self,
        member: MemberMetadata,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        callback: Optional[JoinCallback],
    ) -> None:
        """GM:518 updateMember: a new callback silently replaces a parked one."""
        self._supported_protocols.subtract(name for name, _ in member.supported_protocols)
        member.supported_protocols = protocols
        self._supported_protocols.update(name for name, _ in protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and not member.is_awaiting_join:
            self._num_members_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self._num_members_awaiting_join -= 1
        member.awaiting_join_callback = callback

    def maybe_invoke_join_callback(self, member: MemberMetadata, response: JoinGroupResponse) -> None:
        callback = member.awaiting_join_callback
        if callback is not None:
            member.awaiting_join_callback = None
            self._num_members_awaiting_join -= 1
            callback(response)

    def maybe_invoke_sync_callback(self, member: MemberMetadata, response: SyncGroupResponse) -> bool:
        callback = member.awaiting_sync_callback
        if callback is None:
            return False
        member.awaiting_sync_callback = None
        callback(response)
        return True

    # --- protocols -----------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        """GM:464."""
        if self.is_(GroupState.Empty):
            return bool(protocol_type) and bool(protocols)
        size = len(self._members)
        return self.protocol_type == protocol_type and any(
            self._supported_protocols[name] == size for name in protocols
        )

    def candidate_protocols(self) -> set[str]:
        size = len(self._members)
        return {name for name, count in self._supported_protocols.items() if count == size}

    def select_protocol(self) -> str:
        """GM:434: each member votes its first candidate; most votes wins (tie: earliest first vote)."""
        if not self._members:
            raise IllegalGroupState("Cannot select protocol for empty group")
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self._members.values())
        best = max(votes.values())
        return next(name for name, count in votes.items() if count == best)

    # --- generations ---------------------------------------------------------------------

    def init_next_generation(self, bump: bool = True) -> None:
        """GM:574. `bump=False` is the seeded bug `no-generation-bump`."""
        if bump:
            self.generation_id += 1
        if self._members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.CompletingRebalance)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.Empty)
        self.clear_pending_sync_members()

    def current_member_metadata(self) -> tuple[JoinGroupMember, ...]:
        if self.state in (GroupState.Dead, GroupState.PreparingRebalance) or self.protocol_name is None:
            raise IllegalGroupState(f"Cannot obtain member metadata for group in state {self.state.value}")
        protocol = self.protocol_name
        return tuple(
            JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(protocol)) for m in self._members.values()
        )

    def to_record(self, assignment: dict[str, bytes]) -> GroupMetadataRecord:
        """GMM groupMetadataValue: members with the selected protocol's metadata and `assignment`."""
        members = tuple(
            PersistedMember(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata(self.protocol_name) if self.protocol_name is not None else b"",
                assignment.get(m.member_id, b""),
            )
            for m in self._members.values()
        )
        return GroupMetadataRecord(
            self.generation_id, self.protocol_type, self.protocol_name, self.leader_id, members
        )

    @classmethod
    def from_record(
        cls,
        group_id: str,
        record: GroupMetadataRecord,
        on_transition: Optional[Callable[["GroupMetadata", GroupState, GroupState], None]] = None,
    ) -> "GroupMetadata":
        """GMM:1211 readGroupMessageValue: Stable with the persisted members, or Empty."""
        state = GroupState.Stable if record.members else GroupState.Empty
        group = cls(group_id, state, on_transition)
        group.generation_id = record.generation_id
        group.protocol_type = record.protocol_type
        group.protocol_name = record.protocol_name
        for pm in record.members:
            protocols: Protocols = ((record.protocol_name or "", pm.subscription),)
            member = MemberMetadata(
                pm.member_id,
                pm.group_instance_id,
                pm.client_id,
                pm.rebalance_timeout_ms,
                pm.session_timeout_ms,
                record.protocol_type or "",
                protocols,
                pm.assignment,
            )
            group.insert_unchecked(member)
        group.leader_id = record.leader_id
        return group

"""ReferenceCoordinator: Kafka 3.9's classic GroupCoordinator.scala, re-written in Python.

Function names follow GroupCoordinator.scala (`handle_join_group` = `handleJoinGroup`, ...); the
comments cite the semantics digest (../shared/reference/kafka-classic-semantics.md, "GC:<line>").

Responses: every handler answers through a callback. An answer is recorded (Recorder.on_response)
when Kafka would send it, and handed to the caller's callback when the outermost public call
(`handle`, `advance`, `unload`, ...) returns, so a callback may safely send the next request.
A JoinGroup replaced by a second JoinGroup of the same parked member is never answered (GM:518).

Recording: `on_timer` is reported for a delayed operation only when its expiry/completion acts on
the group currently cached under that id and not Dead: DelayedJoinComplete/DelayedJoinExpire/
InitialDelayedJoinExpire, MemberSessionExpire (only when the member is really removed),
PendingMemberExpire (only when the id is still pending), DelayedSyncExpire (when it removes
members), DelayedSyncComplete (when every member has synced). PartitionUnload, PartitionLoad and
OffsetsExpire are reported for every call of `unload`, `load`, `expire_offsets`.
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, TypeVar, get_args

from model.coordinator_api import CoordinatorConfig, MemberSpec, Recorder, ResponseCallback
from model.messages import (
    DeleteGroupsRequest, DeleteGroupsResponse, DescribedGroup, DescribedMember,
    DescribeGroupsRequest, DescribeGroupsResponse, GroupView, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListedGroup,
    ListGroupsRequest, ListGroupsResponse, MemberLeaveResult, MemberView, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, Request, Response,
    SyncGroupRequest, SyncGroupResponse, TopicPartition
)
from model.vocabulary import ApiKey, Error, GroupState, TimerEvent

from reference.bugs import BUGS, HEARTBEAT_LATE_MS, SESSION_EARLY_MS, SESSION_LATE_MS
from reference.errors import IllegalGroupState, IllegalStateTransition, ReferenceUsageError
from reference.group import GroupMetadata, JoinCallback, MemberMetadata, Protocols, SyncCallback
from reference.manager import GroupMetadataManager
from reference.purgatory import (
    DelayedHeartbeat, DelayedJoin, DelayedOperation, DelayedSync, InitialDelayedJoin, Purgatory,
    VirtualClock, join_key, member_key, sync_key
)

_EMPTY_ID_ALLOWED = frozenset(
    {ApiKey.OffsetCommit, ApiKey.OffsetFetch, ApiKey.DescribeGroups, ApiKey.DeleteGroups}
)


_REQUEST_TYPES = get_args(Request)
_R = TypeVar("_R")


def _uuid4() -> str:
    return str(uuid.uuid4())


def _join_error(error: Error, member_id: str) -> JoinGroupResponse:
    """GC:1835 JoinGroupResult(memberId, error): generation -1, leader "", no protocol, no members."""
    return JoinGroupResponse(error, member_id=member_id)


def _join_result(
    group: GroupMetadata,
    member_id: str,
    leader: Optional[str],
    *,
    with_members: bool = False,
    skip_assignment: bool = False,
    error: Error = Error.NONE,
) -> JoinGroupResponse:
    """JoinGroupResult at the group's current generation, protocol type and name; the member list
    only for the leader (`with_members`)."""
    return JoinGroupResponse(
        error,
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=leader or "",
        member_id=member_id,
        skip_assignment=skip_assignment,
        members=group.current_member_metadata() if with_members else (),
    )


class ReferenceCoordinator:
    """An independent implementation of `model.coordinator_api.BackdoorCoordinator`."""

    def __init__(
        self,
        config: CoordinatorConfig,
        recorder: Optional[Recorder] = None,
        bugs: frozenset[str] = frozenset(),
        *,
        uuid_source: Callable[[], str] = _uuid4,
        clock: Optional[VirtualClock] = None,
    ) -> None:
        unknown = sorted(set(bugs) - BUGS.keys())
        if unknown:
            raise ReferenceUsageError(f"unknown seeded bug(s) {unknown}; known: {sorted(BUGS)}")
        self._config = config
        self._recorder = recorder
        self._bugs = frozenset(bugs)
        self._uuid_source = uuid_source
        self._clock = clock if clock is not None else VirtualClock()
        self._purgatory = Purgatory(self._clock)
        self._manager = GroupMetadataManager(config.not_owned_groups, config.append_result)
        self._next_request_id = 0
        self._depth = 0
        self._cancelling_sync = False
        self._outbox: list[tuple[Callable[[Any], None], Any]] = []
        # KafkaApis.handle: one handler per API key (each answers through `respond`).
        self._handlers: dict[ApiKey, Callable[[Any, Callable[[Any], None]], None]] = {
            ApiKey.JoinGroup: self.handle_join_group,
            ApiKey.SyncGroup: self.handle_sync_group,
            ApiKey.Heartbeat: self.handle_heartbeat,
            ApiKey.LeaveGroup: self.handle_leave_group,
            ApiKey.OffsetCommit: self.handle_commit_offsets,
            ApiKey.OffsetFetch: self.handle_fetch_offsets,
            ApiKey.DescribeGroups: self.handle_describe_groups,
            ApiKey.ListGroups: self.handle_list_groups,
            ApiKey.DeleteGroups: self.handle_delete_groups,
        }

    # ======================================================================================
    # Coordinator protocol
    # ======================================================================================

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def next_deadline_ms(self) -> Optional[int]:
        """The earliest armed timer's deadline: `advance` past it fires it (None: nothing armed).

        Used by a driver on a real clock (server/) to wake up exactly when a timer is due."""
        return self._purgatory.next_deadline_ms()

    def advance(self, ms: int) -> None:
        with self._operation():
            self._clock.advance(ms)
            self._purgatory.fire_expired()

    def handle(self, request: Request, callback: ResponseCallback) -> None:
        if not isinstance(request, _REQUEST_TYPES):
            raise ReferenceUsageError(f"handle: not a group request: {request!r}")
        with self._operation():
            self._next_request_id += 1
            request_id = self._next_request_id
            group_id = _request_group_id(request)
            if self._recorder is not None:
                self._recorder.on_request(self.now_ms(), request_id, request)
            answered = False

            def respond(response: Response) -> None:
                nonlocal answered
                if answered:
                    raise IllegalGroupState(f"request {request_id} ({request!r}) answered twice")
                answered = True
                if self._recorder is not None:
                    self._recorder.on_response(self.now_ms(), request_id, group_id, response)
                self._outbox.append((callback, response))

            self._handlers[request.api_key](request, respond)

    @contextmanager
    def _operation(self) -> Iterator[None]:
        """Deliver answers to callers once the outermost public call has finished its work."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if self._depth == 0 and "empty-group-deleted" in self._bugs:
            for group in self._manager.current_groups():
                # (one that had a generation: a new group's MEMBER_ID_REQUIRED join keeps it)
                if (group.is_(GroupState.Empty) and not group.has_offsets() and group.generation_id > 0
                        and not group.pending_members()):
                    self._cleanup_group_metadata(group, [])
        if self._depth == 0:
            while self._outbox:
                callback, response = self._outbox.pop(0)
                callback(response)

    # ======================================================================================
    # WhiteBoxCoordinator
    # ======================================================================================

    def group_view(self, group_id: str) -> Optional[GroupView]:
        group = self._manager.get_group(group_id)
        if group is None:
            return None
        members = tuple(
            MemberView(m.member_id, m.group_instance_id, m.session_timeout_ms, m.rebalance_timeout_ms,
                       m.is_awaiting_join, m.is_awaiting_sync, m.is_new, m.assignment)
            for m in group.all_member_metadata()
        )
        return GroupView(group.group_id, group.state, group.generation_id, group.protocol_type,
                         group.protocol_name, group.leader_id, members, tuple(group.pending_members()))

    def set_append_result(self, error: Error) -> None:
        self._manager.append_result = error

    def offsets(self, group_id: str) -> dict[TopicPartition, int]:
        """The group's cached committed offsets (empty when the group does not exist)."""
        group = self._manager.get_group(group_id)
        return dict(group.offsets) if group is not None else {}

    def unload(self, group_id: str) -> None:
        """GC:1241 onResignation for the group's partition (GMM:788 removeGroupsAndOffsets)."""
        with self._operation():
            self._record_admin(group_id, TimerEvent.PartitionUnload)
            self._manager.mark_not_owned(group_id)
            group = self._manager.get_group(group_id)
            if group is not None:
                self._on_group_unloaded(group)
                self._manager.remove_group(group)

    def load(self, group_id: str) -> None:
        """GC:1231 onElection: read back the last group record and the offsets (GMM:558)."""
        with self._operation():
            self._record_admin(group_id, TimerEvent.PartitionLoad)
            self._manager.mark_owned(group_id)
            if self._manager.get_group(group_id) is not None:
                return  # GMM loadGroup: "already a cached group" - the cached one stays
            record, offsets = self._manager.persisted(group_id)
            if record is None and not offsets:
                return
            if record is not None:
                group = GroupMetadata.from_record(group_id, record, self._on_transition)
            else:
                group = GroupMetadata(group_id, GroupState.Empty, self._on_transition)
            group.offsets = offsets
            self._manager.add_group(group)
            self._on_group_loaded(group)

    def expire_offsets(self, group_id: str) -> None:
        """GMM:847 cleanupGroupMetadata with every offset past its retention (GM removeExpiredOffsets).

        Which offsets expire: all of them if the group has no protocol type (simple consumer) or is
        Empty. Stable consumer groups would expire offsets of unsubscribed topics, but member
        metadata is opaque here (subscriptions unknown), so, like Kafka with unparsable metadata,
        nothing expires in non-Empty groups.
        """
        with self._operation():
            self._record_admin(group_id, TimerEvent.OffsetsExpire)
            group = self._manager.get_group(group_id)
            if group is None:
                return
            if group.protocol_type is None or group.is_(GroupState.Empty):
                expired = list(group.offsets)
            else:
                expired = []
            self._cleanup_group_metadata(group, expired)

    # ======================================================================================
    # BackdoorCoordinator
    # ======================================================================================

    def setup_add_group(
        self, group_id: str, state: GroupState, members: tuple[MemberSpec, ...], protocol_type: str
    ) -> None:
        """Place a group in `state` as Kafka's tests do with `new GroupMetadata(id, state)` + `add`.

        Generation 0; members are not parked; the first member is the leader. So that the group
        behaves like one that got there for real: every member's session timer is armed; Stable and
        CompletingRebalance get a selected protocol; PreparingRebalance gets its DelayedJoin (group
        rebalance timeout); CompletingRebalance has every member pending-sync and a DelayedSync.
        """
        with self._operation():
            if state == GroupState.Missing:
                raise ReferenceUsageError("setup_add_group: state Missing is not a group state")
            if self._manager.get_group(group_id) is not None:
                raise ReferenceUsageError(f"setup_add_group: group {group_id!r} already exists")
            group = GroupMetadata(group_id, GroupState.Empty, self._on_transition)
            group.protocol_type = protocol_type
            for spec in members:
                member = MemberMetadata(
                    spec.member_id,
                    spec.group_instance_id,
                    "consumer",
                    spec.rebalance_timeout_ms,
                    spec.session_timeout_ms,
                    protocol_type,
                    tuple(spec.protocols),
                )
                group.add(member)
            group.state = state
            if members and state in (GroupState.CompletingRebalance, GroupState.Stable):
                group.protocol_name = group.select_protocol()
            self._manager.add_group(group)
            for member in group.all_member_metadata():
                self._complete_and_schedule_next_heartbeat_expiration(group, member)
            if state == GroupState.PreparingRebalance:
                self._purgatory.try_complete_else_watch(
                    DelayedJoin(self, group, group.rebalance_timeout_ms), (join_key(group_id),)
                )
            elif state == GroupState.CompletingRebalance:
                for member_id in group.all_members():
                    group.add_pending_sync_member(member_id)
                self._schedule_pending_sync(group)

    def setup_prepare_rebalance(self, group_id: str) -> None:
        with self._operation():
            self.prepare_rebalance(self._backdoor_group(group_id))

    def setup_force_transition(self, group_id: str, state: GroupState) -> None:
        with self._operation():
            self._backdoor_group(group_id).transition_to(state)

    def can_transition(self, start: GroupState, path: tuple[GroupState, ...]) -> bool:
        scratch = GroupMetadata("", start)
        try:
            for state in path:
                scratch.transition_to(state)
        except IllegalStateTransition:
            return False
        return True

    def select_protocol(
        self, members_protocols: tuple[tuple[str, ...], ...], group_protocol_type: str
    ) -> Optional[str]:
        scratch = GroupMetadata("", GroupState.Empty)
        for index, names in enumerate(members_protocols):
            scratch.insert_unchecked(
                MemberMetadata(
                    f"m{index}", None, "", 0, 0, group_protocol_type, tuple((n, b"") for n in names)
                )
            )
        if scratch.size == 0 or not scratch.candidate_protocols():
            return None
        return scratch.select_protocol()

    def _backdoor_group(self, group_id: str) -> GroupMetadata:
        group = self._manager.get_group(group_id)
        if group is None:
            raise ReferenceUsageError(f"backdoor step: group {group_id!r} does not exist")
        return group

    # ======================================================================================
    # Common checks (GC:1174 validateGroupStatus) and member validation (GC:373)
    # ======================================================================================

    def _validate_group_status(self, group_id: str, api: ApiKey) -> Optional[Error]:
        if group_id == "" and api not in _EMPTY_ID_ALLOWED:
            return Error.INVALID_GROUP_ID
        if not self._manager.is_group_local(group_id):
            return Error.NOT_COORDINATOR
        return None

    def _rejected(
        self, group_id: str, api: ApiKey, respond: Callable[[_R], None], response: Callable[[Error], _R]
    ) -> bool:
        """validateGroupStatus(...).foreach { error => responseCallback(error); return }: True once
        the request is answered with the error."""
        error = self._validate_group_status(group_id, api)
        if error is not None:
            respond(response(error))
        return error is not None

    def _members_group(
        self, group_id: str, api: ApiKey, respond: Callable[[_R], None], response: Callable[[Error], _R]
    ) -> Optional[GroupMetadata]:
        """The group a member's SyncGroup or Heartbeat is for; None once the request is answered:
        the group status error, or UNKNOWN_MEMBER_ID for a group not in the cache (GC:509, GC:841)."""
        if self._rejected(group_id, api, respond, response):
            return None
        group = self._manager.get_group(group_id)
        if group is None:
            respond(response(Error.UNKNOWN_MEMBER_ID))
        return group

    def _validate_current_member(
        self, group: GroupMetadata, member_id: str, instance_id: Optional[str], operation: str
    ) -> Optional[Error]:
        if instance_id is not None:
            current = group.current_static_member_id(instance_id)
            if current is None:
                return Error.UNKNOWN_MEMBER_ID
            if current != member_id and not (
                "static-no-fence" in self._bugs and operation == "join-group"
            ):
                return Error.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return Error.UNKNOWN_MEMBER_ID
        return None

    # ======================================================================================
    # JoinGroup (GC:161 handleJoinGroup)
    # ======================================================================================

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """GC:136 acceptJoiningMember (KIP-389, KAFKA-9885)."""
        limit = self._config.group_max_size
        if group.state in (GroupState.Empty, GroupState.Dead):
            return True
        if group.is_(GroupState.PreparingRebalance):
            if group.has(member_id) and group.get(member_id).is_awaiting_join:
                return True
            counted = group.size if "max-size-counts-members" in self._bugs else group.num_awaiting
            return counted < limit
        return group.has(member_id) or group.size < limit

    def handle_join_group(self, req: JoinGroupRequest, respond: JoinCallback) -> None:
        error = self._validate_group_status(req.group_id, ApiKey.JoinGroup)
        if error is not None:
            respond(_join_error(error, req.member_id))
            return
        config = self._config
        if not (
            config.group_min_session_timeout_ms <= req.session_timeout_ms <= config.group_max_session_timeout_ms
        ):
            respond(_join_error(Error.INVALID_SESSION_TIMEOUT, req.member_id))
            return
        is_unknown_member = req.member_id == ""
        group = self._get_or_maybe_create_group(req.group_id, is_unknown_member)
        if group is None:
            respond(_join_error(Error.UNKNOWN_MEMBER_ID, req.member_id))
            return
        protocols: Protocols = tuple((p.name, p.metadata) for p in req.protocols)
        if not self._accept_joining_member(group, req.member_id):
            group.remove(req.member_id)
            respond(_join_error(Error.GROUP_MAX_SIZE_REACHED, ""))
        elif is_unknown_member:
            self._do_new_member_join_group(group, req, protocols, respond)
        else:
            self._do_current_member_join_group(group, req, protocols, respond)
        if group.is_(GroupState.PreparingRebalance):
            self._purgatory.check_and_complete(join_key(group.group_id))

    def _get_or_maybe_create_group(self, group_id: str, create: bool) -> Optional[GroupMetadata]:
        group = self._manager.get_group(group_id)
        if group is None and create:
            group = self._manager.add_group(GroupMetadata(group_id, GroupState.Empty, self._on_transition))
        return group

    def _generate_member_id(self, client_id: str, instance_id: Optional[str]) -> str:
        prefix = instance_id if instance_id is not None else client_id
        return f"{prefix}-{self._uuid_source()}"

    def _do_new_member_join_group(
        self, group: GroupMetadata, req: JoinGroupRequest, protocols: Protocols, respond: JoinCallback
    ) -> None:
        """GC:237 doNewMemberJoinGroup."""
        if group.is_(GroupState.Dead):
            respond(_join_error(Error.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(req.protocol_type, {name for name, _ in protocols}):
            respond(_join_error(Error.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        new_member_id = self._generate_member_id(req.client_id, req.group_instance_id)
        if req.group_instance_id is not None:
            old_member_id = group.current_static_member_id(req.group_instance_id)
            if old_member_id is not None:
                self._update_static_member_and_rebalance(
                    group, old_member_id, new_member_id, req, protocols, respond
                )
            else:
                self._add_member_and_rebalance(group, new_member_id, req, protocols, respond)
        elif req.require_known_member_id:
            # GC:342: KIP-394, the id is pending until the member rejoins with it.
            group.add_pending_member(new_member_id)
            self._add_pending_member_expiration(group, new_member_id, req.session_timeout_ms)
            respond(_join_error(Error.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self._add_member_and_rebalance(group, new_member_id, req, protocols, respond)

    def _do_current_member_join_group(
        self, group: GroupMetadata, req: JoinGroupRequest, protocols: Protocols, respond: JoinCallback
    ) -> None:
        """GC:402 doCurrentMemberJoinGroup."""
        member_id = req.member_id
        if group.is_(GroupState.Dead):
            respond(_join_error(Error.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(req.protocol_type, {name for name, _ in protocols}):
            respond(_join_error(Error.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if group.is_pending_member(member_id):
            if req.group_instance_id is not None:
                # Kafka throws IllegalStateException before changing anything; KafkaApis answers
                # with JoinGroupRequest.getErrorResponse: UNKNOWN_SERVER_ERROR, member id "".
                respond(_join_error(Error.UNKNOWN_SERVER_ERROR, ""))
                return
            self._add_member_and_rebalance(group, member_id, req, protocols, respond)
            return
        error = self._validate_current_member(group, member_id, req.group_instance_id, "join-group")
        if error is not None:
            respond(_join_error(error, member_id))
            return
        state = group.state
        if state == GroupState.PreparingRebalance:
            self._update_member_and_rebalance(group, group.get(member_id), req, protocols, respond)
        elif state == GroupState.CompletingRebalance:
            member = group.get(member_id)
            if member.matches(protocols):
                respond(_join_result(group, member_id, group.leader_id, with_members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, req, protocols, respond)
        elif state == GroupState.Stable:
            member = group.get(member_id)
            if group.is_leader(member_id) or not member.matches(protocols):
                self._update_member_and_rebalance(group, member, req, protocols, respond)
            else:
                respond(_join_result(group, member_id, group.leader_id))
        else:
            # Empty (holding members) or Dead: "Attempt to add rejoining member ... unexpected state".
            respond(_join_error(Error.UNKNOWN_MEMBER_ID, member_id))

    def _add_member_and_rebalance(
        self,
        group: GroupMetadata,
        member_id: str,
        req: JoinGroupRequest,
        protocols: Protocols,
        respond: JoinCallback,
    ) -> None:
        """GC:1312 addMemberAndRebalance: the new member is parked, bounded by the new-member timeout."""
        member = MemberMetadata(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            protocols,
        )
        member.is_new = True
        if group.is_(GroupState.PreparingRebalance) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, respond)
        self._complete_and_schedule_next_expiration(group, member, self._config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(group)

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        req: JoinGroupRequest,
        protocols: Protocols,
        respond: JoinCallback,
    ) -> None:
        """GC:1459 updateMemberAndRebalance."""
        group.update_member(member, protocols, req.rebalance_timeout_ms, req.session_timeout_ms, respond)
        self._maybe_prepare_rebalance(group)

    def _update_static_member_and_rebalance(
        self,
        group: GroupMetadata,
        old_member_id: str,
        new_member_id: str,
        req: JoinGroupRequest,
        protocols: Protocols,
        respond: JoinCallback,
    ) -> None:
        """GC:1345 updateStaticMemberAndRebalance (KIP-345 restart, KAFKA-10284, KIP-814, KAFKA-14009)."""
        instance_id = req.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        self._complete_and_schedule_next_heartbeat_expiration(group, member)
        old_rebalance_timeout_ms = member.rebalance_timeout_ms
        old_session_timeout_ms = member.session_timeout_ms
        group.update_member(member, protocols, req.rebalance_timeout_ms, req.session_timeout_ms, respond)
        # GC:1368: captured *after* updateMember, so a failed persist keeps the new protocols.
        old_protocols = member.supported_protocols
        state = group.state
        if state == GroupState.Stable:
            if group.protocol_name == group.select_protocol():
                assignment = {m.member_id: m.assignment for m in group.all_member_metadata()}

                def on_store(error: Error) -> None:
                    if error != Error.NONE:
                        group.update_member(member, old_protocols, old_rebalance_timeout_ms, old_session_timeout_ms, None)
                        old_member = group.replace_static_member(instance_id, new_member_id, old_member_id)
                        self._complete_and_schedule_next_heartbeat_expiration(group, old_member)
                        respond(_join_result(group, "", current_leader, error=error))
                    elif req.supports_skip_assignment:
                        is_leader = group.is_leader(new_member_id)
                        group.maybe_invoke_join_callback(
                            member,
                            _join_result(group, new_member_id, group.leader_id, with_members=is_leader,
                                         skip_assignment=is_leader),
                        )
                    else:
                        group.maybe_invoke_join_callback(member, _join_result(group, new_member_id, current_leader))

                self._manager.store_group(group, assignment, on_store)
            else:
                self._maybe_prepare_rebalance(group)
        elif state == GroupState.CompletingRebalance:
            self.prepare_rebalance(group)
        elif state in (GroupState.Empty, GroupState.Dead):
            raise IllegalGroupState(
                f"Group {group.group_id} was not supposed to be in the state {state.value} "
                f"when the unknown static member {instance_id} rejoins."
            )

    # ======================================================================================
    # Rebalance (GC:1470 maybePrepareRebalance, GC:1478 prepareRebalance, GC:1527-1585)
    # ======================================================================================

    def _rebalance_timeout(self, group: GroupMetadata) -> int:
        """GM rebalanceTimeoutMs: the largest of the members' (seeded bug: the first member's)."""
        if "rebalance-timeout-first-member" in self._bugs:
            first = next(iter(group.all_member_metadata()), None)
            if first is not None:
                return first.rebalance_timeout_ms
        return group.rebalance_timeout_ms

    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group)

    def prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.is_(GroupState.CompletingRebalance):
            self._reset_and_propagate_assignment_error(group, Error.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        delay = self._config.group_initial_rebalance_delay_ms
        op: DelayedOperation
        if group.is_(GroupState.Empty):
            op = InitialDelayedJoin(
                self,
                self._purgatory,
                group,
                delay,
                delay,
                max(self._rebalance_timeout(group) - delay, 0),
                complete_on_check="initial-delay-completes-early" in self._bugs,
            )
        else:
            op = DelayedJoin(self, group, self._rebalance_timeout(group))
        group.transition_to(GroupState.PreparingRebalance)
        self._purgatory.try_complete_else_watch(op, (join_key(group.group_id),))

    def _remove_member_and_update_group(
        self, group: GroupMetadata, member: MemberMetadata, on_leave: bool = False
    ) -> None:
        """GC:1505: the removed member's parked JoinGroup gets UNKNOWN_MEMBER_ID with member id ""."""
        group.maybe_invoke_join_callback(member, _join_error(Error.UNKNOWN_MEMBER_ID, ""))
        group.remove(member.member_id)
        state = group.state
        if state in (GroupState.Stable, GroupState.CompletingRebalance):
            if not (on_leave and state == GroupState.Stable and "leave-no-rebalance" in self._bugs):
                self._maybe_prepare_rebalance(group)
        elif state == GroupState.PreparingRebalance:
            self._purgatory.check_and_complete(join_key(group.group_id))

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        group.remove(member_id)
        if group.is_(GroupState.PreparingRebalance):
            self._purgatory.check_and_complete(join_key(group.group_id))

    def try_complete_join(self, group: GroupMetadata, force_complete: Callable[[], bool]) -> bool:
        if group.has_all_members_joined(count_pending="pending-ignored-in-join-check" not in self._bugs):
            return force_complete()
        return False

    def on_complete_join(self, group: GroupMetadata, event: Optional[TimerEvent]) -> None:
        """GC:1535 onCompleteJoin."""
        if event is not None:
            self.record_timer(group, event, None)
        evict_static = "static-removed-at-join-timeout" in self._bugs
        for failed in group.not_yet_rejoined_members():
            if evict_static or not failed.is_static_member:
                group.remove(failed.member_id)
                self._remove_heartbeat_for_leaving_member(group, failed.member_id)
        if group.is_(GroupState.Dead):
            return
        if not group.maybe_elect_new_joined_leader() and group.size > 0:
            # "could not complete rebalance because no members rejoined": wait another timeout.
            self._purgatory.try_complete_else_watch(
                DelayedJoin(self, group, self._rebalance_timeout(group)), (join_key(group.group_id),)
            )
            return
        # event None: the InitialDelayedJoin's last expiry; DelayedJoinExpire: the rebalance timeout
        by_timer = event is None or event is TimerEvent.DelayedJoinExpire
        group.init_next_generation(bump="no-generation-bump" not in self._bugs and not (
            by_timer and "timer-join-no-generation-bump" in self._bugs))
        if group.is_(GroupState.Empty):
            self._manager.store_group(group, {}, lambda error: None)  # failure is only a WARN
            return
        unanswered = event is TimerEvent.DelayedJoinExpire and "join-unanswered-at-rebalance-timeout" in self._bugs
        for member in group.all_member_metadata():
            if unanswered and member.awaiting_join_callback is not None:
                member.awaiting_join_callback = _drop_answer
            group.maybe_invoke_join_callback(
                member,
                _join_result(group, member.member_id, group.leader_id, with_members=group.is_leader(member.member_id)),
            )
            self._complete_and_schedule_next_heartbeat_expiration(group, member)
            member.is_new = False
            group.add_pending_sync_member(member.member_id)
        self._schedule_pending_sync(group)

    # ======================================================================================
    # DelayedSync (GC:1599-1687, KAFKA-12890)
    # ======================================================================================

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.remove_pending_sync_member(member_id)
        self._purgatory.check_and_complete(sync_key(group.group_id))

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.clear_pending_sync_members()
        self._cancelling_sync = True  # a cancelled DelayedSync is not reported as DelayedSyncComplete
        try:
            self._purgatory.check_and_complete(sync_key(group.group_id))
        finally:
            self._cancelling_sync = False

    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        if "no-delayed-sync" in self._bugs:
            return
        self._purgatory.try_complete_else_watch(
            DelayedSync(self, group, group.generation_id, self._rebalance_timeout(group)), (sync_key(group.group_id),)
        )

    def try_complete_pending_sync(
        self, group: GroupMetadata, generation_id: int, force_complete: Callable[[], bool]
    ) -> bool:
        if generation_id != group.generation_id:
            return force_complete()
        if group.state in (GroupState.Dead, GroupState.Empty, GroupState.PreparingRebalance):
            return force_complete()
        if group.has_received_sync_from_all_members():
            if not self._cancelling_sync:
                self.record_timer(group, TimerEvent.DelayedSyncComplete, None)
            return force_complete()
        return False

    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None:
        if generation_id != group.generation_id:
            return
        if group.state not in (GroupState.CompletingRebalance, GroupState.Stable):
            return
        if group.has_received_sync_from_all_members():
            return
        self.record_timer(group, TimerEvent.DelayedSyncExpire, None)
        for member_id in group.all_pending_sync_members():
            group.remove(member_id)
            self._remove_heartbeat_for_leaving_member(group, member_id)
        self.prepare_rebalance(group)

    # ======================================================================================
    # Heartbeats / session timers (GC:1281, GC:1301, GC:1689-1735)
    # ======================================================================================

    def _complete_and_schedule_next_heartbeat_expiration(self, group: GroupMetadata, member: MemberMetadata) -> None:
        timeout = member.session_timeout_ms
        if "session-expiry-late" in self._bugs:
            timeout += SESSION_LATE_MS
        if "session-expiry-early" in self._bugs:
            timeout = max(1, timeout - SESSION_EARLY_MS)
        self._complete_and_schedule_next_expiration(group, member, timeout)

    def _complete_and_schedule_next_expiration(self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int) -> None:
        key = member_key(group.group_id, member.member_id)
        member.heartbeat_satisfied = True
        self._purgatory.check_and_complete(key)
        member.heartbeat_satisfied = False
        self._purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member.member_id, False, timeout_ms), (key,)
        )

    def _add_pending_member_expiration(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        self._purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member_id, True, timeout_ms), (member_key(group.group_id, member_id),)
        )

    def _remove_heartbeat_for_leaving_member(self, group: GroupMetadata, member_id: str) -> None:
        self._purgatory.check_and_complete(member_key(group.group_id, member_id))

    def _heartbeat_satisfied(self, member: MemberMetadata) -> bool:
        return member.has_satisfied_heartbeat(parked_counts="session-expiry-while-parked" not in self._bugs)

    def try_complete_heartbeat(
        self, group: GroupMetadata, member_id: str, is_pending: bool, force_complete: Callable[[], bool]
    ) -> bool:
        if group.is_(GroupState.Dead):
            return force_complete()
        if is_pending:
            return force_complete() if group.has(member_id) else False
        if not group.has(member_id) or self._heartbeat_satisfied(group.get(member_id)):
            return force_complete()
        return False

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        if group.is_(GroupState.Dead):
            return
        if is_pending:
            if group.is_pending_member(member_id):
                self.record_timer(group, TimerEvent.PendingMemberExpire, member_id)
            self._remove_pending_member_and_update_group(group, member_id)
        elif group.has(member_id):
            member = group.get(member_id)
            if not self._heartbeat_satisfied(member):
                self.record_timer(group, TimerEvent.MemberSessionExpire, member_id)
                self._remove_member_and_update_group(group, member)

    # ======================================================================================
    # SyncGroup (GC:509 handleSyncGroup, GC:537 validateSyncGroup, GC:571 doSyncGroup)
    # ======================================================================================

    def handle_sync_group(self, req: SyncGroupRequest, respond: SyncCallback) -> None:
        group = self._members_group(req.group_id, ApiKey.SyncGroup, respond, SyncGroupResponse)
        if group is not None:
            self._do_sync_group(group, req, respond)

    def _validate_sync_group(self, group: GroupMetadata, req: SyncGroupRequest) -> Optional[Error]:
        if group.is_(GroupState.Dead):
            return Error.COORDINATOR_NOT_AVAILABLE
        error = self._validate_current_member(group, req.member_id, req.group_instance_id, "sync-group")
        if error is not None:
            return error
        if req.generation_id != group.generation_id:
            return Error.ILLEGAL_GENERATION
        if req.protocol_type is not None and req.protocol_type != group.protocol_type:
            return Error.INCONSISTENT_GROUP_PROTOCOL
        if req.protocol_name is not None and req.protocol_name != group.protocol_name:
            return Error.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _do_sync_group(self, group: GroupMetadata, req: SyncGroupRequest, respond: SyncCallback) -> None:
        error = self._validate_sync_group(group, req)
        if error is not None:
            respond(SyncGroupResponse(error))
            return
        member_id = req.member_id
        state = group.state
        if state == GroupState.Empty:
            respond(SyncGroupResponse(Error.UNKNOWN_MEMBER_ID))
        elif state == GroupState.PreparingRebalance:
            if "sync-accepted-in-preparing" in self._bugs and group.is_leader(member_id):
                assignment = dict(req.assignments)
                for member in group.all_member_metadata():
                    member.assignment = assignment.get(member.member_id, b"")
                respond(
                    SyncGroupResponse(
                        Error.NONE, group.protocol_type, group.protocol_name, group.get(member_id).assignment
                    )
                )
            else:
                respond(SyncGroupResponse(Error.REBALANCE_IN_PROGRESS))
        elif state == GroupState.CompletingRebalance:
            group.get(member_id).awaiting_sync_callback = respond
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                assignment = dict(req.assignments)
                for missing in group.all_members():
                    assignment.setdefault(missing, b"")
                generation_id = group.generation_id

                def on_store(store_error: Error) -> None:
                    # Another member may have rejoined meanwhile: act only if nothing moved on.
                    if group.is_(GroupState.CompletingRebalance) and generation_id == group.generation_id:
                        if store_error != Error.NONE:
                            self._reset_and_propagate_assignment_error(group, store_error)
                            self._maybe_prepare_rebalance(group)
                        else:
                            self._set_and_propagate_assignment(group, assignment)
                            group.transition_to(GroupState.Stable)

                self._manager.store_group(group, assignment, on_store)
        elif state == GroupState.Stable:
            self._remove_pending_sync_member(group, member_id)
            member = group.get(member_id)
            respond(SyncGroupResponse(Error.NONE, group.protocol_type, group.protocol_name, member.assignment))
            self._complete_and_schedule_next_heartbeat_expiration(group, member)
        else:
            raise IllegalGroupState(f"Reached unexpected condition for Dead group {group.group_id}")

    def _set_and_propagate_assignment(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        for member in group.all_member_metadata():
            member.assignment = assignment[member.member_id]
        self._propagate_assignment(group, Error.NONE)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: Error) -> None:
        for member in group.all_member_metadata():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: Error) -> None:
        protocol_type = group.protocol_type if error == Error.NONE else None
        protocol_name = group.protocol_name if error == Error.NONE else None
        for member in group.all_member_metadata():
            response = SyncGroupResponse(error, protocol_type, protocol_name, member.assignment)
            if group.maybe_invoke_sync_callback(member, response):
                self._complete_and_schedule_next_heartbeat_expiration(group, member)

    # ======================================================================================
    # Heartbeat (GC:841 handleHeartbeat, GC:817 validateHeartbeat)
    # ======================================================================================

    def handle_heartbeat(self, req: HeartbeatRequest, respond: Callable[[HeartbeatResponse], None]) -> None:
        if "heartbeat-answered-late" in self._bugs:
            respond = self._answer_late(respond, HEARTBEAT_LATE_MS)
        group = self._members_group(req.group_id, ApiKey.Heartbeat, respond, HeartbeatResponse)
        if group is None:
            return
        if "heartbeat-empty-accepted" in self._bugs and group.is_(GroupState.Empty):
            respond(HeartbeatResponse(Error.NONE))
            return
        if group.is_(GroupState.Dead):
            respond(HeartbeatResponse(Error.COORDINATOR_NOT_AVAILABLE))
            return
        error = self._validate_current_member(group, req.member_id, req.group_instance_id, "heartbeat")
        if error is None and req.generation_id != group.generation_id:
            error = Error.ILLEGAL_GENERATION
        if error is not None:
            respond(HeartbeatResponse(error))
            return
        state = group.state
        if state == GroupState.Empty:
            respond(HeartbeatResponse(Error.UNKNOWN_MEMBER_ID))
        elif state == GroupState.CompletingRebalance:
            if "heartbeat-completing-rebalance-in-progress" in self._bugs:
                respond(HeartbeatResponse(Error.REBALANCE_IN_PROGRESS))
                return
            self._complete_and_schedule_next_heartbeat_expiration(group, group.get(req.member_id))
            respond(HeartbeatResponse(Error.NONE))
        elif state == GroupState.PreparingRebalance:
            self._complete_and_schedule_next_heartbeat_expiration(group, group.get(req.member_id))
            respond(HeartbeatResponse(Error.REBALANCE_IN_PROGRESS))
        elif state == GroupState.Stable:
            self._complete_and_schedule_next_heartbeat_expiration(group, group.get(req.member_id))
            respond(HeartbeatResponse(Error.NONE))
        else:
            raise IllegalGroupState(f"Reached unexpected condition for Dead group {group.group_id}")

    def _answer_late(self, respond: Callable[[HeartbeatResponse], None], delay_ms: int
                     ) -> Callable[[HeartbeatResponse], None]:
        """Seeded bug `heartbeat-answered-late`: the answer is held in the purgatory for `delay_ms`."""
        def later(response: HeartbeatResponse) -> None:
            self._purgatory.try_complete_else_watch(_LateAnswer(lambda: respond(response), delay_ms), ())
        return later

    # ======================================================================================
    # LeaveGroup (GC:651 handleLeaveGroup)
    # ======================================================================================

    def handle_leave_group(self, req: LeaveGroupRequest, respond: Callable[[LeaveGroupResponse], None]) -> None:
        if self._rejected(req.group_id, ApiKey.LeaveGroup, respond, LeaveGroupResponse):
            return
        group = self._manager.get_group(req.group_id)
        if group is None:
            respond(
                LeaveGroupResponse(
                    Error.NONE,
                    tuple(
                        MemberLeaveResult(m.member_id, m.group_instance_id, Error.UNKNOWN_MEMBER_ID)
                        for m in req.members
                    ),
                )
            )
            return
        if group.is_(GroupState.Dead):
            respond(LeaveGroupResponse(Error.COORDINATOR_NOT_AVAILABLE))
            return
        results = []
        for leaving in req.members:
            member_error = self._leave_one(group, leaving.member_id, leaving.group_instance_id)
            results.append(MemberLeaveResult(leaving.member_id, leaving.group_instance_id, member_error))
        respond(LeaveGroupResponse(Error.NONE, tuple(results)))

    def _leave_one(self, group: GroupMetadata, member_id: str, instance_id: Optional[str]) -> Error:
        if member_id == "":
            current = group.current_static_member_id(instance_id) if instance_id is not None else None
            if current is None:
                return Error.UNKNOWN_MEMBER_ID
            self._remove_current_member_from_group(group, current)
            return Error.NONE
        if group.is_pending_member(member_id):
            self._remove_pending_member_and_update_group(group, member_id)
            self._purgatory.check_and_complete(member_key(group.group_id, member_id))
            return Error.NONE
        error = self._validate_current_member(group, member_id, instance_id, "leave-group")
        if error is not None:
            return error
        self._remove_current_member_from_group(group, member_id)
        return Error.NONE

    def _remove_current_member_from_group(self, group: GroupMetadata, member_id: str) -> None:
        member = group.get(member_id)
        self._remove_member_and_update_group(group, member, on_leave=True)
        self._remove_heartbeat_for_leaving_member(group, member.member_id)

    # ======================================================================================
    # OffsetCommit (GC:952, GC:1018 validateOffsetCommit, GC:1056 doCommitOffsets)
    # ======================================================================================

    def handle_commit_offsets(self, req: OffsetCommitRequest, respond: Callable[[OffsetCommitResponse], None]) -> None:
        offsets = dict(req.offsets)  # a Map in Kafka: one entry per partition, the last one wins

        def answer(error: Error) -> None:
            respond(OffsetCommitResponse(tuple((tp, error) for tp in offsets)))

        error = self._validate_group_status(req.group_id, ApiKey.OffsetCommit)
        if error is not None:
            answer(error)
            return
        group = self._manager.get_group(req.group_id)
        if group is None:
            if req.generation_id < 0:
                # "the group is not relying on Kafka for group management": create it Empty.
                group = self._manager.add_group(GroupMetadata(req.group_id, GroupState.Empty, self._on_transition))
            else:
                answer(Error.ILLEGAL_GENERATION)
                return
        error = self._validate_offset_commit(group, req)
        if error is not None:
            answer(error)
            return
        state = group.state
        if state == GroupState.Empty:
            answer(self._store_offsets(group, offsets))
        elif state in (GroupState.Stable, GroupState.PreparingRebalance):
            self._complete_and_schedule_next_heartbeat_expiration(group, group.get(req.member_id))
            answer(self._store_offsets(group, offsets))
        elif state == GroupState.CompletingRebalance:
            if "commit-in-completing-accepted" in self._bugs:
                answer(self._store_offsets(group, offsets))
            else:
                answer(Error.REBALANCE_IN_PROGRESS)
        else:
            raise IllegalGroupState(f"Logic error: unexpected group state {state.value}")

    def _store_offsets(self, group: GroupMetadata, offsets: dict[TopicPartition, int]) -> Error:
        if not offsets:
            return Error.NONE
        return self._manager.store_offsets(group, offsets)

    def _validate_offset_commit(self, group: GroupMetadata, req: OffsetCommitRequest) -> Optional[Error]:
        if group.is_(GroupState.Dead):
            return Error.COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and group.is_(GroupState.Empty):
            return None  # KAFKA-14201: member and instance ids are ignored
        if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
            error = self._validate_current_member(group, req.member_id, req.group_instance_id, "offset-commit")
            if error is not None:
                return error
            if req.generation_id != group.generation_id:
                return Error.ILLEGAL_GENERATION
            return None
        if not group.is_(GroupState.Empty):
            return Error.UNKNOWN_MEMBER_ID
        return None

    # ======================================================================================
    # OffsetFetch, DescribeGroups, ListGroups, DeleteGroups (GC:1102-1160, GC:718)
    # ======================================================================================

    def handle_fetch_offsets(self, req: OffsetFetchRequest, respond: Callable[[OffsetFetchResponse], None]) -> None:
        if self._rejected(req.group_id, ApiKey.OffsetFetch, respond, OffsetFetchResponse):
            return
        group = self._manager.get_group(req.group_id)
        if group is None or group.is_(GroupState.Dead):
            partitions = tuple((tp, -1, Error.NONE) for tp in (req.partitions or ()))
        else:
            wanted = req.partitions if req.partitions is not None else tuple(sorted(group.offsets))
            partitions = tuple((tp, group.offsets.get(tp, -1), Error.NONE) for tp in wanted)
        respond(OffsetFetchResponse(Error.NONE, partitions))

    def handle_describe_groups(
        self, req: DescribeGroupsRequest, respond: Callable[[DescribeGroupsResponse], None]
    ) -> None:
        respond(DescribeGroupsResponse(tuple(self._describe_group(group_id) for group_id in req.group_ids)))

    def _describe_group(self, group_id: str) -> DescribedGroup:
        error = self._validate_group_status(group_id, ApiKey.DescribeGroups)
        if error is not None:
            return DescribedGroup(error, group_id, "", "", "")
        group = self._manager.get_group(group_id)
        if group is None:
            return DescribedGroup(Error.NONE, group_id, GroupState.Dead.value, "", "")
        protocol_type = group.protocol_type or ""
        if group.is_(GroupState.Stable):
            protocol = group.protocol_name
            if protocol is None:
                raise IllegalGroupState("Invalid null group protocol for stable group")
            members = tuple(
                DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.metadata(protocol), m.assignment)
                for m in group.all_member_metadata()
            )
            return DescribedGroup(Error.NONE, group_id, group.state.value, protocol_type, protocol, members)
        members = tuple(
            DescribedMember(m.member_id, m.group_instance_id, m.client_id, b"", b"") for m in group.all_member_metadata()
        )
        protocol_out = ""
        if "describe-protocol-outside-stable" in self._bugs:
            protocol_out = group.protocol_name or ""
        return DescribedGroup(Error.NONE, group_id, group.state.value, protocol_type, protocol_out, members)

    def handle_list_groups(self, req: ListGroupsRequest, respond: Callable[[ListGroupsResponse], None]) -> None:
        wanted = {state.lower() for state in req.states_filter}
        groups = tuple(
            ListedGroup(g.group_id, g.protocol_type or "", g.state.value)
            for g in self._manager.current_groups()
            if not wanted or g.state.value.lower() in wanted
        )
        respond(ListGroupsResponse(Error.NONE, groups))

    def handle_delete_groups(self, req: DeleteGroupsRequest, respond: Callable[[DeleteGroupsResponse], None]) -> None:
        results: dict[str, Error] = {}
        eligible: list[GroupMetadata] = []
        for group_id in dict.fromkeys(req.group_ids):
            error = self._validate_group_status(group_id, ApiKey.DeleteGroups)
            if error is not None:
                results[group_id] = error
                continue
            group = self._manager.get_group(group_id)
            if group is None or group.is_(GroupState.Dead):
                results[group_id] = (
                    Error.GROUP_ID_NOT_FOUND if self._manager.group_not_exists(group_id) else Error.NOT_COORDINATOR
                )
            elif group.is_(GroupState.Empty):
                group.transition_to(GroupState.Dead)
                eligible.append(group)
                results[group_id] = Error.NONE
            else:
                results[group_id] = Error.NON_EMPTY_GROUP
        for group in eligible:
            self._cleanup_group_metadata(group, list(group.offsets))
        respond(DeleteGroupsResponse(tuple(results.items())))

    def _cleanup_group_metadata(self, group: GroupMetadata, removed: list[TopicPartition]) -> None:
        """GMM:863 cleanupGroupMetadata for one group."""
        for tp in removed:
            group.offsets.pop(tp, None)
        if group.is_(GroupState.Empty) and not group.has_offsets():
            group.transition_to(GroupState.Dead)
        is_dead = group.is_(GroupState.Dead)
        removed_from_cache = is_dead and self._manager.remove_group(group)
        self._manager.append_tombstones(
            group.group_id, removed, group_tombstone=removed_from_cache and group.generation_id > 0
        )

    # ======================================================================================
    # Partition emigration / immigration (GC:1187 onGroupUnloaded, GC:1213 onGroupLoaded)
    # ======================================================================================

    def _on_group_unloaded(self, group: GroupMetadata) -> None:
        previous = group.state
        group.transition_to(GroupState.Dead)
        if previous == GroupState.PreparingRebalance:
            for member in group.all_member_metadata():
                group.maybe_invoke_join_callback(member, _join_error(Error.NOT_COORDINATOR, member.member_id))
            self._purgatory.check_and_complete(join_key(group.group_id))
        elif previous in (GroupState.Stable, GroupState.CompletingRebalance):
            for member in group.all_member_metadata():
                group.maybe_invoke_sync_callback(member, SyncGroupResponse(Error.NOT_COORDINATOR))
                self._purgatory.check_and_complete(member_key(group.group_id, member.member_id))
        self._remove_sync_expiration(group)

    def _on_group_loaded(self, group: GroupMetadata) -> None:
        if group.state not in (GroupState.Stable, GroupState.Empty):
            raise IllegalGroupState(f"loaded group {group.group_id} is {group.state.value}")
        if group.size > self._config.group_max_size:
            self.prepare_rebalance(group)  # "Freshly-loaded group is over capacity"
        for member in group.all_member_metadata():
            self._complete_and_schedule_next_heartbeat_expiration(group, member)

    # ======================================================================================
    # Recording
    # ======================================================================================

    def _on_transition(self, group: GroupMetadata, source: GroupState, target: GroupState) -> None:
        if self._recorder is not None:
            self._recorder.on_transition(self.now_ms(), group.group_id, source, target, group.generation_id)

    def record_timer(self, group: GroupMetadata, event: TimerEvent, member_id: Optional[str]) -> None:
        if self._recorder is None:
            return
        if self._manager.get_group(group.group_id) is not group or group.is_(GroupState.Dead):
            return
        self._recorder.on_timer(self.now_ms(), group.group_id, event, member_id)

    def _record_admin(self, group_id: str, event: TimerEvent) -> None:
        if self._recorder is not None:
            self._recorder.on_timer(self.now_ms(), group_id, event, None)


def _drop_answer(response: JoinGroupResponse) -> None:
    """Seeded bug `join-unanswered-at-rebalance-timeout`: the parked JoinGroup's answer is lost."""


class _LateAnswer(DelayedOperation):
    """An answer delivered when its timer expires (seeded bug `heartbeat-answered-late`)."""

    def __init__(self, deliver: Callable[[], None], delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.deliver = deliver

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        self.deliver()


def _request_group_id(request: Request) -> str:
    """The group a request is about, for the recorder ("" for ListGroups and multi-group requests)."""
    if isinstance(request, (DescribeGroupsRequest, DeleteGroupsRequest)):
        return request.group_ids[0] if len(request.group_ids) == 1 else ""
    if isinstance(request, ListGroupsRequest):
        return ""
    return request.group_id

"""THE transition table of Kafka's classic group coordinator (Kafka 3.9, GroupCoordinator.scala).

One row per (state, event, guard): reply, next state, effects. For one (state, event) pair the
guards are disjoint and together cover every case; Kafka's validation order (group id, partition
ownership, session timeout, group lookup, group.max.size, dead group, fencing / unknown member,
generation, protocol, state) is spelled out as explicit conjunctions, never first-match-wins.

Reading a row: `row("JoinGroup", S, "label", guard, reply, next, effects, cite)` makes the row
`Stable/JoinGroup/label`. Guards use the atoms of model/atoms.py (`!` negates); effects are those
of model/effects.py, applied in order; replies are forms of model/replies.py with an error code.
`park` = the request is answered later; `SAME` = the state does not change.

Where the model abstracts, the row says so in its note. The pseudo-state `Missing` stands for
"no group object in the cache" (see model/vocabulary.py). Rows that can never fire carry the
reason (`unreachable=`), so coverage reports can tell "not reached" from "cannot happen".

GC = GroupCoordinator.scala, GM = GroupMetadata.scala, DJ = DelayedJoin.scala, DS =
DelayedSync.scala, DH = DelayedHeartbeat.scala, GMM = GroupMetadataManager.scala; numbers are
lines of the 3.9 files as cited in ../shared/reference/kafka-classic-semantics.md.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final, Iterable, Optional

import model.effects  # noqa: F401  (registers the effects)
import model.replies  # noqa: F401  (registers the reply forms)
from model.dsl import CONTINUE, NO_REPLY, PARK, SAME, G, Guard, R, Reply, Row, Table
from model.vocabulary import Error, GroupState, TimerEvent

E = GroupState.Empty
P = GroupState.PreparingRebalance
C = GroupState.CompletingRebalance
S = GroupState.Stable
D = GroupState.Dead
M = GroupState.Missing
LIVE: Final = (E, P, C, S)  # states of a group object in the cache
ALL: Final = (E, P, C, S, D, M)

API_EVENTS: Final = (
    "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch",
    "DescribeGroups", "ListGroups", "DeleteGroups",
)
TIMER_EVENTS: Final = tuple(t.value for t in TimerEvent)
EVENTS: Final = API_EVENTS + TIMER_EVENTS

_rows: list[Row] = []


def row(event: str, states: GroupState | Iterable[GroupState], label: str, guard: Guard | str,
        reply: Reply, next_state: Optional[GroupState], effects: tuple[str, ...] = (),
        cite: str = "", note: str = "", unreachable: str = "",
        new_incarnation: bool = False) -> None:
    """Add one row per state listed (each gets its own stable id `State/Event/label`)."""
    for s in ([states] if isinstance(states, GroupState) else list(states)):
        _rows.append(Row(
            id=f"{s.name}/{event}/{label}", states=frozenset({s}), event=event,
            guard=G(guard) if isinstance(guard, str) else guard, reply=reply,
            next_state=next_state, effects=effects, cite=cite, note=note,
            unreachable=unreachable, new_incarnation=new_incarnation))


NO_MEMBERS_IN_EMPTY: Final = (
    "an Empty group has no members (empty-has-no-members): Kafka treats it as unexpected")
DEAD_IN_CACHE: Final = (
    "a Dead group object is removed from the cache in the same critical section that kills it; "
    "the model is sequential, so no request meets it (only a concurrent request could)")
TIMER_NOT_ARMED: Final = "the scheduler fires a timer only while it is armed"
NOT_URGENT: Final = "the step function tries this completion only when it is possible"


def rebalance_effects(s: GroupState) -> tuple[str, ...]:
    """After a membership change: Stable/CompletingRebalance rebalance; in PreparingRebalance the
    join check (GC:1514) is the step function's urgent DelayedJoinComplete."""
    return ("rebalance",) if s in (E, C, S) else ()


def after_change(s: GroupState) -> Optional[GroupState]:
    return P if s in (E, C, S) else SAME


# GC:1159 isValidGroupId, the first check of GC:1174 validateGroupStatus (before partition
# ownership): JoinGroup, SyncGroup, Heartbeat and LeaveGroup need a non-empty group id, in any
# state. Every other row of these four APIs starts with V (the id is valid).
EMPTY_ID_NO_MEMBERS: Final = (
    "a group with the empty id never has members: every JoinGroup to it is answered "
    "INVALID_GROUP_ID (only OffsetCommit creates it, KAFKA-6773)")
V: Final = "!group-id-empty & "


def invalid_group_id(event: str, reply: Reply) -> None:
    """One INVALID_GROUP_ID row per state (GC:1159 isValidGroupId, GC:1175 validateGroupStatus)."""
    for s in ALL:
        row(event, s, "invalid-group-id", "group-id-empty", reply, SAME,
            cite="GC:1159 isValidGroupId, GC:1175 validateGroupStatus",
            unreachable=EMPTY_ID_NO_MEMBERS if s in (P, C, S) else "")


# ============================================================================ JoinGroup
# GC:161 handleJoinGroup -> GC:136 acceptJoiningMember -> GC:237 doNewMemberJoinGroup /
# GC:402 doCurrentMemberJoinGroup.

J = "JoinGroup"
invalid_group_id(J, R(Error.INVALID_GROUP_ID))
# Partition not owned (GC:1174 validateGroupStatus) — only a Dead (unloaded) or Missing group
# can be unowned in this model.
row(J, (D, M), "not-coordinator", V + "!owned", R(Error.NOT_COORDINATOR), SAME, cite="GC:1174")
row(J, D, "dead", V + "owned", R(Error.COORDINATOR_NOT_AVAILABLE), SAME, cite="GC:237, GC:402",
    unreachable=DEAD_IN_CACHE)
# GC:180: the session timeout is checked before the group is even looked up.
row(J, LIVE, "invalid-session-timeout", V + "!session-timeout-valid",
    R(Error.INVALID_SESSION_TIMEOUT), SAME, cite="GC:180")
row(J, M, "invalid-session-timeout", V + "owned & !session-timeout-valid",
    R(Error.INVALID_SESSION_TIMEOUT), SAME, cite="GC:180")
# GMM:231 getOrMaybeCreateGroup(createIfNotExist = memberId == "").
row(J, M, "create-group", V + "owned & session-timeout-valid & member-id-empty", CONTINUE, E,
    ("create-group",), cite="GC:161, GMM:231", new_incarnation=True,
    note="the new Empty group then handles the same JoinGroup")
row(J, M, "unknown-member", V + "owned & session-timeout-valid & !member-id-empty",
    R(Error.UNKNOWN_MEMBER_ID), SAME, cite="GC:161")

# KIP-389 group.max.size (GC:136, KAFKA-9885): a rejected joiner is dropped with member id "".
row(J, LIVE, "group-max-size-reached", V + "session-timeout-valid & !within-max-size",
    R(Error.GROUP_MAX_SIZE_REACHED, "error-no-member-id"), SAME, ("max-size-reject",),
    cite="GC:136 acceptJoiningMember")

OK_J = G(V + "session-timeout-valid & within-max-size")
NEW = OK_J & "member-id-empty"
KNOWN = OK_J & "!member-id-empty"

# --- empty member id: GC:237 doNewMemberJoinGroup
row(J, LIVE, "new-inconsistent-protocol", NEW & "!protocols-supported",
    R(Error.INCONSISTENT_GROUP_PROTOCOL, "error-no-member-id"), SAME, cite="GC:237, GM:464")
NEW_OK = NEW & "protocols-supported"
# KIP-394: a dynamic JoinGroup v4+ first gets a member id with MEMBER_ID_REQUIRED (GC:342).
row(J, LIVE, "member-id-required", NEW_OK & "!has-instance-id & requires-known-member-id",
    R(Error.MEMBER_ID_REQUIRED, "with-new-member-id"), SAME, ("add-pending-member",),
    cite="GC:342 doDynamicNewMemberJoinGroup, GM:344, GC:1301")
# Dynamic v0-3, or a static instance not yet mapped: add the member and rebalance (GC:1312).
for label, g in (("new-dynamic-member", NEW_OK & "!has-instance-id & !requires-known-member-id"),
                 ("new-static-member", NEW_OK & "has-instance-id & !instance-mapped")):
    row(J, (E, C, S), label, g, PARK, P, ("add-member", "rebalance"),
        cite="GC:1312 addMemberAndRebalance, GC:1478 prepareRebalance")
    row(J, P, label, g, PARK, SAME, ("add-member", "mark-new-member-added"),
        cite="GC:1312 addMemberAndRebalance (GC:1329 newMemberAdded while generation 0)")
# A known static instance with an empty member id: a restart or replacement (GC:299, GM:319).
RESTART = NEW_OK & "has-instance-id & instance-mapped"
row(J, E, "static-restart", RESTART, R(Error.UNKNOWN_SERVER_ERROR), SAME,
    cite="GC:1452 (IllegalStateException)", unreachable=NO_MEMBERS_IN_EMPTY)
row(J, P, "static-restart", RESTART, PARK, SAME,
    ("replace-static-member", "update-and-park-join"),
    cite="GC:1345 updateStaticMemberAndRebalance, GM:319 replaceStaticMember",
    note="the old id's parked JoinGroup is answered FENCED_INSTANCE_ID")
row(J, C, "static-restart", RESTART, PARK, P,
    ("replace-static-member", "update-and-park-join", "rebalance"),
    cite="GC:1345 (KAFKA-9801)", note="the old id's parked SyncGroup is answered FENCED_INSTANCE_ID")
row(J, S, "static-restart-protocol-changed", RESTART & "!selected-protocol-unchanged", PARK, P,
    ("replace-static-member", "update-and-park-join", "rebalance"), cite="GC:1345 (KAFKA-10284)")
row(J, S, "static-restart", RESTART & "selected-protocol-unchanged & append-ok",
    R(Error.NONE, "static-restart"), SAME,
    ("replace-static-member", "update-and-park-join", "persist-group", "unpark-join"),
    cite="GC:1345-1410 (KAFKA-10284, KIP-814 skipAssignment)",
    note="no rebalance: the new member id is persisted, then answered with the current generation")
row(J, S, "static-restart-persist-failed", RESTART & "selected-protocol-unchanged & !append-ok",
    R(Error.NONE, "static-restart-failed"), SAME,
    ("replace-static-member", "update-and-park-join", "unpark-join", "revert-static-replacement"),
    cite="GC:1368", note="member id and timeouts reverted; the new protocol list stays (Scala)")

# --- a member id is given: GC:402 doCurrentMemberJoinGroup
row(J, LIVE, "known-inconsistent-protocol", KNOWN & "!protocols-supported",
    R(Error.INCONSISTENT_GROUP_PROTOCOL), SAME, cite="GC:402, GM:464")
KNOWN_OK = KNOWN & "protocols-supported"
# Second phase of KIP-394: the pending id joins for real (GC:424-434).
row(J, LIVE, "pending-static", KNOWN_OK & "member-pending & has-instance-id",
    R(Error.UNKNOWN_SERVER_ERROR, "error-no-member-id"), SAME, cite="GC:428 (IllegalStateException)",
    note="Kafka throws; KafkaApis answers JoinGroupRequest.getErrorResponse: UNKNOWN_SERVER_ERROR "
         "with member id \"\". Pending ids are only handed to dynamic members, so only a "
         "misbehaving client gets here")
PENDING = KNOWN_OK & "member-pending & !has-instance-id"
row(J, (E, C, S), "pending-member-joins", PENDING, PARK, P, ("add-member", "rebalance"),
    cite="GC:424-434, GC:1312")
row(J, P, "pending-member-joins", PENDING, PARK, SAME, ("add-member", "mark-new-member-added"),
    cite="GC:424-434, GC:1312")
# GC:373 validateCurrentMember.
MEMBER = KNOWN_OK & "!member-pending"
row(J, LIVE, "fenced", MEMBER & "fenced", R(Error.FENCED_INSTANCE_ID), SAME, cite="GC:373",
    unreachable="")
row(J, LIVE, "unknown-member", MEMBER & "!fenced & !member-valid", R(Error.UNKNOWN_MEMBER_ID),
    SAME, cite="GC:373")
VALID = MEMBER & "member-valid"
row(J, E, "rejoining-member", VALID, R(Error.UNKNOWN_MEMBER_ID), SAME, cite="GC:498",
    unreachable=NO_MEMBERS_IN_EMPTY)
row(J, P, "rejoin", VALID, PARK, SAME, ("update-and-park-join",),
    cite="GC:446 updateMemberAndRebalance (no-op maybePrepareRebalance)",
    note="a JoinGroup already parked for the member is replaced and never answered (GM:518)")
row(J, C, "rejoin-same-metadata", VALID & "metadata-matches", R(Error.NONE, "join-current"), SAME,
    cite="GC:451-466", note="e.g. the member lost its JoinGroup response; the leader gets the "
                            "member list again")
row(J, C, "rejoin-changed-metadata", VALID & "!metadata-matches", PARK, P,
    ("update-and-park-join", "rebalance"), cite="GC:467-470, GC:1459")
row(J, S, "leader-rejoin", VALID & "is-leader", PARK, P, ("update-and-park-join", "rebalance"),
    cite="GC:473-477", note="the leader's JoinGroup always rebalances (lets it react to metadata)")
row(J, S, "follower-rejoin-same-metadata", VALID & "!is-leader & metadata-matches",
    R(Error.NONE, "join-current"), SAME, cite="GC:478-496")
row(J, S, "follower-rejoin-changed-metadata", VALID & "!is-leader & !metadata-matches", PARK, P,
    ("update-and-park-join", "rebalance"), cite="GC:478-484")

# ============================================================================ SyncGroup
# GC:509 handleSyncGroup, GC:537 validateSyncGroup, GC:571 doSyncGroup.
Y = "SyncGroup"
invalid_group_id(Y, R(Error.INVALID_GROUP_ID))
row(Y, (D, M), "not-coordinator", V + "!owned", R(Error.NOT_COORDINATOR), SAME, cite="GC:1174")
row(Y, D, "dead", V + "owned", R(Error.COORDINATOR_NOT_AVAILABLE), SAME, cite="GC:537",
    unreachable=DEAD_IN_CACHE)
row(Y, M, "unknown-group", V + "owned", R(Error.UNKNOWN_MEMBER_ID), SAME, cite="GC:509")
row(Y, LIVE, "fenced", V + "fenced", R(Error.FENCED_INSTANCE_ID), SAME, cite="GC:537, GC:373")
row(Y, LIVE, "unknown-member", V + "!fenced & !member-valid", R(Error.UNKNOWN_MEMBER_ID), SAME,
    cite="GC:537, GC:373")
row(Y, LIVE, "illegal-generation", V + "member-valid & !generation-matches",
    R(Error.ILLEGAL_GENERATION), SAME, cite="GC:537")
row(Y, LIVE, "inconsistent-protocol",
    V + "member-valid & generation-matches & !sync-protocol-consistent",
    R(Error.INCONSISTENT_GROUP_PROTOCOL), SAME, cite="GC:537 (KIP-559)")
SYNC = G(V + "member-valid & generation-matches & sync-protocol-consistent")
row(Y, E, "empty", SYNC, R(Error.UNKNOWN_MEMBER_ID), SAME, cite="GC:571",
    unreachable=NO_MEMBERS_IN_EMPTY)
# The leader's SyncGroup arriving during PreparingRebalance is rejected: nothing is stored.
row(Y, P, "rebalance-in-progress", SYNC, R(Error.REBALANCE_IN_PROGRESS), SAME, cite="GC:580")
row(Y, C, "follower-waits", SYNC & "!is-leader", PARK, SAME, ("park-sync", "unpend-sync"),
    cite="GC:600", note="answered when the leader's assignment is persisted")
row(Y, C, "leader-assigns", SYNC & "is-leader & append-ok", PARK, S,
    ("park-sync", "unpend-sync", "store-assignment", "persist-group", "answer-syncs"),
    cite="GC:600-631 doSyncGroup, GMM:250 storeGroup, GC:1246 setAndPropagateAssignment",
    note="the append is synchronous in the model (Kafka completes it later under the group lock, "
         "guarded by 'still CompletingRebalance at the same generation')")
row(Y, C, "leader-assign-persist-failed", SYNC & "is-leader & !append-ok", PARK, P,
    ("park-sync", "unpend-sync", "fail-syncs", "rebalance"),
    cite="GC:620-629 resetAndPropagateAssignmentError, GMM:250 error mapping")
row(Y, S, "stored-assignment", SYNC, R(Error.NONE, "stored-assignment"), SAME,
    ("unpend-sync", "rearm-session"), cite="GC:636-642")

# ============================================================================ Heartbeat
# GC:841 handleHeartbeat, GC:817 validateHeartbeat.
H = "Heartbeat"
invalid_group_id(H, R(Error.INVALID_GROUP_ID))
row(H, (D, M), "not-coordinator", V + "!owned", R(Error.NOT_COORDINATOR), SAME, cite="GC:1174")
row(H, D, "dead", V + "owned", R(Error.COORDINATOR_NOT_AVAILABLE), SAME, cite="GC:817",
    unreachable=DEAD_IN_CACHE)
row(H, M, "unknown-group", V + "owned", R(Error.UNKNOWN_MEMBER_ID), SAME, cite="GC:841")
row(H, LIVE, "fenced", V + "fenced", R(Error.FENCED_INSTANCE_ID), SAME, cite="GC:817, GC:373")
row(H, LIVE, "unknown-member", V + "!fenced & !member-valid", R(Error.UNKNOWN_MEMBER_ID), SAME,
    cite="GC:817, GC:373")
row(H, LIVE, "illegal-generation", V + "member-valid & !generation-matches",
    R(Error.ILLEGAL_GENERATION), SAME, cite="GC:817", note="no re-arm on any error")
BEAT = G(V + "member-valid & generation-matches")
row(H, E, "empty", BEAT, R(Error.UNKNOWN_MEMBER_ID), SAME, cite="GC:850",
    unreachable=NO_MEMBERS_IN_EMPTY)
row(H, P, "rebalance-in-progress", BEAT, R(Error.REBALANCE_IN_PROGRESS), SAME, ("rearm-session",),
    cite="GC:856", note="the session is still renewed")
row(H, C, "ok", BEAT, R(Error.NONE, "ok"), SAME, ("rearm-session",),
    cite="GC:860 (KAFKA-10134, 2.6.1+)")
row(H, S, "ok", BEAT, R(Error.NONE, "ok"), SAME, ("rearm-session",), cite="GC:860")

# ============================================================================ LeaveGroup
# GC:651 handleLeaveGroup. One row per member of the batch, in request order; the step function
# assembles the response (top-level error, or one result per member).
L = "LeaveGroup"
invalid_group_id(L, R(Error.INVALID_GROUP_ID, "top-level"))
row(L, (D, M), "not-coordinator", V + "!owned", R(Error.NOT_COORDINATOR, "top-level"), SAME,
    cite="GC:1174")
row(L, D, "dead", V + "owned", R(Error.COORDINATOR_NOT_AVAILABLE, "top-level"), SAME, cite="GC:651",
    unreachable=DEAD_IN_CACHE)
row(L, M, "unknown-group", V + "owned", R(Error.UNKNOWN_MEMBER_ID), SAME, cite="GC:651",
    note="top-level NONE, every member UNKNOWN_MEMBER_ID")
# Administrative removal by group.instance.id (member id "").
row(L, LIVE, "by-instance-unknown", V + "member-id-empty & !instance-mapped",
    R(Error.UNKNOWN_MEMBER_ID), SAME, cite="GC:665-680")
for s in LIVE:
    row(L, s, "by-instance", V + "member-id-empty & instance-mapped", R(Error.NONE, "ok"),
        after_change(s), ("remove-member",) + rebalance_effects(s), cite="GC:665-680, GC:1505",
        unreachable=NO_MEMBERS_IN_EMPTY if s == E else "")
row(L, LIVE, "pending-member", V + "!member-id-empty & member-pending", R(Error.NONE, "ok"), SAME,
    ("remove-pending",), cite="GC:692-697, GC:1519")
row(L, LIVE, "fenced", V + "!member-id-empty & !member-pending & fenced", R(Error.FENCED_INSTANCE_ID),
    SAME, cite="GC:699, GC:373")
row(L, LIVE, "unknown-member",
    V + "!member-id-empty & !member-pending & !fenced & !member-valid",
    R(Error.UNKNOWN_MEMBER_ID), SAME, cite="GC:699, GC:373")
for s in LIVE:
    row(L, s, "member-leaves", V + "!member-id-empty & !member-pending & member-valid",
        R(Error.NONE, "ok"), after_change(s), ("remove-member",) + rebalance_effects(s),
        cite="GC:699-705, GC:1505 removeMemberAndUpdateGroup",
        note="a parked JoinGroup of the member is answered UNKNOWN_MEMBER_ID",
        unreachable=NO_MEMBERS_IN_EMPTY if s == E else "")

# ============================================================================ OffsetCommit
# GC:952 handleCommitOffsets, GC:1018 validateOffsetCommit (3.3+), GC:1056 doCommitOffsets.
O = "OffsetCommit"
row(O, (D, M), "not-coordinator", "!owned", R(Error.NOT_COORDINATOR), SAME, cite="GC:1174")
row(O, D, "dead", "owned", R(Error.COORDINATOR_NOT_AVAILABLE), SAME, cite="GC:1018",
    unreachable=DEAD_IN_CACHE)
row(O, M, "create-group", "owned & generation-negative", CONTINUE, E, ("create-group",),
    cite="GC:952 (simple consumer)", new_incarnation=True,
    note="the new Empty group then stores the commit")
row(O, M, "illegal-generation", "owned & !generation-negative", R(Error.ILLEGAL_GENERATION), SAME,
    cite="GC:952")
# Generation < 0 in an Empty group: accepted, member and instance id ignored (KAFKA-14201).
row(O, E, "simple-commit", "generation-negative & append-ok", R(Error.NONE, "commit-result"), SAME,
    ("store-offsets",), cite="GC:1018, GC:1056")
row(O, E, "simple-commit-append-failed", "generation-negative & !append-ok",
    R(Error.NONE, "commit-result"), SAME, cite="GC:1056, GMM maybeConvertOffsetCommitError")
row(O, (P, C, S), "no-member-info", "!commit-has-member-info", R(Error.UNKNOWN_MEMBER_ID), SAME,
    cite="GC:1018")
MEMBER_COMMIT = {E: G("!generation-negative"), P: G("commit-has-member-info"),
                 C: G("commit-has-member-info"), S: G("commit-has-member-info")}
for s in LIVE:
    mc = MEMBER_COMMIT[s]
    row(O, s, "fenced", mc & "fenced", R(Error.FENCED_INSTANCE_ID), SAME, cite="GC:1018, GC:373",
        unreachable=NO_MEMBERS_IN_EMPTY if s == E else "")
    row(O, s, "unknown-member", mc & "!fenced & !member-valid", R(Error.UNKNOWN_MEMBER_ID), SAME,
        cite="GC:1018, GC:373")
    row(O, s, "illegal-generation", mc & "member-valid & !generation-matches",
        R(Error.ILLEGAL_GENERATION), SAME, cite="GC:1018",
        unreachable=NO_MEMBERS_IN_EMPTY if s == E else "")
COMMIT = "member-valid & generation-matches"
row(O, E, "member-commit", MEMBER_COMMIT[E] & COMMIT, R(Error.NONE, "commit-result"), SAME,
    ("store-offsets",), cite="GC:1056", unreachable=NO_MEMBERS_IN_EMPTY)
row(O, C, "rebalance-in-progress", MEMBER_COMMIT[C] & COMMIT, R(Error.REBALANCE_IN_PROGRESS), SAME,
    cite="GC:1070")
for s in (P, S):
    row(O, s, "member-commit", MEMBER_COMMIT[s] & COMMIT & "append-ok",
        R(Error.NONE, "commit-result"), SAME, ("rearm-session", "store-offsets"), cite="GC:1056",
        note="in PreparingRebalance commits of the previous generation are still allowed"
        if s == P else "")
    row(O, s, "member-commit-append-failed", MEMBER_COMMIT[s] & COMMIT & "!append-ok",
        R(Error.NONE, "commit-result"), SAME, ("rearm-session",), cite="GC:1056")

# ============================================================================ OffsetFetch
# GC:1102 handleFetchOffsets: offsets are read "blindly" in any state.
F = "OffsetFetch"
row(F, (D, M), "not-coordinator", "!owned", R(Error.NOT_COORDINATOR), SAME, cite="GC:1174")
row(F, D, "dead", "owned", R(Error.NONE, "offsets"), SAME, cite="GC:1102",
    unreachable=DEAD_IN_CACHE)
row(F, M, "offsets", "owned", R(Error.NONE, "offsets"), SAME, cite="GC:1102",
    note="no group: every partition -1")
row(F, LIVE, "offsets", "true", R(Error.NONE, "offsets"), SAME, cite="GC:1102")

# ============================================================================ DescribeGroups
# GC:1139 handleDescribeGroup, GM:601 summary.
DG = "DescribeGroups"
row(DG, (D, M), "not-coordinator", "!owned", R(Error.NOT_COORDINATOR), SAME, cite="GC:1174")
row(DG, D, "dead", "owned", R(Error.NONE, "summary"), SAME, cite="GC:1139",
    unreachable=DEAD_IN_CACHE)
row(DG, M, "unknown-group", "owned", R(Error.NONE, "summary"), SAME, cite="GC:1139",
    note='reported as state "Dead" with error NONE')
row(DG, LIVE, "summary", "true", R(Error.NONE, "summary"), SAME, cite="GC:1139, GM:601")

# ============================================================================ ListGroups
# GC:1117 handleListGroups: the groups in the cache, filtered by state (KIP-518).
LG = "ListGroups"
row(LG, (D, M), "not-in-cache", "true", R(Error.NONE, "not-listed"), SAME, cite="GC:1117")
row(LG, LIVE, "listed", "state-filter-matches", R(Error.NONE, "listed"), SAME, cite="GC:1117")
row(LG, LIVE, "filtered-out", "!state-filter-matches", R(Error.NONE, "not-listed"), SAME,
    cite="GC:1117 (KIP-518)")

# ============================================================================ DeleteGroups
# GC:718 handleDeleteGroups.
DL = "DeleteGroups"
row(DL, (D, M), "not-coordinator", "!owned", R(Error.NOT_COORDINATOR), SAME, cite="GC:718")
row(DL, (D, M), "not-found", "owned", R(Error.GROUP_ID_NOT_FOUND), SAME, cite="GC:718",
    unreachable="")
row(DL, E, "deleted", "true", R(Error.NONE, "ok"), M, ("remove-group",),
    cite="GC:718, GMM:863 cleanupGroupMetadata",
    note="Empty -> Dead, offsets and metadata tombstoned, removed from the cache")
row(DL, (P, C, S), "non-empty", "true", R(Error.NON_EMPTY_GROUP), SAME, cite="GC:718")

# ============================================================================ the join phase ends
# DJ:34 DelayedJoin, DJ:62 InitialDelayedJoin, GC:1527 tryCompleteJoin, GC:1535 onCompleteJoin.
TO_COMPLETING: Final = ("remove-unjoined-dynamic", "elect-joined-leader", "bump-generation",
                        "select-protocol", "disarm-join-timer", "answer-joins", "arm-delayed-sync")
TO_EMPTY: Final = ("remove-unjoined-dynamic", "bump-generation", "clear-protocol",
                   "disarm-join-timer", "persist-group")
RE_ARM: Final = ("remove-unjoined-dynamic", "rearm-delayed-join")


def join_phase_end(event: str, ready: str, cite: str) -> None:
    """The three ways onCompleteJoin ends, once `ready` holds (GC:1535-1590)."""
    row(event, P, "next-generation", f"{ready} & any-rejoined", NO_REPLY, C, TO_COMPLETING,
        cite=cite + ", GM:574 initNextGeneration",
        note="the new leader is a nondeterministic choice among rejoined members (hash order)")
    row(event, P, "now-empty", f"{ready} & !any-rejoined & !static-absentee", NO_REPLY, E, TO_EMPTY,
        cite=cite + ", GC:1561")
    row(event, P, "nobody-rejoined", f"{ready} & !any-rejoined & static-absentee", NO_REPLY, SAME,
        RE_ARM, cite=cite + ", GC:1554",
        unreachable="" if event != "DelayedJoinComplete" else
        "completion needs every member rejoined, so no static member is absent")


# Urgent: Kafka checks completion (checkAndComplete) inside the request that makes it possible.
DJC = "DelayedJoinComplete"
join_phase_end(DJC, "join-timer-armed & !join-timer-initial & all-joined", "GC:1527 tryCompleteJoin")
row(DJC, P, "not-armed", "!join-timer-armed", NO_REPLY, SAME, unreachable=NOT_URGENT)
row(DJC, P, "initial", "join-timer-armed & join-timer-initial", NO_REPLY, SAME,
    cite="DJ:74 (InitialDelayedJoin never completes early)", unreachable=NOT_URGENT)
row(DJC, P, "waiting", "join-timer-armed & !join-timer-initial & !all-joined", NO_REPLY, SAME,
    unreachable=NOT_URGENT)
row(DJC, (E, C, S, D, M), "stale", "true", NO_REPLY, SAME,
    unreachable="no DelayedJoin outside PreparingRebalance (single-delayed-join)")

DJX = "DelayedJoinExpire"
join_phase_end(DJX, "join-timer-armed & !join-timer-initial", "DJ:34 onExpiration")
row(DJX, P, "not-armed", "!join-timer-armed", NO_REPLY, SAME, unreachable=TIMER_NOT_ARMED)
row(DJX, P, "initial", "join-timer-armed & join-timer-initial", NO_REPLY, SAME,
    unreachable="an InitialDelayedJoin fires InitialDelayedJoinExpire")
row(DJX, (E, C, S, D, M), "stale", "true", NO_REPLY, SAME,
    unreachable="no DelayedJoin outside PreparingRebalance (single-delayed-join)")

IDJ = "InitialDelayedJoinExpire"
row(IDJ, P, "extend", "join-timer-armed & join-timer-initial & initial-delay-extends", NO_REPLY,
    SAME, ("extend-initial-delay",), cite="DJ:62 InitialDelayedJoin.onComplete (KIP-134)")
join_phase_end(IDJ, "join-timer-armed & join-timer-initial & !initial-delay-extends",
               "DJ:62 InitialDelayedJoin.onComplete")
row(IDJ, P, "not-armed", "!join-timer-armed", NO_REPLY, SAME, unreachable=TIMER_NOT_ARMED)
row(IDJ, P, "not-initial", "join-timer-armed & !join-timer-initial", NO_REPLY, SAME,
    unreachable="a DelayedJoin fires DelayedJoinExpire")
row(IDJ, (E, C, S, D, M), "stale", "true", NO_REPLY, SAME,
    unreachable="no InitialDelayedJoin outside PreparingRebalance (single-delayed-join)")

# ============================================================================ session expiry
# DH:26 DelayedHeartbeat, GC:1689 tryCompleteHeartbeat, GC:1718 onExpireHeartbeat.
MX = "MemberSessionExpire"
row(MX, LIVE, "not-armed", "!session-armed", NO_REPLY, SAME, unreachable=TIMER_NOT_ARMED)
row(MX, LIVE, "satisfied", "session-armed & member-satisfied", NO_REPLY, SAME, ("disarm-session",),
    cite="MM:93 hasSatisfiedHeartbeat",
    note="a member parked in JoinGroup/SyncGroup (and not new) cannot fail its session")
for s in LIVE:
    row(MX, s, "member-failed", "session-armed & !member-satisfied", NO_REPLY, after_change(s),
        ("remove-member",) + rebalance_effects(s), cite="GC:1718, GC:1505",
        note="a new member's parked JoinGroup (new-member join timeout) is answered "
             "UNKNOWN_MEMBER_ID", unreachable=NO_MEMBERS_IN_EMPTY if s == E else "")
row(MX, (D, M), "no-group", "true", NO_REPLY, SAME, cite="GC:1721",
    unreachable="unload and removal cancel every member's timer")

PX = "PendingMemberExpire"
row(PX, LIVE, "expired", "pending-armed", NO_REPLY, SAME, ("remove-pending",),
    cite="GC:1718 onExpireHeartbeat(isPending), GC:1519",
    note="in PreparingRebalance this may unblock the join phase (urgent completion)")
row(PX, LIVE, "not-armed", "!pending-armed", NO_REPLY, SAME, unreachable=TIMER_NOT_ARMED)
row(PX, (D, M), "no-group", "true", NO_REPLY, SAME,
    unreachable="unload and removal drop pending ids with the group object")

# ============================================================================ the sync phase
# DS:30 DelayedSync, GC:1635 tryCompletePendingSync, GC:1656 onExpirePendingSync (KAFKA-12890).
SX = "DelayedSyncExpire"
for s in (C, S):
    row(SX, s, "remove-unsynced", "sync-timer-armed & !sync-timer-done", NO_REPLY, P,
        ("remove-unsynced", "disarm-delayed-sync", "rebalance"), cite="GC:1656",
        note="heartbeats do not save a member that never sent SyncGroup")
row(SX, (C, S), "done", "sync-timer-armed & sync-timer-done", NO_REPLY, SAME,
    ("disarm-delayed-sync",), unreachable="DelayedSyncComplete removes it first (urgent)")
row(SX, (C, S), "not-armed", "!sync-timer-armed", NO_REPLY, SAME, unreachable=TIMER_NOT_ARMED)
row(SX, (E, P, D, M), "stale", "true", NO_REPLY, SAME,
    unreachable="prepareRebalance, unload and removal cancel the DelayedSync (GC:1613)")

SC = "DelayedSyncComplete"
row(SC, (C, S), "all-synced", "sync-timer-armed & sync-timer-done", NO_REPLY, SAME,
    ("disarm-delayed-sync",), cite="GC:1635 tryCompletePendingSync")
row(SC, (C, S), "waiting", "!sync-timer-armed",
    NO_REPLY, SAME, unreachable=NOT_URGENT)
row(SC, (C, S), "pending", "sync-timer-armed & !sync-timer-done", NO_REPLY, SAME,
    unreachable=NOT_URGENT)
row(SC, (E, P, D, M), "stale", "true", NO_REPLY, SAME,
    unreachable="prepareRebalance, unload and removal cancel the DelayedSync (GC:1613)")

# ============================================================================ partitions, offsets
# GC:1241 onResignation -> GC:1187 onGroupUnloaded; GC:1231 onElection -> GC:1213 onGroupLoaded.
UL = "PartitionUnload"
row(UL, LIVE, "unload", "true", NO_REPLY, D, ("unload-group",), cite="GC:1187 onGroupUnloaded",
    note="parked JoinGroups/SyncGroups answered NOT_COORDINATOR")
row(UL, M, "unload", "owned", NO_REPLY, SAME, ("release-partition",), cite="GC:1241")
row(UL, (D, M), "not-owned", "!owned", NO_REPLY, SAME, unreachable="only an owned partition "
    "can be unloaded")
row(UL, D, "dead-owned", "owned", NO_REPLY, SAME, unreachable=DEAD_IN_CACHE)

LD = "PartitionLoad"
for s in (D, M):
    row(LD, s, "resume-stable", "!owned & persisted-stable", NO_REPLY, S, ("load-group",),
        cite="GC:1213 onGroupLoaded, GMM:1211", new_incarnation=True,
        note="an in-memory rebalance is lost: the group resumes at its last persisted generation")
    row(LD, s, "resume-empty", "!owned & persisted-empty", NO_REPLY, E, ("load-group",),
        cite="GC:1213, GMM:1211", new_incarnation=True)
    row(LD, s, "offsets-only", "!owned & !persisted-stable & !persisted-empty & has-offsets",
        NO_REPLY, E, ("load-group",), cite="GMM:558 loadGroupsAndOffsets", new_incarnation=True,
        note="a group known only by its offsets loads Empty")
    row(LD, s, "nothing", "!owned & !persisted-stable & !persisted-empty & !has-offsets", NO_REPLY,
        M, ("claim-partition",), cite="GMM:558")
    row(LD, s, "owned", "owned", NO_REPLY, SAME, unreachable="only an unowned partition loads")
row(LD, LIVE, "owned", "true", NO_REPLY, SAME, unreachable="only an unowned partition loads")

OX = "OffsetsExpire"
row(OX, E, "expire", "true", NO_REPLY, M, ("remove-group",),
    cite="GMM:847 cleanupGroupMetadata (KIP-211)",
    note="abstraction: all offsets expire together; Empty and no offsets -> Dead, removed")
row(OX, (P, C, S, D, M), "not-empty", "true", NO_REPLY, SAME,
    unreachable="offsets of a group with members are kept; the scheduler expires Empty groups only")

# ============================================================================ rows that cannot fire
# Rows written once for several states (above) that cannot fire in some of them, with the reason.
# The explorer lists them as unreachable instead of "not reached", and the proofs check the claim.
NO_MEMBER: Final = NO_MEMBERS_IN_EMPTY + "; so nothing is fenced and no member is valid"
CANNOT_FIRE: Final[dict[str, str]] = {
    "Empty/JoinGroup/fenced": NO_MEMBER,
    "Empty/SyncGroup/fenced": NO_MEMBER,
    "Empty/Heartbeat/fenced": NO_MEMBER,
    "Empty/LeaveGroup/fenced": NO_MEMBER,
    "Empty/SyncGroup/illegal-generation": NO_MEMBER,
    "Empty/SyncGroup/inconsistent-protocol": NO_MEMBER,
    "Empty/Heartbeat/illegal-generation": NO_MEMBER,
    "Empty/MemberSessionExpire/satisfied": NO_MEMBER,
    "Empty/JoinGroup/group-max-size-reached": "acceptJoiningMember accepts every joiner of an "
                                               "Empty group (GC:136)",
    "Stable/MemberSessionExpire/satisfied": "no request is parked in Stable "
                                            "(stable-members-assigned), so no member is satisfied",
    "CompletingRebalance/DelayedSyncComplete/all-synced": "the leader's SyncGroup moves the group "
        "to Stable in the same step, so every member has synced only once the group is Stable",
    "PreparingRebalance/InitialDelayedJoinExpire/nobody-rejoined": "every member of an initial "
        "rebalance joined during it and stays parked until the join phase ends",
    "Missing/PartitionLoad/resume-stable": "deletion and offsets expiry write tombstones: a "
                                           "missing group has no GroupMetadata to load",
    "Missing/PartitionLoad/resume-empty": "deletion and offsets expiry write tombstones: a "
                                          "missing group has no GroupMetadata to load",
    "Missing/PartitionLoad/offsets-only": "deletion and offsets expiry remove the offsets too",
    "Dead/DeleteGroups/not-found": DEAD_IN_CACHE,
}


def _mark_unreachable(rows: list[Row]) -> tuple[Row, ...]:
    ids = {r.id for r in rows}
    missing = set(CANNOT_FIRE) - ids
    if missing:
        raise ValueError(f"CANNOT_FIRE names rows that do not exist: {sorted(missing)}")
    return tuple(replace(r, unreachable=CANNOT_FIRE[r.id]) if r.id in CANNOT_FIRE else r
                 for r in rows)


# ============================================================================ the table
CLASSIC_TABLE: Final = Table(name="kafka-3.9-classic", rows=_mark_unreachable(_rows),
                             events=EVENTS)
CLASSIC_TABLE.validate()

# Urgent events: tried after every input and every urgent step while their guard holds
# (Kafka's purgatory checkAndComplete calls inside the handler that makes them possible).
URGENT: Final = (
    ("DelayedJoinComplete", G("join-timer-armed & !join-timer-initial & all-joined")),
    ("DelayedSyncComplete", G("sync-timer-armed & sync-timer-done")),
)

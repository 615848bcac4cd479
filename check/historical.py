"""Historical-bug suite: real, documented group-coordinator bugs, each re-expressed as a mutant
of Kafka 3.9's classic table.

Each entry names its source (a Kafka JIRA / pull request, or an issue of a Kafka-compatible
broker), says in one line what went wrong, and how the mutant expresses it. Where the bug cannot
be expressed exactly by changing rows (the model's step function checks completions after every
input, timers have no durations in the abstract mode), the entry says what the mutant
approximates. `killed_by` is the property that `groupspec check --table
check.historical:NAME --stop-at-first-violation` reports at `bounds` (pinned by
tests/check/test_historical.py); None marks a bug that changes what clients see without breaking
any safety or liveness property. Such a bug is caught by `groupspec diff` against Kafka's table
instead: `diff_bounds` are the bounds at which the diff finds the difference and renders it as a
scenario that passes on one table and fails on the other, and `diff_expected` says what it shows
("differs ...: Kafka <answer>; the mutant <answer>", naming the input and the error codes each side
answers, no code for no response). tests/diff/test_diff_historical.py checks both.

Run one: `groupspec check --table check.historical:KAFKA_9801 --members 0 --static 1
--faults session,rebalance,crash,lost --stop-at-first-violation`, or a behaviour-only one:
`groupspec diff --table check.historical:KAFKA_10284_PERSIST --against kafka-3.9 --members 0
--static 1 --max-generation 1 --faults session,rebalance,crash,unload`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Optional

from check.abstract import Bounds
from model.atoms import join_request
from model.dsl import EFFECTS, SAME, Ctx, R, Table, effect
from model.effects import _remove as remove
from check.mutants import NEXT_GENERATION_ROWS, NO_DELAYED_SYNC, mutate
from model.table import CLASSIC_TABLE
from model.vocabulary import Error, GroupState

F = frozenset


@dataclass(frozen=True)
class HistoricalBug:
    name: str
    table: Table
    source: str  # URL of the report or the fix
    summary: str  # one line: what went wrong
    expressed: str  # how the mutant expresses it (and what it approximates)
    bounds: Bounds  # the exploration that kills it (small, for CI)
    killed_by: Optional[str]  # the property reported first, None if no property can kill it
    diff_expected: str = ""  # for killed_by None: what `groupspec diff` should report
    diff_bounds: Optional[Bounds] = None  # for killed_by None: where `groupspec diff` reports it


def _without(row_id: str, effect: str) -> dict[str, object]:
    r = CLASSIC_TABLE.row(row_id)
    return {"effects": tuple(e for e in r.effects if e != effect)}


P_NAME = GroupState.PreparingRebalance.name
CLOSED_2: Final = Bounds(dynamic=2, max_generation=2, faults=F({"session", "rebalance", "crash", "stall"}))
STATIC_LOST: Final = Bounds(dynamic=0, static=1, max_generation=1,
                            faults=F({"session", "rebalance", "crash", "lost"}))
STALL_2: Final = Bounds(dynamic=2, max_generation=1, faults=F({"session", "rebalance", "stall"}))
CRASH_1: Final = Bounds(dynamic=1, max_generation=1, faults=F({"session", "rebalance", "crash"}))
STATIC_CRASH: Final = Bounds(dynamic=0, static=1, max_generation=1,
                             faults=F({"session", "rebalance", "crash"}))
# Diff bounds: a static restart after a subscription change (KAFKA-14009), and a coordinator
# failover after a static restart (KAFKA-10284).
METADATA_RESTART: Final = Bounds(dynamic=1, static=1, max_generation=2, metadata_changes=True,
                                 max_ids_per_client=1, faults=F({"crash"}))
# A dynamic and a static consumer that crash: the static one can be absent when a rebalance ends
# (KAFKA-8220), or restart while its old life's JoinGroup is parked (KAFKA-8500).
STATIC_AND_DYNAMIC: Final = Bounds(dynamic=1, static=1, max_generation=1, max_ids_per_client=1,
                                   faults=F({"session", "rebalance", "crash"}))
STATIC_UNLOAD: Final = Bounds(dynamic=0, static=1, max_generation=1,
                              faults=F({"session", "rebalance", "crash", "unload"}))

KAFKA_12890: Final = NO_DELAYED_SYNC
KAFKA_9801: Final = mutate(CLASSIC_TABLE, "KAFKA-9801", {
    "CompletingRebalance/JoinGroup/static-restart": {
        "reply": R(Error.NONE, "static-restart"), "next_state": SAME,
        "effects": ("replace-static-member", "update-and-park-join", "unpark-join")},
})
KOP_380: Final = mutate(CLASSIC_TABLE, "kop-380", {
    "PreparingRebalance/DelayedJoinComplete/next-generation": {"next_state": SAME, "effects": ()},
    "PreparingRebalance/DelayedJoinComplete/now-empty": {"next_state": SAME, "effects": ()},
})
TANSU_SYNC_PAUSE: Final = mutate(CLASSIC_TABLE, "tansu-sync-pause", {
    "CompletingRebalance/SyncGroup/follower-waits": {
        "reply": R(Error.NONE, "stored-assignment"), "effects": ("unpend-sync",)},
})
REDPANDA_3300: Final = mutate(CLASSIC_TABLE, "redpanda-3300", {
    "PreparingRebalance/MemberSessionExpire/member-failed": {"effects": ("disarm-session",)},
})
REDPANDA_CORE_9252: Final = mutate(CLASSIC_TABLE, "redpanda-core-9252", {
    f"{P_NAME}/{ev}/now-empty": {"next_state": SAME, "effects": ()}
    for ev in ("DelayedJoinExpire", "DelayedJoinComplete")})
KAFKA_14422: Final = mutate(CLASSIC_TABLE, "KAFKA-14422", {
    rid: _without(rid, "answer-joins") for rid in NEXT_GENERATION_ROWS})
DEVKAFKA_SYNC: Final = mutate(CLASSIC_TABLE, "devkafka-sync", {
    "CompletingRebalance/SyncGroup/follower-waits": {
        "reply": R(Error.NONE, "stored-assignment"), "effects": ("unpend-sync",)},
    "CompletingRebalance/SyncGroup/leader-assigns": {
        "reply": R(Error.NONE, "stored-assignment"),
        "effects": ("unpend-sync", "store-assignment", "persist-group", "answer-syncs")},
})
KAFKA_9752: Final = mutate(CLASSIC_TABLE, "KAFKA-9752", {
    f"{s}/MemberSessionExpire/member-failed": {"effects": ("disarm-session",), "next_state": SAME}
    for s in ("CompletingRebalance", "Stable")})
KAFKA_14009: Final = mutate(CLASSIC_TABLE, "KAFKA-14009", {
    "Stable/JoinGroup/static-restart": {
        "effects": ("replace-static-member", "persist-group")},
})
KAFKA_10284_PERSIST: Final = mutate(CLASSIC_TABLE, "KAFKA-10284-persist", {
    "Stable/JoinGroup/static-restart": _without("Stable/JoinGroup/static-restart", "persist-group"),
})
KAFKA_10284_PROTOCOL: Final = mutate(CLASSIC_TABLE, "KAFKA-10284-protocol", {
    "Stable/JoinGroup/static-restart-protocol-changed": {
        "reply": R(Error.NONE, "static-restart"), "next_state": SAME,
        "effects": ("replace-static-member", "update-and-park-join", "persist-group", "unpark-join")},
})



# -- bugs that need their own effect (the native engine calls them back, check/callbacks.py) ----

@effect("remove-unjoined-members", modifies={"members", "leader"})
def remove_unjoined_members(ctx: Ctx) -> None:
    """Before KAFKA-8220: every member that has not rejoined is removed when the join phase
    ends, static members too (they have no parked request, so nobody is answered)."""
    for m in list(ctx.group.members):
        if m.awaiting_join is None:
            remove(ctx, m.member_id, None)  # the model's own removal: leadership moves


@effect("rejoin-static-keep-id", modifies={"members"}, responds=True)
def rejoin_static_keep_id(ctx: Ctx) -> None:
    """Before KAFKA-8500: a static member rejoining with an unknown member id outside Stable
    keeps the instance's old member id; its new JoinGroup replaces the parked one, which is
    never answered (updateMember), and the old id is not fenced."""
    iid = join_request(ctx.inp).group_instance_id
    assert iid is not None
    old_id = ctx.group.static_member_id(iid)
    assert old_id is not None
    ctx.scratch["member_id"] = old_id
    EFFECTS["update-and-park-join"].fn(ctx)


def _all_join_phase_ends(effect_name: str) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for r in CLASSIC_TABLE.rows:
        if "remove-unjoined-dynamic" in r.effects:
            out[r.id] = {"effects": tuple(effect_name if e == "remove-unjoined-dynamic" else e
                                          for e in r.effects)}
    return out


KAFKA_8220: Final = mutate(CLASSIC_TABLE, "KAFKA-8220",
                           _all_join_phase_ends("remove-unjoined-members"))
KAFKA_8500: Final = mutate(CLASSIC_TABLE, "KAFKA-8500", {
    "PreparingRebalance/JoinGroup/static-restart": {"effects": ("rejoin-static-keep-id",)},
    "CompletingRebalance/JoinGroup/static-restart": {
        "effects": ("rejoin-static-keep-id", "rebalance")},
})

HISTORICAL: Final[dict[str, HistoricalBug]] = {b.name: b for b in (
    HistoricalBug(
        "KAFKA_12890", KAFKA_12890, "https://issues.apache.org/jira/browse/KAFKA-12890",
        "a member that got its JoinGroup response but never sends SyncGroup leaves the group "
        "stuck in CompletingRebalance (no DelayedSync before the fix)",
        "the join-phase completion rows do not arm the DelayedSync",
        STALL_2, "quiescence-reachable"),
    HistoricalBug(
        "KAFKA_9801", KAFKA_9801, "https://github.com/apache/kafka/pull/8405",
        "a static member rejoining in CompletingRebalance got a new member id without a "
        "rebalance, so the leader's assignment (keyed by the old id) left it empty",
        "CompletingRebalance/JoinGroup/static-restart answers at once with the current "
        "generation and stays CompletingRebalance, as Stable does",
        STATIC_LOST, "completing-membership-frozen"),
    HistoricalBug(
        "KOP_380", KOP_380, "https://github.com/streamnative/kop/pull/380",
        "KoP's removeMemberAndUpdateGroup in PreparingRebalance did not call "
        "joinPurgatory.checkAndComplete: the join phase waited for its timeout although every "
        "remaining member had rejoined",
        "approximation: the urgent DelayedJoinComplete never completes the join phase (KoP "
        "missed the check only after a removal); only the DelayedJoin's expiry does",
        CLOSED_2, "join-completes-when-all-rejoined"),
    HistoricalBug(
        "TANSU_SYNC_PAUSE", TANSU_SYNC_PAUSE, "https://github.com/nisshi-io/nisshi/issues/679",
        "Tansu's SyncGroup handler answered a follower after a fixed pause with whatever "
        "(possibly empty) assignment it had, instead of waiting for the leader's SyncGroup",
        "CompletingRebalance/SyncGroup/follower-waits answers at once with the member's "
        "current (stale or empty) assignment",
        CLOSED_2, "sync-answer-is-stored-assignment"),
    HistoricalBug(
        "DEVKAFKA_SYNC", DEVKAFKA_SYNC, "https://github.com/514-labs/moosestack/pull/3885",
        "devkafka (moosestack's Kafka-compatible dev broker): non-leader SyncGroups returned at "
        "once with their current (empty) assignment; only the leader's SyncGroup stored "
        "assignments and made the group Stable (found in review of the PR that added it)",
        "followers' SyncGroups are answered at once in CompletingRebalance; the leader's is "
        "answered directly, not parked",
        CLOSED_2, "sync-answer-is-stored-assignment"),
    HistoricalBug(
        "REDPANDA_3300", REDPANDA_3300, "https://github.com/redpanda-data/redpanda/issues/3300",
        "Redpanda: a group stuck in PreparingRebalance, disconnected members never kicked out "
        "(session expiry did not remove them)",
        "PreparingRebalance/MemberSessionExpire/member-failed only disarms the timer. The model "
        "does not get stuck: the DelayedJoin's expiry removes a dynamic absentee, and a crashed "
        "static client restarts; the bug's own trigger (an exception while updating a member) "
        "is not a table behaviour",
        STATIC_CRASH, None,
        diff_expected="differs: when a member's MemberSessionExpire fires in PreparingRebalance "
                      "(first found: a new member's join timeout), Kafka removes it and answers "
                      "its parked JoinGroup UNKNOWN_MEMBER_ID; the mutant answers nothing (the "
                      "member stays until the DelayedJoin fires)",
        diff_bounds=STATIC_CRASH),
    HistoricalBug(
        "REDPANDA_CORE_9252", REDPANDA_CORE_9252, "https://github.com/redpanda-data/redpanda/pull/25270",
        "Redpanda: when the last member of a group expired while pending members remained, the "
        "join timer's callback threw and the group never moved to Empty",
        "the join-phase-end rows that would make the group Empty keep it in PreparingRebalance",
        CLOSED_2, "join-completes-when-all-rejoined"),
    HistoricalBug(
        "KAFKA_14422", KAFKA_14422, "https://github.com/apache/kafka/pull/12909",
        "the JoinGroup response to an old-version leader failed to serialize, so the leader's "
        "JoinGroup was never answered and, being parked, the member was never expired",
        "approximation: the join phase completes without answering any parked JoinGroup",
        CLOSED_2, "awaiting-join-only-in-preparing"),
    HistoricalBug(
        "KAFKA_9752", KAFKA_9752, "https://github.com/apache/kafka/pull/8339",
        "after a rebalance completed, the heartbeat expiration of a member was never satisfied "
        "or expired correctly, leaving a departed member in the group",
        "approximation: session expiry in CompletingRebalance/Stable does nothing (a crashed "
        "member stays a member of a Stable group)",
        CRASH_1, None,
        diff_expected="differs: when a departed member's MemberSessionExpire fires after the "
                      "join phase, Kafka removes it and answers the others' parked SyncGroup "
                      "REBALANCE_IN_PROGRESS; the mutant answers nothing",
        diff_bounds=CRASH_1),
    HistoricalBug(
        "KAFKA_14009", KAFKA_14009, "https://github.com/apache/kafka/pull/12308",
        "a static member rejoining a Stable group kept its old rebalance timeout (and protocol "
        "metadata): the update was not applied to the member",
        "Stable/JoinGroup/static-restart replaces the member id and persists but does not "
        "update the member's protocols and timeouts",
        STATIC_LOST, None,
        diff_expected="differs when the restart changes metadata: when the restarted follower "
                      "later sends a JoinGroup with the metadata it had before the restart, Kafka "
                      "sees a change and parks it for a rebalance; the mutant, which kept that "
                      "metadata, answers NONE at once",
        diff_bounds=METADATA_RESTART),
    HistoricalBug(
        "KAFKA_10284_PERSIST", KAFKA_10284_PERSIST, "https://github.com/apache/kafka/pull/9270",
        "a static member's rejoin in Stable (new member id) was not persisted, so after a "
        "coordinator failover the group resumed with the old member id",
        "Stable/JoinGroup/static-restart without persist-group",
        STATIC_LOST, None,
        diff_expected="differs after an unload and load (needs the unload fault in the diff "
                      "bounds): Kafka answers the restarted client's SyncGroup NONE; the mutant, "
                      "which resumed with the old member id, answers FENCED_INSTANCE_ID",
        diff_bounds=STATIC_UNLOAD),
    HistoricalBug(
        "KAFKA_10284_PROTOCOL", KAFKA_10284_PROTOCOL, "https://github.com/apache/kafka/pull/9270",
        "a static member restarting in Stable with a protocol list that changes the group's "
        "selected protocol was handled as a plain restart (no rebalance), leaving the group's "
        "protocol inconsistent with its members; the KAFKA-10284 fix rebalances in that case",
        "Stable/JoinGroup/static-restart-protocol-changed answers at once and stays Stable",
        Bounds(static=1, dynamic=0, max_generation=1, mode="open", max_ids_per_client=1,
               faults=F({"session", "rebalance"})),
        "selected-protocol-supported"),
    HistoricalBug(
        "KAFKA_8220", KAFKA_8220, "https://github.com/apache/kafka/pull/6666",
        "with static membership (KIP-345) the rebalance timeout still removed every member that "
        "had not rejoined, static ones too, so a static member that was slow to rejoin lost its "
        "membership; the fix keeps static members (only dynamic ones are kicked out)",
        "every join-phase end removes all non-rejoined members with its own effect "
        "remove-unjoined-members (instead of the model's remove-unjoined-dynamic)",
        STATIC_AND_DYNAMIC, None,
        diff_expected="differs: when the DelayedJoinExpire fires while a static member has not "
                      "rejoined, Kafka keeps it and answers the rejoined leader's JoinGroup NONE "
                      "with both members; the mutant answers NONE with the leader alone",
        diff_bounds=STATIC_AND_DYNAMIC),
    HistoricalBug(
        "KAFKA_8500", KAFKA_8500, "https://github.com/apache/kafka/pull/6899",
        "a static member rejoining with an unknown member id outside Stable kept the instance's "
        "old member id and silently replaced its parked JoinGroup, so two consumers could share "
        "one member id; the fix always gives a new id and fences the old one at once",
        "PreparingRebalance/ and CompletingRebalance/JoinGroup/static-restart use their own "
        "effect rejoin-static-keep-id (update the old member, park the new request) instead of "
        "replace-static-member",
        STATIC_AND_DYNAMIC, None,
        diff_expected="differs: when a restarted static client's JoinGroup arrives while its old "
                      "life's JoinGroup is parked, Kafka answers the old one FENCED_INSTANCE_ID; "
                      "the mutant drops it without a response",
        diff_bounds=STATIC_AND_DYNAMIC),
)}

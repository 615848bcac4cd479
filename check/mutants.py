"""Negative controls: deliberately wrong tables, each one a bug a reimplementation could have.

Every checker (explorer, proofs, replay) must catch each of these with a counterexample; a
checker that passes them all proves nothing. `MUTANTS[name]` is (table, the invariant that must
break, a one-line description).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from check.abstract import Bounds
from model.dsl import SAME, R, Row, Table
from model.table import CLASSIC_TABLE
from model.vocabulary import Error


def mutate(table: Table, name: str, changes: dict[str, dict[str, object]]) -> Table:
    """A copy of `table` with the named rows' fields replaced (`{row_id: {field: value}}`)."""
    missing = set(changes) - {r.id for r in table.rows}
    if missing:
        raise KeyError(f"no such rows: {sorted(missing)}")
    rows: list[Row] = [replace(r, **changes[r.id]) if r.id in changes else r  # type: ignore[arg-type]
                       for r in table.rows]
    return Table(name=name, rows=tuple(rows), events=table.events)


def _without(row_id: str, effect: str) -> dict[str, object]:
    r = CLASSIC_TABLE.row(row_id)
    return {"effects": tuple(e for e in r.effects if e != effect)}


NEXT_GENERATION_ROWS: Final = tuple(
    r.id for r in CLASSIC_TABLE.rows if r.id.endswith("/next-generation"))

SYNC_ACCEPTED_IN_PREPARING: Final = mutate(CLASSIC_TABLE, "sync-accepted-in-preparing", {
    "PreparingRebalance/SyncGroup/rebalance-in-progress": {
        "reply": R(Error.NONE, "stored-assignment"), "effects": ("store-assignment",)},
})
SECOND_DELAYED_JOIN: Final = mutate(CLASSIC_TABLE, "second-delayed-join", {
    "PreparingRebalance/JoinGroup/rejoin": {"effects": ("update-and-park-join", "rebalance")},
    "PreparingRebalance/JoinGroup/pending-member-joins": {"effects": ("add-member", "rebalance")},
})
NO_GENERATION_BUMP: Final = mutate(CLASSIC_TABLE, "no-generation-bump", {
    rid: _without(rid, "bump-generation") for rid in NEXT_GENERATION_ROWS})
NO_DELAYED_SYNC: Final = mutate(CLASSIC_TABLE, "no-delayed-sync", {
    rid: _without(rid, "arm-delayed-sync") for rid in NEXT_GENERATION_ROWS})
HEARTBEAT_EMPTY_ACCEPTED: Final = mutate(CLASSIC_TABLE, "heartbeat-empty-accepted", {
    "Empty/Heartbeat/unknown-member": {"reply": R(Error.NONE, "error")},
})
COMMIT_STALE_ACCEPTED: Final = mutate(CLASSIC_TABLE, "commit-stale-accepted", {
    "Stable/OffsetCommit/illegal-generation": {"reply": R(Error.NONE, "commit-result"),
                                              "effects": ("store-offsets",)},
})
JOIN_ANSWERED_AND_PARKED: Final = mutate(CLASSIC_TABLE, "join-answered-and-parked", {
    "PreparingRebalance/JoinGroup/rejoin": {"reply": R(Error.NONE, "join-current")},
})

# -- negative controls of the client's contract (model/invariants.py, check/explore.py) --------
FOLLOWER_SYNC_ANSWERED_EARLY: Final = mutate(CLASSIC_TABLE, "follower-sync-answered-early", {
    "CompletingRebalance/SyncGroup/follower-waits": {
        "reply": R(Error.NONE, "stored-assignment"), "effects": ("unpend-sync",)},
})
STABLE_SYNC_STORES: Final = mutate(CLASSIC_TABLE, "stable-sync-stores", {
    "Stable/SyncGroup/stored-assignment": {
        "effects": ("store-assignment", "unpend-sync", "rearm-session")},
})
NO_PROTOCOL_SELECTED: Final = mutate(CLASSIC_TABLE, "no-protocol-selected", {
    rid: _without(rid, "select-protocol") for rid in NEXT_GENERATION_ROWS})
FENCED_HEARTBEAT_ACCEPTED: Final = mutate(CLASSIC_TABLE, "fenced-heartbeat-accepted", {
    f"{s}/Heartbeat/fenced": {"reply": R(Error.NONE, "ok")}
    for s in ("PreparingRebalance", "CompletingRebalance", "Stable")})
PARKED_MEMBER_EXPIRED: Final = mutate(CLASSIC_TABLE, "parked-member-expired", {
    "PreparingRebalance/MemberSessionExpire/satisfied": {"effects": ("remove-member",)},
    "CompletingRebalance/MemberSessionExpire/satisfied": {
        "effects": ("remove-member", "rebalance"),
        "next_state": CLASSIC_TABLE.row("CompletingRebalance/MemberSessionExpire/member-failed").next_state},
})
JOIN_COMPLETION_STAYS_PREPARING: Final = mutate(CLASSIC_TABLE, "join-completion-stays-preparing", {
    "PreparingRebalance/DelayedJoinComplete/next-generation": {
        "next_state": SAME, "effects": ("disarm-join-timer",)},
})
STATIC_JOIN_IN_COMPLETING_KEEPS_GENERATION: Final = mutate(
    CLASSIC_TABLE, "static-join-in-completing-keeps-generation", {
        "CompletingRebalance/JoinGroup/static-restart": {
            "reply": R(Error.NONE, "static-restart"), "next_state": SAME,
            "effects": ("replace-static-member", "update-and-park-join", "unpark-join")},
    })
ASSIGNMENT_NEVER_PROPAGATED: Final = mutate(CLASSIC_TABLE, "assignment-never-propagated", {
    "CompletingRebalance/SyncGroup/leader-assigns": {
        "next_state": SAME, "effects": ("park-sync", "unpend-sync", "store-assignment")},
})

MUTANTS: Final[dict[str, tuple[Table, str, str]]] = {
    "sync-accepted-in-preparing": (SYNC_ACCEPTED_IN_PREPARING, "leader-sync-rejected-in-preparing",
                                   "the leader's SyncGroup is accepted during PreparingRebalance"),
    "second-delayed-join": (SECOND_DELAYED_JOIN, "single-delayed-join",
                            "a join during PreparingRebalance arms another DelayedJoin"),
    "no-generation-bump": (NO_GENERATION_BUMP, "generation-monotonic",
                           "the generation is not incremented when the join phase completes"),
    "no-delayed-sync": (NO_DELAYED_SYNC, "quiescence-reachable",
                        "no DelayedSync: a member that never syncs sticks the group (KAFKA-12890)"),
    "heartbeat-empty-accepted": (HEARTBEAT_EMPTY_ACCEPTED, "only-members-served",
                                 "a Heartbeat to an Empty group is answered NONE"),
    "commit-stale-accepted": (COMMIT_STALE_ACCEPTED, "commit-fencing",
                              "an OffsetCommit of a stale generation is accepted in Stable"),
    "join-answered-and-parked": (JOIN_ANSWERED_AND_PARKED, "one-response-per-request",
                                 "a rejoin during PreparingRebalance is answered at once and also "
                                 "parked, so it is answered again when the join phase completes"),
    "follower-sync-answered-early": (
        FOLLOWER_SYNC_ANSWERED_EARLY, "sync-answer-is-stored-assignment",
        "a follower's SyncGroup in CompletingRebalance is answered at once with whatever "
        "assignment it has (stale or empty), before the leader's SyncGroup"),
    "stable-sync-stores": (
        STABLE_SYNC_STORES, "only-leader-assigns",
        "a SyncGroup in Stable (a follower's, after the leader's) stores its (empty) assignments "
        "over the leader's instead of being answered with the stored one"),
    "no-protocol-selected": (
        NO_PROTOCOL_SELECTED, "selected-protocol-supported",
        "the join phase completes without selecting a protocol"),
    "fenced-heartbeat-accepted": (
        FENCED_HEARTBEAT_ACCEPTED, "static-old-id-fenced",
        "a Heartbeat from a replaced static member's old id is answered NONE"),
    "parked-member-expired": (
        PARKED_MEMBER_EXPIRED, "parked-member-not-expired",
        "a member parked in JoinGroup or SyncGroup is removed when its session timer fires"),
    "join-completion-stays-preparing": (
        JOIN_COMPLETION_STAYS_PREPARING, "join-completes-when-all-rejoined",
        "when every member has rejoined, the DelayedJoin completes but the group stays in "
        "PreparingRebalance (no new generation, nobody answered)"),
    "static-join-in-completing-keeps-generation": (
        STATIC_JOIN_IN_COMPLETING_KEEPS_GENERATION, "completing-membership-frozen",
        "a static member restarting in CompletingRebalance gets a new member id without a new "
        "rebalance, so the leader's assignment misses it (KAFKA-9801)"),
    "assignment-never-propagated": (
        ASSIGNMENT_NEVER_PROPAGATED, "parked-requests-answered",
        "the leader's SyncGroup stores the assignment but no parked SyncGroup is ever answered "
        "and the group stays CompletingRebalance"),
}

# Mutants whose defect needs other clients than two closed-mode dynamic consumers.
MUTANT_BOUNDS: Final[dict[str, Bounds]] = {
    # an old static member id: any request from a static client (open mode)
    "fenced-heartbeat-accepted": Bounds(static=1, dynamic=0, max_generation=1, mode="open",
                                        max_ids_per_client=1,
                                        faults=frozenset({"session", "rebalance"})),
    # a liveness defect: the whole graph is explored, so keep it small
    "assignment-never-propagated": Bounds(dynamic=2, max_generation=1,
                                          faults=frozenset({"session", "rebalance"})),
    # a static restart while CompletingRebalance
    "static-join-in-completing-keeps-generation": Bounds(
        dynamic=0, static=1, max_generation=1,
        faults=frozenset({"session", "rebalance", "crash", "lost"})),
}

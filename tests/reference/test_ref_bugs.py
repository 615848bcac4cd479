"""Every seeded bug changes an observable answer or state (so a checker can catch it).

Each scenario runs twice, on a correct reference and on one with the bug; the two observations
must differ, and the correct one must be Kafka's.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from model.coordinator_api import MemberSpec
from model.messages import MemberIdentity, ProtocolMetadata
from model.vocabulary import Error, GroupState

from reference import BUGS
from ref_harness import TP0, H


def sync_in_preparing(h: H) -> object:
    a, b = h.stable(2)
    h.join(a)
    return h.sync(a, 1, assignments=((a, b"new"),)).sync.error


def generation_after_rebalance(h: H) -> object:
    a, b = h.stable(2)
    h.join(a)
    return h.join(b).join.generation_id


def generation_after_initial_delay(h: H) -> object:
    h.stable(2)  # the first join phase ends when the initial rebalance delay expires (a timer)
    return h.view().generation_id


def stuck_without_delayed_sync(h: H) -> object:
    a, b = h.stable(2, rebalance=20000, session=60000)
    h.join(a, rebalance=20000, session=60000)
    h.join(b, rebalance=20000, session=60000)
    h.sync(b, 2)  # the leader never syncs
    h.advance(20001)
    return h.state()


def static_fencing(h: H) -> object:
    h.static_stable(("i1",))
    return h.join("zombie", instance="i1").join.error


def heartbeat_empty(h: H) -> object:
    (a,) = h.stable(1)
    h.leave(MemberIdentity(a))
    return h.heartbeat(a, 1).heartbeat.error


def parked_expiry(h: H) -> object:
    a, b = h.stable(2, session=10000, rebalance=60000)
    ja = h.join(a, session=10000, rebalance=60000)
    h.advance(9000)
    h.heartbeat(b, 1)
    h.advance(9000)
    h.heartbeat(b, 1)
    return (ja.done, h.view().member(a) is not None)


def leave_rebalance(h: H) -> object:
    a, b = h.stable(2)
    h.leave(MemberIdentity(b))
    return h.state()


def heartbeat_completing(h: H) -> object:
    a, b = h.stable(2)
    h.join(a)
    h.join(b)
    return h.heartbeat(b, 2).heartbeat.error


def commit_completing(h: H) -> object:
    a, b = h.stable(2)
    h.join(a)
    h.join(b)
    return h.commit(b, 2).commit.partitions


def pending_blocks(h: H) -> object:
    a, b = h.stable(2)
    h.join()
    h.join(a)
    return h.join(b).done


def static_kept(h: H) -> object:
    s1, s2 = h.static_stable(("i1", "i2"), rebalance=20000, session=60000)
    h.c.setup_prepare_rebalance("g")
    h.join(s2, instance="i2", rebalance=20000, session=60000)
    h.advance(20001)
    return len(h.view().members)


def initial_delay(h: H) -> object:
    _, call = h.new_member()
    return call.done


def max_size_parked(h: H) -> object:
    a, b = h.stable(2)
    h.join(a)
    return h.join(require_known=False).done or h.view().state


def describe_protocol(h: H) -> object:
    a, b = h.stable(2)
    h.join(a)
    return h.describe().protocol


def alive_after(ms: int) -> Callable[[H], object]:
    """A lone member of session 10,000 ms, silent for `ms`: is it still a member?"""
    def scenario(h: H) -> object:
        (a,) = h.stable(1)
        h.advance(ms)
        return h.view().member(a) is not None
    return scenario


def join_answered_at_rebalance_timeout(h: H) -> object:
    a, b = h.stable(2, session=60000, rebalance=20000)
    ja = h.join(a, session=60000, rebalance=20000)  # b never rejoins: the rebalance timeout ends it
    h.advance(20001)
    return ja.done


def empty_group_kept(h: H) -> object:
    (a,) = h.stable(1)
    h.leave(MemberIdentity(a))
    return h.c.group_view("g") is not None


def heartbeat_answered(h: H) -> object:
    (a,) = h.stable(1)
    return h.heartbeat(a, 1).done


def largest_rebalance_timeout(h: H) -> object:
    a, b = h.stable(2, session=60000, rebalance=20000)  # a joined first
    # b rejoins with new metadata (a rebalance): the group's rebalance timeout is now 30,000
    h.join(b, session=60000, rebalance=30000, protocols=(ProtocolMetadata("range", b"new"),))
    h.advance(20001)
    return h.state()


SCENARIOS: dict[str, Callable[[H], object]] = {
    "sync-accepted-in-preparing": sync_in_preparing,
    "no-generation-bump": generation_after_rebalance,
    "timer-join-no-generation-bump": generation_after_initial_delay,
    "no-delayed-sync": stuck_without_delayed_sync,
    "static-no-fence": static_fencing,
    "heartbeat-empty-accepted": heartbeat_empty,
    "session-expiry-while-parked": parked_expiry,
    "leave-no-rebalance": leave_rebalance,
    "heartbeat-completing-rebalance-in-progress": heartbeat_completing,
    "commit-in-completing-accepted": commit_completing,
    "pending-ignored-in-join-check": pending_blocks,
    "static-removed-at-join-timeout": static_kept,
    "initial-delay-completes-early": initial_delay,
    "max-size-counts-members": max_size_parked,
    "describe-protocol-outside-stable": describe_protocol,
    "session-expiry-late": alive_after(10500),
    "session-expiry-early": alive_after(9800),
    "join-unanswered-at-rebalance-timeout": join_answered_at_rebalance_timeout,
    "empty-group-deleted": empty_group_kept,
    "heartbeat-answered-late": heartbeat_answered,
    "rebalance-timeout-first-member": largest_rebalance_timeout,
}

# The coordinator config a scenario needs beyond the defaults.
CONFIG: dict[str, dict[str, Any]] = {"max-size-counts-members": {"group_max_size": 2}}

EXPECTED_CORRECT: dict[str, object] = {
    "sync-accepted-in-preparing": Error.REBALANCE_IN_PROGRESS,
    "no-generation-bump": 2,
    "timer-join-no-generation-bump": 1,
    "no-delayed-sync": GroupState.PreparingRebalance,
    "static-no-fence": Error.FENCED_INSTANCE_ID,
    "heartbeat-empty-accepted": Error.UNKNOWN_MEMBER_ID,
    "session-expiry-while-parked": (False, True),
    "leave-no-rebalance": GroupState.PreparingRebalance,
    "heartbeat-completing-rebalance-in-progress": Error.NONE,
    "commit-in-completing-accepted": ((TP0, Error.REBALANCE_IN_PROGRESS),),
    "pending-ignored-in-join-check": False,
    "static-removed-at-join-timeout": 2,
    "initial-delay-completes-early": False,
    "max-size-counts-members": GroupState.PreparingRebalance,
    "describe-protocol-outside-stable": "",
    "session-expiry-late": False,
    "session-expiry-early": True,
    "join-unanswered-at-rebalance-timeout": True,
    "empty-group-deleted": True,
    "heartbeat-answered-late": True,
    "rebalance-timeout-first-member": GroupState.PreparingRebalance,
}


def test_every_bug_has_a_scenario() -> None:
    assert set(SCENARIOS) == set(BUGS) == set(EXPECTED_CORRECT)
    assert len(BUGS) >= 7 and all(BUGS.values())


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_seeded_bug_changes_behaviour(bug: str) -> None:
    scenario, config = SCENARIOS[bug], CONFIG.get(bug, {})
    correct = scenario(H(**config))
    buggy = scenario(H(bugs=frozenset({bug}), **config))
    assert correct == EXPECTED_CORRECT[bug]
    assert buggy != correct, f"seeded bug {bug} is not observable"


def test_backdoor_stable_leader_rejoin_completes_at_once() -> None:
    h = H()
    h.c.setup_add_group("g", GroupState.Stable, (MemberSpec("m"),), "consumer")
    assert h.join("m", protocols=(ProtocolMetadata("range", b""),)).join.error == Error.NONE

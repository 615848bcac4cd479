"""The one action vocabulary: every choice of both dialects means something and resolves; what the
shared meanings pick; a dialect with a choice that means nothing is refused."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Sequence

import pytest

from model.messages import (DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                            MemberIdentity, Request, SyncGroupRequest, TopicPartition)
from model.vocabulary import ApiKey

from conformance.actions import (Action, Dialect, Everyone, Heartbeat, Hold, Inst, Join, Leave, Pick, Sync, Wait,
                                 instance_of, member_of, resolve)
from conformance.lockstep import LOCKSTEP
from fuzz.actions import FUZZ


@dataclass
class FakeClient:
    """A client that knows three members (m2 static as i1) and speaks every version."""

    dialect: Dialect
    group_id: str = "g"
    ids: list[str] = field(default_factory=lambda: ["m0", "m1", "m2"])
    statics: dict[str, str] = field(default_factory=lambda: {"m2": "i1"})
    apis: frozenset[ApiKey] = frozenset(ApiKey)

    def known(self) -> list[str]:
        return self.ids

    def current(self) -> list[str]:
        return self.ids[1:]

    def members(self) -> list[str]:
        return self.ids

    def leader(self) -> str:
        return self.ids[0]

    def instance_of(self, member_id: str) -> Optional[str]:
        return self.statics.get(member_id)

    def generation(self) -> int:
        return 4

    def last_join(self) -> tuple[str, ...]:
        return tuple(self.ids)

    def protocol(self) -> tuple[Optional[str], Optional[str]]:
        return "consumer", "range"

    def version(self, api: ApiKey, choice: int, lo: int = 0) -> Optional[int]:
        return 9 if api in self.apis else None

    def timeouts(self, session: int, rebalance: int) -> tuple[int, int]:
        return 1000 + session, 2000 + rebalance

    def assignments(self, targets: Sequence[str]) -> tuple[tuple[str, bytes], ...]:
        return tuple((t, b"\x01") for t in targets)

    def offsets(self, choice: int) -> tuple[tuple[TopicPartition, int], ...]:
        return ((TopicPartition("t", 0), choice),)


def every_action(d: Dialect) -> list[Action]:
    """Each kind with each value of each choice it draws (the others left at their defaults)."""
    out: list[Action] = []
    for kind, choices in d.kinds.items():
        for name, n in choices.items():
            for value in range(n):
                def choose(choice: str, _: int, name: str = name, value: int = value, kind: type = kind) -> int:
                    return value if choice == name else int(getattr(kind(), choice))

                out.append(d.build(kind, choose))
    return out


@pytest.mark.parametrize("dialect", [LOCKSTEP, FUZZ], ids=["lockstep", "fuzz"])
def test_every_choice_of_a_dialect_resolves_into_requests_of_its_group(dialect: Dialect) -> None:
    client = FakeClient(dialect)
    kinds = set()
    for action in every_action(dialect):
        resolved = list(resolve(action, client))
        assert all(isinstance(r, Request.__args__) and v == 9 for r, v in resolved), action  # type: ignore[attr-defined]
        assert all(getattr(r, "group_id", "g") == "g" for r, _ in resolved), action
        assert bool(resolved) is not isinstance(action, (Wait, Hold)), action  # time passing is no request
        kinds |= {type(r) for r, _ in resolved}
    assert {JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest, DescribeGroupsRequest} <= kinds


def test_the_meanings_pick_what_they_say() -> None:
    c = FakeClient(FUZZ)
    # NEW, GHOST, LAST, KNOWN (position 4 of m0-m2), CURRENT (position 4 of m1-m2)
    assert [member_of(c, (p, 4)) for p in Pick] == ["", FUZZ.ghost, "m2", "m1", "m1"]
    assert member_of(FakeClient(FUZZ, ids=[]), (Pick.LAST, 0)) == ""
    assert [instance_of(c, "m2", i) for i in Inst] == ["i1", None, "i1", "i2", "i2", "i2"]
    assert instance_of(c, "m0", Inst.OTHER) == "i1"
    # a leave by another instance id alone names no member id
    (leave, _), = resolve(Leave(who=2, inst=3), c)  # m2, static as i1
    assert isinstance(leave, LeaveGroupRequest) and leave.members == (MemberIdentity("", "i2"),)


def test_everyone_is_one_request_per_member_resolved_as_it_is_sent() -> None:
    c = FakeClient(LOCKSTEP)
    requests = resolve(Everyone(what=0), c)
    first, _ = next(requests)
    c.statics["m1"] = "i2"  # what the client knows changes before the next member's request is made
    rest = [r for r, _ in requests]
    assert [r.member_id for r in [first, *rest] if isinstance(r, JoinGroupRequest)] == ["m0", "m1", "m2"]
    # a JoinGroup keeps the instance id its member had when the Everyone began
    assert [r.group_instance_id for r in [first, *rest] if isinstance(r, JoinGroupRequest)] == [None, None, "i1"]
    # the fuzzer's leader syncs with assignments for the last join, the others with none
    syncs = [r for r, _ in resolve(Everyone(what=1), FakeClient(FUZZ))]
    assert [len(r.assignments) for r in syncs if isinstance(r, SyncGroupRequest)] == [3, 0, 0]


def test_a_target_without_the_api_gets_no_request() -> None:
    c = FakeClient(FUZZ, apis=frozenset(ApiKey) - {ApiKey.Heartbeat})
    assert list(resolve(Heartbeat(), c)) == [] and list(resolve(Join(), c))


def test_a_dialect_with_a_choice_that_means_nothing_is_refused() -> None:
    # negative controls: a who-table one short of the values drawn, a default beyond its table,
    # a weight missing
    with pytest.raises(ValueError, match="Join.who: 10 values, 9 with a meaning"):
        replace(LOCKSTEP, join_who=LOCKSTEP.join_who[:-1])
    with pytest.raises(ValueError, match="Sync.proto: 4 values, 0 with a meaning"):
        replace(FUZZ, sync_protocol=())
    with pytest.raises(ValueError, match="weights"):
        replace(FUZZ, weights=FUZZ.weights[1:])
    assert replace(LOCKSTEP) == LOCKSTEP  # the dialects themselves are complete

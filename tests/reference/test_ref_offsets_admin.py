"""OffsetCommit, OffsetFetch, offset expiry, DescribeGroups, ListGroups, DeleteGroups (§2.8, §2.9, §2.11)."""

from __future__ import annotations

from model.coordinator_api import MemberSpec
from model.messages import DescribedMember, ListedGroup, MemberIdentity, TopicPartition
from model.vocabulary import Error, GroupState

from ref_harness import TP0, TP1, H


def test_commit_to_missing_group() -> None:
    h = H()
    r = h.commit("", 3).commit
    assert r.partitions == ((TP0, Error.ILLEGAL_GENERATION),)
    assert h.c.group_view("g") is None
    r = h.commit("", -1, ((TP0, 5), (TP1, 6))).commit
    assert r.partitions == ((TP0, Error.NONE), (TP1, Error.NONE))
    v = h.view()
    assert (v.state, v.generation_id, v.protocol_type) == (GroupState.Empty, 0, None)
    assert h.fetch((TP0, TP1, TopicPartition("u", 0))).partitions == (
        (TP0, 5, Error.NONE), (TP1, 6, Error.NONE), (TopicPartition("u", 0), -1, Error.NONE))


def test_commit_generation_minus_one_in_empty_ignores_member_ids() -> None:
    h = H()
    h.commit("", -1)
    assert h.commit("someone", -1, instance="i").commit.partitions == ((TP0, Error.NONE),)  # KAFKA-14201


def test_commit_common_checks() -> None:
    h = H(not_owned_groups=frozenset({"x"}))
    assert h.commit("", -1, group="x").commit.partitions == ((TP0, Error.NOT_COORDINATOR),)
    assert h.commit("", -1, group="").commit.partitions == ((TP0, Error.NONE),)  # empty id allowed


def test_commit_matrix_by_state() -> None:
    h = H()
    a, b = h.stable(2)
    assert h.commit(a, 1).commit.partitions == ((TP0, Error.NONE),)
    assert h.commit("", -1).commit.partitions == ((TP0, Error.UNKNOWN_MEMBER_ID),)
    assert h.commit(a, 7).commit.partitions == ((TP0, Error.ILLEGAL_GENERATION),)
    assert h.commit("zz", 1).commit.partitions == ((TP0, Error.UNKNOWN_MEMBER_ID),)
    h.join(a)  # PreparingRebalance: commits of the previous generation allowed
    assert h.commit(b, 1, ((TP0, 9),)).commit.partitions == ((TP0, Error.NONE),)
    h.join(b)  # CompletingRebalance
    assert h.commit(b, 2).commit.partitions == ((TP0, Error.REBALANCE_IN_PROGRESS),)
    assert h.commit("zz", 2).commit.partitions == ((TP0, Error.UNKNOWN_MEMBER_ID),), "member check precedes state"
    assert h.fetch().partitions == ((TP0, 9, Error.NONE),)


def test_commit_renews_session_in_stable() -> None:
    h = H()
    (a,) = h.stable(1, session=10000)
    h.advance(9000)
    h.commit(a, 1)
    h.advance(9000)
    assert h.view().member(a) is not None


def test_commit_append_failure_is_mapped_and_not_stored() -> None:
    h = H()
    h.commit("", -1, ((TP0, 1),))
    h.c.set_append_result(Error.MESSAGE_TOO_LARGE)
    assert h.commit("", -1, ((TP0, 2),)).commit.partitions == ((TP0, Error.INVALID_COMMIT_OFFSET_SIZE),)
    h.c.set_append_result(Error.NOT_LEADER_OR_FOLLOWER)
    assert h.commit("", -1, ((TP0, 3),)).commit.partitions == ((TP0, Error.NOT_COORDINATOR),)
    assert h.fetch().partitions == ((TP0, 1, Error.NONE),)


def test_commit_dead_group() -> None:
    h = H()
    h.c.setup_add_group("g", GroupState.Dead, (), "consumer")
    assert h.commit("", -1).commit.partitions == ((TP0, Error.COORDINATOR_NOT_AVAILABLE),)


def test_fetch_all_and_missing_and_not_coordinator() -> None:
    h = H(not_owned_groups=frozenset({"x"}))
    assert h.fetch(group="x").error == Error.NOT_COORDINATOR and h.fetch(group="x").partitions == ()
    assert h.fetch(None).partitions == ()
    h.commit("", -1, ((TP1, 2), (TP0, 1)))
    assert h.fetch(None).partitions == ((TP0, 1, Error.NONE), (TP1, 2, Error.NONE))


def test_expire_offsets_turns_empty_group_dead_and_removes_it() -> None:
    h = H()
    (a,) = h.stable(1)
    h.commit(a, 1)
    assert h.c.offsets("g") == {TP0: 5}
    h.c.expire_offsets("g")  # Stable: nothing expires
    assert h.c.offsets("g") == {TP0: 5}
    h.leave(MemberIdentity(a))
    h.c.expire_offsets("g")
    assert h.c.group_view("g") is None
    assert h.fetch().partitions == ((TP0, -1, Error.NONE),)
    h.c.unload("g")
    h.c.load("g")
    assert h.c.group_view("g") is None, "tombstones written: nothing to load"


def test_expire_offsets_simple_consumer_group() -> None:
    h = H()
    h.commit("", -1)
    h.c.expire_offsets("g")
    assert h.c.group_view("g") is None


def test_describe_by_state() -> None:
    h = H(not_owned_groups=frozenset({"x"}))
    d = h.describe("x")
    assert (d.error, d.state, d.protocol_type, d.protocol, d.members) == (Error.NOT_COORDINATOR, "", "", "", ())
    d = h.describe()
    assert (d.error, d.state, d.protocol_type, d.protocol, d.members) == (Error.NONE, "Dead", "", "", ())
    a, b = h.stable(2)
    d = h.describe()
    assert (d.state, d.protocol_type, d.protocol) == ("Stable", "consumer", "range")
    assert d.members == (DescribedMember(a, None, "c", b"\x01", a.encode()), DescribedMember(b, None, "c", b"\x01", b.encode()))
    h.join(a)
    d = h.describe()
    assert (d.state, d.protocol) == ("PreparingRebalance", "")
    assert all(m.metadata == b"" and m.assignment == b"" for m in d.members)
    h.join(b)
    d = h.describe()
    assert (d.state, d.protocol) == ("CompletingRebalance", ""), "protocol hidden outside Stable"
    h2 = H()
    h2.join()
    assert h2.describe().state == "Empty"


def test_list_groups_with_state_filter() -> None:
    h = H()
    h.stable(1, group="s")
    h.join(group="e")
    r = h.list_groups()
    assert r.error == Error.NONE
    assert r.groups == (ListedGroup("s", "consumer", "Stable"), ListedGroup("e", "", "Empty"))
    assert h.list_groups("stable").groups == (ListedGroup("s", "consumer", "Stable"),)
    assert h.list_groups("Dead").groups == ()


def test_delete_groups() -> None:
    h = H(not_owned_groups=frozenset({"x"}))
    h.stable(1, group="s")
    h.commit("", -1, group="e")
    h.c.setup_add_group("d", GroupState.Dead, (), "consumer")
    r = h.delete("s", "e", "missing", "x", "d", "e")
    assert r.results == (
        ("s", Error.NON_EMPTY_GROUP),
        ("e", Error.NONE),
        ("missing", Error.GROUP_ID_NOT_FOUND),
        ("x", Error.NOT_COORDINATOR),
        ("d", Error.GROUP_ID_NOT_FOUND),
    )
    assert h.c.group_view("e") is None
    assert h.fetch(group="e").partitions == ((TP0, -1, Error.NONE),)


def test_delete_non_empty_in_rebalance_states() -> None:
    h = H()
    a, b = h.stable(2)
    h.join(a)
    assert h.delete("g").results == (("g", Error.NON_EMPTY_GROUP),)
    h.join(b)
    assert h.delete("g").results == (("g", Error.NON_EMPTY_GROUP),)


def test_describe_members_of_empty_group_with_members_backdoor() -> None:
    h = H()
    h.c.setup_add_group("g", GroupState.Empty, (MemberSpec("m"),), "consumer")
    assert h.describe().members == (DescribedMember("m", None, "consumer", b"", b""),)

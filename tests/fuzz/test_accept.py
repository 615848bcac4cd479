"""Accepted divergences (`--accept`): an accepted class is counted, the judge adopts the target's
answer and goes on; a file that does not match keeps the finding; what no model state explains
ends the judging."""

from __future__ import annotations

import json

import pytest

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.errors import BadInput
from model.vocabulary import ApiKey, Error

from fuzz.accept import AcceptEntry, AcceptList, parse_accept, write_accept_document
from fuzz.judge import NO_RESPONSE, Finding, GroupJudge, Tolerance

CFG = CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=60000,
                        group_initial_rebalance_delay_ms=0)
PROTOS = (m.ProtocolMetadata("range", b"\x01"),)
GEN = AcceptEntry("JoinGroup", "*", "expected * actual NONE differing in generation",
                  "Tansu's first generation is 0")
DELETE = AcceptEntry("DeleteGroups", "Missing/DeleteGroups/not-found",
                     "expected ['GROUP_ID_NOT_FOUND'] actual ['NONE']", "deleting a missing group succeeds")


def judge(*entries: AcceptEntry, tol: Tolerance = Tolerance()) -> GroupJudge:
    j = GroupJudge("g", CFG, tol)
    accept = AcceptList(entries)

    def key(f: Finding) -> str | None:
        e = accept.match(f)
        return None if e is None else e.key()
    j.accept = key
    return j


def join(mid: str = "") -> m.JoinGroupRequest:
    return m.JoinGroupRequest("g", mid, "consumer", PROTOS, 1000, 2000, None)


def tansu_join(j: GroupJudge) -> None:
    """A member joins; the target answers generation 0 where Kafka answers 1."""
    j.send(1, ApiKey.JoinGroup, 9, join(), 0)
    assert j.receive(1, 1, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, -1, None, None, "", "c-1")) is None
    j.send(2, ApiKey.JoinGroup, 9, join("c-1"), 2)
    me = (m.JoinGroupMember("c-1", None, b"\x01"),)
    j.receive(2, 3, m.JoinGroupResponse(Error.NONE, 0, "consumer", "range", "c-1", "c-1", False, me))


def sync(j: GroupJudge, number: int, generation: int, answer: Error, at: int) -> object:
    j.send(number, ApiKey.SyncGroup, 5, m.SyncGroupRequest(
        "g", "c-1", generation, None, "consumer", "range", (("c-1", b"\x07"),)), at)
    return j.receive(number, at + 1, m.SyncGroupResponse(answer, "consumer", "range",
                                                         b"\x07" if answer is Error.NONE else b""))


def test_accepted_generation_is_adopted_and_judging_goes_deeper() -> None:
    j = judge(GEN)
    tansu_join(j)
    assert j.finding is None and j.ended is None
    assert [a.continued for a in j.accepted] == [True] and j.accepted[0].entry == GEN.key()
    # the target's generation 0 now stands for the model's 1: the client's SyncGroup with 0 is
    # the model's SyncGroup with 1, and NONE is what the model answers
    assert sync(j, 3, 0, Error.NONE, 10) is None
    assert "CompletingRebalance/SyncGroup/leader-assigns" in " ".join(j.covered_keys()) or any(
        "SyncGroup" in k for k in j.covered_keys())
    # a deeper departure is still a finding: a heartbeat at the (paired) generation answered
    # ILLEGAL_GENERATION
    j.send(4, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 0), 20)
    f = j.receive(4, 21, m.HeartbeatResponse(Error.ILLEGAL_GENERATION))
    assert f is not None and f.api == "Heartbeat" and f.shape == "expected NONE actual ILLEGAL_GENERATION"


def test_an_accept_file_that_does_not_match_keeps_the_finding() -> None:
    """Negative controls: another row, another shape, another API: the finding stands."""
    for other in (AcceptEntry("JoinGroup", "Stable/*", GEN.shape, "r"),
                  AcceptEntry("JoinGroup", "*", "expected NONE actual NONE differing in protocol_name", "r"),
                  AcceptEntry("SyncGroup", "*", GEN.shape, "r"), DELETE):
        j = judge(other)
        tansu_join(j)
        assert j.finding is not None and "generation" in j.finding.shape, other
        assert j.accepted == []
    # without pairing, the client's generation 0 is an unknown generation to the model
    j = judge(AcceptEntry("JoinGroup", "*", "*", "everything of JoinGroup"))
    tansu_join(j)
    assert sync(j, 3, 1, Error.NONE, 10) is not None  # the paired generation is 0, not 1


def test_accepted_error_pair_continues_from_the_model_state() -> None:
    j = judge(DELETE)
    j.send(1, ApiKey.DeleteGroups, 2, m.DeleteGroupsRequest(("g",)), 0)
    assert j.receive(1, 1, m.DeleteGroupsResponse((("g", Error.NONE),))) is None
    assert j.accepted[0].continued
    # the group is still missing for the model: a describe answering Dead is right, Stable is not
    j.send(2, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), 5)
    dead = m.DescribeGroupsResponse((m.DescribedGroup(Error.NONE, "g", "Dead", "", ""),))
    assert j.receive(2, 6, dead) is None
    j.send(3, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), 7)
    stable = m.DescribeGroupsResponse((m.DescribedGroup(Error.NONE, "g", "Stable", "consumer", "range"),))
    assert j.receive(3, 8, stable) is not None


def test_rejection_keeps_the_state_before_the_request() -> None:
    """The target rejects a join the model accepts (Tansu's MEMBER_ID_REQUIRED below v4): the
    states that explain it are the model's after the join and the one before it."""
    entry = AcceptEntry("JoinGroup", "Missing/JoinGroup/create-group",
                        "expected NONE actual MEMBER_ID_REQUIRED", "KIP-394 at every version")
    j = judge(entry)
    v3 = m.JoinGroupRequest("g", "", "consumer", PROTOS, 1000, 2000, None,
                            require_known_member_id=False, supports_skip_assignment=False)
    j.send(1, ApiKey.JoinGroup, 3, v3, 0)
    assert j.receive(1, 1, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, -1, None, None, "", "c-9")) is None
    assert j.accepted[0].continued
    assert {h.group.state.name for h in j.hyps} >= {"Missing"}


def test_what_no_state_explains_ends_the_judging() -> None:
    entry = AcceptEntry("Heartbeat", "*", "expected NONE actual no-response", "slow heartbeats")
    j = judge(entry, tol=Tolerance(response_bound_ms=1000, process_ms=500))
    tansu_join_ok(j)
    j.send(3, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), 10)
    assert j.silence(3000) is None
    assert j.ended is not None and not j.ended.continued and j.ended.finding.actual == NO_RESPONSE
    assert j.finding is None
    # judging has ended: a later wrong answer is not judged
    j.send(4, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "c-1", 1), 3010)
    assert j.receive(4, 3011, m.HeartbeatResponse(Error.FENCED_INSTANCE_ID)) is None


def tansu_join_ok(j: GroupJudge) -> None:
    j.send(1, ApiKey.JoinGroup, 9, join(), 0)
    assert j.receive(1, 1, m.JoinGroupResponse(Error.MEMBER_ID_REQUIRED, -1, None, None, "", "c-1")) is None
    j.send(2, ApiKey.JoinGroup, 9, join("c-1"), 2)
    me = (m.JoinGroupMember("c-1", None, b"\x01"),)
    assert j.receive(2, 3, m.JoinGroupResponse(Error.NONE, 1, "consumer", "range", "c-1", "c-1", False, me)) is None


def test_bad_accept_files_name_the_entry_and_field() -> None:
    good = {"format": "groupspec-fuzz-accept/1", "target": "tansu", "accept": [DELETE.to_json()]}
    assert parse_accept(json.dumps(good), "a.json").entries == (DELETE,)
    cases = [
        ("not json", "not JSON"),
        (json.dumps({**good, "format": "x"}), "format"),
        (json.dumps({**good, "accept": [{**DELETE.to_json(), "reason": ""}]}), "accept[0].reason"),
        (json.dumps({**good, "accept": [{**DELETE.to_json(), "api": "Nope"}]}), "accept[0].api"),
        (json.dumps({**good, "accept": [{**DELETE.to_json(), "rows": "x"}]}), "unknown field 'rows'"),
    ]
    for text, where in cases:
        with pytest.raises(BadInput, match=None) as e:
            parse_accept(text, "a.json")
        assert where in str(e.value) and "a.json" in str(e.value)


def test_written_accept_file_accepts_the_classes_it_came_from() -> None:
    j = judge()
    tansu_join(j)
    f = j.finding
    assert f is not None
    doc = write_accept_document("tansu", [{"class": f.class_key(), "count": 3, "expected": list(f.expected),
                                           "actual": f.actual}], kept=(DELETE,))
    back = parse_accept(json.dumps(doc), "w.json")
    assert back.target == "tansu" and back.entries[0] == DELETE
    assert back.match(f) is not None
    # a shape is matched whole: brackets are not patterns
    assert not AcceptEntry("DeleteGroups", "*", "expected [GROUP_ID_NOT_FOUND] actual [NONE]", "r").matches(
        "DeleteGroups", "Missing/DeleteGroups/not-found", "expected ['GROUP_ID_NOT_FOUND'] actual ['NONE']")


def test_family_entries_accept_the_family_at_any_row_and_nothing_else() -> None:
    from fuzz.families import families
    classes = [{"class": "Heartbeat|Empty/Heartbeat/unknown-member|expected UNKNOWN_MEMBER_ID actual NONE", "count": 2},
               {"class": "JoinGroup|Stable/JoinGroup/leader-rejoin|expected NONE actual NONE differing in generation",
                "count": 1},
               {"class": "JoinGroup|Missing/JoinGroup/create-group|expected NONE actual NONE differing in member ids",
                "count": 1}]
    doc = write_accept_document("t", classes, families=families(classes))
    accept = parse_accept(json.dumps(doc), "f.json")
    assert len(accept.entries) == 3 and all(e.row == "*" for e in accept.entries)

    def accepted(api: str, row: str, shape: str) -> bool:
        return accept.match(Finding(1, api, 4, (), (), (), {}, 0, shape, row)) is not None
    assert accepted("Heartbeat", "Stable/Heartbeat/unknown-member", "expected ILLEGAL_GENERATION/UNKNOWN_MEMBER_ID actual NONE")
    assert accepted("JoinGroup", "Empty/JoinGroup/pending-member-joins", "expected NONE actual NONE differing in generation")
    # negative controls: another actual error, another field set, another API
    assert not accepted("Heartbeat", "Stable/Heartbeat/unknown-member", "expected UNKNOWN_MEMBER_ID actual REBALANCE_IN_PROGRESS")
    assert not accepted("JoinGroup", "Empty/JoinGroup/pending-member-joins",
                        "expected NONE actual NONE differing in generation,members_count")
    assert not accepted("SyncGroup", "Empty/SyncGroup/unknown-member", "expected UNKNOWN_MEMBER_ID actual NONE")


def test_accepted_rejections_do_not_multiply_hypotheses() -> None:
    """A rejection the model would also have made (another error) is one state, however often it
    is accepted: the hypotheses do not double each time (they would make the group inconclusive)."""
    j = judge(AcceptEntry("Heartbeat", "*", "expected UNKNOWN_MEMBER_ID actual REBALANCE_IN_PROGRESS", "order"))
    for n in range(1, 11):
        j.send(n, ApiKey.Heartbeat, 4, m.HeartbeatRequest("g", "ghost", 1), 10 * n)
        assert j.receive(n, 10 * n + 1, m.HeartbeatResponse(Error.REBALANCE_IN_PROGRESS)) is None
    assert len(j.accepted) == 10 and len(j.hyps) == 1


def test_an_inconclusive_observation_leaves_the_judged_rows() -> None:
    """The judge gives up on an observation (too many hypotheses) without touching the ones it
    had: the rows they all fired were seen on the target and still count as covered."""
    import pytest as _pytest
    from fuzz.judge import Inconclusive
    j = GroupJudge("g", CFG, Tolerance(late_ms=500))
    tansu_join_ok(j)
    j.send(3, ApiKey.SyncGroup, 5, m.SyncGroupRequest("g", "c-1", 1, None, "consumer", "range",
                                                      (("c-1", b"\x07"),)), 10)
    assert j.receive(3, 11, m.SyncGroupResponse(Error.NONE, "consumer", "range", b"\x07")) is None
    before = j.covered_keys()
    assert "CompletingRebalance/SyncGroup/leader-assigns" in before
    j.tol = Tolerance(late_ms=500, max_hypotheses=len(j.hyps))
    # at 1100 ms the session may or may not have expired: two hypotheses, over the bound of one
    j.send(4, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), 1100)
    with _pytest.raises(Inconclusive):
        j.silence(1101)
        j.receive(4, 1101, m.DescribeGroupsResponse((m.DescribedGroup(Error.NONE, "g", "Stable", "consumer", "range"),)))
    assert j.covered_keys() == before


STATE = AcceptEntry("DescribeGroups", "*", "expected NONE actual NONE differing in state", "Tansu names states its way")
ERR_GEN = AcceptEntry("JoinGroup", "*", "expected UNKNOWN_MEMBER_ID actual UNKNOWN_MEMBER_ID differing in generation",
                      "Tansu's error answers carry generation 0")


def test_read_only_answer_no_state_explains_keeps_judging() -> None:
    """A DescribeGroups whose accepted state name differs and whose member records differ too (no
    field overlay explains it) changes nothing: judging goes on from the states it was answered in,
    and a later wrong answer is still a finding. Negative control: a JoinGroup (it changes state)
    that nothing explains still ends judging."""
    j = judge(GEN, STATE)
    tansu_join(j)
    odd = m.DescribedGroup(Error.NONE, "g", "Unknown", "consumer", "",
                           (m.DescribedMember("c-1", None, "someone", b"\x09", b"\x09"),))
    j.send(3, ApiKey.DescribeGroups, 5, m.DescribeGroupsRequest(("g",)), 10)
    assert j.receive(3, 11, m.DescribeGroupsResponse((odd,))) is None
    assert j.ended is None and j.accepted[-1].continued
    assert sync(j, 4, 0, Error.NONE, 20) is None  # the leader's SyncGroup, judged as before
    assert sync(j, 5, 0, Error.UNKNOWN_MEMBER_ID, 30) is not None  # Stable, a member: NONE expected

    k = judge(GEN)
    tansu_join(k)
    me = (m.JoinGroupMember("c-9", None, b"\x01"),)
    k.send(3, ApiKey.JoinGroup, 9, join("c-1"), 10)  # the leader rejoins; answered as another member
    k.receive(3, 11, m.JoinGroupResponse(Error.NONE, 1, "consumer", "range", "c-9", "c-9", False, me))
    assert k.ended is not None or k.finding is not None


def test_error_answer_without_member_id_is_taken_over() -> None:
    """A JoinGroup error answer hands out no member id: an accepted one with the member id empty
    (Tansu) is explained; one naming another member is not (negative control)."""
    for answered_id, goes_on in (("", True), ("c-1", False)):  # c-1: the id of another member
        j = judge(GEN, ERR_GEN)
        tansu_join(j)
        j.send(3, ApiKey.JoinGroup, 9, join("ghost-member"), 10)
        j.receive(3, 11, m.JoinGroupResponse(Error.UNKNOWN_MEMBER_ID, 0, None, None, "", answered_id))
        assert j.finding is None and j.accepted[-1].continued is goes_on, answered_id

"""Well-formedness of the classic table, and negative controls (an overlap, a gap)."""

from __future__ import annotations

from dataclasses import replace

from model.dsl import G, Table
from model.table import CLASSIC_TABLE
from model.vocabulary import GroupState
from proofs.wellformed import check_wellformed


def test_classic_table_is_wellformed_for_every_state_and_event() -> None:
    r = check_wellformed(CLASSIC_TABLE)
    assert r.pairs == len(GroupState) * len(CLASSIC_TABLE.events)
    assert r.findings == []


def _with_guard(row_id: str, guard: str) -> Table:
    rows = tuple(replace(r, guard=G(guard)) if r.id == row_id else r for r in CLASSIC_TABLE.rows)
    return Table("mutant", rows, CLASSIC_TABLE.events)


def test_overlap_is_found_with_the_rows_named() -> None:
    # fenced and member-valid are exclusive only by the atoms' semantics; dropping `fenced`
    # from the unknown-member row makes it overlap the fenced row.
    t = _with_guard("Stable/Heartbeat/unknown-member", "!group-id-empty & !member-valid")
    r = check_wellformed(t, GroupState.Stable)
    kinds = {(f.kind, f.event, f.rows) for f in r.findings}
    assert ("overlap", "Heartbeat", ("Stable/Heartbeat/fenced", "Stable/Heartbeat/unknown-member")) in kinds


def test_gap_is_found() -> None:
    t = _with_guard("Stable/Heartbeat/ok",
                    "!group-id-empty & member-valid & generation-matches & is-leader")
    r = check_wellformed(t, GroupState.Stable)
    assert [f.kind for f in r.findings] == ["gap"]
    assert r.findings[0].state == GroupState.Stable and r.findings[0].event == "Heartbeat"


def test_a_table_without_the_empty_group_id_rows_has_a_gap() -> None:
    """Negative control for the INVALID_GROUP_ID rows: without them the group APIs' guards no
    longer cover the empty group id."""
    rows = tuple(r for r in CLASSIC_TABLE.rows if not r.id.endswith("/invalid-group-id"))
    r = check_wellformed(Table("no-invalid-group-id", rows, CLASSIC_TABLE.events), GroupState.Empty)
    assert sorted((f.kind, f.event) for f in r.findings) == [
        ("gap", "Heartbeat"), ("gap", "JoinGroup"), ("gap", "LeaveGroup"), ("gap", "SyncGroup")]

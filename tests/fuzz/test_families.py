"""Families: classes of one API grouped by what differs (the same fields, or a shared expected ->
actual error pair) across rows; different fields or different error pairs never merge."""

from __future__ import annotations

from typing import Any

from model.table import CLASSIC_TABLE

from fuzz.cli import markdown
from fuzz.families import families


def cls(api: str, row: str, shape: str, count: int = 1, steps: int = 3) -> dict[str, Any]:
    return {"class": f"{api}|{row}|{shape}", "api": api, "count": count, "steps": [["Join"]] * steps,
            "scenario": f"s-{row}.json", "scenario_check": "x", "expected": [], "actual": {},
            "api_version": 9, "state": [], "rows": [row], "first_seen_s": 0.0, "original_steps": steps,
            "shrink_runs": 0}


def test_one_field_across_rows_and_errors_is_one_family() -> None:
    """A broker that fills protocol_name in every error answer: one family, its rows, the shortest
    example."""
    rows = ["Empty/JoinGroup/unknown-member", "Stable/JoinGroup/new-inconsistent-protocol",
            "PreparingRebalance/JoinGroup/invalid-session-timeout"]
    errors = ["UNKNOWN_MEMBER_ID", "INCONSISTENT_GROUP_PROTOCOL", "INVALID_SESSION_TIMEOUT"]
    classes = [cls("JoinGroup", r, f"expected {e} actual {e} differing in protocol_name", count=2, steps=5 - i)
               for i, (r, e) in enumerate(zip(rows, errors))]
    fams = families(classes)
    assert len(fams) == 1
    f = fams[0]
    assert f["rows"] == sorted(rows) and f["count"] == 6 and f["differs"] == "field protocol_name"
    assert f["example"]["class"] == classes[2]["class"]  # 3 steps: the shortest


def test_different_fields_are_never_merged() -> None:
    """Negative controls: generation vs protocol_name, a superset of fields, another API."""
    classes = [cls("JoinGroup", "Missing/JoinGroup/create-group", "expected NONE actual NONE differing in generation"),
               cls("JoinGroup", "Empty/JoinGroup/new-dynamic-member", "expected NONE actual NONE differing in protocol_name"),
               cls("JoinGroup", "Stable/JoinGroup/leader-rejoin",
                   "expected NONE actual NONE differing in generation,protocol_name"),
               cls("SyncGroup", "Stable/SyncGroup/stored-assignment",
                   "expected NONE actual NONE differing in protocol_name")]
    assert len(families(classes)) == 4


def test_error_pairs_merge_when_shared_and_only_then() -> None:
    hb = [cls("Heartbeat", "Empty/Heartbeat/unknown-member", "expected UNKNOWN_MEMBER_ID actual NONE"),
          cls("Heartbeat", "Stable/Heartbeat/unknown-member", "expected UNKNOWN_MEMBER_ID actual NONE"),
          cls("Heartbeat", "PreparingRebalance/Heartbeat/rebalance-in-progress",
              "expected REBALANCE_IN_PROGRESS/UNKNOWN_MEMBER_ID actual NONE")]
    fams = families(hb)
    assert len(fams) == 1 and len(fams[0]["rows"]) == 3
    assert fams[0]["differs"] == "error UNKNOWN_MEMBER_ID -> NONE"
    # negative controls: another actual error, another API, a disjoint expected error
    others = [cls("Heartbeat", "Empty/Heartbeat/unknown-member", "expected UNKNOWN_MEMBER_ID actual REBALANCE_IN_PROGRESS"),
              cls("SyncGroup", "Empty/SyncGroup/unknown-member", "expected UNKNOWN_MEMBER_ID actual NONE"),
              cls("Heartbeat", "Stable/Heartbeat/illegal-generation", "expected ILLEGAL_GENERATION actual NONE")]
    assert len(families(hb + others)) == 4


def test_report_lists_families_before_classes() -> None:
    classes = [cls("Heartbeat", "Empty/Heartbeat/unknown-member", "expected UNKNOWN_MEMBER_ID actual NONE")]
    rows = {r.id: 0 for r in CLASSIC_TABLE.rows}
    rows["Empty/Heartbeat/unknown-member"] = 4
    doc = {"target": "t", "interrupted": False, "seed": 0, "seconds": 1, "requests": 1, "requests_per_s": 1,
           "sequences": 1, "sequences_per_s": 1, "parallel": 1, "rows_covered": [], "rows_total": len(rows),
           "inconclusive_groups": 0, "errors": 0, "read_barriers": {"held": 0, "tried": 0}, "findings": 1,
           "families": families(classes), "classes": classes, "replay": {"checked": 0, "as_found": 0},
           "row_counts": rows, "accept_file": None, "accepted": [], "guided": True,
           "target_settings": {}, "config": {}, "profile": "strict", "allowances": {}, "judged_requests": 1,
           "target_error": ""}
    text = markdown(doc)
    assert text.index("## Families") < text.index("## Classes") < text.index("## Heartbeat")
    assert "| `Empty/Heartbeat/unknown-member` | 4 |" in text and f"Never fired ({len(rows) - 1})" in text

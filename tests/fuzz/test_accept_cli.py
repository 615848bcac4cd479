"""`groupspec fuzz --accept / --write-accept / --from-report`: bad accept files are bad input
before any target starts; an accept file written from a report accepts its classes."""

from __future__ import annotations

import json
import os

from groupspec.cli import main

from fuzz.accept import load_accept
from fuzz.judge import Finding

CLASS = "DeleteGroups|Missing/DeleteGroups/not-found|expected ['GROUP_ID_NOT_FOUND'] actual ['NONE']"


def test_bad_accept_file_is_bad_input_before_the_target(tmp_path: str) -> None:
    bad = os.path.join(tmp_path, "a.json")
    with open(bad, "w", encoding="utf-8") as f:
        f.write('{"format": "groupspec-fuzz-accept/1", "accept": [{"api": "JoinGroup"}]}')
    # (tansu would take seconds to start: exit 2 at once shows nothing was started)
    assert main(["fuzz", "--target", "tansu", "--accept", bad]) == 2
    assert main(["fuzz", "--target", "tansu", "--accept", os.path.join(tmp_path, "missing.json")]) == 2
    assert main(["fuzz", "--target", "tansu", "--from-report", str(tmp_path)]) == 2  # no --write-accept


def test_write_accept_from_report(tmp_path: str) -> None:
    report = os.path.join(tmp_path, "R")
    os.makedirs(report)
    with open(os.path.join(report, "report.json"), "w", encoding="utf-8") as f:
        json.dump({"classes": [{"class": CLASS, "count": 7, "expected": [{"errors": ["GROUP_ID_NOT_FOUND"]}],
                                "actual": {"errors": ["NONE"]}}], "accept_file": None}, f)
    out = os.path.join(tmp_path, "accept.json")
    assert main(["fuzz", "--target", "tansu", "--write-accept", out, "--from-report", report]) == 0
    accept = load_accept(out)
    assert accept.target == "tansu" and len(accept.entries) == 1
    found = Finding(1, "DeleteGroups", 2, ("Missing",), (), ({"errors": ["GROUP_ID_NOT_FOUND"]},), {"errors": ["NONE"]},
                0, "expected ['GROUP_ID_NOT_FOUND'] actual ['NONE']", "Missing/DeleteGroups/not-found")
    assert accept.match(found) is not None
    # negative control: another shape of the same row is not accepted by it
    other = Finding(1, "DeleteGroups", 2, ("Missing",), (), (), {"errors": ["NOT_COORDINATOR"]},
                    0, "expected ['GROUP_ID_NOT_FOUND'] actual ['NOT_COORDINATOR']", "Missing/DeleteGroups/not-found")
    assert accept.match(other) is None
    # a directory without a report is bad input, and nothing is written
    os.remove(out)
    assert main(["fuzz", "--target", "tansu", "--write-accept", out, "--from-report", str(tmp_path)]) == 2
    assert not os.path.exists(out)

"""observe's report names files relative to its own directory: report.json, report.md, report.html
and the ITF files written in a temporary directory hold no absolute path, whatever path the judge
gave the finding's scenario file (it writes it under the report directory, absolute when the report
directory was given absolute). Negative control: the same check finds the absolute path in the
report as the judge handed it over. The input is the committed Tansu run's observe report (one
finding with its scenario)."""

from __future__ import annotations

import json
import os
import re
import shutil
from typing import Any

from clients.report import observe_relative
from observe.report import write_report
from render.findings import relative_to

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "docs", "clients", "tansu-java", "observe")
# an absolute file path in text: a slash-led path of two or more parts, not inside a URL
ABSOLUTE = re.compile(r"(?<![\w.:/-])/(?:[\w.-]+/)+[\w.-]+")


def absolute_paths(directory: str) -> dict[str, list[str]]:
    found = {}
    for root, _, files in os.walk(directory):
        for name in files:
            with open(os.path.join(root, name), encoding="utf-8") as f:
                hits = ABSOLUTE.findall(f.read())
            if hits:
                found[os.path.relpath(os.path.join(root, name), directory)] = hits
    return found


def judged_report(directory: str) -> dict[str, Any]:
    """The committed report as the judge hands it to write_report from a run in `directory`."""
    shutil.copytree(os.path.join(SOURCE, "scenarios"), os.path.join(directory, "scenarios"))
    with open(os.path.join(SOURCE, "report.json"), encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    for c in doc["classes"]:
        c["scenario"] = os.path.join(directory, "scenarios", os.path.basename(c["scenario"]))
    for fam in doc["families"]:
        fam["example"]["scenario"] = os.path.join(directory, "scenarios", os.path.basename(fam["example"]["scenario"]))
    return doc


def test_a_report_written_in_a_temporary_directory_holds_no_absolute_path(tmp_path: str) -> None:
    directory = os.path.join(str(tmp_path), "observe")
    doc = judged_report(directory)
    assert doc["classes"] and os.path.isabs(doc["classes"][0]["scenario"])
    write_report(directory, doc)
    assert absolute_paths(directory) == {}
    with open(os.path.join(directory, "report.json"), encoding="utf-8") as f:
        written = json.load(f)
    assert written["classes"][0]["scenario"] == "scenarios/observe-class-01.json"
    with open(os.path.join(directory, "report.html"), encoding="utf-8") as f:
        page = f.read()
    assert "<code>scenarios/observe-class-01.json</code>" in page  # the finding is still drawn from it
    with open(os.path.join(directory, "itf", "observe-class-01.itf.json"), encoding="utf-8") as f:
        assert json.load(f)["#meta"]["source"] == "scenarios/observe-class-01.json"
    # the run's own report (groupspec clients), one directory up, names it from there
    above = observe_relative(str(tmp_path), {"classes": [{"class": "c", "count": 1, "scenario": "scenarios/x.json"}]})
    assert above is not None and above["classes"][0]["scenario"] == "observe/scenarios/x.json"


def test_negative_control_the_report_as_the_judge_hands_it_over_holds_one(tmp_path: str) -> None:
    directory = os.path.join(str(tmp_path), "observe")
    doc = judged_report(directory)
    os.makedirs(os.path.join(directory, "raw"))
    with open(os.path.join(directory, "raw", "report.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f)
    assert absolute_paths(directory) == {os.path.join("raw", "report.json"): [doc["classes"][0]["scenario"],
                                                                          doc["families"][0]["example"]["scenario"]]}


def test_a_moved_report_names_its_own_scenarios_folder(tmp_path: str) -> None:
    directory = os.path.join(str(tmp_path), "observe")
    judged_report(directory)
    gone = "/work/removed-worktree/docs/clients/tansu-java/observe/scenarios/observe-class-01.json"
    assert relative_to(directory, gone) == "scenarios/observe-class-01.json"
    assert relative_to(directory, "/elsewhere/scenarios/not-here.json") == "/elsewhere/scenarios/not-here.json"

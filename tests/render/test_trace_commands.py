"""--html and --itf on the commands: check on a mutant (the page names the violated invariant, the
ITF reads back with as many states as the counterexample has), diff on a mutant, scenario render
on a scenario file, and a fuzz report's findings."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import itf_py

from groupspec.cli import main

from render.findings import write_report_html


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def printed_steps(stdout: str) -> list[int]:
    """The number of steps of each counterexample check printed (its numbered lines)."""
    counts: list[int] = []
    for line in stdout.splitlines():
        if line.startswith("VIOLATION "):
            counts.append(0)
        elif counts and re.match(r"^\s+\d+\. ", line):
            counts[-1] += 1
    return counts


def test_check_html_and_itf_on_a_mutant(tmp_path: Path) -> None:
    html, itf = tmp_path / "cex.html", tmp_path / "cex.itf.json"
    code, out, _ = run(["check", "--table", "check.mutants:join-answered-and-parked", "--quiet",
                        "--stop-at-first-violation", "--html", str(html), "--itf", str(itf)])
    assert code == 1
    page = html.read_text()
    head = page.split("<svg", 1)[0]
    assert 'class="violation"' in head and "Violated invariant" in head
    assert '<strong class="invariant">one-response-per-request</strong>' in head
    steps = printed_steps(out)
    assert steps and page.count('class="step"') == steps[0]
    back = itf_py.trace_from_json(json.loads(itf.read_text()))
    assert len(back.states) == steps[0] + 1  # the initial state and one after each step
    assert back.meta["violated"] == "one-response-per-request"
    assert back.states[-1].values["violation"] == "one-response-per-request"


def test_check_html_without_a_violation_says_so_and_writes_no_itf(tmp_path: Path) -> None:
    html, itf = tmp_path / "none.html", tmp_path / "none.itf.json"
    code, out, _ = run(["check", "--members", "1", "--max-generation", "1", "--faults", "none", "--quiet",
                        "--no-liveness", "--html", str(html), "--itf", str(itf)])
    assert code == 0
    assert "No counterexample" in html.read_text() and 'class="violation"' not in html.read_text()
    assert not itf.exists() and "nothing written" in out


def test_a_bad_html_path_is_bad_input_before_the_run(tmp_path: Path) -> None:
    code, out, err = run(["check", "--members", "1", "--html", str(tmp_path / "no" / "such" / "x.html")])
    assert code == 2 and "--html" in err and len(err.strip().splitlines()) == 1 and "states" not in out


def test_diff_html_and_itf_on_a_mutant(tmp_path: Path) -> None:
    html, itf = tmp_path / "d.html", tmp_path / "d.itf.json"
    code, out, _ = run(["diff", "--table", "check.mutants:heartbeat-empty-accepted", "--against", "kafka-3.9",
                        "--quiet", "--html", str(html), "--itf", str(itf)])
    assert code == 1
    page = html.read_text()
    assert page.count("<svg") == 2  # the scenario on both tables
    assert page.count('class="violation"') == 1  # the table it fails on names the difference
    assert "kafka-3.9 differs from check.mutants:heartbeat-empty-accepted" in page
    first = itf_py.trace_from_json(json.loads(itf.read_text()))
    second = itf_py.trace_from_json(json.loads((tmp_path / "d-2.itf.json").read_text()))
    assert len(first.states) == page.split("<svg")[1].count('class="step"') + 1
    assert len(second.states) == page.split("<svg")[2].count('class="step"') + 1
    assert "violated" not in first.meta and second.meta["violated"].startswith("kafka-3.9 differs")


def test_scenario_render_html_and_itf(tmp_path: Path) -> None:
    html, itf = tmp_path / "s.html", tmp_path / "s.itf.json"
    code, out, _ = run(["scenario", "render", "tests/scenarios/seeds.json", "--scenario",
                        "seed-three-consumers-one-assignment-interleaved", "--html", str(html),
                        "--itf", str(itf), "--site-root", "../site"])
    assert code == 0, out
    page = html.read_text()
    n = page.count('class="step"')
    assert n > 10 and 'href="../site/state-Empty.html#Empty/JoinGroup/member-id-required"' in page
    assert len(itf_py.trace_from_json(json.loads(itf.read_text())).states) == n + 1


def test_scenario_render_of_a_failing_scenario_exits_1_and_names_the_step(tmp_path: Path) -> None:
    doc = {"format": "kafka-classic-group-conformance/1", "defaults": {"group": "g"},
           "scenarios": [{"name": "wrong", "steps": [
               {"op": "join", "member": "", "expect": {"error": "NONE"}}]}]}
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run(["scenario", "render", str(path), "--html", str(tmp_path / "w.html")])
    assert code == 1 and "FAILS on the model" in out
    assert "MEMBER_ID_REQUIRED" in (tmp_path / "w.html").read_text().split("<svg")[0]


def test_scenario_render_bad_input(tmp_path: Path) -> None:
    code, _, err = run(["scenario", "render", "tests/scenarios/seeds.json"])
    assert code == 2 and "--html" in err
    code, _, err = run(["scenario", "render", str(tmp_path / "nope.json"), "--html", str(tmp_path / "x.html")])
    assert code == 2 and "nope.json" in err and not (tmp_path / "x.html").exists()


def test_findings_page_from_a_report_directory(tmp_path: Path) -> None:
    """write_report_html reads report.json and each class's scenario file (the real report of a
    fuzz run is in test_findings_real.py, a slow test); a class without a scenario is listed."""
    scenario = {"format": "kafka-classic-group-conformance/1", "defaults": {"group": "g"},
                "scenarios": [{"name": "fuzz-class-01", "steps": [
                    {"op": "join", "id": "r1", "member": "", "await": "later"},
                    {"op": "check_response", "id": "r1", "bind": {"member_id": "M0"}},
                    {"op": "heartbeat", "id": "r2", "member": "$M0", "generation": -1, "await": "later"},
                    {"op": "check_response", "id": "r2", "expect": {"error": "UNKNOWN_MEMBER_ID"}}]}]}
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "fuzz-class-01.json").write_text(json.dumps(scenario))
    report = {"target": "serve", "seed": 0, "seconds": 1.0, "requests": 4, "sequences": 1, "findings": 2,
              "classes": [
                  {"class": "Heartbeat|Empty/Heartbeat/unknown-member|expected UNKNOWN_MEMBER_ID actual NONE",
                   "api": "Heartbeat", "rows": ["Empty/Heartbeat/unknown-member"],
                   "expected": [{"error": "UNKNOWN_MEMBER_ID"}], "actual": {"error": "NONE"}, "count": 1,
                   "scenario": "scenarios/fuzz-class-01.json", "steps": [], "original_steps": 3},
                  {"class": "JoinGroup|x|y", "api": "JoinGroup", "scenario": None}]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    out = write_report_html(str(tmp_path))
    page = Path(out).read_text()
    assert out == str(tmp_path / "report.html") and page.count("<svg") == 1
    head = page.split("<svg")[0]
    assert "serve departs from the model" in head and "at step 2" in head
    assert '{"error": "NONE"}' in head.replace("&quot;", '"') and "JoinGroup|x|y" in head
    # the member bound by a later check_response is one lifeline, named by its binding
    assert "new client" not in page and ">M0</text>" in page and "Heartbeat(M0, gen -1)" in page
    # and each drawn finding as ITF, in a folder of its own, reading back with as many states
    import itf_py
    written = sorted(p.name for p in (tmp_path / "itf").iterdir())
    assert written == ["fuzz-class-01.itf.json"]
    back = itf_py.trace_from_json(json.loads((tmp_path / "itf" / written[0]).read_text()))
    assert len(back.states) == 2 + 1  # the two requests drawn (checks are no steps), plus the start


def test_findings_page_of_a_broken_report_is_bad_input(tmp_path: Path) -> None:
    import pytest
    from model.errors import BadInput
    with pytest.raises(BadInput, match="report.json"):
        write_report_html(str(tmp_path))
    (tmp_path / "report.json").write_text("{}")
    with pytest.raises(BadInput, match="not a groupspec fuzz report"):
        write_report_html(str(tmp_path))
    assert not (tmp_path / "report.html").exists()


def test_check_with_several_counterexamples_writes_one_page_and_numbered_itf(tmp_path: Path) -> None:
    html, itf = tmp_path / "all.html", tmp_path / "all.itf.json"
    code, out, _ = run(["check", "--table", "check.mutants:sync-accepted-in-preparing", "--members", "2",
                        "--max-generation", "1", "--faults", "session,rebalance,stall", "--quiet",
                        "--no-liveness", "--html", str(html), "--itf", str(itf)])
    assert code == 1
    names = re.findall(r"^VIOLATION ([a-z-]+):", out, re.M)
    steps = printed_steps(out)
    assert len(names) == 3
    page = html.read_text()
    assert page.count("<svg") == 3 and page.count('href="#trace-') == 3
    for k, (name, n) in enumerate(zip(names, steps), 1):
        section = page.split(f'id="trace-{k}"', 1)[1].split("</section>", 1)[0]
        assert f'<strong class="invariant">{name}</strong>' in section
        path = itf if k == 1 else tmp_path / f"all-{k}.itf.json"
        back = itf_py.trace_from_json(json.loads(path.read_text()))
        assert len(back.states) == n + 1 and back.meta["violated"] == name

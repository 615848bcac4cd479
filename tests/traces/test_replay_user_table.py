"""`groupspec replay --table`: traces judged by a user's table (docs/traces-for-people.md).

A trace of the reference coordinator with a seeded bug (every group bugged,
docs/traces-bug-injection.md) replays clean against a table that agrees with the bug (the mutant
heartbeat-empty-accepted), on both engines, while the classic table flags exactly the groups where
the bug showed (the negative control). A table naming an effect the native engine lacks replays in
Python, saying so. A --table that names no table: one line, exit 2, nothing written."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from groupspec.cli import main

BUG = "heartbeat-empty-accepted"
AGREES = f"check.mutants:{BUG}"  # Empty/Heartbeat/unknown-member answers NONE, as the bug does


@pytest.fixture(scope="module")
def bugged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    out = tmp_path_factory.mktemp("bugged") / "traces"
    assert main(["traces", "generate", "--groups", "12", "--seed", "5", "--bug", BUG, "--bug-fraction", "1",
                 "--out", str(out)]) == 0
    observable = json.loads((out / "manifest.json").read_text())["bug_observable_groups"]
    assert observable  # the workload triggers the bug, or the test proves nothing
    return out, list(observable)


def _replay(traces: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], set[str]]:
    code = main(["replay", "--input", str(traces), "--output", str(out), "--local", *extra])
    summary = json.loads((out / "summary.json").read_text())
    flagged = {v["group_id"] for v in map(json.loads, (out / "verdicts.jsonl").read_text().splitlines())
               if v["status"] != "ok"}
    return code, summary, flagged


@pytest.mark.parametrize("engine", ["native", "python"])
def test_a_table_that_agrees_with_the_bug_finds_nothing_the_classic_table_flags_the_bugged_groups(
        engine: str, bugged: tuple[Path, list[str]], tmp_path: Path) -> None:
    traces, observable = bugged
    code, summary, flagged = _replay(traces, tmp_path / "classic", "--engine", engine)
    assert (code, flagged, summary["table"]) == (1, set(observable), "kafka-3.9")  # the control
    code, summary, flagged = _replay(traces, tmp_path / "agrees", "--engine", engine, "--table", AGREES)
    assert (code, flagged, summary["violations"]) == (0, set(), 0)
    assert summary["table"] == AGREES and summary["engine"] == engine  # native: not fallen back to Python
    coverage = {r["key"]: r["count"] for r in map(json.loads, (tmp_path / "agrees" / "coverage.jsonl")
                                                    .read_text().splitlines())}
    assert coverage["Empty/Heartbeat/unknown-member"] > 0  # the mutated row judged the bug's answers


def test_a_table_the_native_engine_cannot_take_replays_in_python_saying_why(
        bugged: tuple[Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    traces, observable = bugged
    (tmp_path / "own_table.py").write_text(textwrap.dedent(f"""
        from check.mutants import MUTANTS, mutate
        from model.dsl import effect

        @effect("own-noop", modifies=set())
        def own_noop(ctx):
            '''Does nothing: an effect the native engine does not have (registered for the whole
            test session: it has a doc, as tests/model/test_table.py asks of every effect).'''

        AGREES = mutate(MUTANTS["{BUG}"][0], "own", {{
            "Empty/Heartbeat/unknown-member": {{"effects": ("own-noop",)}}}})
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    code, summary, flagged = _replay(traces, tmp_path / "out", "--table", "own_table:AGREES")
    assert "the native replay lacks effects own-noop; replaying in Python" in capsys.readouterr().err
    assert (code, flagged, summary["engine"], summary["table"]) == (0, set(), "python", "own_table:AGREES")


@pytest.mark.parametrize("spec,said", [
    ("no_such_module_xyz:T", "--table: cannot import 'no_such_module_xyz'"),
    ("check.mutants:no-such-mutant", "module check.mutants has no 'no-such-mutant'"),
    ("check.mutants:MUTANTS", "is not a transition table (it is a dict)"),
    ("kafka-5", "is neither a profile (kafka-3.9, kafka-4) nor package.module:NAME"),
    ("ill_formed_table:BROKEN", "row Empty/Heartbeat/unknown-member: unknown effect 'no-such-effect'"),
])
@pytest.mark.parametrize("command", ["replay", "observe"])
def test_a_table_that_is_not_one_is_one_line_exit_2_nothing_written(
        command: str, spec: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ill_formed_table.py").write_text(textwrap.dedent("""
        from check.mutants import mutate
        from model.table import CLASSIC_TABLE

        BROKEN = mutate(CLASSIC_TABLE, "broken", {
            "Empty/Heartbeat/unknown-member": {"effects": ("no-such-effect",)}})
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "in.jsonl").write_text("")
    out = tmp_path / "out"
    argv = (["replay", "--input", str(tmp_path / "in.jsonl"), "--output", str(out), "--local"]
            if command == "replay" else ["observe", "--upstream", "serve", "--report", str(out)])
    assert main([*argv, "--table", spec]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"groupspec {command}: --table") and said in err[0], err
    assert not out.exists() and {p.name for p in tmp_path.iterdir()} - {"__pycache__"} == {
        "ill_formed_table.py", "in.jsonl"}

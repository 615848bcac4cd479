"""The command tree (groupspec/cli.py): every option and command has help text, `groupspec COMMAND
--help` and `groupspec help COMMAND` print the same text, and one handler maps what every command
raises to its exit code."""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
from pathlib import Path

import pytest

from groupspec.cli import COMMANDS, CommandParser, build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def missing_help(parser: argparse.ArgumentParser, path: str = "groupspec") -> list[str]:
    """Every option, positional and subcommand under `parser` that has no help text."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            described = {a.dest: a.help for a in action._choices_actions}
            for word, sub in action.choices.items():
                if not described.get(word):
                    out.append(f"{path} {word}")
                out += missing_help(sub, f"{path} {word}")
        elif not action.help or action.help == argparse.SUPPRESS:
            out.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return out


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_every_option_and_command_has_help() -> None:
    root, _ = build_parser()
    assert missing_help(root) == []


def test_the_walker_flags_an_option_and_a_command_without_help() -> None:  # negative control
    p = CommandParser(prog="t")
    p.add_argument("--documented", help="has help")
    p.add_argument("--bare")
    sub = p.add_subparsers()
    quiet = sub.add_parser("quiet")
    quiet.add_argument("file")
    sub.add_parser("loud", help="has help").add_argument("--x", help="x")
    assert missing_help(p, "t") == ["t --bare", "t quiet", "t quiet file"]


def test_the_tree_holds_every_command() -> None:
    _, parsers = build_parser()
    names = [n for n, _ in COMMANDS]
    assert names == ["check", "prove", "prove states", "diff", "scenario run", "scenario render",
                     "traces generate", "replay", "soak", "serve", "fuzz", "observe", "clients", "render"]
    assert set(names) | {"", "help", "scenario", "traces"} == set(parsers)
    for name, module in COMMANDS:
        assert parsers[name].prog == f"groupspec {name}"
        assert callable(module.add_arguments) and callable(module.run)


@pytest.mark.parametrize("name", ["", *(n for n, _ in COMMANDS), "scenario", "traces", "help"])
def test_command_help_and_help_command_print_the_same_text(name: str) -> None:
    words = name.split()
    code, via_flag, err = run([*words, "--help"])
    assert code == 0 and err == "" and via_flag.startswith(f"usage: groupspec {name}".rstrip())
    code, via_help, err = run(["help", *words])
    assert code == 0 and err == ""
    assert via_help == via_flag


def test_help_of_an_unknown_command_exits_2() -> None:
    code, out, err = run(["help", "frobnicate"])
    assert code == 2 and out == ""
    assert err.startswith("groupspec help: unknown command 'frobnicate'") and len(err.splitlines()) == 1


def test_top_level_help_lists_the_commands_and_the_exit_codes() -> None:
    code, out, _ = run(["--help"])
    assert code == 0
    out = " ".join(out.split())  # the help wraps at the terminal's width
    for word in ("check", "prove", "prove states", "diff", "scenario run", "scenario render", "traces generate",
                 "replay", "soak",
                 "serve", "fuzz", "130 interrupted"):
        assert word in out, word


@pytest.mark.parametrize("argv,prefix", [
    ([], "groupspec: a command is needed"),
    (["frobnicate"], "groupspec: argument COMMAND: invalid choice: 'frobnicate'"),
    (["scenario"], "groupspec scenario: the following arguments are required: {run,render}"),
    (["check", "--members", "x"], "groupspec check: argument --members: invalid int value: 'x'"),
    (["prove", "states", "--bogus"], "groupspec prove states: unrecognized arguments: --bogus"),
    (["serve", "--frobnicate"], "groupspec serve: unrecognized arguments: --frobnicate"),
    (["soak", "--minutes", "0"], "groupspec soak: --minutes must be > 0"),
    (["fuzz", "--target", "serve", "--config", "group.max.size=0"],
     "groupspec fuzz: --config group.max.size=0: expected an integer in 1.."),
])
def test_argument_errors_are_one_line_and_exit_2(argv: list[str], prefix: str) -> None:
    code, out, err = run(argv)
    assert code == 2 and out == ""
    assert err.startswith(prefix) and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("name", [n for n, _ in COMMANDS])
def test_one_handler_maps_what_any_command_raises(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from model.errors import BadInput, Incomplete

    module = dict(COMMANDS)[name]
    required = {"diff": ["--table", "a", "--against", "b"], "scenario run": ["f.json", "--target", "model"],
                "scenario render": ["f.json"],
                "traces generate": ["--groups", "1", "--out", "o"], "replay": ["--input", "i", "--output", "o"],
                "soak": ["--minutes", "1"], "fuzz": ["--target", "serve"],
                "clients": ["--target", "serve", "--client", "kafka-python", "--report", "r"],
                "observe": ["--upstream", "serve", "--report", "r"]}.get(name, [])
    for exc, code in ((BadInput("--x: expected y"), 2), (Incomplete("peer gone"), 3), (KeyboardInterrupt(), 130),
                      (BrokenPipeError(), 0), (ZeroDivisionError("bug"), 70)):
        def raising(args: argparse.Namespace, exc: BaseException = exc) -> int:
            raise exc
        monkeypatch.setattr(module, "run", raising)
        got, _, err = run([*name.split(), *required])
        assert got == code, (exc, err)
        if code in (2, 3, 130):
            assert err.strip().startswith(f"groupspec {name}:") and len(err.strip().splitlines()) == 1, err
        if code == 70:
            assert "Traceback" in err and "report it" in err


def argv_parsing(source: str) -> list[str]:
    """Where a module parses argv itself: an argparse import, or an `if __name__ == ...` block."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names) or \
                isinstance(node, ast.ImportFrom) and node.module == "argparse":
            found.append(f"{node.lineno} imports argparse")
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "__name__":
            found.append(f"{node.lineno} runs as __main__")
    return found


def test_no_package_below_parses_argv() -> None:
    """argv is parsed in groupspec/ only: no argparse and no __main__ in the packages below it."""
    offenders = [f"{path.relative_to(ROOT)}:{where}"
                 for package in ("model", "check", "proofs", "reference", "wire", "traces", "conformance", "fuzz",
                                 "server")
                 for path in sorted((ROOT / package).rglob("*.py"))
                 for where in argv_parsing(path.read_text())]
    assert offenders == []


def test_the_argv_detector_finds_both_forms() -> None:  # negative control
    assert argv_parsing("import argparse\n") == ["1 imports argparse"]
    assert argv_parsing("from argparse import Namespace\nx = 1\n") == ["1 imports argparse"]
    assert argv_parsing("x = 1\nif __name__ == '__main__':\n    pass\n") == ["2 runs as __main__"]
    assert argv_parsing("import json\n") == []


def test_prove_states_defaults_are_the_agreement_bounds() -> None:
    from groupspec.commands import prove_states
    from proofs.agreement import AgreementBounds

    d = AgreementBounds()
    assert (prove_states.IDS, prove_states.STATIC, prove_states.DYNAMIC, prove_states.GENERATION) == \
        (d.ids, d.instances, d.dynamic, d.max_generation)


NOTHING_THERE = "kafka://127.0.0.1:1"  # nothing listens on port 1


@pytest.mark.parametrize("argv, code, says", [
    (["fuzz", "--target", "serve", "--table", "no_such_module:T", "--report"], 2, "no_such_module"),
    (["observe", "--upstream", NOTHING_THERE, "--report"], 3, "cannot connect"),
    # clients: its observe (a process of its own) makes observe/ inside the run's directory
    (["clients", "--target", NOTHING_THERE, "--client", "kafka-python", "--minutes", "0.1", "--report"], 3,
     "cannot connect"),
])
def test_a_run_stopped_before_writing_leaves_no_output_directory(argv: list[str], code: int, says: str,
                                                                 tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    # the directory (and its missing parents) is made before the run stops; a real process, as a
    # user runs it (clients starts observe as one)
    out = tmp_path / "made" / "here"
    ran = subprocess.run([sys.executable, "-m", "groupspec.cli", *argv, str(out)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path, env=env)
    assert ran.returncode == code and says in ran.stderr, ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert ran.stderr.count("(incomplete") <= 1, ran.stderr
    assert not (tmp_path / "made").exists(), list((tmp_path / "made").rglob("*"))
    # one that was there before stays
    out.mkdir(parents=True)
    ran = subprocess.run([sys.executable, "-m", "groupspec.cli", *argv, str(out)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path, env=env)
    assert ran.returncode == code and out.is_dir()


def test_the_removal_keeps_a_directory_with_anything_in_it(tmp_path: Path) -> None:  # negative control
    from groupspec import options

    out = tmp_path / "r"
    options.output_dir(str(out), "--report", "report.json", create=True)
    (out / "report.json").write_text("{}")
    options.remove_unused_dirs()
    assert (out / "report.json").exists()
    empty = tmp_path / "e"
    options.output_dir(str(empty), "--report", "report.json", create=True)
    assert empty.is_dir()
    options.remove_unused_dirs()
    assert not empty.exists()


def test_a_later_run_in_the_process_leaves_an_earlier_runs_directory(tmp_path: Path) -> None:
    """`main` called twice in one process (as tests do): the first run's output directory, empty
    but its result (diff found no difference), is not the second, failing run's to remove."""
    first = tmp_path / "first"
    assert main(["diff", "--table", "kafka-3.9", "--against", "kafka-3.9", "--members", "1", "--quiet",
                 "--out", str(first)]) == 0
    assert first.is_dir() and not any(first.iterdir())
    assert main(["fuzz", "--target", "serve", "--table", "no_such_module:T", "--report", str(tmp_path / "second")]) == 2
    assert first.is_dir() and not (tmp_path / "second").exists()

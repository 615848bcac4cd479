"""Regression tests for the defects of issue 15, each of which reproduced on main before the fix."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from hardening_helpers import assert_contract, leftovers, run_cli, trace_lines, tree_hash
from traces.inputs import classify
from traces.local import run_local

ROOT = Path(__file__).resolve().parents[2]
GROUPSPEC = str(Path(sys.executable).parent / "groupspec")
TIMERS = str(ROOT / "tests" / "scenarios" / "timers.json")


@pytest.fixture()
def trace_dir(tmp_path: Path) -> Path:
    d = tmp_path / "g"
    d.mkdir()
    (d / "part-00000.jsonl").write_text("".join(x + "\n" for x in trace_lines()))
    return d


# --- 1. replay destroys its own input -------------------------------------------------------------


@pytest.mark.parametrize("where", ["same", "inside", "parent"])
def test_replay_refuses_an_output_that_overlaps_its_input(trace_dir: Path, where: str) -> None:
    output = {"same": trace_dir, "inside": trace_dir / "out", "parent": trace_dir.parent}[where]
    before = tree_hash(trace_dir)
    run = run_cli(["replay", "--input", str(trace_dir), "--output", str(output), "--local", "--overwrite"])
    assert run.code == 2 and "overlaps --input" in run.err
    assert tree_hash(trace_dir) == before


# --- 2. a cut-short exploration reports success ---------------------------------------------------


def test_check_cut_short_by_max_states_is_incomplete_not_a_pass(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    run = run_cli(["check", "--max-states", "1", "--members", "2", "--quiet", "--json", str(report)])
    assert run.code == 3
    assert "INCOMPLETE" in run.out and "no invariant violated\n" not in run.out
    assert json.loads(report.read_text())["complete"] is False


def test_check_that_checks_nothing_is_refused() -> None:
    run = run_cli(["check", "--invariant", "quiescence-reachable", "--no-liveness", "--members", "1"])
    assert run.code == 2 and run.err.startswith("groupspec check: ") and "nothing to check" in run.err


def test_check_finished_run_still_passes() -> None:  # the fix must not turn every run into exit 3
    run = run_cli(["check", "--members", "1", "--quiet", "--max-states", "100000"])
    assert run.code == 0 and "no invariant violated\n" in run.out


# --- 3. tracebacks on input that should be rejected -----------------------------------------------


def _replay_local(tmp_path: Path, lines: list[str] | bytes) -> tuple[Path, dict[str, object]]:
    d = tmp_path / "in"
    d.mkdir(exist_ok=True)
    data = lines if isinstance(lines, bytes) else "".join(x + "\n" for x in lines).encode("ascii")
    (d / "t.jsonl").write_bytes(data)
    before = tree_hash(d)
    run = run_cli(["replay", "--input", str(d), "--output", str(tmp_path / "out"), "--local"])
    assert_contract(run, frozenset({0, 1}))
    assert tree_hash(d) == before
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    return tmp_path / "out", summary


def _rejects(out: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines()]


def test_seq_beyond_int64_is_a_rejected_row(tmp_path: Path) -> None:
    lines = trace_lines()
    row = json.loads(lines[1]) | {"seq": 2 ** 63}
    lines[1] = json.dumps(row)
    out, summary = _replay_local(tmp_path, lines)
    assert summary["rejected"] == 1 and summary["rows"] == len(lines)
    assert "int64" in str(_rejects(out)[0]["reason"])


def test_lone_surrogate_in_group_id_is_a_rejected_row(tmp_path: Path) -> None:
    lines = trace_lines()
    lines[0] = lines[0].replace('"group_id":"g0"', '"group_id":"g\\udcff"')
    out, summary = _replay_local(tmp_path, lines)
    assert int(str(summary["rejected"])) >= 1
    assert any("lone surrogate" in str(r["reason"]) for r in _rejects(out))


def test_bytes_that_are_not_utf8_are_rejected_rows(tmp_path: Path) -> None:
    lines = trace_lines()
    data = "".join(x + "\n" for x in lines).encode("ascii")
    cut = data.index(b'"g1"')
    data = data[:cut] + b'"g\xff1"' + data[cut + 4:]
    out, summary = _replay_local(tmp_path, data)
    assert summary["rejected"] == 1
    assert _rejects(out)[0]["reason"] == "line is not valid UTF-8"


def test_scenario_file_nested_1000_deep_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"format": "kafka-classic-group-conformance/1", "scenarios": ' + "[" * 1000 + "]" * 1000 + "}")
    run = run_cli(["scenario", "run", str(path), "--target", "model"])
    assert run.code == 2 and "nested too deeply" in run.err and "Traceback" not in run.err


@pytest.mark.parametrize("ids", ["100000", "40"])
def test_prove_absurd_ids_are_refused_before_any_work(ids: str) -> None:
    started = time.monotonic()
    run = run_cli(["prove", "--ids", ids])
    assert run.code == 2 and "--ids" in run.err and "at most" in run.err
    assert time.monotonic() - started < 30


def test_wire_target_with_nothing_listening_is_incomplete() -> None:
    with socket.socket() as s:  # a free port, closed again: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = run_cli(["scenario", "run", TIMERS, "--target", f"kafka://127.0.0.1:{port}"])
    assert run.code == 3, run.err
    assert "cannot connect" in run.err and "Traceback" not in run.err and len(run.err.splitlines()) == 1


@pytest.fixture()
def silent_peer() -> Iterator[int]:
    """A TCP peer on 127.0.0.1 that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for c in accepted:
        c.close()


def test_wire_peer_that_never_answers_is_incomplete(silent_peer: int) -> None:
    run = run_cli(["scenario", "run", TIMERS, "--target", f"kafka://127.0.0.1:{silent_peer}"])
    assert run.code == 3, run.err
    assert "no response within" in run.err and "Traceback" not in run.err


# --- 4. a trace cut at the end of the file --------------------------------------------------------


def test_trace_cut_at_end_of_file_is_incomplete_not_a_violation(tmp_path: Path) -> None:
    lines = trace_lines()
    data = "".join(x + "\n" for x in lines)
    path = tmp_path / "t.jsonl"
    path.write_text(data[:-40])  # the writer died in the middle of the last line
    result = run_local(classify([str(path)]))
    result.counts.check()
    assert result.counts.violations == 0 and result.counts.incomplete == 1
    cut = [v for v in result.verdicts if v["status"] != "ok"]
    assert [v["group_id"] for v in cut] == ["g1"] and cut[0]["status"] == "incomplete"


def test_a_real_violation_before_a_cut_end_is_still_a_violation(tmp_path: Path) -> None:
    lines = trace_lines()
    rows = [json.loads(x) for x in lines]
    i = next(n for n, r in enumerate(rows) if r["group_id"] == "g1" and r["kind"] == "response"
             and r.get("error") == "NONE" and r["api"] == "Heartbeat")
    payload = json.loads(rows[i]["payload"]) | {"error": "REBALANCE_IN_PROGRESS"}
    lines[i] = json.dumps(rows[i] | {"payload": json.dumps(payload), "error": "REBALANCE_IN_PROGRESS"})
    path = tmp_path / "t.jsonl"
    path.write_text("".join(x + "\n" for x in lines)[:-40])
    result = run_local(classify([str(path)]))
    assert result.counts.violations == 1


# --- 5. late failures that lose results -----------------------------------------------------------


@pytest.mark.parametrize("target", ["dir", "missing-dir", "not-writable"])
def test_check_json_path_is_checked_before_the_run(tmp_path: Path, target: str) -> None:
    path = {"dir": tmp_path, "missing-dir": tmp_path / "no" / "r.json",
            "not-writable": Path("/proc/r.json")}[target]
    started = time.monotonic()
    run = run_cli(["check", "--json", str(path), "--quiet"])  # the default plan: a minute if it ran
    assert run.code == 2 and run.err.startswith("groupspec check: --json")
    assert "groupspec check: table" not in run.out  # refused before the run started
    assert time.monotonic() - started < 20
    assert leftovers(tmp_path) == []


def test_a_killed_replays_leftovers_are_deleted_by_the_next_run(trace_dir: Path, tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".out.tmp-{dead.pid}-0123456789ab"
    old_style = tmp_path / ".out.tmp-0123456789ab"
    live = tmp_path / f".out.tmp-{os.getpid()}-ba9876543210"  # a run in progress: kept
    for d in (stale, old_style, live):
        d.mkdir()
        (d / "verdicts.jsonl").write_text("partial\n")
    run = run_cli(["replay", "--input", str(trace_dir), "--output", str(tmp_path / "out"), "--local"])
    assert run.code == 0, run.err
    assert not stale.exists() and not old_style.exists() and live.exists()


def test_killed_replay_leaves_only_a_hidden_pid_named_folder(tmp_path: Path) -> None:
    from traces.output import AtomicOutput

    with AtomicOutput(tmp_path / "out") as out:
        name = out.tmp.name
        assert name.startswith(".out.tmp-") and name.split("-")[1] == str(os.getpid())
        assert not (tmp_path / "out").exists()


# --- 6. Ctrl-C ------------------------------------------------------------------------------------


def _sigint_as(handler: signal.Handlers) -> None:
    """A child's SIGINT set before it runs (`preexec_fn`): the tests must not depend on how this
    test run was started (a background job of a shell without job control inherits SIGINT
    ignored, and would pass it on)."""
    signal.signal(signal.SIGINT, handler)


def _python_exit(code: str, sigint: signal.Handlers) -> int:
    """The exit code of `python -c CODE` started with SIGINT as `sigint`."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], timeout=120,
                          preexec_fn=lambda: _sigint_as(sigint)).returncode


def test_interrupt_raised_inside_a_destructor_is_not_lost() -> None:
    """The mechanism of the ignored Ctrl-C: Python raises KeyboardInterrupt at the next bytecode,
    often z3's AstRef.__del__, where it is printed as "Exception ignored" and dropped. Run in a
    child process: the interrupt cancels z3's main context for good, which would break later
    proofs tests in this process ("push canceled"), started with SIGINT at its default as from an
    interactive shell (Python then installs `default_int_handler`)."""
    code = """
        import signal, z3
        from proofs.interrupt import interruptible
        class SignalOnDelete:
            def __del__(self):
                signal.raise_signal(signal.SIGINT)
        try:
            with interruptible():
                SignalOnDelete()
                solver = z3.Solver()
                solver.add(z3.Bool("x"))
                solver.check()
        except KeyboardInterrupt:
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
            raise SystemExit(42)
        raise SystemExit(1)
    """
    assert _python_exit(code, signal.SIG_DFL) == 42


def test_a_run_started_with_sigint_ignored_is_not_stopped_by_it() -> None:
    """A shell without job control starts its background commands with SIGINT ignored, so that
    the terminal's Ctrl-C stops only the foreground one; Python keeps it ignored, and so must the
    proofs' handler: the SIGINT is ignored, the query answers, SIGINT stays ignored."""
    code = """
        import signal, z3
        from proofs.interrupt import interruptible
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        with interruptible():
            signal.raise_signal(signal.SIGINT)
            solver = z3.Solver()
            solver.add(z3.Bool("x"))
            assert solver.check() == z3.sat
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        raise SystemExit(42)
    """
    assert _python_exit(code, signal.SIG_IGN) == 42


def _interrupt_after(argv: list[str], marker: str, cwd: Path, delay: float = 0.0) -> tuple[int, str, float]:
    """Start `groupspec ARGV`, send SIGINT `delay` s after `marker` shows in its output (stdout and
    stderr merged, unbuffered); (exit code, output, seconds from the signal to the exit)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # SIGINT as an interactive shell leaves it
    proc = subprocess.Popen([GROUPSPEC, *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, preexec_fn=lambda: _sigint_as(signal.SIG_DFL))
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if marker in line:
            break
    else:  # the run ended first: Ctrl-C would come too late to test anything
        proc.wait(timeout=120)
        raise AssertionError(f"{marker!r} never showed before the run ended:\n{''.join(seen)}")
    time.sleep(delay)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    return proc.returncode, "".join(seen) + rest, time.monotonic() - sent


def test_ctrl_c_stops_prove_during_a_solver_query(tmp_path: Path) -> None:
    # one second into the induction proofs: Z3 queries run back to back
    code, out, seconds = _interrupt_after(["prove", "--json", "p.json"], "well-formedness:", tmp_path, 1.0)
    assert code == 130, out
    assert "interrupted" in out.splitlines()[-1] and "Traceback" not in out
    assert "Exception ignored" not in out
    assert "all obligations proved" not in out and not (tmp_path / "p.json").exists()
    assert leftovers(tmp_path) == []
    assert seconds < 10


def test_ctrl_c_stops_check(tmp_path: Path) -> None:
    # bounds whose one exploration runs long enough to report progress (every 2 s: 6.9 M
    # states); the default plan's runs each end within 2 s since session 17's explorer, so
    # its output never shows "explored" and Ctrl-C would come after the end
    code, out, _ = _interrupt_after(["check", "--members", "4", "--max-generation", "2", "--json", "r.json"],
                                    "explored", tmp_path)
    assert code == 130 and "Traceback" not in out and "interrupted" in out.splitlines()[-1]
    assert "no invariant violated" not in out and not (tmp_path / "r.json").exists()


# --- the top-level handler ------------------------------------------------------------------------


def test_boundary_errors_map_to_their_codes_and_a_defect_asks_for_a_bug_report(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from groupspec.commands import check
    from model.errors import BadInput, Incomplete

    def raising(exc: BaseException) -> object:
        def cmd(args: object) -> int:
            raise exc
        return cmd

    for exc, code in ((BadInput("--x: expected y"), 2), (Incomplete("peer gone"), 3), (KeyboardInterrupt(), 130)):
        monkeypatch.setattr(check, "run", raising(exc))
        run = run_cli(["check"])
        assert run.code == code and run.err.strip().startswith("groupspec check:")
        assert "Traceback" not in run.err and len(run.err.strip().splitlines()) == 1
    monkeypatch.setattr(check, "run", raising(ZeroDivisionError("bug")))
    run = run_cli(["check"])
    assert run.code == 70 and "Traceback" in run.err and "report it" in run.err


# --- smaller frictions ----------------------------------------------------------------------------


def test_help_texts() -> None:
    top = run_cli(["--help"])
    text = " ".join(top.out.split())  # wrapped at the terminal's width
    assert top.code == 0 and "prove states" in text and "130 interrupted" in text
    for argv in (["scenario", "--help"], ["traces", "--help"], ["check", "--help"]):
        run = run_cli(argv)
        assert run.code == 0 and run.out.startswith("usage:"), argv


def test_check_help_explains_every_option() -> None:
    run = run_cli(["check", "--help"])
    assert run.code == 0
    text = " ".join(run.out.split())
    for flag, words in (("--mode {closed,open}", "closed: consumers"), ("--group-max-size N", "the broker's group.max.size"),
                        ("--no-liveness", "skip the liveness"), ("--max-states N", "stop each exploration after N states"),
                        ("--stop-at-first-violation", "stop at the first violation: the run that finds it stops there")):
        assert f"{flag} {words}" in text, flag


def test_traces_generate_takes_checks_fault_names_and_the_old_ones(tmp_path: Path) -> None:
    for i, faults in enumerate(("session,rebalance,lost,crash,leave", "session-timeout,lost-response")):
        out = tmp_path / f"g{i}"
        run = run_cli(["traces", "generate", "--groups", "2", "--steps", "10", "--faults", faults, "--out", str(out)])
        assert run.code == 0, run.err
        manifest = json.loads((out / "manifest.json").read_text())
        assert set(manifest["faults"]) <= {"session", "rebalance", "lost", "crash", "leave"}
    assert run_cli(["traces", "generate", "--groups", "1", "--faults", "nope", "--out", str(tmp_path / "x")]).code == 2


def test_prove_takes_a_mutant_name_like_check() -> None:
    from model.dsl import Table
    from check.mutants import MUTANTS
    from groupspec.options import load_table

    assert load_table("check.mutants:no-generation-bump")[0] is MUTANTS["no-generation-bump"][0]
    assert isinstance(load_table("check.mutants:no-generation-bump")[0], Table)


def test_check_errors_carry_the_command_prefix() -> None:
    for argv in (["check", "--members", "-1"], ["check", "--faults", "nope"], ["check", "--members", "9"]):
        run = run_cli(argv)
        assert run.code == 2 and run.err.startswith("groupspec check: "), run.err


def test_no_citation_uses_an_absolute_path_of_one_machine() -> None:
    files = [*sorted((ROOT / "tests" / "scenarios").glob("*.json")),
             *sorted((ROOT / "tests" / "scenarios" / "kafka-coordinator-test").glob("*.json")), ROOT / "traces" / "logparse.py",
             ROOT / "reference" / "coordinator.py", ROOT / "conformance" / "scenario.py",
             ROOT / "conformance" / "lockstep.py", ROOT / "README.md"]
    offenders = [str(f.relative_to(ROOT)) for f in files if "/work/" in f.read_text()]
    assert offenders == []


def test_readme_negative_control_is_the_fast_form() -> None:
    readme = (ROOT / "README.md").read_text()
    for line in readme.splitlines():
        if "groupspec check --table check.mutants:" in line:
            assert "--stop-at-first-violation" in line, line
    assert "## Exit codes" in readme

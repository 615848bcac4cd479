"""An exception inside a user's own definition (a table written outside groupspec registering its
atom) is reported as the user's defect: one line naming the definition, its file and line and the
exception, exit 2, no traceback and nothing published, in every command that runs the table (check
on both engines, replay local and on Spark, scenario run, fuzz, observe); an exception in
groupspec's own atom is not the user's (the negative control). prove names what the Z3 encoding
cannot stand for; observe stopped with a member connected prints no asyncio traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from check.user_code import PRODUCT, user_fault
from model.dsl import ATOMS, Atom
from model.errors import BadInput

ROOT = Path(__file__).resolve().parents[2]

TABLE = '''
from dataclasses import replace

from model.dsl import Guard, Table, atom
from model.table import CLASSIC_TABLE


def _generation(inp):
    return inp.generation  # Input has no such field: the user's bug


@atom("users-generation-ok")
def _users_generation_ok(group, inp, settings):
    """The heartbeat's generation is the group's."""
    return _generation(inp) == group.generation


def _renamed(r):
    text = " & ".join(("" if l.positive else "!")
                      + ("users-generation-ok" if l.atom == "generation-matches" else l.atom)
                      for l in r.guard.literals)
    return replace(r, guard=Guard.parse(text))


TABLE = Table(name="users", events=CLASSIC_TABLE.events, rows=tuple(
    _renamed(r) if r.id in ("Stable/Heartbeat/ok", "Stable/Heartbeat/illegal-generation") else r
    for r in CLASSIC_TABLE.rows))
'''


def groupspec(args: list[str], where: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(where), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "groupspec.cli", *args], capture_output=True, text=True,
                          env=env, cwd=where, timeout=900)


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the user's table module and a trace of 10 groups (heartbeats in Stable)."""
    where = tmp_path_factory.mktemp("users")
    (where / "users_table.py").write_text(TABLE)
    made = groupspec(["traces", "generate", "--groups", "10", "--seed", "3", "--out", "trace"], where)
    assert made.returncode == 0, made.stderr
    return where


@pytest.mark.parametrize("command", [
    ["check", "--members", "2", "--max-generation", "1", "--engine", "native"],
    ["check", "--members", "2", "--max-generation", "1", "--engine", "python"],
    ["replay", "--input", "trace/part-00000.jsonl", "--output", "out", "--local"],
    ["replay", "--input", "trace/part-00000.jsonl", "--output", "out", "--no-progress"],  # on Spark
    ["scenario", "run", str(ROOT / "tests/scenarios/static-membership.json"), "--target", "model"],
    ["fuzz", "--target", "serve", "--max-requests", "3000", "--report", "out"],
], ids=["check-native", "check-python", "replay-local", "replay-spark", "scenario-run", "fuzz"])
def test_a_users_atom_that_raises_is_named_in_one_line(users: Path, command: list[str]) -> None:
    done = groupspec([*command, "--table", "users_table:TABLE"], users)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert not (users / "out" / "report.json").exists() and not (users / "out" / "_SUCCESS").exists()
    name = " ".join(command[:2]) if command[0] == "scenario" else command[0]
    last = done.stderr.strip().splitlines()[-1]
    # the line of the helper that raised, inside the definition's file
    line = TABLE.splitlines().index("    return inp.generation  # Input has no such field: the user's bug") + 1
    assert last == (f"groupspec {name}: atom 'users-generation-ok' raised AttributeError: 'Input' object "
                    f"has no attribute 'generation' at {users / 'users_table.py'}:{line} "
                    "(a defect in that definition, not in groupspec)")


def test_groupspecs_own_atom_raising_is_not_the_users() -> None:  # negative control
    try:
        ATOMS["generation-matches"].fn(None, None, None)  # type: ignore[arg-type]
    except Exception as e:
        assert user_fault(e) is None
    else:
        raise AssertionError("the atom took None for a group")


def test_the_product_packages_are_pyprojects() -> None:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert sorted(PRODUCT) == sorted(doc["tool"]["mypy"]["packages"])


def test_prove_names_the_users_atom_it_cannot_encode(users: Path) -> None:
    done = groupspec(["prove", "--table", "users_table:TABLE"], users)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "groupspec prove: table users: the Z3 encoding cannot stand for atom 'users-generation-ok' (no Z3 "
        "encoding); groupspec prove covers tables built from groupspec's own atoms and effects (groupspec "
        "check explores any table)")


def _always(group: Any, inp: Any, settings: Any) -> bool:
    return True


def test_prove_refuses_an_atom_redefined_by_a_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """The encoding of 'generation-matches' is of groupspec's definition: a user's redefinition under
    the same name is refused; groupspec's own table is not (the negative control)."""
    from model.table import CLASSIC_TABLE, URGENT
    from proofs.cli import refuse_unencoded

    refuse_unencoded(CLASSIC_TABLE, URGENT)
    monkeypatch.setitem(ATOMS, "generation-matches", Atom("generation-matches", _always, ""))
    with pytest.raises(BadInput, match=r"atom 'generation-matches' \(redefined in test_user_code; "):
        refuse_unencoded(CLASSIC_TABLE, URGENT)


def _observe_with_a_consumer(where: Path, table: str, stop: bool) -> tuple[int, str]:
    """`groupspec observe --upstream serve --table TABLE` with a kafka-python member heartbeating
    through it for up to 12 s (until observe ends); `stop`: then SIGTERM while it is connected.
    (exit status, stderr)"""
    from kafka import KafkaConsumer

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(where), str(ROOT)])}
    proc = subprocess.Popen([sys.executable, "-m", "groupspec.cli", "observe", "--upstream", "serve", "--table", table,
                             "--report", str(where / f"observed-{stop}")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=where, start_new_session=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert "listening on 127.0.0.1:" in first, first
    consumer = KafkaConsumer("t", bootstrap_servers=first.split()[-1], group_id="g", session_timeout_ms=6000,
                             heartbeat_interval_ms=300)
    try:
        end = time.monotonic() + 12
        while time.monotonic() < end and proc.poll() is None:
            consumer.poll(timeout_ms=200)
        if stop:
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        consumer.close(autocommit=False)
        if proc.poll() is None:  # (with the serve it started)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err


def test_observe_stops_at_a_users_atom_that_raises(users: Path) -> None:
    code, err = _observe_with_a_consumer(users, "users_table:TABLE", stop=False)
    assert code == 2, err
    assert "Traceback" not in err and "Exception in callback" not in err, err
    line = TABLE.splitlines().index("    return inp.generation  # Input has no such field: the user's bug") + 1
    assert err.strip().splitlines()[-1] == (
        f"groupspec observe: atom 'users-generation-ok' raised AttributeError: 'Input' object has no attribute "
        f"'generation' at {users / 'users_table.py'}:{line} (a defect in that definition, not in groupspec)")


def test_observe_stopped_with_a_member_connected_prints_no_traceback(tmp_path: Path) -> None:
    """Its listeners' connection tasks, cancelled at the stop, end quietly (asyncio printed each)."""
    code, err = _observe_with_a_consumer(tmp_path, "kafka-3.9", stop=True)
    assert code == 0, err
    assert "Traceback" not in err and "Exception in callback" not in err, err


@pytest.mark.parametrize("source, said", [
    ("def broken(:\n", "cannot import 'users_module': SyntaxError: invalid syntax at {path}:1"),
    ("def f():\n  x = 1\n    y = 2\n", "cannot import 'users_module': IndentationError: unexpected indent at {path}:3"),
    ("def f():\n    return 1 / 0\n\n\nX = f()\n",
     "importing 'users_module' raised ZeroDivisionError: division by zero at {path}:2"),
    ("from model.dsl import atom\n\n\n@atom('generation-matches')\ndef mine(group, inp, settings):\n    return True\n",
     "importing 'users_module' raised ValueError: atom 'generation-matches' defined twice at {path}:4"),
], ids=["syntax", "indentation", "raises", "registers-twice"])
def test_a_table_module_that_cannot_be_imported_is_named_in_one_line(tmp_path: Path, source: str, said: str) -> None:
    (tmp_path / "users_module.py").write_text(source)
    done = groupspec(["check", "--table", "users_module:TABLE"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "groupspec check: --table: " + said.format(path=tmp_path / "users_module.py")


def test_clients_end_when_observe_stops_at_a_users_atom(users: Path) -> None:
    """Real kafka-python members judged by observe with the user's table: observe stops at the
    atom's exception, the churn ends with it (well before its minute), and clients says why."""
    # the atom in the SyncGroup rows of CompletingRebalance, which every rebalance fires (in Stable's
    # heartbeat rows it was met late, and the members' records left unconsumed when observe stopped
    # were reported as violations, exit 1: observe's stop now comes first)
    heartbeats = 'r.id in ("Stable/Heartbeat/ok", "Stable/Heartbeat/illegal-generation")'
    assert heartbeats in TABLE
    (users / "users_sync_table.py").write_text(TABLE.replace(heartbeats, 'r.id.startswith("CompletingRebalance/SyncGroup/")'))
    started = time.monotonic()
    done = groupspec(["clients", "--target", "serve", "--client", "kafka-python", "--consumers", "2", "--minutes", "1",
                      "--observe-table", "users_sync_table:TABLE", "--report", "clients-report"], users)
    assert done.returncode == 2, done.stderr
    assert time.monotonic() - started < 60, "the churn went on after observe had stopped"
    assert done.stderr.strip().splitlines()[-1].startswith(
        "groupspec clients: observe stopped: atom 'users-generation-ok' raised AttributeError")


INVARIANT_TABLE = '''
from model.invariants import state_invariant
from model.table import CLASSIC_TABLE

TABLE = CLASSIC_TABLE


@state_invariant("users-at-most-one-member")
def _one(group):
    """At most one member (false with two clients: a violation to find)."""
    return f"{len(group.members)} members" if len(group.members) > 1 else None
'''


@pytest.mark.parametrize("engine", ["native", "python"])
def test_invariant_names_an_invariant_the_users_table_registers(tmp_path: Path, engine: str) -> None:
    (tmp_path / "users_invariant.py").write_text(INVARIANT_TABLE)
    bounds = ["--members", "2", "--max-generation", "1", "--engine", engine, "--quiet"]
    done = groupspec(["check", "--table", "users_invariant:TABLE", "--invariant", "users-at-most-one-member",
                      *bounds], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "VIOLATION users-at-most-one-member: 2 members" in done.stdout
    # the negative control: without the table that registers it, the name is unknown
    done = groupspec(["check", "--invariant", "users-at-most-one-member", *bounds], tmp_path)
    assert done.returncode == 2 and "--invariant: unknown ['users-at-most-one-member']" in done.stderr


def test_prove_reports_the_users_invariant_unknown_not_proved(tmp_path: Path) -> None:
    """A table module registering an invariant of its own: prove cannot decide it (no encoding),
    so the run is undecided (exit 3) with a line saying why, never a pass and no internal error."""
    (tmp_path / "users_invariant.py").write_text(INVARIANT_TABLE)
    done = groupspec(["prove", "--table", "users_invariant:TABLE", "--invariant", "users-at-most-one-member",
                      "--depth", "2"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert ("users-at-most-one-member                 unknown   (not encoded: an invariant the table's module "
            "registers; Z3 has no encoding of it (groupspec check explores it))") in done.stdout


RAISES_LATER = '''
from model.invariants import state_invariant
from model.table import CLASSIC_TABLE

TABLE = CLASSIC_TABLE


@state_invariant("users-raises-later")
def _later(group):
    """Violated at once (no members yet), and raises on a group of two members: a defect in it."""
    if len(group.members) == 2:
        raise ValueError("two members")
    return "no members" if not group.members else None
'''


def test_both_engines_find_a_users_invariant_raising_after_its_violation(tmp_path: Path) -> None:
    """The Python explorer stops checking an invariant once it has a counterexample; a user's is
    still evaluated (its verdict ignored), so that a raise on a later state is the defect it is,
    as on the native engine, which evaluates every invariant on every group."""
    (tmp_path / "users_later.py").write_text(RAISES_LATER)
    said = []
    for engine in ("native", "python"):
        done = groupspec(["check", "--table", "users_later:TABLE", "--members", "2", "--max-generation", "1",
                          "--engine", engine, "--quiet"], tmp_path)
        assert done.returncode == 2, (engine, done.stdout[-2000:], done.stderr)
        said.append(done.stderr.strip().splitlines()[-1])
    assert said[0] == said[1] == ("groupspec check: invariant 'users-raises-later' raised ValueError: two members "
                                  f"at {tmp_path / 'users_later.py'}:12 (a defect in that definition, not in "
                                  "groupspec)"), said

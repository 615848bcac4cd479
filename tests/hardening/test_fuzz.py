"""Malformed input at every boundary, and the contract each case must keep.

Boundaries: scenario JSON, trace rows (JSON Lines and Parquet), broker-log lines, Kafka wire frames
coming back from a peer, and command-line arguments. Each case damages a valid input (mutate.py)
and checks: an exit code of the contract (or the boundary's typed error), no traceback, nothing
lost (input rows = replayed + rejected + ignored, `Counts.check`), and the input files untouched.
Everything runs in this process (no Spark, no subprocess) to stay fast.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hardening_helpers import assert_contract, run_cli, trace_lines, tree_hash
from model.errors import BadInput
from mutate import NASTY_VALUES, mutated_bytes, mutated_json_text, mutated_lines
from traces.inputs import classify
from traces.local import run_local

ROOT = Path(__file__).resolve().parents[2]
FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])


def _scratch(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    return tmp_path_factory.mktemp(name)


# --- scenario files -------------------------------------------------------------------------------


def _small_scenario_file() -> dict[str, Any]:
    doc = json.loads((ROOT / "tests" / "scenarios" / "timers.json").read_text())
    doc["scenarios"] = doc["scenarios"][:1]
    return dict(doc)


SCENARIO = _small_scenario_file()


@settings(FUZZ, max_examples=100)
@given(st.one_of(mutated_json_text(SCENARIO),
                 mutated_bytes(json.dumps(SCENARIO).encode()).map(lambda b: b.decode("utf-8", "surrogateescape"))))
def test_damaged_scenario_files(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    d = _scratch(tmp_path_factory, "scenario")
    path = d / "s.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    before = tree_hash(path)
    run = run_cli(["scenario", "run", str(path), "--target", "model"])
    assert_contract(run, frozenset({0, 1, 2}))
    if run.code == 2:
        assert len(run.err.strip().splitlines()) <= 2 and str(path) in run.err
    assert tree_hash(path) == before


# --- trace rows: JSON Lines -----------------------------------------------------------------------

TRACE = trace_lines(groups=2, steps=15)


def _replay_checked(paths: list[Path]) -> None:
    """Replay in one process: either the whole input is refused as bad input, or nothing is lost."""
    try:
        inputs = classify([str(p) for p in paths])
        result = run_local(inputs)
    except BadInput:
        return
    result.counts.check()


@settings(FUZZ, max_examples=100)
@given(mutated_lines(TRACE, row_json=True))
def test_damaged_trace_rows_jsonl(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    d = _scratch(tmp_path_factory, "jsonl")
    path = d / "t.jsonl"
    path.write_bytes(data)
    before = tree_hash(d)
    _replay_checked([path])
    assert tree_hash(d) == before


def test_damaged_trace_through_the_cli(tmp_path: Path) -> None:
    """The same contract end to end (exit code, no traceback, counts line) for a few damages."""
    lines = list(TRACE)
    lines[3] = lines[3][:25]
    lines[7] = json.dumps(json.loads(lines[7]) | {"seq": 2 ** 64})
    lines.insert(9, lines[9])
    d = tmp_path / "in"
    d.mkdir()
    (d / "t.jsonl").write_bytes("".join(x + "\n" for x in lines).encode() + b'{"group_id":"g\xff"}\n')
    before = tree_hash(d)
    run = run_cli(["replay", "--input", str(d), "--output", str(tmp_path / "out"), "--local"])
    assert_contract(run, frozenset({0, 1}))
    assert tree_hash(d) == before
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["rows"] == len(lines) + 1 == summary["replayed"] + summary["rejected"] + summary["ignored"]


# --- trace rows: Parquet --------------------------------------------------------------------------

ROWS = [json.loads(x) for x in TRACE]


@st.composite
def damaged_parquet_table(draw: st.DrawFn) -> Any:
    import pyarrow as pa

    rows = [dict(r) for r in ROWS]
    columns = sorted({k for r in rows for k in r})
    kind = draw(st.sampled_from(["drop", "as-string", "null", "extreme", "uint64", "unknown", "duplicate",
                                 "swap", "unicode"]))
    col = draw(st.sampled_from(columns))
    i = draw(st.integers(0, len(rows) - 1))
    j = draw(st.integers(0, len(rows) - 1))
    types: dict[str, Any] = {}
    if kind == "drop":
        for r in rows:
            r.pop(col, None)
    elif kind == "as-string":
        for r in rows:
            if col in r:
                r[col] = str(r[col])
        types[col] = pa.string()
    elif kind == "null":
        rows[i][col] = None
    elif kind == "extreme":
        col = draw(st.sampled_from(["seq", "ts_ms", "generation", "request_id"]))
        rows[i][col] = draw(st.sampled_from([-1, -2 ** 63, 2 ** 63 - 1, 2 ** 31, -2 ** 31 - 1]))
    elif kind == "uint64":
        rows[i]["seq"] = 2 ** 63 + 5
        types["seq"] = pa.uint64()
    elif kind == "unknown":
        rows[i]["extra_column"] = "x"
    elif kind == "duplicate":
        rows.insert(j, dict(rows[i]))
    elif kind == "swap":
        rows[i], rows[j] = rows[j], rows[i]
    elif kind == "unicode":
        strings = [k for k, v in rows[i].items() if isinstance(v, str)]
        rows[i][draw(st.sampled_from(strings))] = draw(st.sampled_from(["\x00", "\U0010ffff", "\u202e", "", "x" * 5000]))
    names = sorted({k for r in rows for k in r})
    fields = []
    for name in names:
        values = [r.get(name) for r in rows]
        if name in types:
            fields.append(pa.array(values, types[name]))
        elif all(v is None or isinstance(v, str) for v in values):
            fields.append(pa.array(values, pa.string()))
        else:
            fields.append(pa.array(values, pa.int64() if name not in ("generation",) else pa.int64()))
    return pa.Table.from_arrays(fields, names=names)


@settings(FUZZ, max_examples=80)
@given(damaged_parquet_table())
def test_damaged_trace_rows_parquet(tmp_path_factory: pytest.TempPathFactory, table: Any) -> None:
    import pyarrow.parquet as pq

    d = _scratch(tmp_path_factory, "parquet")
    path = d / "t.parquet"
    pq.write_table(table, path)
    before = tree_hash(d)
    _replay_checked([path])
    assert tree_hash(d) == before


# --- broker-log lines (the contract only; parsing is traces/logparse.py's) ------------------------

LOG = (ROOT / "tests" / "traces" / "fixtures" / "server-3.9.log").read_text().splitlines()


@settings(FUZZ, max_examples=80)
@given(mutated_lines(LOG, row_json=False))
def test_damaged_broker_logs(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    d = _scratch(tmp_path_factory, "log")
    path = d / "server.log"
    path.write_bytes(data)
    before = tree_hash(d)
    _replay_checked([path])
    assert tree_hash(d) == before


# --- Kafka wire frames from a peer ----------------------------------------------------------------


class MutatingPeer:
    """A peer on 127.0.0.1 that answers each request frame with `reply(correlation_id)` bytes."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.port = self.server.getsockname()[1]
        self.reply: bytes = b""
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            while True:
                head = _recv(conn, 4)
                (size,) = struct.unpack(">i", head)
                request = _recv(conn, size)
                correlation = request[4:8]
                conn.sendall(self.reply.replace(b"@CID", correlation))
        except (OSError, ConnectionError, struct.error):
            return

    def close(self) -> None:
        self.server.close()
        for c in self.conns:
            c.close()


def _recv(conn: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = conn.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _api_versions_reply() -> bytes:
    from model.vocabulary import ApiKey
    from wire import codec

    body = {"error_code": 0, "throttle_time_ms": 0, "finalized_features_epoch": -1,
            "api_keys": [{"api_key": k, "min_version": 0, "max_version": 9} for k in (10, 11, 12, 13, 14, 15, 16)]}
    frame = codec.encode_response(ApiKey.ApiVersions, 3, 0x7E7E7E7E, body)
    return codec.frame(frame).replace(struct.pack(">i", 0x7E7E7E7E), b"@CID")


@pytest.fixture(scope="module")
def peer() -> Iterator[MutatingPeer]:
    p = MutatingPeer()
    yield p
    p.close()


REPLY = _api_versions_reply()


@settings(FUZZ, max_examples=60)
@given(mutated_bytes(REPLY))
def test_damaged_frames_from_a_peer(peer: MutatingPeer, reply: bytes) -> None:
    from wire.errors import WireError
    from wire.transport import Connection, api_versions

    crashed: list[BaseException] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: crashed.append(args.exc_value or Exception("?"))
    peer.reply = reply
    try:
        conn = Connection("127.0.0.1", peer.port, connect_timeout_s=2.0)
        try:
            versions = api_versions(conn, timeout_s=0.3)
            assert isinstance(versions, dict)
        except WireError:
            pass  # DecodeError, TransportError (closed, timed out), UnsupportedVersionError: all typed
        finally:
            conn.close()
    finally:
        threading.excepthook = previous
    assert crashed == [], crashed


def test_undamaged_frame_is_understood(peer: MutatingPeer) -> None:  # the fuzz peer itself works
    from model.vocabulary import ApiKey
    from wire.transport import Connection, api_versions

    peer.reply = REPLY
    conn = Connection("127.0.0.1", peer.port)
    try:
        assert api_versions(conn, timeout_s=5.0)[ApiKey.Heartbeat] == (0, 9)
    finally:
        conn.close()


# --- command-line arguments -----------------------------------------------------------------------

WORDS = st.sampled_from(["-1", "0", "1", "2", "7", "99999999999999999999", "1e3", "", "none", "x", "\udcff",
                         "model", "closed", "open", "all", "--", "-h", "=", "a:b", "check.mutants:nope"])


def _argv(flags: list[str]) -> st.SearchStrategy[list[str]]:
    pair = st.tuples(st.sampled_from(flags), WORDS).map(list)
    return st.lists(st.one_of(pair, st.sampled_from(flags).map(lambda f: [f]), WORDS.map(lambda w: [w])),
                    max_size=4).map(lambda parts: [x for p in parts for x in p])


CHECK_FLAGS = ["--members", "--static", "--max-generation", "--faults", "--mode", "--group-max-size", "--no-symmetry",
               "--invariant", "--table", "--v3-joins", "--no-liveness", "--stop-at-first-violation", "--bogus"]
PROVE_FLAGS = ["--invariant", "--depth", "--ids", "--rows", "--reach-depth", "--timeout-ms", "--table", "--json"]
REPLAY_FLAGS = ["--partitions", "--overwrite", "--progress", "--no-progress", "--master", "--input"]
GENERATE_FLAGS = ["--seed", "--faults", "--bug", "--bug-fraction", "--format", "--files", "--jobs", "--overwrite"]


@settings(FUZZ, max_examples=120)
@given(st.sampled_from(["check", "prove", "replay", "generate", "scenario", "other"]), st.data())
def test_command_line_arguments(tmp_path_factory: pytest.TempPathFactory, command: str, data: st.DataObject) -> None:
    d = _scratch(tmp_path_factory, "argv")
    if command == "check":  # bounded: whatever else is drawn, the run stays small
        argv = ["check", *data.draw(_argv(CHECK_FLAGS)), "--quiet", "--members", "1", "--max-states", "300"]
        argv = [a for a in argv if a != "--prove"]
    elif command == "prove":  # always one bad value, so no Z3 run starts: the argument checks are the subject
        bad = data.draw(st.sampled_from([["--ids", "0"], ["--ids", "100000"], ["--depth", "-1"], ["--invariant", "nope"],
                                         ["--table", "nope"], ["--json", str(d / "no" / "r.json")], ["--bogus"]]))
        argv = ["prove", *data.draw(_argv(PROVE_FLAGS)), *bad]
    elif command == "replay":
        trace = d / "in"
        trace.mkdir()
        (trace / "t.jsonl").write_text("".join(x + "\n" for x in TRACE[:40]))
        argv = ["replay", *data.draw(_argv(REPLAY_FLAGS)), "--input", str(trace), "--output", str(d / "out"),
                "--local"]
    elif command == "generate":
        argv = ["traces", "generate", *data.draw(_argv(GENERATE_FLAGS)), "--groups", "2", "--steps", "5",
                "--out", str(d / "g")]
    elif command == "scenario":
        argv = ["scenario", *data.draw(st.sampled_from([["run"], [], ["walk"]])),
                *data.draw(st.lists(st.sampled_from([str(d / "missing.json"), "--target", "model", "nope://x",
                                                     "--json", str(d), "--allow-remote"]), max_size=4))]
    else:
        argv = data.draw(st.lists(WORDS, max_size=3))
    if "-h" in argv:
        return  # argparse prints help and exits 0 through SystemExit: covered by test_help_texts
    run = run_cli(argv)
    assert_contract(run)
    if command == "prove":
        assert run.code == 2, (argv, run.err)

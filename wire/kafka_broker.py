"""Run Apache Kafka itself (single-node KRaft, loopback only) as the oracle the model is held against.

The jars come from Maven Central: `scripts/fetch_kafka.sh VERSION` resolves
`org.apache.kafka:kafka_2.13:VERSION` and its runtime dependencies through `scripts/kafka/pom.xml`
into `.kafka-jars/VERSION/` (git-ignored; `scripts/setup.sh` fetches the versions below, so
nothing is downloaded at test time). A broker is started as

    java -Xmx256m ... -cp '.kafka-jars/VERSION/*' kafka.tools.StorageTool format -t ID -c props
    java -Xmx256m ... -cp '.kafka-jars/VERSION/*' kafka.Kafka props

with `process.roles=broker,controller`, both listeners on 127.0.0.1 free ports, storage in a fresh
temporary directory, and the group.* settings of the scenario's `CoordinatorConfig`. It is ready
when the broker answers FindCoordinator for a group with a coordinator (the `__consumer_offsets`
partition is created and loaded), bounded by `startup_timeout_s`. A failed start raises
BrokerStartError with the log tail and the Java version.

Every broker started is stopped by `stop()`, at interpreter exit (atexit), on SIGTERM/SIGHUP
(turned into SystemExit so atexit runs) and on Ctrl-C (KeyboardInterrupt unwinds to the same
place). The JVM runs in its own session (a terminal's Ctrl-C does not reach it first) and gets
SIGTERM from the kernel when the thread that started it dies (PR_SET_PDEATHSIG), so even a killed
Python leaves no JVM behind. Start brokers from a long-lived thread (the main thread).

Not configurable in Kafka and so not honoured: `new_member_join_timeout_ms` (Kafka 3.9's
GroupCoordinator.NewMemberJoinTimeoutMs = 5 min; a scenario with another value is skipped by the
factory), `not_owned_groups` and `append_result` (see wire.target.unsupported_config).
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import glob
import os
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from types import FrameType, TracebackType
from typing import Any, Final, Optional

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import NEW_MEMBER_JOIN_TIMEOUT_MS, ApiKey, Error
from wire import convert
from wire.admin import create_topics
from wire.factories import TargetFactory
from wire.errors import BrokerStartError, WireError
from wire.tansu import free_port
from wire.target import KafkaTarget
from wire.transport import Connection, api_versions, find_coordinator, negotiate

# Topics created at start: Kafka's KafkaApis answers an OffsetCommit for a partition it does not
# have UNKNOWN_TOPIC_OR_PARTITION before the coordinator sees it (the model, which is the
# coordinator, has no topics). Scenarios and the lockstep test commit to "t-0" .. "t-2".
DEFAULT_TOPICS: dict[str, int] = {"t": 4}

# Short names (`--target kafka-3.9`) -> the exact version fetched by scripts/setup.sh.
VERSIONS: dict[str, str] = {"3.9": "3.9.2", "4": "4.4.0"}
JARS_ENV = "GROUPSPEC_KAFKA_JARS"  # overrides the jar cache root (default: <repo>/.kafka-jars)
JAVA_ENV = "GROUPSPEC_JAVA"        # overrides the java executable (default: java on PATH)

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_JVM_OPTS = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Xss512k", "-XX:MaxMetaspaceSize=128m", "-Djava.awt.headless=true",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
             "-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaServer=info",
             "-Dorg.slf4j.simpleLogger.log.kafka.server.BrokerServer=info",
             "-Dorg.slf4j.simpleLogger.showDateTime=true"]


def full_version(version: str) -> str:
    """"3.9" -> "3.9.2", "4" -> "4.4.0"; an exact version is returned as is."""
    return VERSIONS.get(version, version)


def jar_dir(version: str) -> str:
    root = os.environ.get(JARS_ENV) or os.path.join(_REPO, ".kafka-jars")
    return os.path.join(root, full_version(version))


def kafka_available(version: str) -> Optional[str]:
    """None when Kafka `version` can be started here, else why not (no jars, no java)."""
    jars = jar_dir(version)
    if not glob.glob(os.path.join(jars, "kafka_2.13-*.jar")):
        return (f"no Kafka {full_version(version)} jars in {jars}: run "
                f"scripts/fetch_kafka.sh {full_version(version)} (scripts/setup.sh does)")
    try:
        java_version(_java())
    except OSError as e:
        return f"no java: {e}"
    return None


def _java() -> str:
    return os.environ.get(JAVA_ENV) or "java"


def java_version(java: str) -> str:
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    return (out.stderr or out.stdout).strip().splitlines()[0] if (out.stderr or out.stdout) else "?"


def _cluster_id() -> str:
    """A random cluster id as Kafka writes it (Uuid: URL-safe base64, no padding, no leading '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


# ------------------------------------------------------------------ process hygiene

_LIVE: "set[KafkaBroker]" = set()
_LIVE_LOCK = threading.Lock()
_HOOKS_INSTALLED = False


def _stop_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for broker in live:
        broker.stop()


def _on_signal(signum: int, frame: Optional[FrameType]) -> None:
    _stop_all()
    raise SystemExit(128 + signum)


def _install_hooks() -> None:
    global _HOOKS_INSTALLED
    if _HOOKS_INSTALLED:
        return
    _HOOKS_INSTALLED = True
    atexit.register(_stop_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _on_signal)


# Kafka's cleanupGroupMetadata runs every offsets.retention.check.interval.ms (600000 by default)
# at a phase no client sees, and removes Empty groups without offsets. The model arms no such
# timer (its OffsetsExpire is a fault in the abstract mode and a scenario step in the concrete
# one), so brokers that are compared step by step with it (scenario runs, the lockstep) set the
# interval to a day: it never fires within a run. The fuzzer keeps Kafka's default (its judge lets
# the cleanup happen at any moment).
NO_PERIODIC_CLEANUP_MS: Final = 86_400_000


def _properties(config: CoordinatorConfig, broker_port: int, controller_port: int,
                data_dir: str, periodic_cleanup: bool = True) -> dict[str, str]:
    extra = {} if periodic_cleanup else {"offsets.retention.check.interval.ms": str(NO_PERIODIC_CLEANUP_MS)}
    return extra | {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": data_dir,
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.enable": "false",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "auto.create.topics.enable": "false",
        "group.min.session.timeout.ms": str(config.group_min_session_timeout_ms),
        "group.max.session.timeout.ms": str(config.group_max_session_timeout_ms),
        "group.max.size": str(config.group_max_size),
        "group.initial.rebalance.delay.ms": str(config.group_initial_rebalance_delay_ms),
    }


class KafkaBroker:
    """`with KafkaBroker("3.9", config) as broker:` -> Apache Kafka on 127.0.0.1:`broker.port`."""

    def __init__(self, version: str = "3.9", config: Optional[CoordinatorConfig] = None, *,
                 startup_timeout_s: float = 120.0, stop_timeout_s: float = 20.0,
                 topics: Optional[dict[str, int]] = None, periodic_cleanup: bool = True,
                 log_levels: Optional[dict[str, str]] = None) -> None:
        self.periodic_cleanup = periodic_cleanup  # False: NO_PERIODIC_CLEANUP_MS
        # logger -> level beyond the default warn (e.g. the coordinator's INFO lines for a probe)
        self.log_levels = dict(log_levels or {})
        self.topics = dict(DEFAULT_TOPICS if topics is None else topics)
        self.version = full_version(version)
        self.config = config if config is not None else CoordinatorConfig()
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.host = "127.0.0.1"
        self.port = 0
        self.controller_port = 0
        self.java = _java()
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._dir: Optional[tempfile.TemporaryDirectory[str]] = None
        self._log_path = ""
        self.started_s = 0.0  # seconds the last start() took

    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def bootstrap(self) -> str:
        return self.address()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._proc is not None:
            raise BrokerStartError("KafkaBroker.start() called twice")
        why = kafka_available(self.version)
        if why is not None:
            raise BrokerStartError(why)
        _install_hooks()
        begin = time.monotonic()
        self._dir = tempfile.TemporaryDirectory(prefix=f"groupspec-kafka-{self.version}-")
        root = self._dir.name
        data = os.path.join(root, "data")
        self._log_path = os.path.join(root, "kafka.log")
        self.port, self.controller_port = free_port(), free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        props = os.path.join(root, "server.properties")
        with open(props, "w") as f:
            for k, v in _properties(self.config, self.port, self.controller_port, data,
                                    self.periodic_cleanup).items():
                f.write(f"{k}={v}\n")
        classpath = os.path.join(jar_dir(self.version), "*")
        levels = [f"-Dorg.slf4j.simpleLogger.log.{k}={v}" for k, v in self.log_levels.items()]
        base = [self.java, *_JVM_OPTS, *levels, "-cp", classpath]
        with open(self._log_path, "ab") as log:
            fmt = subprocess.run(
                [*base, "kafka.tools.StorageTool", "format", f"--cluster-id={_cluster_id()}", f"--config={props}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                timeout=self.startup_timeout_s, preexec_fn=_die_with_parent)
        if fmt.returncode != 0:
            raise self._failure(f"kafka.tools.StorageTool format exited with {fmt.returncode}")
        with _LIVE_LOCK:
            _LIVE.add(self)
        log_file = open(self._log_path, "ab")
        try:
            self._proc = subprocess.Popen(
                [*base, f"-Dkafka.logs.dir={root}", "kafka.Kafka", props],
                stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_die_with_parent)
        finally:
            log_file.close()
        try:
            self._wait_ready(begin + self.startup_timeout_s)
            if self.topics:
                self.create_topics(self.topics, max(5.0, begin + self.startup_timeout_s
                                                    - time.monotonic()))
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - begin

    def _wait_ready(self, deadline: float) -> None:
        last: Optional[BaseException] = None
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise self._failure(f"kafka.Kafka exited with {self._proc.returncode}")
            try:
                if self._coordinator_ready(min(5.0, max(0.5, deadline - time.monotonic()))):
                    return
            except (WireError, OSError) as e:
                last = e
            time.sleep(0.2)
        raise self._failure(f"not ready within {self.startup_timeout_s}s (last: {last})")

    def _coordinator_ready(self, timeout_s: float) -> bool:
        """True when the group coordinator answers DescribeGroups for a probe group with NONE.

        FindCoordinator succeeds once `__consumer_offsets` has a leader; DescribeGroups answers
        COORDINATOR_LOAD_IN_PROGRESS until the partition is loaded, so both are asked.
        """
        conn = Connection(self.host, self.port, connect_timeout_s=timeout_s)
        try:
            versions = negotiate(api_versions(conn, timeout_s), None)
            probe = "groupspec-readiness-probe"
            find_coordinator(conn, probe, versions[ApiKey.FindCoordinator], timeout_s)
            version = versions[ApiKey.DescribeGroups]
            _, body = convert.request_body(m.DescribeGroupsRequest((probe,)), version)
            reply = conn.call(ApiKey.DescribeGroups, version, body, timeout_s)
            record = convert.response_record(ApiKey.DescribeGroups, version, reply)
            assert isinstance(record, m.DescribeGroupsResponse)
            return all(g.error is Error.NONE for g in record.groups)
        finally:
            conn.close()

    def create_topics(self, topics: dict[str, int], timeout_s: float = 30.0) -> None:
        """CreateTopics (name -> partitions, replication 1): wire.admin.create_topics."""
        create_topics(self.host, self.port, topics, timeout_s)

    def _failure(self, what: str) -> BrokerStartError:
        try:
            jv = java_version(self.java)
        except OSError as e:
            jv = f"java not runnable: {e}"
        return BrokerStartError(f"Kafka {self.version} did not start: {what}; java: {jv}; "
                                f"log tail:\n{self.log_tail()}")

    def log_text(self, last_chars: Optional[int] = None) -> str:
        """The broker's log so far (its last `last_chars` characters), "" before start."""
        try:
            with open(self._log_path, "rb") as f:
                if last_chars is not None:
                    f.seek(0, os.SEEK_END)
                    f.seek(max(0, f.tell() - last_chars))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_text(chars) or "(no log)"

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(self.stop_timeout_s)
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> "KafkaBroker":
        self.start()
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.stop()


# ------------------------------------------------------------------ targets

def broker_config_key(config: CoordinatorConfig) -> tuple[int, int, int, int]:
    """The part of a scenario config a Kafka broker is started with; equal keys share a broker."""
    return (config.group_min_session_timeout_ms, config.group_max_session_timeout_ms,
            config.group_max_size, config.group_initial_rebalance_delay_ms)


def kafka_unsupported_config(config: CoordinatorConfig) -> Optional[str]:
    if config.new_member_join_timeout_ms != NEW_MEMBER_JOIN_TIMEOUT_MS:
        return (f"config new_member_join_timeout_ms={config.new_member_join_timeout_ms}: Kafka's "
                f"is the constant {NEW_MEMBER_JOIN_TIMEOUT_MS} (GroupCoordinator."
                "NewMemberJoinTimeoutMs), not a broker setting")
    return None


class KafkaBrokerPool:
    """Brokers of one Kafka version keyed by broker config, started on first use, kept until close();
    for step-by-step comparison with the model (no periodic offsets cleanup: NO_PERIODIC_CLEANUP_MS)."""

    def __init__(self, version: str, *, startup_timeout_s: float = 120.0,
                 max_brokers: int = 2) -> None:
        self.version = version
        self.startup_timeout_s = startup_timeout_s
        self.max_brokers = max_brokers  # least recently used brokers beyond this are stopped
        self._brokers: dict[tuple[int, int, int, int], KafkaBroker] = {}
        self.started = 0

    def broker_for(self, config: CoordinatorConfig) -> KafkaBroker:
        key = broker_config_key(config)
        broker = self._brokers.pop(key, None)
        if broker is None or not broker.running:
            if broker is not None:
                broker.stop()
            while len(self._brokers) >= self.max_brokers:
                oldest = next(iter(self._brokers))
                self._brokers.pop(oldest).stop()
            broker = KafkaBroker(self.version, config, startup_timeout_s=self.startup_timeout_s,
                                 periodic_cleanup=False)  # compared step by step with the model
            broker.start()
            self.started += 1
        self._brokers[key] = broker  # most recently used last
        return broker

    def close(self) -> None:
        brokers, self._brokers = list(self._brokers.values()), {}
        for b in brokers:
            b.stop()


class KafkaTargetFactory(TargetFactory):
    """TargetFactory over a KafkaBrokerPool: close() closes the last target and stops the brokers."""

    def __init__(self, pool: KafkaBrokerPool, time_scale: float, options: dict[str, Any]) -> None:
        self.pool = pool

        def make(config: CoordinatorConfig) -> KafkaTarget:
            reason = kafka_unsupported_config(config)
            if reason is not None:
                raise NotImplementedError(reason)
            broker = pool.broker_for(config)
            return KafkaTarget(broker.host, broker.port, config, time_scale, **options)

        super().__init__(make)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.pool.close()


def kafka_broker_target_factory(version: str, **options: Any) -> TargetFactory:
    """A wire.TargetFactory whose targets talk to a real Kafka `version` ("3.9", "4" or exact).

    One broker per distinct broker config (min/max session timeout, max size, initial delay),
    shared by every scenario with that config (each target has fresh group ids); `close()` stops
    them all (also at exit). options: KafkaTarget keyword arguments (time_scale included), plus
    `startup_timeout_s` and `max_brokers` for the pool. A config Kafka cannot honour raises
    NotImplementedError (the runner reports SKIP).
    """
    pool = KafkaBrokerPool(version, startup_timeout_s=float(options.pop("startup_timeout_s", 120.0)),
                           max_brokers=int(options.pop("max_brokers", 2)))
    time_scale = float(options.pop("time_scale", 1.0))
    options.setdefault("immediate_wait_s", 0.25)  # Kafka answers in milliseconds when it answers
    return KafkaTargetFactory(pool, time_scale, options)

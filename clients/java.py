"""The Java member program: where scripts/build_java_client.sh put it, and the classpath it runs with.

One build (against kafka-clients 3.9.2, APIs 3.9 and 4.x share) runs with either version's jars
from `.kafka-jars/VERSION/` (scripts/fetch_kafka.sh): kafka-clients, its compression libraries and
slf4j-api with slf4j-simple at WARN: kafka-clients' warnings and errors go to stderr, one line
each (`LOG_LINE`), and the driver turns them into `client_log` events (clients/group.py); the
member's own events are on stdout.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Final, Optional

ROOT: Final = Path(__file__).resolve().parent.parent
BUILD: Final = ROOT / "build" / "java-client"
MAIN_CLASS: Final = "GroupspecMember"
DEFAULT_VERSION: Final = "3.9.2"
_JARS: Final = ("kafka-clients-", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-", "slf4j-simple-")
# slf4j-simple at WARN on stderr, one line a message: "[thread] LEVEL logger - message"
_LOGGING: Final = ("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.showThreadName=true",
                   "-Dorg.slf4j.simpleLogger.levelInBrackets=false", "-Dorg.slf4j.simpleLogger.showDateTime=false")
LOG_LINE: Final = re.compile(r"^\[(?P<thread>[^\]]*)\] (?P<level>WARN|ERROR) (?P<logger>\S+) - (?P<message>.*)$")


def unavailable(version: str = DEFAULT_VERSION) -> Optional[str]:
    """Why the Java member cannot run with kafka-clients `version`, or None."""
    if shutil.which("java") is None:
        return "java is not on PATH"
    if not (BUILD / f"{MAIN_CLASS}.class").is_file():
        return f"{BUILD}/{MAIN_CLASS}.class is missing: run scripts/build_java_client.sh"
    if not (ROOT / ".kafka-jars" / version / f"kafka-clients-{version}.jar").is_file():
        return f".kafka-jars/{version}/kafka-clients-{version}.jar is missing: run scripts/fetch_kafka.sh {version}"
    return None


def command(version: str = DEFAULT_VERSION) -> list[str]:
    """`java -cp ... GroupspecMember` (member arguments follow)."""
    jars = sorted(str(j) for j in (ROOT / ".kafka-jars" / version).glob("*.jar") if j.name.startswith(_JARS))
    classpath = ":".join([str(BUILD), *jars])
    return ["java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *_LOGGING, "-cp", classpath,
            MAIN_CLASS]

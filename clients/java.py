"""The Java member program: where scripts/build_java_client.sh put it, and the classpath it runs with.

One build (against kafka-clients 3.9.2, APIs 3.9 and 4.x share) runs with either version's jars
from `.kafka-jars/VERSION/` (scripts/fetch_kafka.sh): kafka-clients, its compression libraries and
slf4j-api (no slf4j binding: the client's own logging stays silent; events are on stdout).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Final, Optional

ROOT: Final = Path(__file__).resolve().parent.parent
BUILD: Final = ROOT / "build" / "java-client"
MAIN_CLASS: Final = "GroupspecMember"
DEFAULT_VERSION: Final = "3.9.2"
_JARS: Final = ("kafka-clients-", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-")


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
    return ["java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath, MAIN_CLASS]

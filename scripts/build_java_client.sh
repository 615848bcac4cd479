#!/usr/bin/env bash
# Compiles the Java member program (clients/java/GroupspecMember.java) against kafka-clients 3.9.2
# into build/java-client/ (clients/java.py runs it with the jars of .kafka-jars/VERSION). It uses
# only APIs kafka-clients 3.9 and 4.x share, so one build serves both. Idempotent; needs javac 11+
# and the jars scripts/fetch_kafka.sh fetched; without them it says so and the Java client is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
src=clients/java/GroupspecMember.java
out=build/java-client
jar=$(ls .kafka-jars/3.9.2/kafka-clients-3.9.2.jar 2>/dev/null || true)
if ! command -v javac >/dev/null || [ -z "$jar" ]; then
  echo "build_java_client: javac or .kafka-jars/3.9.2/kafka-clients-3.9.2.jar missing; the java client is unavailable" >&2
  exit 0
fi
if [ -f "$out/GroupspecMember.class" ] && [ "$out/GroupspecMember.class" -nt "$src" ]; then
  exit 0
fi
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
javac --release 11 -nowarn -d "$out.tmp" -cp "$jar" "$src"
rm -rf "$out"
mv "$out.tmp" "$out"

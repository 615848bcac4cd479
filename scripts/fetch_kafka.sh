#!/usr/bin/env bash
# Fetches Apache Kafka's broker jars (kafka_2.13 and its runtime dependencies) from Maven Central
# into .kafka-jars/VERSION/ for the kafka-* targets (wire/kafka_broker.py). Idempotent.
# Usage: scripts/fetch_kafka.sh VERSION...   (scripts/setup.sh fetches the versions it needs)
set -euo pipefail
cd "$(dirname "$0")/.."
for version in "$@"; do
  dir=".kafka-jars/$version"
  if [ -f "$dir/kafka_2.13-$version.jar" ] && [ -f "$dir/.complete" ]; then
    continue
  fi
  if ! command -v mvn >/dev/null || ! command -v java >/dev/null; then
    echo "fetch_kafka: mvn and java are needed to fetch Kafka $version; kafka-* targets unavailable" >&2
    exit 0
  fi
  rm -rf "$dir.tmp"
  mvn -q -B -f scripts/kafka/pom.xml -Dkafka.version="$version" -Dkafka.jars="$PWD/$dir.tmp" \
    dependency:copy-dependencies
  touch "$dir.tmp/.complete"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
done

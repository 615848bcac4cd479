#!/usr/bin/env bash
# Creates .venv and installs groupspec with every extra (tests, the Tansu broker, Spark).
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian packages: graphviz (the site's state diagram), chromium and its driver (the browser test).
# Installed when missing and we are root (CI); otherwise the tests that need them say so and skip.
missing=""
command -v dot >/dev/null || missing="$missing graphviz"
command -v chromium >/dev/null || missing="$missing chromium"
command -v chromedriver >/dev/null || missing="$missing chromium-driver"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get install -y -q $missing >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q $missing >/dev/null; }
  else
    echo "setup: not installing$missing (needs root and apt-get); the tests that need them will skip" >&2
  fi
fi
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[all]"
# Apache Kafka's jars for the kafka-3.9 / kafka-4 targets (wire/kafka_broker.py), from Maven Central.
bash scripts/fetch_kafka.sh 3.9.2 4.4.0
bash scripts/build_java_client.sh  # the Java member program of clients/ (kafka-clients), into build/java-client
# The native explorer (engine/, Rust via PyO3 and maturin; cargo fetches its crates from crates.io).
export PATH="$HOME/.cargo/bin:$PATH"
.venv/bin/python -m pip install --quiet ./engine

#!/usr/bin/env bash
# Creates .venv and installs groupspec with every extra (tests, the Tansu broker, Spark).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[all]"
# Apache Kafka's jars for the kafka-3.9 / kafka-4 targets (wire/kafka_broker.py), from Maven Central.
bash scripts/fetch_kafka.sh 3.9.2 4.4.0
# The native explorer (engine/, Rust via PyO3 and maturin; cargo fetches its crates from crates.io).
export PATH="$HOME/.cargo/bin:$PATH"
.venv/bin/python -m pip install --quiet ./engine

#!/usr/bin/env bash
# Creates .venv and installs groupspec with every extra (tests, the Tansu broker, Spark).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[all]"
# The native explorer (engine/, Rust via PyO3 and maturin; cargo fetches its crates from crates.io).
export PATH="$HOME/.cargo/bin:$PATH"
.venv/bin/python -m pip install --quiet ./engine

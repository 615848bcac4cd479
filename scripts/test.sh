#!/usr/bin/env bash
# The whole test suite: layering contracts, mypy --strict, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/lint-imports
.venv/bin/mypy
for dir in tests/*/; do
  if ls "$dir"*.py >/dev/null 2>&1; then
    MYPYPATH="$dir" .venv/bin/mypy --strict "$dir"
  fi
done
# The native engine's own checks (no unsafe, clippy clean, unit tests).
(export PATH="$HOME/.cargo/bin:$PATH"; cd engine && cargo clippy --quiet --release -- -D warnings \
  && cargo clippy --quiet --release --features python -- -D warnings && cargo test --quiet --release)
set +e
.venv/bin/pytest --durations=15 "$@"  # the 15 slowest tests, to see where the time goes
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit "$status"

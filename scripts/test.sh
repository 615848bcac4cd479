#!/usr/bin/env bash
# The whole test suite: layering contracts, mypy --strict, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/lint-imports
.venv/bin/mypy
set +e
.venv/bin/pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit "$status"

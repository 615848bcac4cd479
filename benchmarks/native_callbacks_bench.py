"""The native engine's slow path (check/callbacks.py): states per second of tables that send
atoms, effects, reply forms or invariants through Python, beside the same table fully native and
the Python explorer. Not a test; results go to native_callbacks_results.md.

    .venv/bin/python benchmarks/native_callbacks_bench.py

Each row is one exploration in this process, at the bounds of the default plan's first run
(3 closed-mode consumers, generation <= 1, timeouts and a stalling client), so every table
explores the same kind of world; states/s is states / wall seconds of the exploration.
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "engine"))

from check.explore import Report, explore  # noqa: E402
from check.historical import KAFKA_8220, KAFKA_8500  # noqa: E402
from check.native import LAST_RUN, engine_header, explore_native  # noqa: E402
from check.plan import PYTHON_PLAN  # noqa: E402
from model.dsl import ATOMS, EFFECTS, REPLY_FORMS, Table  # noqa: E402
from model.invariants import INVARIANTS  # noqa: E402
from model.table import CLASSIC_TABLE, URGENT  # noqa: E402

LABEL, BOUNDS = PYTHON_PLAN[0]


def timed(what: str, table: Table, run: Callable[[], Report], header: str) -> None:
    start = time.perf_counter()
    r = run()
    secs = time.perf_counter() - start
    calls = sum(LAST_RUN[0].through_python.values()) if LAST_RUN and "native" in header else 0
    print(f"| {what} | {header} | {r.states:,} | {secs:.2f} | {r.states / secs:,.0f} | "
          f"{calls:,} | {len(r.violations)} |", flush=True)
    LAST_RUN.clear()


def main() -> None:
    import user_table
    for name, inv in user_table.INVARIANTS.items():
        INVARIANTS[name] = inv
    everything = list(ATOMS) + list(EFFECTS) + list(REPLY_FORMS) + list(INVARIANTS)
    print(f"{platform.machine()}, Python {platform.python_version()}; bounds: {LABEL} "
          f"({BOUNDS.describe()})\n")
    print("| table | engine | states | seconds | states/s | calls through Python | violations |")
    print("|---|---|---:|---:|---:|---:|---:|")
    names = [n for n in INVARIANTS if n not in user_table.INVARIANTS]
    model_only = frozenset(names)
    for what, table in (("Kafka 3.9 (classic)", CLASSIC_TABLE), ("KAFKA-8500", KAFKA_8500),
                        ("KAFKA-8220", KAFKA_8220)):
        timed(what, table, lambda t=table: explore_native(t, URGENT, BOUNDS, progress=None,
                                                         invariants=model_only),
              engine_header("native", table, URGENT, model_only))
    timed("user table (FIXED)", user_table.FIXED,
          lambda: explore_native(user_table.FIXED, URGENT, BOUNDS, progress=None),
          engine_header("native", user_table.FIXED, URGENT))
    timed("Kafka 3.9, every name forced through Python", CLASSIC_TABLE,
          lambda: explore_native(CLASSIC_TABLE, URGENT, BOUNDS, progress=None, force=everything),
          f"native engine, all {len(everything)} names through Python")
    for what, table in (("Kafka 3.9 (classic)", CLASSIC_TABLE), ("KAFKA-8220", KAFKA_8220)):
        timed(what, table, lambda t=table: explore(t, URGENT, BOUNDS, progress=None,
                                                  invariants=model_only), "Python explorer")


if __name__ == "__main__":
    main()

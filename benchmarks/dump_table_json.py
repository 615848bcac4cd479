"""The classic table as the native engine takes it (check.native.table_data), as JSON on stdout,
with the invariants a default native run checks: the input of engine/examples/explore_bench.rs,
which times the explorer without Python (for perf and quick iteration).

    .venv/bin/python benchmarks/dump_table_json.py > /tmp/table.json
    cd engine && cargo run --release --example explore_bench -- /tmp/table.json 3 2 session,rebalance,stall
"""

from __future__ import annotations

import json

from check.native import implemented, table_data
from model.dsl import GROUP_FIELDS
from model.invariants import INVARIANTS
from model.table import CLASSIC_TABLE, URGENT


def main() -> None:
    rows, urgent, fields = table_data(CLASSIC_TABLE, URGENT)
    native = implemented()
    print(json.dumps({"rows": rows, "urgent": urgent, "fields": fields,
                      "group_fields": sorted(GROUP_FIELDS),
                      "invariants": [[INVARIANTS[n].kind == "transition", n] for n in INVARIANTS
                                     if n in native["invariants"]]}))


if __name__ == "__main__":
    main()

"""The native trace replay (engine/src/concrete*.rs): the table's concrete mode in Rust, built from
the table as data exactly as the native explorer is (check/native.py `table_data`).

The engine judges one group's staged trace rows at a time and says only "this group replays clean"
(with the rows it fired, for coverage); every other group goes back to the Python replay
(traces/replay.py), which writes its verdict. So Python stays the reference: a verdict other than
`ok` is always Python's own, and the agreement test (tests/traces/test_traces_native.py) checks
that every group the engine calls clean is one Python calls clean too, with the same coverage.

A table the engine cannot take (a name it lacks or that Python redefined: check/callbacks.py's
slow path) is refused here with the reason (`NativeCannotRun`); the replay then runs in Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from check.native import NativeCannotRun, NativeEngineUnavailable, engine_module, slow_path, table_data
from model.coordinator_api import CoordinatorConfig
from model.dsl import GROUP_FIELDS, Guard, Table
from model.table import CLASSIC_TABLE, URGENT

if TYPE_CHECKING:
    from groupspec_engine import Replayer


def make_replayer(table: Table = CLASSIC_TABLE,
                  urgent: Sequence[tuple[str, Guard]] = URGENT) -> "Replayer":
    """A native replayer of `table` (NativeEngineUnavailable: not built; NativeCannotRun: the
    table names something the engine lacks)."""
    module: Any = engine_module()
    urgent = tuple(urgent)
    lacking = {kind: names for kind, names in slow_path(table, urgent).items()
               if names and kind != "invariants"}
    if lacking:
        said = "; ".join(f"{kind} {', '.join(names)}" for kind, names in sorted(lacking.items()))
        raise NativeCannotRun(f"the native replay lacks {said}")
    rows, urg, fields = table_data(table, urgent)
    d = CoordinatorConfig()
    defaults = (d.group_min_session_timeout_ms, d.group_max_session_timeout_ms, d.group_max_size,
                d.group_initial_rebalance_delay_ms, d.new_member_join_timeout_ms)
    try:
        replayer: Replayer = module.Replayer(rows, urg, fields, list(GROUP_FIELDS), defaults)
    except ValueError as e:
        raise NativeCannotRun(f"the native replay cannot take this table: {e}") from None
    return replayer


ENGINES = ("native", "python")


def replayer_for(engine: str, table: Table = CLASSIC_TABLE,
                 urgent: Sequence[tuple[str, Guard]] = URGENT) -> tuple[Optional["Replayer"], Optional[str]]:
    """The replayer `--engine` asks for, of `table` (replay --table): (None, None) for python; for
    native the replayer, or (None, why) when it cannot be had, the replay then running in Python."""
    if engine not in ENGINES:
        raise ValueError(f"unknown replay engine {engine!r} (expected one of {', '.join(ENGINES)})")
    if engine == "python":
        return None, None
    try:
        return make_replayer(table, urgent), None
    except (NativeEngineUnavailable, NativeCannotRun) as e:
        return None, str(e)

"""Type stubs of the native explorer (engine/src/python.rs). Plain data in, plain data out."""

from typing import Any, Callable, Optional

RowData = tuple[str, list[str], str, list[tuple[str, bool]], str, str, Optional[str], list[str],
                bool]

class Engine:
    """The explorer for one table and one set of bounds (check/native.py make_engine)."""

    def __init__(self, rows: list[RowData], urgent: list[tuple[str, list[tuple[str, bool]]]],
                 effect_fields: list[tuple[str, list[str]]], group_fields: list[str],
                 bounds: dict[str, object],
                 slow_path: Optional[tuple[list[str], list[str], list[str]]] = None,
                 callbacks: Optional[object] = None) -> None: ...

    def explore(self, symmetry: bool, invariants: list[str], liveness: bool,
                max_states: Optional[int], first_violation_only: bool,
                stop_at_first_violation: bool, progress: bool, path_properties: list[str],
                skip: list[str], settle: Optional[list[str]] = None,
                py_invariants: list[tuple[bool, str]] = ..., memo: bool = True,
                threads: int = 1, cache_bytes: Optional[int] = None) -> dict[str, Any]: ...

    def initial(self) -> bytes: ...

    def world_repr(self, world: bytes) -> str: ...

    def successors(self, world: bytes) -> list[tuple[bytes, bool, Optional[list[str]],
                                                     Optional[str], list[str], str, list[str]]]: ...


def implemented() -> dict[str, list[str]]: ...

def lockstep(a: Engine, b: Engine, one_sided: bool, max_nodes: Optional[int],
             on_level: Callable[[list[Any], bool], bool], progress: bool) -> dict[str, Any]: ...

class Replayer:
    """The native trace replay (engine/src/python_concrete.rs): the table's concrete mode for one
    group at a time, over Arrow record batches of staged trace rows."""
    def __init__(self, rows: list[RowData], urgent: list[tuple[str, list[tuple[str, bool]]]],
                 effect_fields: list[tuple[str, list[str]]], group_fields: list[str],
                 defaults: tuple[int, int, int, int, int]) -> None: ...
    def judge(self, batch: Any, ranges: list[tuple[int, int]]) -> list[bool]: ...
    def take_coverage(self) -> list[tuple[str, int]]: ...
    def handed_back(self) -> list[tuple[str, int]]: ...
    def seconds(self) -> float: ...

class JsonlStager:
    """Stage 1 over JSON Lines (engine/src/python_jsonl.rs): lines -> an Arrow batch of the lines it
    parsed (trace columns, then __line, __start, __end) and the (line, start, end) of the others."""
    def __init__(self, columns: list[tuple[str, str]]) -> None: ...
    def stage(self, data: bytes, path: str, first_line: int) -> tuple[Any, list[tuple[int, int, int]]]: ...
    def stage_batch(self, batch: Any) -> tuple[Any, list[tuple[int, int, int]]]: ...

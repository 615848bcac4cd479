"""Which files an input path names, their format, and the whole-input schema check (exit 2)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from traces.pipeline import LOG, TRACE
from traces.validate import SchemaError, check_columns, check_first_json_line

JSONL_SUFFIXES: Final = (".jsonl", ".ndjson", ".json")
PARQUET_SUFFIXES: Final = (".parquet",)


@dataclass(frozen=True, slots=True)
class Inputs:
    fmt: str  # TRACE or LOG
    jsonl: tuple[str, ...] = ()
    parquet: tuple[str, ...] = ()
    logs: tuple[str, ...] = ()


def _kind(path: Path) -> str:
    name = path.name
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(".log") or ".log." in name or name.startswith("server.log"):
        return "log"
    raise SchemaError(
        f"{path}: unknown input type (expected *.jsonl, *.parquet, or a broker *.log / server.log*)"
    )


def classify(paths: list[str]) -> Inputs:
    found: dict[str, list[str]] = {"jsonl": [], "parquet": [], "log": []}
    for text in paths:
        path = Path(text)
        if not path.exists():
            raise SchemaError(f"{path}: no such file or directory")
        # In a directory: data files only (not manifest.json / summary.json / _SUCCESS / .crc).
        files = (
            sorted(
                p for p in path.rglob("*")
                if p.is_file() and not p.name.startswith(("_", ".")) and not p.name.endswith((".json", ".crc"))
            )
            if path.is_dir()
            else [path]
        )
        if not files:
            raise SchemaError(f"{path}: directory holds no input files")
        for f in files:
            found[_kind(f)].append(str(f.resolve()))
    if found["log"] and (found["jsonl"] or found["parquet"]):
        raise SchemaError("cannot mix broker logs and traces in one run (run them separately)")
    fmt = LOG if found["log"] else TRACE
    inputs = Inputs(fmt, tuple(found["jsonl"]), tuple(found["parquet"]), tuple(found["log"]))
    check_schema(inputs)
    return inputs


_ARROW_TYPES: Final = {"string": "string", "large_string": "string", "int64": "int64", "int32": "int32"}


def check_schema(inputs: Inputs) -> None:
    """Stop at once on an input that is not a trace at all (rows are validated one by one later)."""
    for f in inputs.jsonl:
        with open(f, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    check_first_json_line(f, line)
                    break
    if inputs.parquet:
        import pyarrow.parquet as pq

        for f in inputs.parquet:
            try:
                schema = pq.read_schema(f)
            except Exception as e:  # pyarrow raises several types for a non-Parquet file
                raise SchemaError(f"{f}: not a Parquet file ({e})") from None
            types = {field.name: _ARROW_TYPES.get(str(field.type), str(field.type)) for field in schema}
            check_columns(f, schema.names, types)

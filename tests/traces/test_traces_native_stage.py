"""The engine's JSON Lines stage 1 (engine/src/jsonl_stage.rs, traces.batch `stage_parsed`) stages
exactly the rows the pyarrow stage 1 does (which test_traces_batch.py holds to the row-at-a-time
validator): the same accepted rows, column for column, and the same rejects with the same reasons
and origins, whatever the chunking, line endings and bytes of the file. The lines it parses are
not run through Python (not vacuous), and a staged row that differs is caught (negative control)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from test_traces_batch import LINES
from traces_helpers import model_trace, row_json
from traces import batch, local
from traces.job import stage1_jsonl, stage1_jsonl_native
from traces.pipeline import validate_json_line

pytestmark = pytest.mark.skipif(batch.native_stager() is None, reason="the native engine is not built")


def _stager() -> Any:
    stager = batch.native_stager()
    assert stager is not None
    return stager

EXTRA = [
    b'{"group_id":"g","seq":0,"ts_ms":0,"source":"t","kind":"advance","member_id":"\xff"}',  # not UTF-8
    b'{"group_id":"g","seq":1,"ts_ms":0,"source":"t","kind":"advance","member_id":"\\udcff"}',  # lone surrogate
    b'{"group_id":"g","seq":2,"ts_ms":0,"source":"t","kind":"advance","origin":"mine"}',  # own origin
    b'{"group_id":"g","seq":3,"ts_ms":0,"source":"t","kind":"advance","api_version":2147483648}',
    b'{"group_id":"g","seq":4,"ts_ms":0,"source":"t","kind":"advance"}\r',  # CRLF
    b'{"group_id":"g","seq":5,"ts_ms":0,"source":"t","kind":"advance"}\r\r',  # one CR is stripped, not two
    b'\r',
]


def _file(tmp_path: Path, trailing_newline: bool) -> Path:
    lines = [row_json(e).encode() for e in model_trace(steps=40)]
    lines += [line.encode("utf-8", "surrogatepass") for line in LINES] + EXTRA
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if trailing_newline else b""))
    return path


def _by_origin(tables: list[Any]) -> dict[str, dict[str, Any]]:
    rows = pa.concat_tables(tables).to_pylist()
    out = {row["origin"]: row for row in rows}
    assert len(out) == len(rows)  # one staged row per line
    return out


@pytest.mark.parametrize("chunk", [local.NATIVE_CHUNK_BYTES, 700, 50])
@pytest.mark.parametrize("trailing_newline", [True, False])
def test_the_native_stage_stages_what_pyarrow_stages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     chunk: int, trailing_newline: bool) -> None:
    path = str(_file(tmp_path, trailing_newline))
    expected = _by_origin(list(local._jsonl_batches(path, local.ReadCount())))
    monkeypatch.setattr(local, "NATIVE_CHUNK_BYTES", chunk)
    assert _by_origin(list(local._jsonl_native_batches(path, _stager(), local.ReadCount()))) == expected
    assert sum(r["reject_reason"] is not None for r in expected.values()) > 30


def test_the_parsed_lines_skip_python(tmp_path: Path) -> None:
    lines = [row_json(e) for e in model_trace(steps=60)]
    data = ("\n".join(lines) + "\n").encode()
    parsed, failed = _stager().stage(data, "f", 1)
    checked: list[int] = []

    def check(line: int, start: int, end: int) -> dict[str, Any]:
        checked.append(line)
        return validate_json_line(data[start:end].decode(), f"f:{line}")

    table = batch.stage_parsed(parsed, failed, check)
    assert failed == [] and table.num_rows == len(lines) and table["reject_reason"].null_count == len(lines)
    assert checked == []  # the config row too: its payload is checked (cached) without the row


def test_the_spark_stage_stages_what_pyarrow_stages(tmp_path: Path) -> None:
    raw = _file(tmp_path, True).read_bytes().split(b"\n")[:-1]
    text = pa.record_batch([pa.array(raw, pa.binary()), pa.array(["file:/t.jsonl"] * len(raw)),
                            pa.array(range(len(raw)), pa.int64())], names=["value", "file", "pos"])
    expected = _by_origin([pa.Table.from_batches(list(stage1_jsonl(iter([text]))))])
    assert _by_origin([pa.Table.from_batches(list(stage1_jsonl_native(iter([text]))))]) == expected


def test_a_row_staged_differently_is_caught(tmp_path: Path) -> None:
    # negative control: the comparison above sees one changed cell of one accepted row
    path = str(_file(tmp_path, True))
    expected = _by_origin(list(local._jsonl_batches(path, local.ReadCount())))
    tables = list(local._jsonl_native_batches(path, _stager(), local.ReadCount()))
    first = tables[0].to_pylist()
    first[3]["ts_ms"] += 1
    tables[0] = pa.Table.from_pylist(first, schema=tables[0].schema)
    assert _by_origin(tables) != expected


def test_config_rows_get_the_validators_verdicts_without_python(tmp_path: Path) -> None:
    # config rows skip Python when their payload loads (checked once per payload text), in Parquet
    # records as in JSON Lines; a payload loads_config refuses is rejected with the validator's reason
    import pyarrow.parquet as pq

    from traces.validate import RowError, validate_row

    base = {"group_id": "g", "seq": 0, "ts_ms": 0, "source": "t", "kind": "config"}
    payloads = ['{"group_max_size": 3}', '{"group_max_size": "3"}', '{"nope": 1}', "not json", '{"group_max_size": 3}',
                "[]", '{"append_result": "NOPE"}']
    rows: list[dict[str, Any]] = [base | {"seq": i, "payload": p} for i, p in enumerate(payloads)]
    rows.append(base | {"seq": 9})  # no payload

    def reason(row: dict[str, Any]) -> Any:
        try:
            validate_row(row)
        except RowError as e:
            return str(e)
        return None

    want = {row["seq"]: reason(row) for row in rows}
    assert sum(v is not None for v in want.values()) == 6
    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=batch.parse_schema()), path)
    staged = pa.concat_tables(list(local._parquet_batches(str(path), local.ReadCount()))).to_pylist()
    assert {r["seq"]: r["reject_reason"] for r in staged} == want
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows))
    staged = pa.concat_tables(list(local._jsonl_native_batches(str(jsonl), _stager(), local.ReadCount()))).to_pylist()
    assert {r["seq"]: r["reject_reason"] for r in staged} == want

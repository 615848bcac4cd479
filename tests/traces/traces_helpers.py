"""Shared helpers for the trace tests: record small traces and write them as JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path

from traces.generate import GeneratorOptions, model_factory, run_group
from traces.schema import TraceEvent

FIXTURES = Path(__file__).parent / "fixtures"


def model_trace(group_id: str = "g1", seed: str = "1", steps: int = 40) -> list[TraceEvent]:
    return run_group(group_id, seed, GeneratorOptions(groups=1, steps=steps), model_factory, frozenset(), "model")


def row_json(event: TraceEvent) -> str:
    return json.dumps({k: v for k, v in event.to_row().items() if v is not None}, separators=(",", ":"))


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path

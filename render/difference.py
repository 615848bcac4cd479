"""A `groupspec diff` difference as traces: its verified scenario run on both tables.

A difference is verified by a scenario that passes on one table and fails on the other
(conformance/diff.py). Drawn on both, a reader sees the same inputs and where the answers part:
the trace on the table it fails on names the difference at the step where it shows.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Mapping

from model.dsl import Table

from render.trace import Trace, Violation, traces_of_scenario_text


def traces_of_difference(scenario: Mapping[str, Any], k: int, tables: Mapping[str, Table], *,
                         passes_on: str, fails_on: str) -> list[Trace]:
    """Difference `k`'s scenario document drawn on `passes_on` (clean) and on `fails_on` (with
    the expectation that fails there named as the difference). `tables` maps names to tables."""
    text = json.dumps(scenario)
    source = f"groupspec diff, difference {k}"
    out: list[Trace] = []
    for name in (passes_on, fails_on):
        for t in traces_of_scenario_text(text, source, table=tables[name], kind="difference"):
            title = f"Difference {k}, run on {name}"
            t = replace(t, notes=(f"Scenario: {t.title}.", *t.notes))
            if name == fails_on:
                if t.violation is None:
                    raise ValueError(f"difference {k}: its scenario does not fail on {fails_on}")
                v = Violation(f"{fails_on} differs from {passes_on}",
                              f"The scenario expects what {passes_on} answers; {fails_on} cannot "
                              "answer it so.", t.violation.message, t.violation.step)
                out.append(replace(t, title=title, violation=v, table=name))
            else:
                if t.violation is not None:
                    raise ValueError(f"difference {k}: its scenario fails on {passes_on} too: "
                                     f"{t.violation.message}")
                out.append(replace(t, title=title, table=name))
    return out


__all__ = ["traces_of_difference"]

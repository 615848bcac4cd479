"""Profile kafka-4: a few row overrides of CLASSIC_TABLE, selected with --profile kafka-4."""

from __future__ import annotations

import contextlib
import io
import os

from check.profile_kafka4 import KAFKA4_OVERRIDES, kafka4_table
from model.table import CLASSIC_TABLE

from groupspec.cli import main

PROFILE_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "profiles", "kafka4-profile.json")


def test_profile_differs_from_the_classic_table_in_the_overridden_rows_only() -> None:
    t = kafka4_table()
    assert [r.id for r in t.rows] == [r.id for r in CLASSIC_TABLE.rows]
    changed = {a.id for a, b in zip(t.rows, CLASSIC_TABLE.rows) if a != b}
    assert changed == set(KAFKA4_OVERRIDES) and changed


def scenario_run(*argv: str) -> tuple[int, str]:
    """`groupspec scenario run ARGV`: the exit code and stderr."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["scenario", "run", *argv])
    return code, err.getvalue()


def test_profile_scenarios_pass_with_the_profile_and_fail_without() -> None:
    assert scenario_run(PROFILE_FILE, "--target", "model", "--profile", "kafka-4")[0] == 0
    assert scenario_run(PROFILE_FILE, "--target", "model")[0] == 1
    assert scenario_run(PROFILE_FILE, "--target", "model", "--profile", "kafka-3.9")[0] == 1


def test_profile_needs_the_model_target() -> None:
    code, err = scenario_run(PROFILE_FILE, "--target", "reference", "--profile", "kafka-4")
    assert code == 2
    assert "--profile kafka-4 needs --target model" in err

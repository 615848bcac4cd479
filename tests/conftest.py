"""The `slow` marker, set in one place: `scripts/test.sh --fast` runs `-m "not slow"`; CI runs all.

A test is slow when it carries one of SLOW_MARKERS (it needs a real broker, Kafka's JVM or Spark) or
when its node id is matched by an entry of SLOW. An entry is a test file, a test function (all its
parameters) or one parametrized case, written as pytest prints node ids. Each says why, with the
call time measured on 2026-11-26 on the 2-core dev machine while five other sessions ran tests
(shared, so the figures are inflated; they rank, they do not promise). The rule of thumb: a test,
or a parametrized function in all, over about 5 s, and the four Z3 modules whose every test solves
(induction, BMC, agreement, state agreement). Tests of 2-4 s stay fast on purpose: they are the
fast loop's one run of a fuzz, a proof, a BMC, a diff. tests/suite/test_slow_marks.py checks that
every entry still names an existing test.
"""

from __future__ import annotations

import os
import sys
from typing import Final, Optional

import pytest

# pytest (prepend import mode) put this folder on sys.path to import this file; take it off again.
# Left there, tests/wire, tests/check, ... would be imported as namespace packages in place of the
# product packages of the same names (the product is installed editable, by an import finder that
# is asked only after sys.path). The test folders' own helpers need only their own folder.
_HERE = os.path.realpath(os.path.dirname(__file__))
sys.path[:] = [p for p in sys.path if not p or os.path.realpath(p) != _HERE]

SLOW_MARKERS: Final[dict[str, str]] = {
    "kafka": "starts Apache Kafka (a JVM) per broker config",
    "broker": "starts the Tansu broker",
    "spark": "starts a local Spark session (about 10 s before the first test)",
}

SLOW: Final[dict[str, str]] = {
    # check/: the networkx explorer on large bounds
    "tests/check/test_explore.py::test_members_with_different_protocol_lists_are_different_states":
        "explores 3 members with protocol lists (66 s)",
    "tests/check/test_explore.py::test_default_plan_covers_every_row_or_says_why_not":
        "the whole default plan in Python (23 s)",
    "tests/check/test_explore.py::test_each_mutant_table_is_caught_with_a_counterexample[no-delayed-sync]":
        "this mutant needs the stall bounds (18 s); the other mutants take 0.1-0.2 s and stay fast",
    # clients/: real client libraries against serve, one 3-member group per client (JVMs, librdkafka)
    "tests/clients/test_clients_serve.py":
        "kafka-python, librdkafka and the Java consumer (3.9.2, 4.4.0) each run a 3-member group with a "
        "leave and a join against serve (9-13 s each, 45 s in all)",
    "tests/clients/test_clients_cli.py::test_a_short_churn_run_against_serve_keeps_the_promise":
        "18 s of churn of a mixed static/dynamic group against serve through observe, then the drain; "
        "kafka-python and librdkafka (27 s each under load)",
    "tests/clients/test_clients_cli.py::test_the_same_run_against_a_seeded_bug_breaks_the_promise":
        "the same run against serve --bug no-generation-bump, through observe (27 s under load)",
    # observe/: a real kafka-python group through `groupspec observe` in front of `groupspec serve`
    "tests/observe/test_observe_clients.py":
        "a 3-member kafka-python group producing and consuming through observe in front of serve, and "
        "the same against serve --bug no-generation-bump (11 s each)",
    # (tests/observe/test_observe_kafka4.py is marked kafka: a Kafka 4 broker and two Java 4.4.0 members
    # through observe, 27 s in all)
    # diff/: lockstep search for differences between tables, then scenario verification
    "tests/diff/test_diff.py::test_every_mutant_differs_with_a_verified_scenario":
        "15 mutants, 0.5-28 s each (55 s)",
    "tests/diff/test_diff.py::test_the_table_does_not_differ_from_itself_or_a_renaming":
        "3 full searches that find nothing (9 s)",
    "tests/diff/test_diff_historical.py": "historical bugs diffed at their bounds (20 s in all)",
    "tests/check/test_refinement_plan.py::test_the_plan_kills_every_mutant_with_a_scenario_kafka_passes":
        "the refinement plan per mutant, stopping at its first difference (0.1-40 s each)",
    "tests/check/test_refinement_plan.py::test_the_plan_kills_every_historical_bug_with_a_scenario_kafka_passes":
        "the refinement plan per historical bug (benchmarks/refinement_plan_results.md)",
    "tests/check/test_refinement_plan.py::test_the_plan_kills_what_one_bound_missed":
        "issue 24's two tables, through the plan's runs up to the one that differs (3-9 s each)",
    "tests/check/test_refinement_plan.py::test_kafka_refines_itself_and_a_renaming_on_the_whole_plan":
        "the whole refinement plan twice, nothing to stop at (minutes: benchmarks/refinement_plan_results.md)",
    "tests/engine/test_callbacks.py::test_every_name_forced_through_python_explores_what_the_engine_does":
        "every model name through Python on five bounds (about 8 s)",
    "tests/diff/test_junit_first_counterexample.py::"
    "test_the_default_plan_has_a_state_budget_per_run_and_a_cut_run_never_passes":
        "runs the default plan (20 s)",
    # engine/: the native explorer against the Python one on the default plan's bounds
    "tests/engine/test_native_lockstep.py::test_native_and_python_lockstep_find_the_same_differences":
        "29 mutants and historical bugs x 2 bounds, both lockstep engines (0.1-2.3 s each, 50 s); "
        "test_agreement_on_a_sample stays fast",
    "tests/engine/test_engine_agreement.py::test_fast_first_counterexample_agrees":
        "Python explorer to a first counterexample on big bounds (71 s for 3 cases)",
    "tests/engine/test_engine_agreement.py::test_default_plan_entry_agrees":
        "each default-plan entry in both engines (25 s for 9)",
    "tests/engine/test_engine_agreement.py::test_the_whole_default_plan_covers_every_row_or_says_why_natively":
        "the whole default plan natively, with row coverage (19 s)",
    # fuzz/: whole fuzz runs against a served reference
    "tests/fuzz/test_fuzz_run.py::test_seeded_bug_is_found_shrunk_and_replayable":
        "fuzzes until a seeded bug, then shrinks (95 s)",
    "tests/fuzz/test_fuzz_run.py::test_correct_reference_has_no_findings": "a full clean fuzz run (31 s)",
    "tests/fuzz/test_probe.py::test_a_contradicting_config_stops_the_run_with_exit_2":
        "the agreeing run's sequences wait on Kafka's 6 s sessions (30 s)",
    "tests/fuzz/test_lockstep_kafka_mutant.py::test_the_timer_mutant_posing_as_kafka_is_caught_in_nine_runs_of_ten":
        "10 Kafka lockstep runs on the real clock against serve --bug timer-join-no-generation-bump (20 s)",
    "tests/fuzz/test_lockstep_kafka_mutant.py::test_the_correct_serve_posing_as_kafka_gives_no_divergence":
        "2 Kafka lockstep runs on the real clock against serve (6 s; the negative control of the above)",
    "tests/fuzz/test_lockstep_kafka_mutant.py::test_a_desynchronised_run_goes_on_judged_by_the_judge_alone":
        "a desynchronised Kafka lockstep run against serve, and one against the timer mutant (6 s)",
    "tests/fuzz/test_timing_bugs.py::test_timing_bug_is_found":
        "a 0.4-2 minute fuzz run per seeded timing bug (about 5 min for 6)",
    "tests/fuzz/test_exit_status.py::test_a_target_that_dies_mid_run_never_exits_0":
        "two 9 s fuzz runs, one against a serve stopped mid-run (26 s)",
    # hardening/: interrupts and timeouts waited for in real time
    "tests/hardening/test_defects.py::test_ctrl_c_stops_check": "waits for a check run to start (19 s)",
    "tests/hardening/test_defects.py::test_wire_peer_that_never_answers_is_incomplete":
        "waits for the wire timeout (10 s)",
    "tests/hardening/test_fuzz.py::test_damaged_frames_from_a_peer": "a peer sending junk for 10 s (10 s)",
    # lockstep/: the Hypothesis reference-vs-model machine
    "tests/lockstep/test_lockstep.py::test_reference_and_model_agree": "200 runs of 50 steps (7 s)",
    "tests/lockstep/test_lockstep.py::test_seeded_bug_is_caught":
        "up to 700 runs per seeded bug (11 s for 7); the scenario files catch every seeded bug in"
        " 0.03 s each (tests/conformance/test_conformance_targets.py)",
    # render/: a real browser and a real fuzz run
    "tests/render/test_browser_counterexample.py": "starts Debian's headless chromium (5 s)",
    "tests/render/test_findings_real.py": "a real groupspec fuzz run against serve, then its report page (95 s)",
    # proofs/: Z3
    "tests/proofs/test_proofs_induction.py": "induction and CTI replay per mutant (166 s in all)",
    "tests/proofs/test_proofs_bmc.py": "bounded model checking per mutant (59 s in all)",
    "tests/proofs/test_proofs_agreement.py": "every row witnessed or proved unreachable (82 s in all)",
    "tests/proofs/test_proofs_state_agreement.py": "explorer and solver enumerate the same states (63 s in all)",
    "tests/proofs/test_proofs_cli.py::test_mutant_exits_1": "an induction proof of a mutant (66 s)",
    "tests/proofs/test_proofs_cli.py::test_one_response_per_request_is_proved_and_its_mutant_is_not":
        "two proofs (13 s)",
    # render/: the site
    "tests/render/test_site_facts.py::test_recomputed_facts_equal_the_committed_ones":
        "the default plan natively and the induction proofs, as render --update-facts (48 s)",
    "tests/render/test_site_browser.py": "drives Debian's chromium headless through the site (chromium)",
}


def slow_reason(nodeid: str, markers: set[str]) -> Optional[str]:
    """Why the test with this node id and these marker names is slow, or None if it is not."""
    for marker in sorted(markers & set(SLOW_MARKERS)):
        return f"marked {marker}: {SLOW_MARKERS[marker]}"
    for pattern, why in SLOW.items():
        if nodeid == pattern or nodeid.startswith((pattern + "::", pattern + "[")):
            return why
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        why = slow_reason(item.nodeid, {m.name for m in item.iter_markers()})
        if why is not None:
            item.add_marker(pytest.mark.slow(reason=why))

"""The machinery that checks the spec in model/: exploration, the native bridge, the tables to compare.

Nothing here holds coordinator behaviour: every rule comes from the table in model/table.py (or a
mutant or profile of it, built from its rows).

    abstract.py        the abstract mode: a bounded world of one group and its clients
    explore.py         explicit-state exploration with networkx (the reference explorer)
    native.py          the Rust explorer in engine/ (module groupspec_engine), given the table as data
    callbacks.py       the engine's slow path: a user's atoms, effects, reply forms, invariants in Python
    plan.py            the default plan (explorations `groupspec check` runs) and the refinement plan
    mutants.py         negative controls: wrong tables every checker must catch
    historical.py      real coordinator bugs re-expressed as table mutants
    profiles.py        named tables (kafka-3.9, kafka-4) for `diff` and `--refines`
    profile_kafka4.py  Kafka 4.x's deliberate changes as row overrides
    diff.py            the lockstep search for client-visible differences between two tables, and its plan
    native_diff.py     the same lockstep search on the Rust engine, replayed into diff.py's records
    native_replay.py   the trace replay's native step (the engine's concrete mode), for traces/pipeline.py
"""

"""Z3 proofs over the transition table (model/table.py), read from the table itself.

Layout:
- symbolic.py  the symbolic group state and input (Z3 variables), Group field -> variables
- atoms.py     one encoding per atom of model/atoms.py (ATOM_ENCODINGS)
- effects.py   one encoding per effect of model/effects.py (EFFECT_ENCODINGS), frame from `modifies`
- encode.py    guards, row paths, the transition relation, the scheduler (urgent events, timers)
- invariants.py the named invariants of model/invariants.py plus named auxiliary invariants
- wellformed.py disjoint and exhaustive guards for every (state, event)
- bmc.py       bounded model checking; decode.py turns traces into model records and replays them
- induction.py unbounded proofs (inductive strengthening); reach.py row reachability
- cli.py       what `groupspec prove` runs (prove_table; groupspec/commands/ parses the arguments)
"""

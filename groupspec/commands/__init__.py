# How this package is laid out: one module per `groupspec` command, each with a one-line HELP, a
# DESCRIPTION, `add_arguments(parser)` and `run(args) -> int`; groupspec/cli.py puts them in one
# argparse tree and handles what they raise. Options several commands share are groupspec/options.py.
#   check.py            groupspec check (explorer, plan; --refines, --prove, --junit)
#   prove.py            groupspec prove (proofs/cli.py)     prove_states.py  groupspec prove states
#   diff.py             groupspec diff, and the lockstep search check --refines uses
#   scenario_run.py     groupspec scenario run (conformance/cli.py)
#   traces_generate.py  groupspec traces generate           replay.py  groupspec replay (traces/cli.py)
#   soak.py             groupspec soak (conformance/soak.py)
#   serve.py            groupspec serve (server/run.py)     fuzz.py    groupspec fuzz (fuzz/cli.py)
#   render.py           groupspec render (render/site.py: the site; docs/table.md, docs/guide/*.svg)
"""The commands of `groupspec`."""

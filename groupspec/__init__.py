"""groupspec's command line.

`groupspec.cli` parses arguments and hands each subcommand to the package that owns it:
`check` -> check.explore (and proofs), `prove` -> proofs, `scenario run` -> conformance,
`traces generate` / `replay` -> traces, `soak` -> conformance's lockstep comparison.
"""

# How this package is laid out: the command line, on top of every other package.
#   cli.py       the one argparse tree (COMMANDS) and main(): the one handler of every error
#   commands/    one module per command: add_arguments(parser) and run(args) -> int
#   options.py   options several commands share: the table, bounds and faults, --config KEY=VALUE,
#                output files and directories (checked before the run), --quiet
#   junit.py     JUnit XML for check --junit and prove --junit
# The packages below keep the work as library functions with typed parameters; nothing below
# imports groupspec (import-linter's layers).
"""groupspec's command line."""

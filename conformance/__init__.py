# How this package is laid out:
#   scenario.py  typed, frozen records of a scenario file (one record per step `op`)
#   parse.py     JSON -> records, with every format error raised as ScenarioFormatError
#   dump.py      records -> JSON, the parser's inverse: the one writer of scenario files
#   expect.py    the `expect` keys of each op: their value shapes and how each is compared
#   runner.py    runs one scenario against a fresh target; PASS / FAIL / SKIP results
#   realclock.py real-clock runs: topics, time scale, budget, the judge's interface (AnswerJudge)
#   probes.py    wire probes for check_group's generation/leader, kept only where the model says safe
#   finding.py   a FAIL printed as a ready-to-run scenario file
#   report.py    the text and JSON reports
#   targets.py   `model`, `reference`, `kafka://HOST:PORT`, `tansu` -> a target factory
#   cli.py       what `groupspec scenario run FILE... --target T` runs (run_files)
#   actions.py   the one action vocabulary (lockstep and fuzz): what a client does, resolved into requests
#   lockstep.py  reference vs model in lockstep (Hypothesis machine, id bijection, known differences)
#   soak.py      `groupspec soak --minutes M [--out DIR] [--seed S]`: the lockstep on random runs
"""The scenario runner for the `kafka-classic-group-conformance/1` format."""

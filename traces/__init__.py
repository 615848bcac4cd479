# How this package is laid out (the trace/log replay pipeline):
#   schema.py    the row schema (one row per event), shared by JSON Lines and Parquet
#   codec.py     JSON form of the request/response records (the `payload` column)
#   validate.py  row validation -> TraceEvent or a rejects reason; whole-input schema check
#   batch.py     stage 1 over Arrow batches: pyarrow JSON parse + vector checks, Python for flagged rows
#   recorder.py  producers: a Recorder that emits rows, a recording Coordinator proxy
#   generate.py  randomized workloads through a coordinator factory, optional injected bugs
#   logparse.py  broker server.log GroupCoordinator lines -> kind=log rows
#   replay.py    pure replay of one group's trace through the model (verdict + row coverage)
#   logcheck.py  pure check that some run of the table explains one group's observed log lines
#   pipeline.py  pure per-partition processing shared by the Spark job and the local runner
#   output.py    atomic output directories (temp dir, rename, _SUCCESS marker)
#   job.py       the thin Spark shell (the only module importing pyspark, inside functions)
#   cli.py       what `groupspec replay` runs (replay; groupspec/commands/ parses the arguments)
"""The trace pipeline: schema, producers, pure replay, and a thin Spark job."""

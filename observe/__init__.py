"""groupspec observe: a transparent Kafka proxy that judges a broker's group coordinator under
whatever traffic real clients send through it.

Layout (lower modules never import higher ones):

- `addresses` Metadata and FindCoordinator answers rewritten to the proxy's listeners (one per
              upstream broker), with the wire codec's schemas
- `judging`   one fuzz judge (fuzz/judge.py) per group, fed every group API exchange in real time;
              connections closing, missing answers, findings as fuzz classes, scenario files
- `report`    the report in the fuzz report's format (JSON, Markdown, the findings page)
- `worker`    the judge in a process of its own (JudgeProcess), writing the report at the end
- `proxy`     the asyncio proxy: listeners, connection pairs, frames forwarded as read, counts
- `run`       what `groupspec observe` runs: upstream, its settings, signals, exit codes

observe sits above fuzz (it reuses the judge, allowances, accept files, probes, targets and the
scenario writer) and below clients (`groupspec clients` routes its members through it).
"""

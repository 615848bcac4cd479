"""groupspec fuzz: find where a real coordinator departs from Kafka's, automatically.

Layout (lower modules never import higher ones):

- `actions`  what a fuzzed client does: its dialect of conformance.actions, what it knows, its timing
- `client`   asyncio Kafka connections: ApiVersions, FindCoordinator, pipelined requests
- `allowances` timing allowances and the target profiles that hold them (kafka-3.9, kafka-4, strict)
- `judge`    the set of model states consistent with what a target did to one group
- `scenario_judge` the judge behind `groupspec scenario run` on a real-clock target (conformance.realclock.AnswerJudge)
- `accept`   accepted divergence classes (`--accept` files, docs/fuzz-accept.md), written from reports
- `engine`   sequences drawn from the model (coverage-guided) and played against a target
- `shrink`   delta debugging of a diverging sequence, classes, scenario files
- `families` classes grouped by what differs (root causes first in the report)
- `replay`   a finding's scenario replayed: does it fail at its departing step, with its class?
- `report`   the JSON and Markdown report
- `probe`    the target's group settings, by DescribeConfigs or probed, reconciled with --config
- `targets`  the targets a run starts and stops itself (serve, Kafka, Tansu) or names (kafka://)
- `lockstep_kafka` the lockstep of the model and a real Kafka broker, every answer judged by `judge`
- `cli`      what `groupspec fuzz` runs (`fuzz`, FuzzOptions; groupspec/commands/ parses the arguments)
"""

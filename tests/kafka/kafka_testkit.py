"""Shared by the tests against real Apache Kafka: availability marks."""

from __future__ import annotations

import os

import pytest

from wire.kafka_broker import kafka_available

WHY_NOT_39 = kafka_available("3.9")


def require_kafka() -> list[pytest.MarkDecorator]:
    """Marks for a module of tests against Kafka 3.9: skipped without jars, except in CI (fails)."""
    marks = [pytest.mark.kafka]
    if WHY_NOT_39 is not None and not os.environ.get("CI"):
        marks.append(pytest.mark.skip(reason=WHY_NOT_39))
    return marks

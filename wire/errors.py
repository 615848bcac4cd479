"""Typed errors of the wire package: decoding, encoding, transport, safety."""

from __future__ import annotations

from typing import Optional

from model.errors import BadInput, Incomplete


class WireError(Exception):
    """Base class of every error raised by `wire`."""


class DecodeError(WireError):
    """Malformed bytes: names the message (API and version), the byte offset and the reason."""

    def __init__(self, api: Optional[str], version: Optional[int], offset: int, reason: str) -> None:
        self.api = api
        self.version = version
        self.offset = offset
        self.reason = reason
        where = api if api is not None else "frame"
        if version is not None:
            where += f" v{version}"
        super().__init__(f"{where} at offset {offset}: {reason}")


class EncodeError(WireError):
    """A value that cannot be written at the requested version (Kafka's UnsupportedVersionException)."""

    def __init__(self, api: str, version: int, field: str, reason: str) -> None:
        self.api = api
        self.version = version
        self.field = field
        self.reason = reason
        super().__init__(f"{api} v{version} field {field}: {reason}")


class UnsupportedVersionError(WireError):
    """No version of an API is supported by both this codec and the broker (or a pin is outside)."""


class TransportError(WireError, Incomplete):
    """The connection failed: refused, closed by the broker, timed out, or answered garbage.
    The run cannot finish against this target: incomplete (exit 3), not a failed check."""


class BrokerTimeoutError(TransportError):
    """An operation did not finish within its timeout."""


class RemoteHostRefused(WireError, BadInput):
    """The target host is outside the loopback range and `allow_remote=True` was not given."""


class BrokerStartError(WireError, Incomplete):
    """The Tansu broker could not be found or did not come up."""


class TimeBudgetExceeded(WireError):
    """A scenario asked for more real waiting (advance * time_scale) or requests than the target allows."""

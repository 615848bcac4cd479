"""Kafka's primitive types over a bounds-checked reader and a growing writer (sans-IO).

Every length read from the input is checked against the bytes that remain *before* anything is
allocated, so a hostile length prefix cannot make the decoder allocate more than the frame holds.
"""

from __future__ import annotations

import struct
from typing import Optional

from wire.errors import DecodeError

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")

MAX_UVARINT32_BYTES = 5  # ByteUtils.readUnsignedVarint: more than 5 bytes is an error


class Reader:
    """Reads primitives from `data`; raises DecodeError naming `api`/`version` and the offset."""

    __slots__ = ("data", "pos", "end", "api", "version")

    def __init__(self, data: bytes, api: Optional[str] = None, version: Optional[int] = None) -> None:
        self.data = data
        self.pos = 0
        self.end = len(data)
        self.api = api
        self.version = version

    def fail(self, reason: str, offset: Optional[int] = None) -> DecodeError:
        return DecodeError(self.api, self.version, self.pos if offset is None else offset, reason)

    def remaining(self) -> int:
        return self.end - self.pos

    def take(self, n: int, what: str) -> bytes:
        if n < 0:
            raise self.fail(f"negative length {n} for {what}")
        if n > self.end - self.pos:
            raise self.fail(f"truncated {what}: need {n} bytes, {self.end - self.pos} remain")
        start = self.pos
        self.pos += n
        return self.data[start : self.pos]

    def int8(self, what: str = "int8") -> int:
        return int(_INT8.unpack(self.take(1, what))[0])

    def int16(self, what: str = "int16") -> int:
        return int(_INT16.unpack(self.take(2, what))[0])

    def int32(self, what: str = "int32") -> int:
        return int(_INT32.unpack(self.take(4, what))[0])

    def int64(self, what: str = "int64") -> int:
        return int(_INT64.unpack(self.take(8, what))[0])

    def boolean(self, what: str = "bool") -> bool:
        start = self.pos
        b = self.take(1, what)[0]
        if b > 1:
            raise self.fail(f"bad boolean byte {b} for {what}", start)
        return b == 1

    def uvarint(self, what: str = "unsigned varint") -> int:
        start = self.pos
        value = 0
        for i in range(MAX_UVARINT32_BYTES):
            if self.pos >= self.end:
                raise self.fail(f"truncated {what}", start)
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                if value > 0xFFFFFFFF:
                    raise self.fail(f"bad varint for {what}: exceeds 32 bits", start)
                return value
        raise self.fail(f"bad varint for {what}: longer than {MAX_UVARINT32_BYTES} bytes", start)

    def length(self, compact: bool, wide: bool, what: str) -> int:
        """A length prefix; -1 means null. Compact: uvarint(n+1). Classic: int16 (strings) or int32."""
        start = self.pos
        if compact:
            n = self.uvarint(f"length of {what}") - 1
        elif wide:
            n = self.int32(f"length of {what}")
        else:
            n = self.int16(f"length of {what}")
        if n < -1:
            raise self.fail(f"negative length {n} for {what}", start)
        if n > self.end - self.pos:
            raise self.fail(
                f"length {n} of {what} exceeds the {self.end - self.pos} bytes that remain", start
            )
        return n

    def text(self, n: int, what: str) -> str:
        start = self.pos
        raw = self.take(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"invalid UTF-8 in {what}: {exc.reason}", start) from None


class Writer:
    """Appends primitives to a bytearray."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def int8(self, v: int) -> None:
        self.buf += _INT8.pack(v)

    def int16(self, v: int) -> None:
        self.buf += _INT16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _INT32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _INT64.pack(v)

    def boolean(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def uvarint(self, v: int) -> None:
        if v < 0 or v > 0xFFFFFFFF:
            raise ValueError(f"unsigned varint out of range: {v}")
        while v >= 0x80:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)

    def length(self, n: int, compact: bool, wide: bool) -> None:
        if compact:
            self.uvarint(n + 1)
        elif wide:
            self.int32(n)
        else:
            self.int16(n)

    def raw(self, b: bytes) -> None:
        self.buf += b

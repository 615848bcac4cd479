"""Message schemas as data, in the shape of Kafka's message JSON, and one interpreter for them.

A field records what `clients/src/main/resources/common/message/*.json` records: its name, its type,
the versions it is present in, the versions in which it may be null, an optional tag (tagged
fields), a default and whether it is `ignorable`. A message records its API key, its valid
versions and the first flexible version. `encode` / `decode` interpret that table for one version;
there is no per-message code.

Values are plain dicts keyed by the snake_case form of the field names (`GenerationId` ->
`generation_id`). Decoding fills fields absent at a version with their default, as Kafka's
generated classes do; encoding a non-default value in a field absent at that version is an
EncodeError unless the field is ignorable (then it is dropped, as Kafka's writers do).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, Optional, Union

from model.vocabulary import PastableEnum
from wire.errors import DecodeError, EncodeError
from wire.primitives import Reader, Writer

Struct = dict[str, Any]
MAX_VERSION: Final = 0x7FFF


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range, written as Kafka writes it: "3+", "0-7", "5", "none"."""

    lo: int
    hi: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    @classmethod
    def parse(cls, text: str) -> "Versions":
        if text == "none":
            return NO_VERSIONS
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        lo, _, hi = text.partition("-")
        return cls(int(lo), int(hi) if hi else int(lo))

    def __str__(self) -> str:
        if self.lo > self.hi:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return f"{self.lo}-{self.hi}" if self.lo != self.hi else str(self.lo)


NO_VERSIONS: Final = Versions(1, 0)


class Prim(PastableEnum):
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    BOOL = "bool"
    STRING = "string"
    BYTES = "bytes"
    UUID = "uuid"  # 16 raw bytes (Kafka's Uuid: two int64s); the all-zero Uuid is Uuid.ZERO_UUID


_INT_BITS: Final = {Prim.INT8: 8, Prim.INT16: 16, Prim.INT32: 32, Prim.INT64: 64}


@dataclass(frozen=True, slots=True)
class StructType:
    name: str
    fields: tuple["Field", ...]


@dataclass(frozen=True, slots=True)
class ArrayType:
    element: Union[Prim, StructType]


FieldType = Union[Prim, StructType, ArrayType]

_UNSET: Final[Any] = object()


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


@dataclass(frozen=True, slots=True)
class Field:
    name: str  # Kafka's CamelCase name
    type: FieldType
    versions: Versions
    nullable: Versions = NO_VERSIONS
    tag: Optional[int] = None
    tagged: Versions = NO_VERSIONS
    default: Any = _UNSET
    ignorable: bool = False
    key: str = field(default="", compare=False)

    def default_value(self) -> Any:
        if self.default is not _UNSET:
            return self.default
        if isinstance(self.type, ArrayType):
            return []
        if isinstance(self.type, StructType):
            return {f.key: f.default_value() for f in self.type.fields}
        if self.type in _INT_BITS:
            return 0
        return {Prim.BOOL: False, Prim.STRING: "", Prim.BYTES: b"", Prim.UUID: bytes(16)}[self.type]


def F(
    name: str,
    type_: FieldType,
    versions: str,
    *,
    nullable: str = "none",
    tag: Optional[int] = None,
    tagged: str = "none",
    default: Any = _UNSET,
    ignorable: bool = False,
) -> Field:
    """Shorthand for one schema line, arguments in the order of Kafka's JSON."""
    return Field(
        name, type_, Versions.parse(versions), Versions.parse(nullable), tag,
        Versions.parse(tagged), default, ignorable, snake(name),
    )


def array(element: Union[Prim, StructType]) -> ArrayType:
    return ArrayType(element)


def struct(name: str, *fields: Field) -> StructType:
    return StructType(name, fields)


@dataclass(frozen=True, slots=True)
class MessageSchema:
    """One request or response message: Kafka's `validVersions` and `flexibleVersions` plus fields."""

    name: str  # e.g. "JoinGroupRequest"
    api_key: int
    valid: Versions
    flexible: Versions
    body: StructType

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible


# ---------------------------------------------------------------- interpreter


@dataclass(frozen=True, slots=True)
class _Plan:
    regular: tuple[Field, ...]  # present, not tagged, in declaration order
    tagged: tuple[Field, ...]  # present and tagged at this version, by tag
    absent: tuple[Field, ...]


@lru_cache(maxsize=None)
def _plan(st: StructType, version: int, flexible: bool) -> _Plan:
    regular, tagged, absent = [], [], []
    for f in st.fields:
        if version not in f.versions:
            absent.append(f)
        elif f.tag is not None and version in f.tagged:
            if flexible:
                tagged.append(f)
            else:
                absent.append(f)
        else:
            regular.append(f)
    tagged.sort(key=lambda f: f.tag if f.tag is not None else -1)
    return _Plan(tuple(regular), tuple(tagged), tuple(absent))


class _Ctx:
    __slots__ = ("api", "version", "flexible")

    def __init__(self, api: str, version: int, flexible: bool) -> None:
        self.api = api
        self.version = version
        self.flexible = flexible


def encode(schema: MessageSchema, version: int, value: Struct, w: Optional[Writer] = None) -> bytes:
    """The body of `schema` at `version` (no header, no size prefix)."""
    if version not in schema.valid:
        raise EncodeError(schema.name, version, "-", f"version outside {schema.valid}")
    writer = w if w is not None else Writer()
    ctx = _Ctx(schema.name, version, schema.is_flexible(version))
    _encode_struct(ctx, schema.body, value, writer, schema.name)
    return bytes(writer.buf)


def _encode_struct(ctx: _Ctx, st: StructType, value: Struct, w: Writer, path: str) -> None:
    plan = _plan(st, ctx.version, ctx.flexible)
    for f in plan.absent:
        v = value.get(f.key, _UNSET)
        if v is not _UNSET and v != f.default_value() and not f.ignorable:
            raise EncodeError(ctx.api, ctx.version, f"{path}.{f.name}",
                              f"non-default value {v!r} but the field exists only in versions {f.versions}")
    for f in plan.regular:
        _encode_value(ctx, f, value.get(f.key, _UNSET), w, path)
    if ctx.flexible:
        present = []
        for f in plan.tagged:
            v = value.get(f.key, _UNSET)
            if v is not _UNSET and v != f.default_value():
                sub = Writer()
                _encode_value(ctx, f, v, sub, path)
                present.append((f.tag, bytes(sub.buf)))
        w.uvarint(len(present))
        for tag, raw in present:
            w.uvarint(tag if tag is not None else 0)
            w.uvarint(len(raw))
            w.raw(raw)


def _encode_value(ctx: _Ctx, f: Field, v: Any, w: Writer, path: str) -> None:
    where = f"{path}.{f.name}"
    if v is _UNSET:
        v = f.default_value()
    if v is None:
        if ctx.version not in f.nullable:
            raise EncodeError(ctx.api, ctx.version, where, f"null, but nullable only in versions {f.nullable}")
        w.length(-1, ctx.flexible, f.type is not Prim.STRING)
        return
    t = f.type
    if isinstance(t, ArrayType):
        if not isinstance(v, (list, tuple)):
            raise EncodeError(ctx.api, ctx.version, where, f"expected a list, got {type(v).__name__}")
        w.length(len(v), ctx.flexible, True)
        elem = t.element
        for i, item in enumerate(v):
            if isinstance(elem, StructType):
                if not isinstance(item, dict):
                    raise EncodeError(ctx.api, ctx.version, f"{where}[{i}]", "expected a struct (dict)")
                _encode_struct(ctx, elem, item, w, f"{where}[{i}]")
            else:
                _encode_prim(ctx, elem, item, w, f"{where}[{i}]")
    elif isinstance(t, StructType):
        if not isinstance(v, dict):
            raise EncodeError(ctx.api, ctx.version, where, "expected a struct (dict)")
        _encode_struct(ctx, t, v, w, where)
    else:
        _encode_prim(ctx, t, v, w, where)


def _encode_prim(ctx: _Ctx, t: Prim, v: Any, w: Writer, where: str) -> None:
    bits = _INT_BITS.get(t)
    if bits is not None:
        if isinstance(v, bool) or not isinstance(v, int) or not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
            raise EncodeError(ctx.api, ctx.version, where, f"{v!r} is not an {t.value}")
        {8: w.int8, 16: w.int16, 32: w.int32, 64: w.int64}[bits](v)
    elif t is Prim.BOOL:
        if not isinstance(v, bool):
            raise EncodeError(ctx.api, ctx.version, where, f"{v!r} is not a bool")
        w.boolean(v)
    elif t is Prim.UUID:
        if not isinstance(v, (bytes, bytearray)) or len(v) != 16:
            raise EncodeError(ctx.api, ctx.version, where, f"{v!r} is not a 16-byte uuid")
        w.raw(bytes(v))
    elif t is Prim.STRING:
        if not isinstance(v, str):
            raise EncodeError(ctx.api, ctx.version, where, f"{v!r} is not a string")
        raw = v.encode("utf-8")
        if len(raw) > 0x7FFF:
            raise EncodeError(ctx.api, ctx.version, where, f"string of {len(raw)} bytes exceeds 32767")
        w.length(len(raw), ctx.flexible, False)
        w.raw(raw)
    else:
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise EncodeError(ctx.api, ctx.version, where, f"{type(v).__name__} is not bytes")
        w.length(len(v), ctx.flexible, True)
        w.raw(bytes(v))


def decode(schema: MessageSchema, version: int, r: Reader) -> Struct:
    """Decode the body of `schema` at `version` from `r` (which must name the API and version)."""
    if version not in schema.valid:
        raise r.fail(f"version {version} outside the supported range {schema.valid}")
    ctx = _Ctx(schema.name, version, schema.is_flexible(version))
    return _decode_struct(ctx, schema.body, r, schema.name)


def _decode_struct(ctx: _Ctx, st: StructType, r: Reader, path: str) -> Struct:
    plan = _plan(st, ctx.version, ctx.flexible)
    out: Struct = {}
    for f in plan.absent:
        out[f.key] = f.default_value()
    for f in plan.tagged:
        out[f.key] = f.default_value()
    for f in plan.regular:
        out[f.key] = _decode_value(ctx, f, r, path)
    if ctx.flexible:
        count = r.uvarint(f"tagged field count of {path}")
        by_tag = {f.tag: f for f in plan.tagged}
        seen: set[int] = set()
        for _ in range(count):
            at = r.pos
            tag = r.uvarint(f"tag in {path}")
            if tag in seen:
                raise r.fail(f"duplicate tag {tag} in {path}", at)
            seen.add(tag)
            size = r.uvarint(f"size of tag {tag} in {path}")
            raw = r.take(size, f"tagged field {tag} of {path}")
            known = by_tag.get(tag)
            if known is None:
                continue  # unknown tagged fields are skipped, as Kafka does
            sub = Reader(raw, r.api, r.version)
            try:
                out[known.key] = _decode_value(ctx, known, sub, path)
                if sub.remaining():
                    raise sub.fail(f"{sub.remaining()} trailing bytes in tagged field {known.name}")
            except DecodeError as exc:
                raise DecodeError(exc.api, exc.version, r.pos - size + exc.offset, exc.reason) from None
    return out


def _decode_value(ctx: _Ctx, f: Field, r: Reader, path: str) -> Any:
    where = f"{path}.{f.name}"
    t = f.type
    nullable = ctx.version in f.nullable
    if isinstance(t, ArrayType):
        at = r.pos
        n = r.length(ctx.flexible, True, where)
        if n == -1:
            if not nullable:
                raise r.fail(f"null array {where} is not nullable at this version", at)
            return None
        elem = t.element
        # Each element takes at least one byte, so `n` is already bounded by the remaining bytes.
        if isinstance(elem, StructType):
            return [_decode_struct(ctx, elem, r, f"{where}[{i}]") for i in range(n)]
        return [_decode_prim(ctx, elem, r, f"{where}[{i}]", False) for i in range(n)]
    if isinstance(t, StructType):
        return _decode_struct(ctx, t, r, where)
    return _decode_prim(ctx, t, r, where, nullable)


def _decode_prim(ctx: _Ctx, t: Prim, r: Reader, where: str, nullable: bool) -> Any:
    if t is Prim.INT8:
        return r.int8(where)
    if t is Prim.INT16:
        return r.int16(where)
    if t is Prim.INT32:
        return r.int32(where)
    if t is Prim.INT64:
        return r.int64(where)
    if t is Prim.BOOL:
        return r.boolean(where)
    if t is Prim.UUID:
        return r.take(16, where)
    at = r.pos
    n = r.length(ctx.flexible, t is Prim.BYTES, where)
    if n == -1:
        if not nullable:
            raise r.fail(f"null {where} is not nullable at this version", at)
        return None
    if t is Prim.STRING:
        return r.text(n, where)
    return r.take(n, where)

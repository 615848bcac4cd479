"""JSON form of the shared request/response records (the trace `payload` column).

A record becomes a JSON object `{"type": "<class name>", <field>: <value>, ...}` with Kafka's field
names: bytes as lower-case hex, enums by name (`"REBALANCE_IN_PROGRESS"`, `"JoinGroup"`), a
TopicPartition as `"topic-3"`, tuples as lists. Decoding is strict: every field is type-checked and a
mismatch raises `PayloadError` naming the field path, so a bad row lands in rejects with a reason.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from typing import Any, Callable, Final, Union

from model import messages
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import Error
from model.messages import Request, Response, TopicPartition


class PayloadError(ValueError):
    """A payload that does not decode to a record: `path` names the field, `problem` what is wrong."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"payload{path}: {problem}")
        self.path = path
        self.problem = problem


_Decoder = Callable[[Any], Any]  # raises PayloadError with the path below the value
_Encoder = Callable[[Any], Any]

REQUEST_TYPES: Final[tuple[type, ...]] = typing.get_args(Request)
RESPONSE_TYPES: Final[tuple[type, ...]] = typing.get_args(Response)
RECORD_TYPES: Final[dict[str, type]] = {t.__name__: t for t in REQUEST_TYPES + RESPONSE_TYPES}

# The response record that answers each request record.
RESPONSE_FOR_REQUEST: Final[dict[type, type]] = {
    messages.JoinGroupRequest: messages.JoinGroupResponse,
    messages.SyncGroupRequest: messages.SyncGroupResponse,
    messages.HeartbeatRequest: messages.HeartbeatResponse,
    messages.LeaveGroupRequest: messages.LeaveGroupResponse,
    messages.OffsetCommitRequest: messages.OffsetCommitResponse,
    messages.OffsetFetchRequest: messages.OffsetFetchResponse,
    messages.DescribeGroupsRequest: messages.DescribeGroupsResponse,
    messages.ListGroupsRequest: messages.ListGroupsResponse,
    messages.DeleteGroupsRequest: messages.DeleteGroupsResponse,
}


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _below(prefix: str, e: PayloadError) -> PayloadError:
    """The same error one level up: paths are built only when decoding fails."""
    return PayloadError(prefix + e.path, e.problem)


def _scalar_decoder(kind: type) -> _Decoder:
    def decode(value: Any) -> Any:
        # bool is an int in Python; a JSON true is not a valid int here, nor 1 a valid bool.
        if type(value) is not kind:
            raise PayloadError("", f"expected {kind.__name__}, got {_type_name(value)}")
        return value

    return decode


def _bytes_decoder(value: Any) -> bytes:
    if not isinstance(value, str):
        raise PayloadError("", f"expected hex string, got {_type_name(value)}")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise PayloadError("", f"expected hex string, got {value!r}") from None


def _topic_partition_decoder(value: Any) -> TopicPartition:
    if not isinstance(value, str):
        raise PayloadError("", f"expected TOPIC-PARTITION string, got {_type_name(value)}")
    try:
        return TopicPartition.parse(value)
    except ValueError as e:
        raise PayloadError("", str(e)) from None


def _enum_decoder(kind: type[enum.Enum]) -> _Decoder:
    names = kind.__members__

    def decode(value: Any) -> Any:
        if not isinstance(value, str) or value not in names:
            raise PayloadError("", f"expected a {kind.__name__} name, got {value!r}")
        return names[value]

    return decode


def _optional_decoder(inner: _Decoder) -> _Decoder:
    def decode(value: Any) -> Any:
        return None if value is None else inner(value)

    return decode


def _list_decoder(inner: _Decoder) -> _Decoder:
    def decode(value: Any) -> Any:
        if not isinstance(value, list):
            raise PayloadError("", f"expected list, got {_type_name(value)}")
        try:
            return tuple([inner(v) for v in value])
        except PayloadError as e:
            for i, v in enumerate(value):  # which item (only on failure)
                try:
                    inner(v)
                except PayloadError:
                    raise _below(f"[{i}]", e) from None
            raise  # pragma: no cover - the item failed once, it fails again

    return decode


def _fixed_tuple_decoder(inners: tuple[_Decoder, ...]) -> _Decoder:
    def decode(value: Any) -> Any:
        if not isinstance(value, list) or len(value) != len(inners):
            raise PayloadError("", f"expected list of {len(inners)}, got {_type_name(value)}")
        out = []
        for i, (d, v) in enumerate(zip(inners, value)):
            try:
                out.append(d(v))
            except PayloadError as e:
                raise _below(f"[{i}]", e) from None
        return tuple(out)

    return decode


_DECODERS: dict[Any, _Decoder] = {}


def _decoder_for(tp: Any) -> _Decoder:
    cached = _DECODERS.get(tp)
    if cached is not None:
        return cached
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    result: _Decoder
    if tp in (str, int, bool):
        result = _scalar_decoder(tp)
    elif tp is bytes:
        result = _bytes_decoder
    elif tp is TopicPartition:
        result = _topic_partition_decoder
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        result = _enum_decoder(tp)
    elif origin in (Union, types.UnionType) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        result = _optional_decoder(_decoder_for(inner))
    elif origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        result = _list_decoder(_decoder_for(args[0]))
    elif origin is tuple:
        result = _fixed_tuple_decoder(tuple(_decoder_for(a) for a in args))
    elif dataclasses.is_dataclass(tp) and isinstance(tp, type):
        result = _record_decoder(tp)
    else:  # pragma: no cover - a new field type in model.messages
        raise TypeError(f"no JSON decoder for {tp!r}")
    _DECODERS[tp] = result
    return result


def _record_decoder(cls: type) -> _Decoder:
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls)]
    required = frozenset(
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )
    # Resolved lazily: records refer to each other.
    field_decoders: dict[str, _Decoder] = {}

    def decode(value: Any) -> Any:
        if not isinstance(value, dict):
            raise PayloadError("", f"expected object, got {_type_name(value)}")
        if not field_decoders:
            for f in fields:
                field_decoders[f.name] = _decoder_for(hints[f.name])
        if not required <= value.keys():
            missing = required - value.keys()
            raise PayloadError("", f"missing field(s) {', '.join(sorted(missing))} of {cls.__name__}")
        kwargs = {}
        for key, raw in value.items():
            if key == "type":
                continue
            decoder = field_decoders.get(key)
            if decoder is None:
                raise PayloadError("", f"unknown field {key!r} of {cls.__name__}")
            try:
                kwargs[key] = decoder(raw)
            except PayloadError as e:
                raise _below(f".{key}", e) from None
        return cls(**kwargs)

    return decode


# -- fast decoding ---------------------------------------------------------------------------
#
# The decoders above define what a valid payload is and say what is wrong with an invalid one.
# For each record type a second decoder is generated once: the same checks as straight-line code,
# raising `_Invalid` at the first problem without saying which. `record_from_json` runs it first and,
# when it fails in any way, runs the decoder above, which gives the error (or, should the fast one
# ever be stricter than needed, the record): results and errors are those of the decoders above.


class _Invalid(Exception):
    pass


_FAST: dict[Any, _Decoder] = {}


def _fast_for(tp: Any) -> _Decoder:
    cached = _FAST.get(tp)
    if cached is None:
        namespace: dict[str, Any] = {"_Invalid": _Invalid, "_fromhex": bytes.fromhex,
                                     "_parse_tp": TopicPartition.parse, "_missing": dataclasses.MISSING}
        lines = [f"def fast(value):"] + _fast_body(tp, "value", "out", "    ", namespace) + ["    return out"]
        exec("\n".join(lines) + "\n", namespace)
        cached = _FAST[tp] = namespace["fast"]
    return cached


def _fast_body(tp: Any, src: str, dst: str, ind: str, ns: dict[str, Any]) -> list[str]:
    """Lines that check `src` as `_decoder_for(tp)` would and leave the decoded value in `dst`."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp in (str, int, bool):
        return [f"{ind}if type({src}) is not {tp.__name__}: raise _Invalid", f"{ind}{dst} = {src}"]
    if tp is bytes:
        return [f"{ind}if not isinstance({src}, str): raise _Invalid", f"{ind}{dst} = _fromhex({src})"]
    if tp is TopicPartition:
        return [f"{ind}if not isinstance({src}, str): raise _Invalid", f"{ind}{dst} = _parse_tp({src})"]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        names = f"_names_{len(ns)}"
        ns[names] = tp.__members__
        return [f"{ind}if not isinstance({src}, str) or {src} not in {names}: raise _Invalid",
                f"{ind}{dst} = {names}[{src}]"]
    if origin in (Union, types.UnionType) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return ([f"{ind}if {src} is None:", f"{ind}    {dst} = None", f"{ind}else:"]
                + _fast_body(inner, src, dst, ind + "    ", ns))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = f"_item_{len(ns)}"
        ns[item] = _fast_for(args[0])
        return [f"{ind}if not isinstance({src}, list): raise _Invalid",
                f"{ind}{dst} = tuple([{item}(v) for v in {src}])"]
    if origin is tuple:
        parts = []
        for i, a in enumerate(args):
            item = f"_item_{len(ns)}"
            ns[item] = _fast_for(a)
            parts.append(f"{item}({src}[{i}])")
        return [f"{ind}if not isinstance({src}, list) or len({src}) != {len(args)}: raise _Invalid",
                f"{ind}{dst} = ({', '.join(parts)},)"]
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp)
        fields = dataclasses.fields(tp)
        required = frozenset(f.name for f in fields if f.default is dataclasses.MISSING
                             and f.default_factory is dataclasses.MISSING)
        cls, req, allowed = f"_cls_{len(ns)}", f"_req_{len(ns)}", f"_allowed_{len(ns)}"
        ns[cls], ns[req], ns[allowed] = tp, required, frozenset(f.name for f in fields) | {"type"}
        body = [f"{ind}if not isinstance({src}, dict): raise _Invalid",
                f"{ind}keys = {src}.keys()",
                f"{ind}if not ({req} <= keys and keys <= {allowed}): raise _Invalid"]
        slotted = all(type(tp.__dict__.get(f.name)).__name__ == "member_descriptor" for f in fields)
        for i, f in enumerate(fields):
            default = f"_default_{len(ns)}"
            ns[default] = f.default if f.default is not dataclasses.MISSING else None
            body.append(f"{ind}v = {src}.get({f.name!r}, _missing)")
            if f.name in required:
                body.append(f"{ind}if True:")
            else:
                body += [f"{ind}if v is _missing:", f"{ind}    x{i} = {default}", f"{ind}else:"]
            if typing.get_origin(hints[f.name]) is None:
                body += _fast_body(hints[f.name], "v", f"x{i}", ind + "    ", ns)
            else:
                item = f"_item_{len(ns)}"
                ns[item] = _fast_for(hints[f.name])
                body.append(f"{ind}    x{i} = {item}(v)")
        if slotted and not any(f.default_factory is not dataclasses.MISSING for f in fields) \
                and not hasattr(tp, "__post_init__"):
            # the constructor only stores the values: store them through the slots
            ns["_new"] = object.__new__
            body.append(f"{ind}{dst} = _new({cls})")
            for i, f in enumerate(fields):
                setter = f"_set_{len(ns)}"
                ns[setter] = tp.__dict__[f.name].__set__
                body.append(f"{ind}{setter}({dst}, x{i})")
        else:
            kwargs = ", ".join(f"{f.name}=x{i}" for i, f in enumerate(fields))
            body.append(f"{ind}{dst} = {cls}({kwargs})")
        return body
    raise TypeError(f"no JSON decoder for {tp!r}")  # pragma: no cover


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, TopicPartition):
        return str(value)
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if dataclasses.is_dataclass(value):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    raise TypeError(f"cannot encode {type(value).__name__}")


def record_to_json(record: Request | Response) -> dict[str, Any]:
    """The JSON object form of a record (see the module docstring)."""
    body = _encode(record)
    assert isinstance(body, dict)
    return {"type": type(record).__name__, **body}


def dumps_record(record: Request | Response) -> str:
    return json.dumps(record_to_json(record), separators=(",", ":"))


def record_from_json(value: Any, expected: tuple[type, ...] = REQUEST_TYPES + RESPONSE_TYPES) -> Any:
    """Decode a record object; `expected` restricts which record types are acceptable."""
    if not isinstance(value, dict):
        raise PayloadError("", f"expected object, got {_type_name(value)}")
    name = value.get("type")
    cls = RECORD_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise PayloadError(".type", f"expected a record type name, got {name!r}")
    if cls not in expected:
        wanted = ", ".join(t.__name__ for t in expected)
        raise PayloadError(".type", f"expected {wanted}, got {name}")
    try:
        return _fast_for(cls)(value)
    except Exception:
        return _decoder_for(cls)(value)


def loads_record(text: str, expected: tuple[type, ...] = REQUEST_TYPES + RESPONSE_TYPES) -> Any:
    try:
        value = json.loads(text)
        return record_from_json(value, expected)
    except json.JSONDecodeError as e:
        raise PayloadError("", f"not JSON ({e.msg} at char {e.pos})") from None
    except RecursionError:
        raise PayloadError("", "nested too deeply") from None


def dumps_config(config: CoordinatorConfig) -> str:
    body = {
        f.name: sorted(getattr(config, f.name)) if f.name == "not_owned_groups" else _encode(getattr(config, f.name))
        for f in dataclasses.fields(config)
    }
    return json.dumps(body, separators=(",", ":"))


def loads_config(text: str) -> CoordinatorConfig:
    """A `kind=config` payload -> CoordinatorConfig (fields omitted keep their defaults)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise PayloadError("", f"not JSON ({e.msg} at char {e.pos})") from None
    except RecursionError:
        raise PayloadError("", "nested too deeply") from None
    if not isinstance(value, dict):
        raise PayloadError("", f"expected object, got {_type_name(value)}")
    names = {f.name for f in dataclasses.fields(CoordinatorConfig)}
    kwargs: dict[str, Any] = {}
    for key, raw in value.items():
        if key not in names:
            raise PayloadError(f".{key}", "unknown CoordinatorConfig field")
        if key == "not_owned_groups":
            decoder = _list_decoder(_scalar_decoder(str))
        elif key == "append_result":
            decoder = _enum_decoder(Error)
        else:
            decoder = _scalar_decoder(int)
        try:
            value_ = decoder(raw)
        except PayloadError as e:
            raise _below(f".{key}", e) from None
        kwargs[key] = frozenset(value_) if key == "not_owned_groups" else value_
    return CoordinatorConfig(**kwargs)

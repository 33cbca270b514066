"""The checkpoint serializer: msgpack plus a registry of allowed types, never pickle.

Bytes read from a store can only ever produce plain data (None, bool, int, float, str, bytes,
list, tuple, dict, set, frozenset, datetime, date, time, timedelta, UUID, Decimal) and instances
of classes that were registered in the serializer's ``TypeRegistry``. Loading never imports a
module or looks a name up anywhere but in that registry, so stored bytes cannot run code. (A
time zone key is looked up with ``zoneinfo.ZoneInfo``, which reads the system's tz database or
the ``tzdata`` package, once it has matched the shape of an IANA key.)

Values that are not natively msgpack travel as ext types whose payload is itself msgpack made
by the same rules (so tuples of models of sets nest freely):

    code  type                  payload
    ----  --------------------  -----------------------------------------------------------
       1  tuple                 [items...]
       2  set                   [members...]
       3  frozenset             [members...]
       4  datetime              [y, mo, d, h, mi, s, us, fold, utc offset in us | nil, zone?]
       5  date                  proleptic Gregorian ordinal (int)
       6  time                  [h, mi, s, us, fold, utc offset in us | nil, zone?]
       7  timedelta             [days, seconds, microseconds]
       8  UUID                  16 bytes
       9  Decimal               str(value)
      10  registered model      [registered name, {field name: value}, {extra: value} | nil]
      11  registered dataclass  [registered name, {init field name: value}]
      12  registered enum       [registered name, member value]
      13  int beyond 64 bits    big-endian two's complement bytes

``zone`` is present only when the value's tzinfo says more than its offset: the key (str) of a
``zoneinfo.ZoneInfo``, or ``[name]`` for a ``datetime.timezone`` made with a name. Bytes
without it (made before it existed) still load, with a fixed-offset tzinfo. A zone key that
this machine's tz database does not know loads as that fixed offset, the same instant.

msgpack's own timestamp ext (-1) is decoded to an aware UTC datetime; any other code is an error.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import inspect
import threading
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from decimal import Decimal
from typing import Any, TypeVar, overload
from uuid import UUID

import msgpack
from pydantic import BaseModel, RootModel

from checkpoint._serde.unpackable import (
    MAX_DEPTH,
    find_problem,
    qualified_name,
    unserializable_error,
)
from checkpoint._serde.zones import offset_us, tz_of, zone_of
from checkpoint.errors import SerializationError, UnserializableValueError

__all__ = ["Serializer", "TypeRegistry", "default_registry", "default_serializer", "register_type"]

T = TypeVar("T")

_TUPLE, _SET, _FROZENSET, _DATETIME, _DATE, _TIME, _TIMEDELTA, _UUID, _DECIMAL = range(1, 10)
_MODEL, _DATACLASS, _ENUM = 10, 11, 12
_BIGINT = 13
_KIND_NAMES = {_MODEL: "a pydantic model", _DATACLASS: "a dataclass", _ENUM: "an enum"}

# pydantic >= 2.11 can validate by field name even when a field has an alias.
_BY_NAME = "by_name" in inspect.signature(BaseModel.model_validate).parameters
# A packer that produced more than this is replaced, so threads don't keep huge buffers.
_BIG_OUTPUT = 1 << 20


@dataclasses.dataclass(frozen=True)
class _Entry:
    cls: type
    name: str
    kind: int  # the ext code: _MODEL, _DATACLASS or _ENUM
    fields: tuple[str, ...]  # model fields / dataclass init fields; () for enums
    aliases: Mapping[str, str]  # field name -> validation key, only on pydantic < 2.11
    is_root: bool = False  # a pydantic RootModel: validated from its root value
    field_set: frozenset[str] = frozenset()  # the fields, to compare with an instance's __dict__


class TypeRegistry:
    """The classes whose instances may be checkpointed, each under a unique stable name.

    Only pydantic models, dataclasses and enums can be registered. The name is what is stored,
    so renaming or moving a class needs ``name=`` to keep old checkpoints loadable.
    Registration is thread-safe; lookups are plain dict reads. A registry with a ``parent``
    also allows the parent's types, those registered there later too (a library's own
    types on top of ``default_registry``, where its users register theirs).
    """

    def __init__(self, parent: TypeRegistry | None = None) -> None:
        self._by_cls: MutableMapping[type, _Entry] = {}
        self._by_name: MutableMapping[str, _Entry] = {}
        if parent is not None:
            self._by_cls = ChainMap(self._by_cls, parent._by_cls)
            self._by_name = ChainMap(self._by_name, parent._by_name)
        self._lock = threading.Lock()

    def register(self, cls: type[T], *, name: str | None = None) -> type[T]:
        """Allow instances of ``cls``; return ``cls`` unchanged (usable as a decorator).

        ``name`` defaults to ``module.QualName``. Registering the same class under the same
        name again does nothing. Raises TypeError if ``cls`` is not a pydantic model, dataclass
        or enum class, and ValueError if the name belongs to another class or ``cls`` is
        already registered under another name.
        """
        if not isinstance(cls, type):
            raise TypeError(f"register_type expects a class, got {cls!r}")
        if name is None:
            name = f"{cls.__module__}.{cls.__qualname__}"
        if not isinstance(name, str) or not name:
            raise TypeError(f"a registered type name must be a non-empty str, got {name!r}")
        entry = _make_entry(cls, name)
        with self._lock:
            taken = self._by_name.get(name)
            if taken is not None and taken.cls is not cls:
                raise ValueError(
                    f"cannot register {qualified_name(cls)} as {name!r}: that name is already "
                    f"taken by {qualified_name(taken.cls)}; pass a different name="
                )
            current = self._by_cls.get(cls)
            if current is not None and current.name != name:
                raise ValueError(
                    f"cannot register {qualified_name(cls)} as {name!r}: it is already "
                    f"registered as {current.name!r}"
                )
            self._by_cls[cls] = entry
            self._by_name[name] = entry
        return cls

    def is_registered(self, cls: type) -> bool:
        """True if exactly this class (not merely a base of it) is registered."""
        return cls in self._by_cls

    def name_of(self, cls: type) -> str | None:
        """The name ``cls`` is stored under, or None if it is not registered."""
        entry = self._by_cls.get(cls)
        return None if entry is None else entry.name

    def class_for(self, name: str) -> type | None:
        """The class registered under ``name``, or None. Never imports anything."""
        entry = self._by_name.get(name)
        return None if entry is None else entry.cls

    def __contains__(self, cls: object) -> bool:
        return cls in self._by_cls

    def __len__(self) -> int:
        return len(self._by_cls)


def _make_entry(cls: type, name: str) -> _Entry:
    if issubclass(cls, BaseModel) and cls is not BaseModel:
        fields = tuple(cls.model_fields)
        aliases: dict[str, str] = {}
        if not _BY_NAME and not cls.model_config.get("populate_by_name"):
            for fname, info in cls.model_fields.items():
                alias = info.validation_alias or info.alias
                if isinstance(alias, str):
                    aliases[fname] = alias
        return _Entry(
            cls, name, _MODEL, fields, aliases, issubclass(cls, RootModel), frozenset(fields)
        )
    if issubclass(cls, enum.Enum):
        return _Entry(cls, name, _ENUM, (), {})
    if dataclasses.is_dataclass(cls):
        fields = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        return _Entry(cls, name, _DATACLASS, fields, {})
    raise TypeError(
        f"cannot register {qualified_name(cls)}: only pydantic BaseModel subclasses, "
        "dataclasses and Enum subclasses can be checkpointed (apply @dataclass before "
        "@register_type, i.e. put @register_type on top)"
    )


default_registry = TypeRegistry()


@overload
def register_type(
    cls: type[T], *, name: str | None = None, registry: TypeRegistry | None = None
) -> type[T]: ...
@overload
def register_type(
    cls: None = None, *, name: str | None = None, registry: TypeRegistry | None = None
) -> Callable[[type[T]], type[T]]: ...
def register_type(
    cls: type[T] | None = None,
    *,
    name: str | None = None,
    registry: TypeRegistry | None = None,
) -> type[T] | Callable[[type[T]], type[T]]:
    """Register a class for checkpointing in ``registry`` (``default_registry`` when None).

    Works as ``@register_type``, ``@register_type(name="app.Item")`` and
    ``register_type(Item)``; returns the class unchanged. See ``TypeRegistry.register``.
    """
    target = default_registry if registry is None else registry

    def decorate(c: type[T]) -> type[T]:
        return target.register(c, name=name)

    return decorate if cls is None else decorate(cls)


class _Packers:
    """One thread's msgpack Packers, one per ext nesting depth (so none is re-entered), and
    the depths in use: a plain object, read once per packed value from the ``threading.local``
    (each attribute of which costs a lookup of the thread's own dict)."""

    __slots__ = ("depth", "packers", "unpack_depth")

    def __init__(self) -> None:
        self.packers: list[Any] = []
        self.depth = 0
        self.unpack_depth = 0


class _PackerStack(threading.local):
    def __init__(self) -> None:
        self.own = _Packers()


def _new_packer(default: Callable[[Any], Any]) -> Any:
    return msgpack.Packer(default=default, use_bin_type=True, strict_types=True, autoreset=True)


def _ext(code: int, data: bytes) -> msgpack.ExtType:
    """``msgpack.ExtType(code, data)`` without its argument checks (ours are always right)."""
    return tuple.__new__(msgpack.ExtType, (code, data))


# An empty tuple's ext (``_pack([])`` is ``b"\\x90"``): the same bytes, made once.
_EMPTY_TUPLE = _ext(_TUPLE, b"\x90")


# msgpack's headers for a fixarray of 0-15 items, and for a model's ext (code 10) whose
# payload has a fixext size (1, 2, 4, 8 or 16 bytes).
_FIXARRAYS = [bytes((0x90 | n,)) for n in range(16)]
_MODEL_BYTE = bytes((_MODEL,))
_FIXEXT_MODEL = {1: b"\xd4\x0a", 2: b"\xd5\x0a", 4: b"\xd6\x0a", 8: b"\xd7\x0a", 16: b"\xd8\x0a"}
# The header of a model's ext whose payload has 0-255 bytes: a fixext, else an ext 8.
_MODEL_HEADS = [_FIXEXT_MODEL.get(n) or bytes((0xC7, n, _MODEL)) for n in range(0x100)]


def _encode_datetime(v: _dt.datetime) -> tuple[int, object]:
    fields = [v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, v.fold]
    return _DATETIME, [*fields, offset_us(v), *zone_of(v.tzinfo)]


def _encode_time(v: _dt.time) -> tuple[int, object]:
    return _TIME, [
        v.hour,
        v.minute,
        v.second,
        v.microsecond,
        v.fold,
        offset_us(v),
        *zone_of(v.tzinfo),
    ]


def _encode_int(v: int) -> tuple[int, object]:
    """Only ints msgpack cannot store natively (beyond 64 bits) come here."""
    return _BIGINT, v.to_bytes(v.bit_length() // 8 + 1, "big", signed=True)


_ENCODERS: dict[type, Callable[[Any], tuple[int, object]]] = {
    tuple: lambda v: (_TUPLE, list(v)),
    set: lambda v: (_SET, list(v)),
    frozenset: lambda v: (_FROZENSET, list(v)),
    _dt.datetime: _encode_datetime,
    _dt.date: lambda v: (_DATE, v.toordinal()),
    _dt.time: _encode_time,
    int: _encode_int,
    _dt.timedelta: lambda v: (_TIMEDELTA, [v.days, v.seconds, v.microseconds]),
    UUID: lambda v: (_UUID, v.bytes),
    Decimal: lambda v: (_DECIMAL, str(v)),
}


def _list(payload: object) -> list[Any]:
    if type(payload) is not list:
        raise SerializationError(f"corrupt ext payload: expected an array, got {payload!r}")
    return payload


def _str(payload: object) -> str:
    if type(payload) is not str:
        raise SerializationError(f"corrupt ext payload: expected a str, got {payload!r}")
    return payload


def _bytes(payload: object) -> bytes:
    if type(payload) is not bytes:
        raise SerializationError(f"corrupt ext payload: expected bytes, got {payload!r}")
    return payload


def _datetime(p: object) -> _dt.datetime:
    y, mo, d, h, mi, s, us, fold, off, *zone = _list(p)
    return _dt.datetime(y, mo, d, h, mi, s, us, tzinfo=tz_of(off, zone), fold=fold)


def _time(p: object) -> _dt.time:
    h, mi, s, us, fold, off, *zone = _list(p)
    return _dt.time(h, mi, s, us, tzinfo=tz_of(off, zone), fold=fold)


_DECODERS: dict[int, tuple[str, Callable[[Any], object]]] = {
    _TUPLE: ("tuple", lambda p: tuple(_list(p))),
    _SET: ("set", lambda p: set(_list(p))),
    _FROZENSET: ("frozenset", lambda p: frozenset(_list(p))),
    _DATETIME: ("datetime", _datetime),
    _DATE: ("date", _dt.date.fromordinal),
    _TIME: ("time", _time),
    _TIMEDELTA: ("timedelta", lambda p: _dt.timedelta(*_list(p))),
    _UUID: ("UUID", lambda p: UUID(bytes=p)),
    _DECIMAL: ("Decimal", lambda p: Decimal(_str(p))),
    _BIGINT: ("int", lambda p: int.from_bytes(_bytes(p), "big", signed=True)),
}


class Serializer:
    """Turns checkpoint values into bytes and back, allowing only the registry's types.

    ``dumps`` raises ``UnserializableValueError`` (naming the state key, the path inside the
    value and the type) for anything not allowed. ``loads`` raises ``SerializationError`` for
    bytes that are corrupt, truncated, carry trailing data, or name a type this registry does
    not hold; it never imports anything or runs code other than the registered classes' own
    validation/constructors. Safe to share between threads.
    """

    def __init__(self, registry: TypeRegistry | None = None) -> None:
        self.registry = default_registry if registry is None else registry
        self._local = _PackerStack()

    # -- writing -----------------------------------------------------------------------------

    def dumps(self, value: object, *, key: str | None = None) -> bytes:
        """Pack one value; ``key`` (the state key holding it) is only used in error messages."""
        try:
            return self._pack(value)
        except Exception as exc:
            raise unserializable_error(value, key, exc, self._children_of) from exc

    def dumps_mapping(self, values: Mapping[str, Any]) -> bytes:
        """Pack a mapping of state key -> value; an unserializable value's error names its key."""
        data = values if type(values) is dict else dict(values)
        for k in data:
            if type(k) is not str:
                name = qualified_name(type(k))
                msg = f"state keys must be str, got {k!r} ({name})"
                raise UnserializableValueError(msg, key=None, path=f"<key {k!r}>", type_name=name)
        try:
            return self._pack(data)
        except Exception as exc:
            for k, v in data.items():
                if find_problem(v, k, self._children_of) is not None:
                    raise unserializable_error(v, k, exc, self._children_of) from exc
            raise unserializable_error(data, None, exc, self._children_of) from exc

    def _packer_at(self, packers: list[Any], depth: int) -> Any:
        """This thread's packer for nesting ``depth``, made on first use."""
        if depth == len(packers):
            if depth >= MAX_DEPTH:
                raise ValueError("values nest too deeply")
            packers.append(_new_packer(self._default))
        return packers[depth]

    def _pack(self, value: object) -> bytes:
        local = self._local.own
        depth = local.depth
        packers = local.packers
        packer = self._packer_at(packers, depth)
        local.depth = depth + 1
        try:
            out: bytes = packer.pack(value)
        finally:
            local.depth = depth
        if len(out) > _BIG_OUTPUT:  # drop the grown buffer
            packers[depth] = _new_packer(self._default)
        return out

    def _default(self, obj: object) -> msgpack.ExtType:
        # Registered classes first (messages and their parts: the common case), then plain
        # types; a registered class is never one of _ENCODERS' builtins. The payload is
        # packed as ``_pack`` does, inline: this runs once per nested value.
        cls = type(obj)
        if cls is tuple:
            if not obj:
                return _EMPTY_TUPLE
            items = self._tuple_of_models(obj)  # type: ignore[arg-type]
            if items is not None:
                return tuple.__new__(msgpack.ExtType, (_TUPLE, items))
            code: int = _TUPLE
            payload: object = list(obj)  # type: ignore[call-overload]
        else:
            entry = self.registry._by_cls.get(cls)
            if entry is None:
                encode = _ENCODERS.get(cls)
                if encode is None:
                    raise TypeError(f"{qualified_name(cls)} is not an allowed checkpoint type")
                code, payload = encode(obj)
            else:
                code = entry.kind
                if code == _MODEL:
                    attrs = obj.__dict__
                    extra = obj.__pydantic_extra__  # type: ignore[attr-defined]
                    if attrs.keys() != entry.field_set:  # e.g. a cached_property's value
                        attrs = {f: attrs[f] for f in entry.fields}
                    payload = [entry.name, attrs, extra or None]
                elif code == _ENUM:
                    payload = [entry.name, obj.value]  # type: ignore[attr-defined]
                else:
                    payload = [entry.name, {f: getattr(obj, f) for f in entry.fields}]
        local = self._local.own
        depth = local.depth
        packers = local.packers
        if depth == len(packers):
            if depth >= MAX_DEPTH:
                raise ValueError("values nest too deeply")
            packers.append(_new_packer(self._default))
        local.depth = depth + 1
        try:
            out: bytes = packers[depth].pack(payload)
        finally:
            local.depth = depth
        if len(out) > _BIG_OUTPUT:  # drop the grown buffer
            packers[depth] = _new_packer(self._default)
        return tuple.__new__(msgpack.ExtType, (code, out))

    def _tuple_of_models(self, value: tuple[Any, ...]) -> bytes | None:
        """A short tuple of registered pydantic models (a message's tool calls or responses)
        as its ext payload, made here: the same bytes the packer makes (an array of the
        models' exts), without a callback and a nested packer per item. ``None`` for any
        other tuple."""
        if len(value) >= 16:
            return None
        by_cls = self.registry._by_cls
        parts = [_FIXARRAYS[len(value)]]
        # ``_pack``, inline: the packer found once for all the items
        local = self._local.own
        depth = local.depth
        packers = local.packers
        packer = self._packer_at(packers, depth)
        local.depth = depth + 1
        try:
            for item in value:
                entry = by_cls.get(type(item))
                if entry is None or entry.kind != _MODEL:
                    return None
                attrs = item.__dict__
                extra = item.__pydantic_extra__
                if attrs.keys() != entry.field_set:
                    attrs = {f: attrs[f] for f in entry.fields}
                data = packer.pack([entry.name, attrs, extra or None])
                size = len(data)
                if size < 0x100:
                    head = _MODEL_HEADS[size]
                else:
                    if size > _BIG_OUTPUT:  # drop the grown buffer
                        packers[depth] = packer = _new_packer(self._default)
                    if size < 0x10000:
                        head = b"\xc8" + size.to_bytes(2, "big") + _MODEL_BYTE
                    else:
                        head = b"\xc9" + size.to_bytes(4, "big") + _MODEL_BYTE
                parts.append(head)
                parts.append(data)
        finally:
            local.depth = depth
        return b"".join(parts)

    def _children_of(self, obj: object) -> Iterable[tuple[str, object]] | None:
        entry = self.registry._by_cls.get(type(obj))
        if entry is None:
            return None
        if entry.kind == _ENUM:
            return [(".value", obj.value)]  # type: ignore[attr-defined]
        children = [(f".{f}", getattr(obj, f)) for f in entry.fields]
        if entry.kind == _MODEL:
            extra = obj.__pydantic_extra__ or {}  # type: ignore[attr-defined]
            children += [(f".{k}", v) for k, v in extra.items()]
        return children

    # -- reading -----------------------------------------------------------------------------

    def loads(self, data: bytes) -> Any:
        """Unpack bytes made by ``dumps``; SerializationError if they are not valid."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"loads expects bytes, got {type(data).__name__}")
        try:
            return self._unpack(data)
        except SerializationError:
            raise
        except msgpack.ExtraData as exc:
            raise SerializationError(
                f"checkpoint data has {len(exc.extra)} unexpected bytes after the value "
                "(corrupt, or not made by this serializer)"
            ) from exc
        except Exception as exc:
            raise SerializationError(
                f"checkpoint data is corrupt, truncated or not made by this serializer: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def loads_mapping(self, data: bytes) -> dict[str, Any]:
        """Unpack bytes made by ``dumps_mapping``; SerializationError if not a str-keyed map."""
        value = self.loads(data)
        if type(value) is not dict or not all(type(k) is str for k in value):
            raise SerializationError(
                f"expected a mapping of state keys, got {type(value).__name__}"
            )
        return value

    def _unpack(self, data: bytes) -> Any:
        return msgpack.unpackb(
            data, ext_hook=self._ext_hook, raw=False, strict_map_key=False, timestamp=3
        )

    def _ext_hook(self, code: int, data: bytes) -> object:
        local = self._local.own
        depth = local.unpack_depth
        if depth >= MAX_DEPTH:
            raise SerializationError(f"checkpoint data nests more than {MAX_DEPTH} levels deep")
        local.unpack_depth = depth + 1
        try:
            payload = self._unpack(data)
        finally:
            local.unpack_depth = depth
        if code in _DECODERS:
            what, decode = _DECODERS[code]
            try:
                return decode(payload)
            except SerializationError:
                raise
            except Exception as exc:
                raise SerializationError(f"corrupt {what} in checkpoint data: {exc}") from exc
        if code not in _KIND_NAMES:
            raise SerializationError(f"unknown ext type code {code} in checkpoint data")
        body = _list(payload)
        name = body[0] if body else None
        entry = self.registry._by_name.get(name) if type(name) is str else None
        if entry is None:
            raise SerializationError(
                f"checkpoint data holds {_KIND_NAMES[code]} stored as {name!r}, which is not "
                "registered in this serializer's registry; register the class with "
                f"checkpoint.register_type (name={name!r}) before loading"
            )
        if entry.kind != code:
            raise SerializationError(
                f"checkpoint data holds {name!r} as {_KIND_NAMES[code]}, but it is registered "
                f"as {_KIND_NAMES[entry.kind]} ({qualified_name(entry.cls)})"
            )
        try:
            return _rebuild(entry, body)
        except Exception as exc:
            raise SerializationError(
                f"could not rebuild {qualified_name(entry.cls)} (stored as {name!r}) from "
                f"checkpoint data: {type(exc).__name__}: {exc}"
            ) from exc


def _rebuild(entry: _Entry, body: list[Any]) -> object:
    cls: Any = entry.cls
    if entry.kind == _ENUM:
        _, value = body
        return cls(value)
    if entry.kind == _DATACLASS:
        _, fields = body
        return cls(**fields)
    _, fields, extra = body
    if type(fields) is not dict or (extra is not None and type(extra) is not dict):
        raise TypeError("model fields must be a map")
    if entry.is_root:
        return cls.model_validate(fields["root"])
    data = {**fields, **extra} if extra else fields
    if _BY_NAME:
        return cls.model_validate(data, by_name=True)
    if entry.aliases:
        data = {entry.aliases.get(k, k): v for k, v in data.items()}
    return cls.model_validate(data)


default_serializer = Serializer(default_registry)

"""Tests for checkpoint.serde: the msgpack checkpoint serializer and its type registry."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import os
import pickle
import sys
import threading
import uuid
from collections import OrderedDict
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import msgpack
import pytest
from pydantic import BaseModel, ConfigDict, Field, RootModel

from checkpoint.errors import CheckpointError, SerializationError, UnserializableValueError
from checkpoint.serde import (
    Serializer,
    TypeRegistry,
    default_registry,
    default_serializer,
    register_type,
)

# --- types used by the tests (registered per test in a fresh registry) ---------------------


class Inner(BaseModel):
    a: int
    tags: list[str] = []


class Msg(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    inner: Inner | None = None
    history: list[Inner] = []
    metadata: dict[str, Any] = {}
    when: dt.datetime | None = None


class Tag(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    weight: Decimal = Decimal("1")


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")

    x: int


class Aliased(BaseModel):
    user_id: int = Field(alias="userId")


class Names(RootModel[list[str]]):
    pass


@dataclasses.dataclass
class Point:
    x: int
    y: int
    label: str = "p"
    norm: int = dataclasses.field(init=False, default=0)

    def __post_init__(self) -> None:
        self.norm = abs(self.x) + abs(self.y)


@dataclasses.dataclass(frozen=True, slots=True)
class Frozen:
    items: tuple[int, ...]
    inner: Inner


class Color(enum.Enum):
    RED = 1
    GREEN = (0, 255, 0)


class Mode(str, enum.Enum):
    FAST = "fast"
    SLOW = "slow"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class NotRegistered(BaseModel):
    v: int


@dataclasses.dataclass
class NotRegisteredDC:
    v: int


class MyStr(str):
    pass


class Opaque:
    pass


ALL_TYPES: tuple[type, ...] = (
    Inner,
    Msg,
    Tag,
    Loose,
    Aliased,
    Names,
    Point,
    Frozen,
    Color,
    Mode,
    Level,
)


@pytest.fixture
def registry() -> TypeRegistry:
    reg = TypeRegistry()
    for cls in ALL_TYPES:
        reg.register(cls)
    return reg


@pytest.fixture
def ser(registry: TypeRegistry) -> Serializer:
    return Serializer(registry)


def roundtrip(ser: Serializer, value: object) -> Any:
    return ser.loads(ser.dumps(value))


# --- plain values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -1,
        2**64 - 1,
        -(2**63),
        1.5,
        float("inf"),
        "",
        "héllo ✓",
        b"",
        b"\x00\xff",
        [],
        [1, "a", None],
        {},
        {"a": 1},
        (),
        (1, (2, 3)),
        set(),
        {1, 2},
        frozenset(),
        frozenset({"a"}),
        dt.date(2024, 2, 29),
        dt.timedelta(days=-3, seconds=5, microseconds=7),
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        Decimal("1.10"),
        Decimal("-0"),
        Decimal("1E+400"),
        dt.datetime(2024, 1, 2, 3, 4, 5, 6),
        dt.time(23, 59, 59, 999999),
    ],
    ids=repr,
)
def test_plain_values_round_trip_with_exact_type(ser: Serializer, value: object) -> None:
    out = roundtrip(ser, value)
    assert out == value
    assert type(out) is type(value)
    if isinstance(value, Decimal):
        assert str(out) == str(value)  # exact, incl. trailing zeros and sign


def test_bool_stays_bool_and_int_stays_int(ser: Serializer) -> None:
    out = roundtrip(ser, [True, 1, 1.0, False, 0])
    assert [type(x) for x in out] == [bool, int, float, bool, int]


def test_nan_and_special_decimals(ser: Serializer) -> None:
    out = roundtrip(ser, [float("nan"), Decimal("NaN"), Decimal("-Infinity")])
    assert out[0] != out[0]
    assert str(out[1]) == "NaN" and str(out[2]) == "-Infinity"


def test_bytearray_and_memoryview_come_back_as_bytes(ser: Serializer) -> None:
    assert roundtrip(ser, [bytearray(b"ab"), memoryview(b"cd")]) == [b"ab", b"cd"]
    assert type(roundtrip(ser, bytearray(b"x"))) is bytes


def test_aware_datetime_keeps_its_utc_offset(ser: Serializer) -> None:
    paris = dt.datetime(2024, 7, 1, 12, 30, 0, 123456, tzinfo=ZoneInfo("Europe/Paris"))
    odd = dt.datetime(2024, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-3, minutes=-30)))
    utc = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    out = roundtrip(ser, [paris, odd, utc])
    assert out == [paris, odd, utc]
    assert out[0].utcoffset() == dt.timedelta(hours=2)
    assert out[0].replace(tzinfo=None) == paris.replace(tzinfo=None)  # same wall clock
    assert out[1].utcoffset() == dt.timedelta(hours=-3, minutes=-30)
    assert out[2].tzinfo is dt.timezone.utc


def test_naive_datetime_stays_naive_and_keeps_fold(ser: Serializer) -> None:
    value = dt.datetime(2024, 11, 3, 1, 30, fold=1)
    out = roundtrip(ser, value)
    assert out.tzinfo is None and out.fold == 1 and out == value


def test_time_with_offset(ser: Serializer) -> None:
    value = dt.time(8, 15, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30)))
    out = roundtrip(ser, value)
    assert out == value and out.utcoffset() == dt.timedelta(hours=5, minutes=30)


def test_nested_containers_keep_their_exact_types(ser: Serializer) -> None:
    value = {
        "list": [1, (2, [3, {4}]), frozenset({(5, 6)})],
        (1, "a"): {"nested": ({"deep": [set(), ()]},)},
        frozenset({1, 2}): "frozenset key",
        3: "int key",
        None: "none key",
        dt.date(2024, 1, 1): "date key",
        uuid.UUID(int=7): {Decimal("2.50"): [b"x"]},
    }
    out = roundtrip(ser, value)
    assert out == value
    assert type(out["list"][1]) is tuple and type(out["list"][1][1][1]) is set
    assert type(out["list"][2]) is frozenset
    assert type(out[(1, "a")]["nested"]) is tuple
    assert type(next(iter(out["list"][2]))) is tuple


# --- registered types --------------------------------------------------------------------


def test_pydantic_model_with_nested_optional_and_list_fields(ser: Serializer) -> None:
    when = dt.datetime(2024, 5, 5, 5, 5, tzinfo=dt.timezone.utc)
    msg = Msg(
        text="hi",
        inner=Inner(a=1, tags=["x"]),
        history=[Inner(a=2), Inner(a=3, tags=["y", "z"])],
        metadata={"k": (1, 2), "s": {1}},
        when=when,
    )
    out = roundtrip(ser, {"messages": [msg, Msg(text="bare")]})
    assert out == {"messages": [msg, Msg(text="bare")]}
    first = out["messages"][0]
    assert type(first) is Msg and type(first.inner) is Inner
    assert all(type(h) is Inner for h in first.history)
    assert first.metadata["k"] == (1, 2) and type(first.metadata["k"]) is tuple
    assert out["messages"][1].inner is None
    with pytest.raises(Exception, match="frozen"):
        first.text = "changed"  # still a frozen model


def test_frozen_model_as_dict_key_and_set_member(ser: Serializer) -> None:
    key = Tag(name="k")
    value = {key: {Tag(name="member", weight=Decimal("0.5"))}, (key, 1): frozenset({key})}
    out = roundtrip(ser, value)
    assert out == value
    assert type(next(iter(out[key]))) is Tag


def test_pydantic_extra_fields_are_kept(ser: Serializer) -> None:
    out = roundtrip(ser, Loose(x=1, extra_field=[1, 2]))  # type: ignore[call-arg]
    assert out.x == 1 and out.__pydantic_extra__ == {"extra_field": [1, 2]}


def test_pydantic_field_with_alias_round_trips(ser: Serializer) -> None:
    value = Aliased(userId=7)
    assert roundtrip(ser, value) == value


def test_pydantic_root_model_round_trips(ser: Serializer) -> None:
    value = Names(["a", "b"])
    out = roundtrip(ser, value)
    assert type(out) is Names and out.root == ["a", "b"]


def test_dataclass_round_trip_ignores_non_init_fields(ser: Serializer) -> None:
    out = roundtrip(ser, [Point(1, -2, label="q"), Frozen((1, 2), Inner(a=1))])
    assert out == [Point(1, -2, label="q"), Frozen((1, 2), Inner(a=1))]
    assert out[0].norm == 3  # recomputed by __post_init__, not stored
    assert type(out[1].items) is tuple and type(out[1].inner) is Inner


def test_enum_members_round_trip(ser: Serializer) -> None:
    value = [Color.RED, Color.GREEN, Mode.FAST, Level.HIGH, {Mode.SLOW: Level.LOW}]
    out = roundtrip(ser, value)
    assert out == value
    assert out[0] is Color.RED and out[1] is Color.GREEN
    assert out[2] is Mode.FAST and out[3] is Level.HIGH
    assert next(iter(out[4])) is Mode.SLOW


def test_str_enum_and_int_enum_are_not_degraded_to_str_or_int(ser: Serializer) -> None:
    assert type(roundtrip(ser, Mode.FAST)) is Mode
    assert type(roundtrip(ser, Level.LOW)) is Level


# --- values that are not allowed ---------------------------------------------------------


def test_unregistered_value_names_key_path_and_type(ser: Serializer) -> None:
    messages = [Msg(text=str(i)) for i in range(3)] + [Msg(text="x", metadata={"conn": Opaque()})]
    with pytest.raises(UnserializableValueError) as info:
        ser.dumps(messages, key="messages")
    err = info.value
    assert err.key == "messages"
    assert err.path == "messages[3].metadata['conn']"
    assert err.type_name == f"{__name__}.Opaque"
    text = str(err)
    assert "'messages'" in text and "messages[3].metadata['conn']" in text
    assert f"{__name__}.Opaque" in text and "checkpoint.register_type" in text
    assert "keep it out of the state" in text


@pytest.mark.parametrize(
    ("value", "path", "type_name"),
    [
        (NotRegistered(v=1), "s", f"{__name__}.NotRegistered"),
        ([1, NotRegisteredDC(v=1)], "s[1]", f"{__name__}.NotRegisteredDC"),
        ({"a": (1, MyStr("x"))}, "s['a'][1]", f"{__name__}.MyStr"),
        ({1: {Opaque()}}, "s[1]{...}", f"{__name__}.Opaque"),
        (Frozen((1,), Opaque()), "s.inner", f"{__name__}.Opaque"),  # type: ignore[arg-type]
        ({Opaque(): 1}, None, f"{__name__}.Opaque"),
        (OrderedDict(a=1), "s", "collections.OrderedDict"),
        ([enum.Enum("Tmp", "A").A], "s[0]", f"{__name__}.Tmp"),  # type: ignore[attr-defined]
        (object(), "s", "object"),
        (3 + 4j, "s", "complex"),
    ],
)
def test_disallowed_values_are_rejected(
    ser: Serializer, value: object, path: str | None, type_name: str
) -> None:
    with pytest.raises(UnserializableValueError) as info:
        ser.dumps(value, key="s")
    assert info.value.key == "s"
    assert info.value.type_name == type_name
    if path is not None:
        assert info.value.path == path
        assert path in str(info.value)
    assert type_name in str(info.value)


def test_error_is_a_type_error_and_a_serialization_error(ser: Serializer) -> None:
    with pytest.raises(TypeError):
        ser.dumps(Opaque())
    with pytest.raises(CheckpointError):
        ser.dumps(Opaque())


def test_subclass_of_builtin_explains_exactness(ser: Serializer) -> None:
    with pytest.raises(UnserializableValueError, match="only exact str"):
        ser.dumps(MyStr("x"), key="k")


def test_without_key_the_path_starts_inside_the_value(ser: Serializer) -> None:
    with pytest.raises(UnserializableValueError) as info:
        ser.dumps([0, {"x": Opaque()}])
    assert info.value.key is None and info.value.path == "[1]['x']"


def test_dumps_mapping_names_the_offending_key(ser: Serializer) -> None:
    state = {"ok": [1, 2], "messages": [Msg(text="a"), Inner(a=1, tags=["t"])], "bad": {Opaque()}}
    with pytest.raises(UnserializableValueError) as info:
        ser.dumps_mapping(state)
    assert info.value.key == "bad" and info.value.path == "bad{...}"
    assert "state key 'bad'" in str(info.value)


def test_dumps_mapping_requires_str_keys(ser: Serializer) -> None:
    with pytest.raises(UnserializableValueError, match="state keys must be str") as info:
        ser.dumps_mapping({"a": 1, 2: "b"})  # type: ignore[dict-item]
    assert info.value.type_name == "int"


def test_field_that_cannot_be_read_still_gives_an_unserializable_error(
    ser: Serializer,
) -> None:
    broken = Inner.model_construct(tags=["x"])  # required field "a" never set
    with pytest.raises(UnserializableValueError) as info:
        ser.dumps({"m": broken}, key="k")
    assert info.value.key == "k"


def test_dumps_mapping_round_trip(ser: Serializer) -> None:
    state = {"messages": [Msg(text="a")], "count": 3, "seen": {"x"}}
    assert ser.loads_mapping(ser.dumps_mapping(state)) == state


def test_circular_reference_gives_a_clear_error(ser: Serializer) -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(UnserializableValueError, match="circular reference") as info:
        ser.dumps({"a": loop}, key="k")
    assert info.value.path == "k['a'][0]"
    through_tuple: list[Any] = []
    through_tuple.append((through_tuple,))
    with pytest.raises(UnserializableValueError, match="circular reference"):
        ser.dumps(through_tuple, key="k")


def test_serializer_still_works_after_a_failed_dumps(ser: Serializer) -> None:
    with pytest.raises(UnserializableValueError):
        ser.dumps([Msg(text="a", metadata={"x": [1, Opaque()]})])
    value = [Msg(text="b"), (1, 2)]
    data = ser.dumps(value)
    assert data == Serializer(ser.registry).dumps(value)  # no leftover bytes from the failure
    assert ser.loads(data) == value


def test_large_values_round_trip(ser: Serializer) -> None:
    blob = os.urandom(3 << 20)
    assert roundtrip(ser, (blob, [Inner(a=i) for i in range(1000)])) == (
        blob,
        [Inner(a=i) for i in range(1000)],
    )
    assert roundtrip(ser, (1,)) == (1,)


def test_shared_serializer_is_thread_safe(ser: Serializer) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(200):
                value = {"m": [Msg(text=f"{n}-{i}", inner=Inner(a=i))], "t": (n, i)}
                assert ser.loads(ser.dumps(value)) == value
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# --- registry ----------------------------------------------------------------------------


def test_registry_lookups() -> None:
    reg = TypeRegistry()
    assert reg.register(Inner) is Inner
    reg.register(Color, name="app.Color")
    assert reg.is_registered(Inner) and Inner in reg and len(reg) == 2
    assert not reg.is_registered(Msg) and Msg not in reg
    assert reg.name_of(Inner) == f"{__name__}.Inner"
    assert reg.name_of(Color) == "app.Color" and reg.name_of(Msg) is None
    assert reg.class_for("app.Color") is Color and reg.class_for("nope") is None


def test_registering_again_is_a_no_op() -> None:
    reg = TypeRegistry()
    reg.register(Inner)
    reg.register(Inner)
    reg.register(Point, name="p")
    reg.register(Point, name="p")
    assert len(reg) == 2


def test_name_taken_by_another_class_names_both() -> None:
    reg = TypeRegistry()
    reg.register(Inner, name="shared")
    with pytest.raises(ValueError, match="shared") as info:
        reg.register(Point, name="shared")
    assert f"{__name__}.Inner" in str(info.value) and f"{__name__}.Point" in str(info.value)
    assert reg.class_for("shared") is Inner


def test_same_class_under_a_second_name_is_rejected() -> None:
    reg = TypeRegistry()
    reg.register(Inner, name="one")
    with pytest.raises(ValueError, match="already registered as 'one'"):
        reg.register(Inner, name="two")


@pytest.mark.parametrize("bad", [Opaque, MyStr, int, dict, BaseModel])
def test_only_models_dataclasses_and_enums_can_be_registered(bad: type) -> None:
    with pytest.raises(TypeError, match="pydantic BaseModel subclasses, dataclasses"):
        TypeRegistry().register(bad)


def test_registering_an_instance_or_empty_name_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="expects a class"):
        TypeRegistry().register(Inner(a=1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="non-empty"):
        TypeRegistry().register(Inner, name="")


def test_register_type_decorator_forms() -> None:
    reg = TypeRegistry()

    @register_type(registry=reg)
    class A(BaseModel):
        v: int

    @register_type(name="custom.B", registry=reg)
    @dataclasses.dataclass
    class B:
        v: int

    class C(enum.Enum):
        X = "x"

    assert register_type(C, registry=reg) is C
    assert A.__name__ == "A" and reg.name_of(A) == f"{A.__module__}.{A.__qualname__}"
    assert reg.class_for("custom.B") is B and reg.is_registered(C)
    ser = Serializer(reg)
    assert roundtrip(ser, [A(v=1), B(2), C.X]) == [A(v=1), B(2), C.X]


@register_type
class _DefaultRegistered(BaseModel):
    v: int


@register_type(name="tests.checkpoint.test_serde.renamed")
@dataclasses.dataclass
class _DefaultRenamed:
    v: int


def test_register_type_uses_the_default_registry() -> None:
    assert default_registry.is_registered(_DefaultRegistered)
    assert default_registry.class_for("tests.checkpoint.test_serde.renamed") is _DefaultRenamed
    assert default_serializer.registry is default_registry
    assert Serializer().registry is default_registry
    value = [_DefaultRegistered(v=1), _DefaultRenamed(2)]
    assert default_serializer.loads(default_serializer.dumps(value)) == value


def test_two_registries_do_not_see_each_others_types() -> None:
    r1, r2 = TypeRegistry(), TypeRegistry()
    r1.register(Inner)
    r2.register(Point)
    s1, s2 = Serializer(r1), Serializer(r2)
    with pytest.raises(UnserializableValueError):
        s2.dumps(Inner(a=1), key="k")
    with pytest.raises(UnserializableValueError):
        s1.dumps(Point(1, 2), key="k")
    with pytest.raises(SerializationError, match=f"'{__name__}.Inner'"):
        s2.loads(s1.dumps(Inner(a=1)))
    assert not default_registry.is_registered(Inner)


# --- bytes that are not valid ------------------------------------------------------------


def _ext(code: int, payload: object) -> bytes:
    return msgpack.packb(msgpack.ExtType(code, msgpack.packb(payload)))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xc1",  # a byte msgpack never uses
        b"\x92\x01",  # array of 2 with only one item
        b"\xda\x00\x10abc",  # str16 announcing 16 bytes, 3 present
        b"\x01\x02",  # trailing data
        b"not msgpack at all",
        _ext(99, 1),  # unknown ext code
        _ext(1, 5),  # tuple payload that is not an array
        _ext(2, [[1]]),  # set of an unhashable member
        _ext(4, [2024, 1]),  # datetime with too few parts
        _ext(4, [2024, 13, 1, 0, 0, 0, 0, 0, None]),  # month 13
        _ext(4, [2024, 1, 1, 0, 0, 0, 0, 0, 10**12]),  # offset out of range
        _ext(8, b"short"),  # UUID of the wrong length
        _ext(9, "not a number"),
        _ext(9, 5),
        _ext(10, []),
        _ext(10, [5, {}, None]),
        b"\x81\x91\x01\x02",  # map with an array (unhashable) key
    ],
)
def test_corrupt_bytes_raise_serialization_error(ser: Serializer, data: bytes) -> None:
    with pytest.raises(SerializationError):
        ser.loads(data)


def test_truncated_checkpoint_raises_serialization_error(ser: Serializer) -> None:
    data = ser.dumps({"messages": [Msg(text="hello", inner=Inner(a=1))], "t": (1, 2)})
    for cut in range(1, len(data)):
        with pytest.raises(SerializationError):
            ser.loads(data[:cut])


def test_trailing_data_is_reported(ser: Serializer) -> None:
    with pytest.raises(SerializationError, match="unexpected bytes after the value"):
        ser.loads(ser.dumps([1, 2]) + b"\x00")


def test_unknown_type_name_is_named_in_the_error(ser: Serializer) -> None:
    data = _ext(10, ["app.Missing", {"a": 1}, None])
    with pytest.raises(SerializationError, match=r"'app\.Missing'.*register"):
        ser.loads(data)


def test_failed_rebuild_is_wrapped_and_chained(ser: Serializer) -> None:
    name = f"{__name__}.Inner"
    with pytest.raises(SerializationError, match="could not rebuild") as info:
        ser.loads(_ext(10, [name, {"a": "not an int"}, None]))
    assert info.value.__cause__ is not None
    assert type(info.value.__cause__).__name__ == "ValidationError"
    with pytest.raises(SerializationError, match="Point") as info:
        ser.loads(_ext(11, [f"{__name__}.Point", {"x": 1}]))
    assert isinstance(info.value.__cause__, TypeError)
    with pytest.raises(SerializationError, match="Color"):
        ser.loads(_ext(12, [f"{__name__}.Color", 42]))


def test_kind_mismatch_is_rejected(ser: Serializer) -> None:
    with pytest.raises(SerializationError, match="registered as an enum"):
        ser.loads(_ext(10, [f"{__name__}.Color", {}, None]))


def test_loads_mapping_rejects_non_mappings(ser: Serializer) -> None:
    with pytest.raises(SerializationError, match="mapping"):
        ser.loads_mapping(ser.dumps([1, 2]))
    with pytest.raises(SerializationError, match="mapping"):
        ser.loads_mapping(ser.dumps({1: 2}))


def test_loads_requires_bytes(ser: Serializer) -> None:
    with pytest.raises(TypeError):
        ser.loads("text")  # type: ignore[arg-type]
    assert ser.loads(bytearray(ser.dumps([1]))) == [1]  # type: ignore[arg-type]


def test_deeply_nested_ext_payload_fails_cleanly(ser: Serializer) -> None:
    data = msgpack.packb(1)
    for _ in range(5000):
        data = msgpack.packb(msgpack.ExtType(1, msgpack.packb([msgpack.ExtType(1, data)])))
    with pytest.raises(SerializationError):
        ser.loads(data)


def test_msgpack_timestamp_ext_loads_as_aware_datetime(ser: Serializer) -> None:
    when = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    data = msgpack.packb(msgpack.Timestamp.from_datetime(when))
    assert ser.loads(data) == when


# --- security ----------------------------------------------------------------------------


class _Exploit:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_stored_bytes_cannot_run_code(
    ser: Serializer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Exploit(marker))
    pickles = [
        pickle.dumps(_Exploit(marker), protocol=p) for p in range(pickle.HIGHEST_PROTOCOL + 1)
    ]

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("loads must never unpickle, import or eval")

    modules_before = set(sys.modules)
    with monkeypatch.context() as m:
        m.setattr(pickle, "loads", forbidden)
        m.setattr(pickle, "load", forbidden)
        m.setattr(os, "system", forbidden)
        for data in pickles:
            with pytest.raises(SerializationError):
                ser.loads(data)
        assert ser.loads(msgpack.packb(payload)) == payload  # pickle bytes are just bytes
        assert ser.loads(ser.dumps({"p": payload})) == {"p": payload}
        for code in (10, 11, 12):
            for name in ("os.system", "builtins.eval", "posix.system", "subprocess.Popen"):
                body = [name, {"command": f"touch {marker}"}, None][: 3 if code == 10 else 2]
                with pytest.raises(SerializationError, match="not registered"):
                    ser.loads(_ext(code, body))
                with pytest.raises(SerializationError, match="not registered"):
                    ser.loads(_ext(code, [name, f"touch {marker}"]))
    assert not marker.exists()
    assert set(sys.modules) - modules_before == set()


def _generic_bytes(registry: TypeRegistry, value: object) -> bytes:
    """``value`` packed the plain way (an ext per registered model and per tuple, each
    payload packed on its own): what the serializer's fast paths must reproduce."""

    def pack(obj: object) -> bytes:
        return msgpack.packb(obj, default=default, use_bin_type=True, strict_types=True)

    def default(obj: object) -> msgpack.ExtType:
        if type(obj) is tuple:
            return msgpack.ExtType(1, pack(list(obj)))
        if type(obj) is Decimal:
            return msgpack.ExtType(9, pack(str(obj)))
        assert isinstance(obj, BaseModel)
        name = registry.name_of(type(obj))
        return msgpack.ExtType(10, pack([name, dict(obj.__dict__), obj.__pydantic_extra__]))

    return pack(value)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 8, 12, 60, 200, 300, 70_000])
def test_tuples_of_models_pack_as_the_generic_encoder_does(
    ser: Serializer, registry: TypeRegistry, n: int
) -> None:
    # payload sizes around every msgpack ext header (fixext 4/8/16, ext 8/16/32)
    for size in range(n, n + 6):
        tags = tuple(Tag(name="x" * size) for _ in range(1 + size % 3))
        for value in (tags, [tags, ()], {"k": (tags, Loose(x=1, y=tags))}, tuple(tags) * 6):
            assert ser.dumps(value) == _generic_bytes(registry, value)
            assert ser.loads(ser.dumps(value)) == value


class Tiny(BaseModel):
    model_config = ConfigDict(frozen=True)

    s: str


def test_tuples_of_models_at_every_ext_header_size() -> None:
    registry = TypeRegistry()
    registry.register(Tiny, name="T")  # payload: 8 bytes + len(s): fixext 8 and 16 too
    ser = Serializer(registry)
    for size in [*range(20), *range(240, 260), *range(65_520, 65_540)]:
        value = (Tiny(s="x" * size), Tiny(s="y"))
        assert ser.dumps(value) == _generic_bytes(registry, value)
        assert ser.loads(ser.dumps(value)) == value


def test_a_registry_with_a_parent_allows_the_parents_types_registered_later_too() -> None:
    parent = TypeRegistry()
    child = TypeRegistry(parent=parent)

    @dataclasses.dataclass
    class Own:
        x: int

    @dataclasses.dataclass
    class Later:
        y: str

    child.register(Own, name="lib.Own")
    parent.register(Later, name="app.Later")  # after the child was made
    serializer = Serializer(child)
    assert serializer.loads(serializer.dumps([Own(1), Later("a")])) == [Own(1), Later("a")]
    assert Own not in parent  # the child's own types stay its own
    with pytest.raises(UnserializableValueError):
        Serializer(parent).dumps(Own(1))

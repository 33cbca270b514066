"""Faithful round trips (issue 12): ints beyond 64 bits, time zones kept by key, tuples kept as
tuples however deep, and bytes made by earlier versions of the serializer still loading."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from zoneinfo import ZoneInfo

import msgpack
import pytest

from checkpoint.errors import SerializationError
from checkpoint.serde import Serializer, TypeRegistry

from .test_serde import ALL_TYPES, Color, Frozen, Inner, Mode, Msg, Point, roundtrip


@pytest.fixture
def ser() -> Serializer:
    registry = TypeRegistry()
    for cls in ALL_TYPES:
        registry.register(cls)
    return Serializer(registry)


# --- ints ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "big",
    [2**64, -(2**63) - 1, 10**100, -(10**100), 2**64 - 1 + 2**200, -(2**512)],
    ids=["2**64", "-2**63-1", "10**100", "-10**100", "2**200+2**64-1", "-2**512"],
)
def test_ints_beyond_64_bits_round_trip(ser: Serializer, big: int) -> None:
    out = roundtrip(ser, {"n": [big, (big,)], big: "as a key"})
    assert out == {"n": [big, (big,)], big: "as a key"}
    assert type(out["n"][0]) is int and type(out["n"][1]) is tuple


def test_ints_at_the_64_bit_edges_stay_native(ser: Serializer) -> None:
    for n in (2**64 - 1, -(2**63)):
        assert msgpack.unpackb(ser.dumps(n)) == n  # plain msgpack, no ext type
    assert ser.loads(ser.dumps(2**64)) == 2**64


# --- time zones ----------------------------------------------------------------------------


def test_a_zoneinfo_datetime_keeps_its_zone_across_a_dst_boundary(ser: Serializer) -> None:
    paris = ZoneInfo("Europe/Paris")
    before = dt.datetime(2024, 3, 30, 12, 0, tzinfo=paris)  # the day before summer time
    out = roundtrip(ser, before)
    assert isinstance(out.tzinfo, ZoneInfo) and out.tzinfo.key == "Europe/Paris"
    assert out == before and out.utcoffset() == dt.timedelta(hours=1)
    next_day = out + dt.timedelta(days=1)  # wall-clock arithmetic across the change
    assert next_day.utcoffset() == dt.timedelta(hours=2)
    assert next_day == before + dt.timedelta(days=1)
    utc = dt.timezone.utc
    assert next_day.astimezone(utc) - out.astimezone(utc) == dt.timedelta(hours=23)


def test_a_zoneinfo_datetime_keeps_its_fold(ser: Serializer) -> None:
    new_york = ZoneInfo("America/New_York")
    second = dt.datetime(2024, 11, 3, 1, 30, fold=1, tzinfo=new_york)  # 1:30 happens twice
    out = roundtrip(ser, second)
    assert out.fold == 1 and out.utcoffset() == dt.timedelta(hours=-5)
    assert out.tzinfo is new_york


def test_an_aware_time_keeps_its_tzinfo(ser: Serializer) -> None:
    named = dt.timezone(dt.timedelta(hours=1), "CET")
    values = [
        dt.time(8, 15, tzinfo=ZoneInfo("Asia/Kolkata")),
        dt.time(9, 0, tzinfo=named),
        dt.time(7, 0, tzinfo=dt.timezone.utc),
    ]
    out = roundtrip(ser, values)
    assert [t.tzinfo for t in out] == [ZoneInfo("Asia/Kolkata"), named, dt.timezone.utc]
    assert out[1].tzname() == "CET" and out == values


def test_a_named_fixed_offset_keeps_its_name(ser: Serializer) -> None:
    value = dt.datetime(2024, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-5), "EST"))
    out = roundtrip(ser, value)
    assert out.tzname() == "EST" and out.utcoffset() == dt.timedelta(hours=-5)


def test_a_zone_unknown_here_loads_as_its_offset(ser: Serializer) -> None:
    stored = ser.dumps(dt.datetime(2024, 7, 1, 12, tzinfo=ZoneInfo("Europe/Paris")))
    moved = stored.replace(b"Europe/Paris", b"Europe/Nowhr")
    out = ser.loads(moved)
    assert out.utcoffset() == dt.timedelta(hours=2) and out.hour == 12


@pytest.mark.parametrize("key", ["../../etc/passwd", "/etc/localtime", "a b", ""])
def test_a_zone_key_that_is_not_one_is_corrupt_data(ser: Serializer, key: str) -> None:
    stored = ser.dumps(dt.datetime(2024, 7, 1, 12, tzinfo=ZoneInfo("UTC")))
    payload = msgpack.unpackb(msgpack.unpackb(stored).data)
    payload[-1] = key
    bad = msgpack.packb(msgpack.ExtType(4, msgpack.packb(payload)))
    with pytest.raises(SerializationError, match="time zone"):
        ser.loads(bad)


# --- tuples --------------------------------------------------------------------------------


def test_tuples_stay_tuples_nested_and_inside_lists_and_dicts(ser: Serializer) -> None:
    value = {
        "pair": (1, 2),
        "nested": ((1, (2, (3,))), ()),
        "in_list": [(1, "a"), [(2,), ((3, 4),)]],
        "in_dict": {"k": ({"x": (5,)},)},
        "in_model": Frozen((1, 2), Inner(a=1)),
    }
    out = roundtrip(ser, value)
    assert out == value
    assert type(out["nested"][0][1][1]) is tuple and type(out["in_list"][1][1][0]) is tuple
    assert type(out["in_dict"]["k"][0]["x"]) is tuple and type(out["in_model"].items) is tuple


# --- bytes made by earlier versions still load ---------------------------------------------

# dumps_mapping of the value below, made by the serializer before zone keys and big ints:
# its datetimes then carried only their UTC offset.
OLD_BYTES = bytes.fromhex(
    "de0012a57061726973c7180499cd07e807010c1e00ce0001e24000cf00000001ad274800a3757463"
    "c70c0499cd07e80101000000000000a56e61697665c70c0499cd07e80b03011e000001c0a474696d"
    "65c70f0696080f000000cf000000049c2c0600aa6e616976655f74696d65c70b0696173b3bce000f"
    "423f00c0a464617465c70505ce000b4681a564656c7461d60793fd0507a57475706c65c70c019201"
    "d70192029203d5019104a3736574c70302920102a666726f7a656ec7030391a161a475756964c712"
    "08c41000000000000000000000000000000007a3646563c70509a4312e3130a56279746573c40200"
    "ffa4696e747392cfffffffffffffffffd38000000000000000a36d7367c78b0a93bf74657374732e"
    "636865636b706f696e742e746573745f73657264652e4d736785a474657874a161a5696e6e6572c7"
    "310a93d92174657374732e636865636b706f696e742e746573745f73657264652e496e6e657282a1"
    "6101a47461677391a174c0a7686973746f727990a86d6574616461746180a47768656ec70c0499cd"
    "07e80101000000000000c0a5706f696e74c7330b92d92174657374732e636865636b706f696e742e"
    "746573745f73657264652e506f696e7483a17801a179fea56c6162656ca170a5636f6c6f72c72c0c"
    "92d92174657374732e636865636b706f696e742e746573745f73657264652e436f6c6f72c7050193"
    "00ccff00a46d6f6465c7280c92d92074657374732e636865636b706f696e742e746573745f736572"
    "64652e4d6f6465a466617374"
)


def test_bytes_made_by_earlier_versions_still_load(ser: Serializer) -> None:
    out = ser.loads_mapping(OLD_BYTES)
    plus_two = dt.timezone(dt.timedelta(hours=2))
    assert out == {
        "paris": dt.datetime(2024, 7, 1, 12, 30, 0, 123456, tzinfo=plus_two),
        "utc": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
        "naive": dt.datetime(2024, 11, 3, 1, 30, fold=1),
        "time": dt.time(8, 15, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
        "naive_time": dt.time(23, 59, 59, 999999),
        "date": dt.date(2024, 2, 29),
        "delta": dt.timedelta(days=-3, seconds=5, microseconds=7),
        "tuple": (1, (2, [3, (4,)])),
        "set": {1, 2},
        "frozen": frozenset({"a"}),
        "uuid": uuid.UUID(int=7),
        "dec": Decimal("1.10"),
        "bytes": b"\x00\xff",
        "ints": [2**64 - 1, -(2**63)],
        "msg": Msg(
            text="a",
            inner=Inner(a=1, tags=["t"]),
            when=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
        ),
        "point": Point(1, -2),
        "color": Color.GREEN,
        "mode": Mode.FAST,
    }
    assert out["paris"].tzinfo == plus_two and out["naive"].fold == 1
    assert type(out["tuple"][1][1][1]) is tuple and out["time"].tzinfo is not None

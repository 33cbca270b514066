"""The time zone of a stored ``datetime`` or ``time`` (``checkpoint.serde``'s ext codes 4 and 6):
its UTC offset in microseconds, and what its tzinfo says besides (a ``ZoneInfo`` key, a named
``timezone``'s name), and the tzinfo they describe when it is read back."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any
from zoneinfo import ZoneInfo

from checkpoint.errors import SerializationError

__all__ = ["offset_us", "tz_of", "zone_of"]


def offset_us(value: _dt.datetime | _dt.time) -> int | None:
    """The value's UTC offset in microseconds; ``None`` when it is naive."""
    offset = value.utcoffset()
    return None if offset is None else offset // _dt.timedelta(microseconds=1)


def _tz(offset: int | None) -> _dt.timezone | None:
    if offset is None:
        return None
    return _dt.timezone(_dt.timedelta(microseconds=offset))


# The shape of an IANA zone key ("Europe/Paris", "Etc/GMT+5", "America/Port-au-Prince").
_ZONE_KEY = re.compile(r"[A-Za-z0-9_+\-]{1,64}(?:/[A-Za-z0-9_+\-]{1,64}){0,3}")


def zone_of(tz: _dt.tzinfo | None) -> list[Any]:
    """What a tzinfo says besides its offset: ``[key]`` of a ZoneInfo, ``[[name]]`` of a
    named ``timezone``; ``[]`` when the offset says it all."""
    if isinstance(tz, ZoneInfo):
        return [] if tz.key is None else [tz.key]
    if type(tz) is _dt.timezone:
        name = tz.tzname(None)
        if name != _dt.timezone(tz.utcoffset(None)).tzname(None):
            return [[name]]
    return []


def tz_of(offset: int | None, zone: list[Any]) -> _dt.tzinfo | None:
    """The tzinfo a stored offset (microseconds) and zone describe."""
    if not zone:
        return _tz(offset)
    if len(zone) != 1:
        raise SerializationError(f"corrupt time zone in checkpoint data: {zone!r}")
    (spec,) = zone
    if type(spec) is list and len(spec) == 1 and type(spec[0]) is str and offset is not None:
        return _dt.timezone(_dt.timedelta(microseconds=offset), spec[0])
    if type(spec) is not str or not _ZONE_KEY.fullmatch(spec):
        raise SerializationError(f"corrupt time zone in checkpoint data: {spec!r}")
    try:
        return ZoneInfo(spec)
    except (KeyError, ValueError, OSError):  # unknown here: keep the instant, as its offset
        return _tz(offset)

"""A run's log entries as bytes, for a store that keeps them beyond the process (a SQLite
file, a Redis Stream), and back.

The log is protocol-neutral: its data are the run's own objects (``graph_agent.events``
events, the thread's ``StateSnapshot`` at its checkpoints, the error it failed with). They
are packed by the checkpoint serializer (msgpack and a registry of allowed types, never
pickle), so what a thread's checkpoints can hold, its run's log can, and whatever protocol
reads it gets the same objects back. Two things do not travel as they are:

- an error becomes a ``RecordedError`` of the same class name whose message is the one a
  client may be shown (``error_text``: a third party's message is hidden, here already);
- a value the serializer refuses (an object a node handed to ``emit()`` that no registry
  knows) is kept as plain data (a dict, a list, its ``str``), not dropped.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from checkpoint.errors import UnserializableValueError
from checkpoint.serde import Serializer, TypeRegistry, default_registry

from ..events import EVENT_TYPES
from ..graph import Command, Interrupt, Send, StateSnapshot
from ..models.types import Usage
from ._shown import error_text
from .errors import RecordedError

__all__ = ["dump_data", "load_data"]

_log = logging.getLogger("graph_agent.runs")


@dataclasses.dataclass(frozen=True)
class _ErrorNote:
    name: str
    message: str


@dataclasses.dataclass(frozen=True)
class _CommandNote:
    resume: Any
    has_resume: bool
    update: Any
    goto: Any
    graph: str | None


@dataclasses.dataclass(frozen=True)
class _SendNote:
    node: str
    arg: Any


# Ours, on top of the default registry (messages, and the types users register there).
_registry = TypeRegistry(parent=default_registry)
for _cls in (*EVENT_TYPES, StateSnapshot, Interrupt, Usage, _ErrorNote, _CommandNote, _SendNote):
    _registry.register(_cls, name=f"graph_agent.log.{_cls.__name__}")
_serializer = Serializer(_registry)
_OURS = frozenset((*EVENT_TYPES, StateSnapshot))

_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _OURS}
# what holds nothing to note: returned as it is, without a look inside (messages are models)
_PLAIN = frozenset({str, int, float, bool, bytes, type(None)})

_RECORDED: dict[str, type[RecordedError]] = {}
_MAX_RECORDED_CLASSES = 256


def _recorded(note: _ErrorNote) -> RecordedError:
    cls = _RECORDED.get(note.name)
    if cls is None:
        if len(_RECORDED) >= _MAX_RECORDED_CLASSES or not note.name.isidentifier():
            return RecordedError(note.message)
        cls = type(note.name, (RecordedError,), {"__module__": RecordedError.__module__})
        _RECORDED[note.name] = cls
    return cls(note.message)


def _each_field(value: Any, convert: Callable[[Any], Any]) -> Any:
    """``value`` (an event or a snapshot) with ``convert`` applied to each field (itself
    when nothing changed)."""
    changes = {}
    for name in _FIELDS[type(value)]:
        item = getattr(value, name)
        converted = convert(item)
        if converted is not item:
            changes[name] = converted
    return dataclasses.replace(value, **changes) if changes else value


def _portable(value: Any) -> Any:
    """``value`` with what the serializer cannot take as it is replaced by a note of it:
    errors, commands, sends, mappings that are not dicts (a state's values)."""
    cls = type(value)
    if cls in _PLAIN or isinstance(value, BaseModel):
        return value
    if cls in _OURS:
        return _each_field(value, _portable)
    if isinstance(value, BaseException):
        return _ErrorNote(cls.__name__, error_text(value))
    if isinstance(value, Command):
        resume = value.resume if value.has_resume else None
        goto = _portable(value.goto)
        return _CommandNote(
            _portable(resume), value.has_resume, _portable(value.update), goto, value.graph
        )
    if isinstance(value, Send):
        return _SendNote(value.node, _portable(value.arg))
    if cls is tuple or cls is list:
        items = [_portable(item) for item in value]
        if any(a is not b for a, b in zip(items, value)):
            return cls(items)
        return value
    if isinstance(value, Mapping):
        plain = {k: _portable(v) for k, v in value.items()}
        if cls is dict and all(plain[k] is value[k] for k in plain):
            return value
        return plain
    return value


def _restored(value: Any) -> Any:
    """``_portable`` undone: each note is what it noted again (an error a ``RecordedError``)."""
    cls = type(value)
    if cls in _PLAIN or isinstance(value, BaseModel):
        return value
    if cls in _OURS:
        return _each_field(value, _restored)
    if cls is _ErrorNote:
        return _recorded(value)
    if cls is _CommandNote:
        kwargs: dict[str, Any] = {"update": _restored(value.update), "goto": _restored(value.goto)}
        if value.has_resume:
            kwargs["resume"] = _restored(value.resume)
        return Command(graph=value.graph, **kwargs)
    if cls is _SendNote:
        return Send(value.node, _restored(value.arg))
    if cls is tuple or cls is list:
        items = [_restored(item) for item in value]
        return cls(items) if any(a is not b for a, b in zip(items, value)) else value
    if cls is dict:
        back = {k: _restored(v) for k, v in value.items()}
        return back if any(back[k] is not value[k] for k in back) else value
    return value


def _packs(value: Any) -> bool:
    try:
        _serializer.dumps(value)
    except UnserializableValueError:
        return False
    return True


def _plain(value: Any) -> Any:
    """``value`` as data the serializer takes: as it is where it can, else, part by part,
    a dict, a list, or its ``str``."""
    if _packs(value):
        return value
    if type(value) in _OURS:
        return dataclasses.replace(
            value, **{f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        )
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(item) for item in value]
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


def dump_data(data: Any) -> bytes:
    """``data`` (a log entry's) as bytes ``load_data`` reads back."""
    portable = _portable(data)
    try:
        return _serializer.dumps(portable)
    except UnserializableValueError as error:
        _log.debug("a run log entry kept as plain data: %s", error)
        return _serializer.dumps(_plain(portable))


def load_data(blob: bytes) -> Any:
    """What ``dump_data`` made ``blob`` of."""
    return _restored(_serializer.loads(blob))

"""Merging node updates into the state, and recording what changed for the saver."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from checkpoint import CheckpointDelta

from ..errors import InvalidUpdateError
from .state import KeyStrategy, KeyStrategyLike, Overwrite, Updates


class DeltaTracker:
    """What changed since the last checkpoint: new items of APPEND keys, names of other keys.

    ``replaced`` is a dict of names to ``None``, not a set: a dict of strings is not tracked by
    the garbage collector, a set always is (and one lives in every run for as long as it
    lasts)."""

    __slots__ = ("appended", "replaced")

    def __init__(self) -> None:
        self.appended: dict[str, list[Any]] = {}
        self.replaced: dict[str, None] = {}

    def append(self, key: str, items: Sequence[Any]) -> None:
        if key in self.replaced:
            return  # the whole current value is written anyway
        pending = self.appended.get(key)
        if pending is None:
            self.appended[key] = list(items)
        else:
            pending.extend(items)

    def replace(self, key: str) -> None:
        self.replaced[key] = None
        self.appended.pop(key, None)

    def absorb(self, other: DeltaTracker) -> None:
        """Add what ``other`` recorded (a step's changes, once the whole step merged)."""
        for key in other.replaced:
            self.replace(key)
        for key, items in other.appended.items():
            self.append(key, items)

    def take(self, values: Mapping[str, Any]) -> CheckpointDelta:
        """The delta up to now, against ``values`` (the current state); then start afresh."""
        delta = CheckpointDelta(
            appended=self.appended, replaced={key: values[key] for key in self.replaced}
        )
        self.appended = {}
        self.replaced = {}
        return delta


WRITER_LABELS = {
    "__input__": "the input",
    "__resume__": "Command(update=...)",
    "__update__": "update_state()",
}


def _who(writer: str) -> str:
    return WRITER_LABELS.get(writer) or f"node '{writer}'"


def _conflict(first: str, second: str, key: str, overwrite: bool) -> InvalidUpdateError:
    how = "one of them with Overwrite" if overwrite else "and the key is REPLACE"
    return InvalidUpdateError(
        f"{_who(first)} and {_who(second)} both wrote key {key!r} in the same super-step, "
        f"{how}, so one write would be lost. Give the key a merging strategy (e.g. "
        "KeyStrategy.APPEND or a callable) in StateGraph(key_strategies=...), or let one "
        "node write it",
        node=second,
        key=key,
    )


def _gave(writer: str) -> str:
    return "was given" if writer in WRITER_LABELS else "returned"


def _describe(value: Any) -> str:
    return type(value).__name__


class Merging:
    """One ``merge_updates`` under way: the state it makes (``merged``), what changed
    (``tracker``), and the APPEND lists it made (``fresh``: while ``merged`` holds one, later
    writers extend it in place; copying it for each of a fan-out's writers is O(width^2))."""

    __slots__ = ("fresh", "merged", "tracker")

    def __init__(self, merged: dict[str, Any], tracker: DeltaTracker) -> None:
        self.merged = merged
        self.tracker = tracker
        self.fresh: dict[str, list[Any]] = {}


class KeyRule:
    """What a key strategy means, in the three places the engine needs it: ``merge`` a
    write into the state, ``combine`` two writes of one node (what it is shown to have
    written), and ``written``: what a subgraph wrote to the key, from its values before
    and after. ``KEY_RULES`` holds one per ``KeyStrategy``; a callable strategy gets a
    ``_Fold`` (``rule_of``). This class is REPLACE's: the new value wins."""

    __slots__ = ()

    def merge(self, into: Merging, key: str, value: Any, writer: str) -> None:
        """Merge ``value``, written by ``writer``, into ``into.merged[key]``. ``_merge_one``
        does REPLACE's inline: the hot path of every node write."""
        into.merged[key] = value
        into.tracker.replace(key)

    def combine(self, old: Any, value: Any) -> Any:
        """``old`` and then ``value`` written by one node, as one write."""
        return value

    def written(self, old: Any, value: Any) -> Any:
        """What a child run wrote to the key, whose value went from ``old`` (``MISSING``: it
        had none) to ``value`` (not ``old`` itself); ``UNCHANGED`` for nothing."""
        return value if old is MISSING or old != value else UNCHANGED


MISSING: Any = object()  # ``KeyRule.written``: the key had no value before
UNCHANGED: Any = object()  # ``KeyRule.written``: nothing to write


class _Merged(KeyRule):
    """A key merged any other way than REPLACE: a child run's write to it is its whole
    value, as an ``Overwrite`` (merging it again in the parent would count the child's own
    merge twice)."""

    __slots__ = ()

    def written(self, old: Any, value: Any) -> Any:
        return Overwrite(value) if old is MISSING or old != value else UNCHANGED


class _Append(KeyRule):
    """APPEND: the items join the key's list (a single non-list item is one item)."""

    __slots__ = ()

    def merge(self, into: Merging, key: str, value: Any, writer: str) -> None:
        merged, fresh = into.merged, into.fresh
        items = value if isinstance(value, (list, tuple)) else (value,)
        old = merged.get(key)
        made = fresh.get(key)
        if old is made and made is not None:
            made.extend(items)
        elif old is None:
            merged[key] = fresh[key] = list(items)
        elif isinstance(old, list):
            merged[key] = fresh[key] = old + list(items)
        else:
            raise InvalidUpdateError(
                f"{_who(writer)} appended to key {key!r}, whose current value is a "
                f"{_describe(old)}, not a list; APPEND keys must hold lists",
                node=writer,
                key=key,
            )
        into.tracker.append(key, items)

    def combine(self, old: Any, value: Any) -> Any:
        return [*_items(old), *_items(value)]

    def written(self, old: Any, value: Any) -> Any:
        if isinstance(old, list) and isinstance(value, list):
            n = len(old)
            if len(value) >= n and all(a is b or a == b for a, b in zip(old, value)):
                return value[n:] if len(value) > n else UNCHANGED
        if old is MISSING:
            return value
        return Overwrite(value) if old != value else UNCHANGED


class _Merge(_Merged):
    """MERGE: the entries update the key's dict."""

    __slots__ = ()

    def merge(self, into: Merging, key: str, value: Any, writer: str) -> None:
        if not isinstance(value, Mapping):
            raise InvalidUpdateError(
                f"{_who(writer)} wrote a {_describe(value)} to MERGE key {key!r}; a MERGE "
                "key takes a dict of entries to update",
                node=writer,
                key=key,
            )
        merged = into.merged
        old = merged.get(key)
        if old is not None and not isinstance(old, Mapping):
            raise InvalidUpdateError(
                f"{_who(writer)} merged into key {key!r}, whose current value is a "
                f"{_describe(old)}, not a dict",
                node=writer,
                key=key,
            )
        merged[key] = {**old, **value} if old else dict(value)
        into.tracker.replace(key)

    def combine(self, old: Any, value: Any) -> Any:
        return {**old, **value}


class _Fold(_Merged):
    """A callable strategy ``(old, new) -> merged``."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any, Any], Any]) -> None:
        self.fn = fn

    def merge(self, into: Merging, key: str, value: Any, writer: str) -> None:
        merged = into.merged
        try:
            merged[key] = self.fn(merged.get(key), value)
        except Exception as exc:
            raise InvalidUpdateError(
                f"the key strategy of {key!r} failed on the update from {_who(writer)}: "
                f"{type(exc).__name__}: {exc}",
                node=writer,
                key=key,
            ) from exc
        into.tracker.replace(key)

    def combine(self, old: Any, value: Any) -> Any:
        try:
            return self.fn(old, value)
        except Exception:  # shown as written; the merge itself reports failures
            return value


KEY_RULES: dict[KeyStrategy, KeyRule] = {
    KeyStrategy.REPLACE: KeyRule(),
    KeyStrategy.APPEND: _Append(),
    KeyStrategy.MERGE: _Merge(),
}
"""The one table of the key strategies: what each means to the engine."""

REPLACE = KEY_RULES[KeyStrategy.REPLACE]  # a key without a strategy


def rule_of(strategy: KeyStrategyLike) -> KeyRule:
    return KEY_RULES[strategy] if isinstance(strategy, KeyStrategy) else _Fold(strategy)


def rules_of(strategies: Mapping[str, KeyStrategyLike]) -> dict[str, KeyRule]:
    """Each key's rule (a key left out is REPLACE)."""
    return {key: rule_of(strategy) for key, strategy in strategies.items()}


def combined(given: Any, rules: Mapping[str, KeyRule]) -> Any:
    """What a node wrote, as one dict: the parts of an ``Updates`` combined by the key
    strategies (APPEND items joined, MERGE entries merged, a callable strategy folding the
    writes, REPLACE and ``Overwrite``: the last write). Anything else is returned as is."""
    if type(given) is not Updates:
        return given
    out: dict[str, Any] = {}
    for part in given.parts:
        for key, value in (part or {}).items():
            if key not in out:
                out[key] = value
            else:
                out[key] = _joined(rules.get(key, REPLACE), out[key], value)
    return out


def _joined(rule: KeyRule, old: Any, value: Any) -> Any:
    if type(value) is Overwrite or rule is REPLACE:
        return value
    if type(old) is Overwrite:
        return Overwrite(_joined(rule, old.value, value))
    return rule.combine(old, value)


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def merge_updates(
    values: Mapping[str, Any],
    updates: Sequence[tuple[str, Any]],
    rules: Mapping[str, KeyRule],
    tracker: DeltaTracker,
) -> dict[str, Any]:
    """A new state: ``values`` with each ``(writer, update)`` merged in order by key rule.

    ``values`` is not changed. Raises ``InvalidUpdateError`` naming the writer and key for an
    update that is not a dict, a non-str key, two writes to one REPLACE key, an APPEND onto a
    value that is not a list, or a MERGE of something that is not a dict.
    """
    merged = dict(values)
    # A write that replaces a key (REPLACE, Overwrite) cannot share the step with another
    # writer's write to that key: whichever came last would silently win. The writes of one
    # ``Updates`` are one writer's, in order.
    replacing: dict[str, tuple[str, bool, int]] = {}  # key -> (writer, Overwrite?, writer no.)
    merging: dict[str, tuple[str, int]] = {}
    into = Merging(merged, tracker)
    for number, (writer, given) in enumerate(updates):
        parts = given.parts if type(given) is Updates else (given,)
        for update in parts:
            if update is None:
                continue
            if type(update) is not dict and not isinstance(update, Mapping):
                raise InvalidUpdateError(
                    f"{_who(writer)} {_gave(writer)} {_describe(update)}; state updates must be a "
                    "dict (e.g. {'key': value}) or None",
                    node=writer,
                )
            _merge_one(into, writer, number, update, rules, replacing, merging)
    return merged


def _merge_one(
    into: Merging,
    writer: str,
    number: int,
    update: Mapping[str, Any],
    rules: Mapping[str, KeyRule],
    replacing: dict[str, tuple[str, bool, int]],
    merging: dict[str, tuple[str, int]],
) -> None:
    merged, tracker = into.merged, into.tracker
    for key, value in update.items():
        if not isinstance(key, str):
            raise InvalidUpdateError(
                f"{_who(writer)} {_gave(writer)} an update with key {key!r} ({_describe(key)}); "
                "state keys must be str",
                node=writer,
            )
        rule = rules.get(key, REPLACE)
        overwrite = type(value) is Overwrite
        if overwrite or rule is REPLACE:
            first = replacing.get(key)
            if first is not None and first[2] != number:
                raise _conflict(first[0], writer, key, overwrite or first[1])
            other = merging.get(key)
            if other is not None and other[1] != number:
                raise _conflict(other[0], writer, key, overwrite)
            replacing[key] = (writer, overwrite, number)
            # REPLACE's merge (``KeyRule.merge``) inline: the hot path of every node write
            merged[key] = value.value if overwrite else value
            tracker.replace(key)
            continue
        first = replacing.get(key)
        if first is not None and first[2] != number:
            raise _conflict(first[0], writer, key, first[1])
        merging.setdefault(key, (writer, number))
        rule.merge(into, key, value, writer)

"""The detectors and strategies of ``PIIHook``: what counts as personal data of each kind,
and what becomes of it (block, redact, mask, hash); and the hold-back of a streamed text."""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, Union

from .errors import PIIDetectionError

__all__ = [
    "BUILTIN_TYPES",
    "Detector",
    "PIIDetectionError",
    "PIIMatch",
    "PIIStrategy",
    "StreamGuard",
    "apply_strategy",
    "in_json",
    "resolve_detector",
]

PIIStrategy = Literal["block", "redact", "mask", "hash"]
STRATEGIES: tuple[str, ...] = ("block", "redact", "mask", "hash")


@dataclasses.dataclass(frozen=True, slots=True)
class PIIMatch:
    """One piece of personal data found in a text: ``text[start:end]``."""

    start: int
    end: int
    text: str


Detector = Union[str, "re.Pattern[str]", Callable[[str], Iterable[PIIMatch | tuple[int, int]]]]
"""A regex (text or compiled), or a function from a text to its matches (``PIIMatch`` or
``(start, end)`` pairs)."""


_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_IPV4 = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d[\d .-]{5,}\d(?!\w)")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'{}|\\^`\[\]]+[^\s<>\"'{}|\\^`\[\].,;:!?)]")


def luhn_ok(digits: str) -> bool:
    """Whether a run of digits passes the Luhn check (as every card number does)."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        n = int(char)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _regex(pattern: re.Pattern[str], keep: Callable[[str], bool] | None = None) -> _Find:
    def find(text: str) -> list[PIIMatch]:
        found = (PIIMatch(m.start(), m.end(), m.group()) for m in pattern.finditer(text))
        return [m for m in found if keep is None or keep(m.text)]

    return find


def _is_card(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _is_phone(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    return 8 <= len(digits) <= 15 and not _is_ip(text) and not _is_card(text)


def _find_ip(text: str) -> list[PIIMatch]:
    found = _regex(_IPV4, _is_ip)(text) + _regex(_IPV6, _is_ip)(text)
    return sorted(found, key=lambda m: m.start)


_Find = Callable[[str], list[PIIMatch]]

BUILTIN_TYPES: dict[str, _Find] = {
    "email": _regex(_EMAIL),
    "credit_card": _regex(_CARD, _is_card),
    "ip": _find_ip,
    "phone": _regex(_PHONE, _is_phone),
    "url": _regex(_URL),
}


def resolve_detector(pii_type: str, detector: Detector | None) -> _Find:
    """The function finding ``pii_type`` in a text: the built-in one, or ``detector``."""
    if detector is None:
        if pii_type not in BUILTIN_TYPES:
            raise ValueError(
                f"PIIHook: no built-in detector for '{pii_type}' (built-in: "
                f"{', '.join(BUILTIN_TYPES)}); pass detector= a regex or a function"
            )
        return BUILTIN_TYPES[pii_type]
    if isinstance(detector, str):
        try:
            detector = re.compile(detector)
        except re.error as error:
            raise ValueError(
                f"PIIHook '{pii_type}': detector {detector!r} is no regex: {error}"
            ) from None
    if isinstance(detector, re.Pattern):
        return _regex(detector)
    if not callable(detector):
        raise TypeError(
            f"PIIHook '{pii_type}': detector must be a regex or a function text -> matches, "
            f"got {detector!r}"
        )
    function = detector

    def find(text: str) -> list[PIIMatch]:
        matches: list[PIIMatch] = []
        for found in function(text):
            if isinstance(found, PIIMatch):
                matches.append(found)
            else:
                start, end = found
                matches.append(PIIMatch(start, end, text[start:end]))
        return sorted(matches, key=lambda m: m.start)

    return find


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:8]


def _mask(pii_type: str, value: str) -> str:
    if pii_type == "email":
        local, _, domain = value.partition("@")
        return f"{local[:1]}***@{domain}"
    if pii_type in ("credit_card", "phone"):
        digits = sum(c.isdigit() for c in value)
        seen, out = 0, []
        for char in value:
            if char.isdigit():
                seen += 1
                out.append(char if seen > digits - 4 else "*")
            else:
                out.append(char)
        return "".join(out)
    if pii_type == "ip" and "." in value:
        return ".".join([*value.split(".")[:2], "*", "*"])
    return "*" * max(len(value) - 4, 4) + value[-4:] if len(value) > 4 else "****"


def replacement(pii_type: str, strategy: str, value: str) -> str:
    """What ``value`` becomes under ``strategy`` (not ``"block"``)."""
    if strategy == "redact":
        return f"[REDACTED_{pii_type.upper()}]"
    if strategy == "hash":
        return f"<{pii_type}_hash:{_digest(value)}>"
    return _mask(pii_type, value)


def apply_strategy(
    text: str, matches: Sequence[PIIMatch], pii_type: str, strategy: str, direction: str
) -> str:
    """``text`` with each match replaced; ``PIIDetectionError`` when the strategy blocks."""
    if not matches:
        return text
    if strategy == "block":
        raise PIIDetectionError(pii_type, direction, len(matches))
    out: list[str] = []
    at = 0
    for match in matches:
        if match.start < at:  # overlapping matches: the first one wins
            continue
        out.append(text[at : match.start])
        out.append(replacement(pii_type, strategy, text[match.start : match.end]))
        at = match.end
    out.append(text[at:])
    return "".join(out)


def in_json(text: str, clean: Callable[[str], str]) -> str:
    """A JSON text (a tool call's arguments) with ``clean`` applied to each string in it,
    keys too, and to each integer (a card number may come as one; changed, it becomes a
    string): the result is JSON still, and ``text`` itself when nothing changed. A text that
    is not JSON is cleaned as plain text."""
    try:
        value = json.loads(text)
    except ValueError:
        return clean(text)
    changed = [False]

    def walk(item: object) -> object:
        if isinstance(item, str):
            out = clean(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            digits = str(item)
            out = clean(digits)
            if out == digits:
                return item
        elif isinstance(item, dict):
            return {walk(k): walk(v) for k, v in item.items()}
        elif isinstance(item, list):
            return [walk(v) for v in item]
        else:
            return item
        changed[0] = changed[0] or out != item
        return out

    cleaned = walk(value)
    return json.dumps(cleaned, ensure_ascii=False) if changed[0] else text


# A tail that could still grow into a match: a run of digits and separators (a card, a phone
# number, an IP) ending in a run of non-space characters (an email, a URL).
_OPEN_TAIL = re.compile(r"[\d().+\- ]*\S*\Z")


class StreamGuard:
    """Checks a streamed text piece by piece: ``feed`` returns the part that is safe to emit
    (checked and transformed), holding back a tail that could be the start of a match;
    ``flush`` the rest at the end. The emitted pieces join to ``transform(whole text)``."""

    def __init__(self, transform: Callable[[str], str], find: _Find, hold: int = 0) -> None:
        self.transform = transform
        self.find = find
        self.hold = hold
        self.pending = ""

    def feed(self, piece: str) -> str:
        text = self.pending + piece
        tail = _OPEN_TAIL.search(text)
        cut = tail.start() if tail is not None else len(text)
        cut = max(0, cut - self.hold)
        for match in self.find(text):
            if match.start < cut < match.end:
                cut = match.start
        self.pending = text[cut:]
        return self.transform(text[:cut]) if cut else ""

    def flush(self) -> str:
        text, self.pending = self.pending, ""
        return self.transform(text) if text else ""

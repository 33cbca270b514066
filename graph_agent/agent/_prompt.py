"""The agent's system prompt: fixed text, or a template filled from the state per model call.

``system_prompt`` and ``instruction`` may name ``{input}`` and any state key (``{plan}``).
Only ``{identifier}`` is a placeholder, so JSON-like braces in a prompt stay as they are;
``{{`` and ``}}`` are a literal ``{`` and ``}``. ``{input}`` is ``state["input"]`` when the
state has that key, else the text of the last user message (not counting the agent's own
feedback on an invalid structured answer); ``{key}`` is ``str(state[key])``. A prompt without
placeholders is made once, at build: the model node sends the same message every time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import GraphUsageError
from ..messages import SystemMessage, UserMessage
from ._keys import MESSAGES, PRIVATE_KEYS

__all__ = ["PromptTemplate", "system_prompt"]

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FEEDBACK = "output_feedback"  # the metadata of the agent's feedback messages (``_output``)


class _Slot:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class PromptTemplate:
    """A system prompt with placeholders (``placeholders``: their names, in order); ``render``
    fills them from a state. ``suffix`` (the structured-output format instructions) follows
    the filled text as it is."""

    __slots__ = ("agent", "pieces", "placeholders", "suffix")

    def __init__(self, agent: str, pieces: list[str | _Slot], suffix: str | None) -> None:
        self.agent = agent
        self.pieces = pieces
        self.placeholders = tuple(p.name for p in pieces if isinstance(p, _Slot))
        self.suffix = suffix

    def __repr__(self) -> str:
        return f"PromptTemplate(placeholders={list(self.placeholders)!r})"

    def render(self, state: Mapping[str, Any]) -> list[SystemMessage]:
        """The system message for a model call in ``state``."""
        text = "".join(p if isinstance(p, str) else self._value(state, p.name) for p in self.pieces)
        if self.suffix:
            text = f"{text}\n\n{self.suffix}" if text else self.suffix
        return [SystemMessage(text)] if text else []

    def _value(self, state: Mapping[str, Any], name: str) -> str:
        if name in state:
            return str(state.get(name))
        if name == "input":
            for message in reversed(state.get(MESSAGES) or ()):
                if isinstance(message, UserMessage) and not message.metadata.get(_FEEDBACK):
                    return message.text
        keys = sorted(k for k in state if k not in PRIVATE_KEYS)
        where = (
            "neither an 'input' key nor a user message" if name == "input" else f"no '{name}' key"
        )
        raise GraphUsageError(
            f"agent '{self.agent}': its prompt names {{{name}}}, but the state has {where} "
            f"(its keys: {', '.join(keys) or 'none'}); an earlier agent's output_key or the "
            f"input must set it (e.g. agent.call({{'messages': [...], '{name}': ...}})), or "
            f"write {{{{{name}}}}} for literal braces"
        )


def _pieces(text: str) -> list[str | _Slot]:
    pieces: list[str | _Slot] = []
    literal: list[str] = []
    position = 0
    for match in _TOKEN.finditer(text):
        literal.append(text[position : match.start()])
        token = match.group(0)
        if match.group(1) is None:
            literal.append(token[0])  # "{{" -> "{", "}}" -> "}"
        else:
            pieces.append("".join(literal))
            literal = []
            pieces.append(_Slot(match.group(1)))
        position = match.end()
    literal.append(text[position:])
    pieces.append("".join(literal))
    return [p for p in pieces if not (isinstance(p, str) and not p)]


def system_prompt(
    agent: str, text: str | None, suffix: str | None = None
) -> str | PromptTemplate | None:
    """The agent's system prompt: its text when it has no placeholder (``{{``/``}}`` turned
    into braces, ``suffix`` after a blank line), else a ``PromptTemplate``."""
    if not text:
        return suffix or None
    pieces = _pieces(text)
    if any(isinstance(p, _Slot) for p in pieces):
        return PromptTemplate(agent, pieces, suffix)
    fixed = "".join(p for p in pieces if isinstance(p, str))
    if suffix:
        fixed = f"{fixed}\n\n{suffix}" if fixed else suffix
    return fixed or None

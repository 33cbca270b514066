"""The settings of one ``graph-agent chat`` (its command-line options), and their defaults."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_SAVER", "DEFAULT_THREAD", "ChatOptions"]

DEFAULT_SAVER = "sqlite:~/.graph-agent/chat.sqlite"
DEFAULT_THREAD = "chat"


@dataclass(frozen=True)
class ChatOptions:
    """What ``graph-agent chat`` was told; ``None`` is an option not given.

    ``thread``: the conversation (default: ``chat`` for the built-in agent, the graph's name
    for a ``target``). ``saver``: where it is kept (default: ``DEFAULT_SAVER``, unless the
    target keeps its threads in a saver of its own). ``model`` and ``base_url``: the built-in
    agent's model (default: ``GRAPH_AGENT_MODEL`` and ``OPENAI_BASE_URL``). ``target``: the
    user's agent or graph, ``FILE.py:OBJECT`` or ``package.module:OBJECT``.
    """

    thread: str | None = None
    saver: str | None = None
    model: str | None = None
    base_url: str | None = None
    target: str | None = None

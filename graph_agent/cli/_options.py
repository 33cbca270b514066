"""The settings of one ``graph-agent chat`` (its command-line options), and their defaults;
``parse_port``, ``graph-agent serve --port`` read as a port number."""

from __future__ import annotations

from dataclasses import dataclass

from ._errors import CliError

__all__ = ["DEFAULT_SAVER", "DEFAULT_THREAD", "ChatOptions", "parse_port"]

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


def parse_port(text: str) -> int:
    """``text`` as a TCP port to listen on, 1 to 65535; a ``CliError`` saying so otherwise
    (uvicorn would take 99999 and listen elsewhere than the port announced)."""
    try:
        port = int(text.strip())
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise CliError(f"--port {text!r} is not a port number: give one from 1 to 65535")
    return port

"""The ``graph-agent`` command.

``graph-agent demo`` runs an offline agent and shows what it does; ``graph-agent chat``
talks to an OpenAI-compatible model (``--model``/``--base-url`` or the environment), and
``graph-agent chat TARGET`` to the user's own agent or graph; ``graph-agent graph TARGET``
prints the Mermaid diagram of a graph. Both load ``TARGET`` the same way (``_load``).

Every error a user can cause (a bad TARGET, a module that fails to import, a graph that
does not compile, options that do not fit together) is one message on stderr and exit
code 2, never a traceback. Once a chat runs, a failure is one line on stderr and the chat
goes on (``_chat``). No password of a URL the user gives (``--saver``, ``--base-url``,
``OPENAI_BASE_URL``) is printed, not even in a usage error.

The modules: ``_commands`` (the argument parser, ``main``), ``_demo`` (``graph-agent demo``
and ``demo_agent``), ``_chat`` (``graph-agent chat``), ``_target`` (chatting with TARGET),
``_load`` (finding TARGET), ``_saver`` (``--saver``), ``_options`` (the chat's options),
``_cancel`` (Ctrl-C during an answer), ``_failures`` (one-line failures, masked secrets),
``_errors`` (``CliError``).
"""

from __future__ import annotations

from typing import Any

from ._commands import main
from ._errors import CliError
from ._load import load_graph

__all__ = ["CliError", "load_graph", "main"]


def __getattr__(name: str) -> Any:
    """``demo_agent``, the offline demo's agent (``graph-agent chat
    graph_agent.cli:demo_agent``), loaded on first use so other commands start fast."""
    if name == "demo_agent":
        from ._demo import demo_agent

        return demo_agent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

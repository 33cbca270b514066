"""How the examples pick a model: a deterministic offline one, or a real one with ``--live``.

``--live`` uses ``OpenAIChatModel()``, configured from ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``
and ``GRAPH_AGENT_MODEL`` (any OpenAI-compatible endpoint: OpenAI, DashScope, vLLM, Ollama).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from graph_agent.models import ChatModel


def parse_args(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--live",
        action="store_true",
        help="use a real OpenAI-compatible model (OPENAI_API_KEY, OPENAI_BASE_URL, GRAPH_AGENT_MODEL)",
    )
    return parser.parse_args(argv)


def choose(args: argparse.Namespace, offline: ChatModel) -> ChatModel:
    """``offline`` unless ``--live`` was given."""
    if not args.live:
        return offline
    from graph_agent.models import OpenAIChatModel

    return OpenAIChatModel()

"""How the examples pick a model: a deterministic offline one, or a real one with ``--live``.

``--live`` uses ``OpenAIChatModel()``, configured from ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``
and ``GRAPH_AGENT_MODEL`` (any OpenAI-compatible endpoint: OpenAI, DashScope, vLLM, Ollama).
With ``--live``, settings that cannot work end the example with one line on stderr, not a
traceback: no ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` at all, a server that cannot be reached,
a key it refuses. ``needs()`` does the same for a package an example needs but is not installed.

``served()`` is the model of the object each example exports at module level for
``graph-agent serve examples/X.py:NAME``: importing an example runs nothing and needs no key.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType

import httpx

from graph_agent import AssistantMessage, ModelError
from graph_agent.models import (
    ChatModel,
    ChatResponse,
    FunctionChatModel,
    OpenAIChatModel,
    Prompt,
    ScriptedChatModel,
)

NO_MODEL = (
    "--live needs a model: set OPENAI_API_KEY (and GRAPH_AGENT_MODEL for another model than "
    "gpt-4o-mini), or OPENAI_BASE_URL for another OpenAI-compatible server (a local one such as "
    "http://localhost:11434/v1 needs no key)"
)


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

    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        raise SystemExit(f"{_script()}: {NO_MODEL}")
    try:
        model = OpenAIChatModel()
    except (ModelError, ValueError) as error:
        raise SystemExit(f"{_script()}: the model settings do not work: {error}") from None
    _report_model_errors_in_one_line(model.base_url)
    return model


def configured() -> ChatModel | None:
    """``OpenAIChatModel()`` when the environment names a model server (``OPENAI_API_KEY`` or
    ``OPENAI_BASE_URL``), else ``None``. It connects to nothing until it is called. Settings
    that cannot work give ``None`` too: importing an example never fails on them (``--live``
    says what is wrong with them, in one line)."""
    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        return None
    try:
        return OpenAIChatModel()
    except (ModelError, ValueError, httpx.InvalidURL):
        return None


def served(offline: Callable[[], ChatModel]) -> ChatModel:
    """The model of an example's served object: the environment's (``configured()``), else
    ``offline()``. A scripted model is replayed for every conversation (the reply to a
    thread's Nth model call is the script's Nth, round and round) instead of running out
    after the first one."""
    live = configured()
    if live is not None:
        return live
    model = offline()
    if not isinstance(model, ScriptedChatModel):
        return model

    def replay(prompt: Prompt) -> AssistantMessage | str | ChatResponse:
        script = offline().responses
        calls = sum(isinstance(m, AssistantMessage) for m in prompt.messages)
        reply = script[calls % len(script)]
        if isinstance(reply, BaseException):
            raise reply
        return reply

    return FunctionChatModel(replay, supports_native_output=model.supports_native_output)


@contextlib.contextmanager
def needs(what: str, install: str) -> Iterator[None]:
    """Imports inside this block that find their package missing end the example with one line
    naming ``what`` is missing and the ``install`` command."""
    try:
        yield
    except ImportError as error:
        missing = next(
            (e.name for e in (error, error.__cause__) if isinstance(e, ModuleNotFoundError)), None
        )
        why = f"{missing} is not installed" if missing else f"it does not import ({error})"
        raise SystemExit(f"{_script()} needs {what}, and {why}: {install}") from None


def _script() -> str:
    return os.path.basename(sys.argv[0]) or "example"


def live_failure(error: ModelError, base_url: str) -> str:
    """One line saying why a ``--live`` model call failed, and what to set."""
    causes: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and cause not in causes:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any(isinstance(c, (httpx.ConnectError, httpx.TimeoutException)) for c in causes):
        hint = f"cannot reach the model server at {base_url}; set OPENAI_BASE_URL to one that runs"
    elif error.status in (401, 403):
        hint = f"the model server at {base_url} refused the key; set OPENAI_API_KEY to a valid one"
    elif error.status == 404:
        hint = (
            "no such model or endpoint; check GRAPH_AGENT_MODEL and OPENAI_BASE_URL (often .../v1)"
        )
    else:
        hint = "the model call failed"
    return f"{_script()} --live: {hint} ({error})"


def _report_model_errors_in_one_line(base_url: str) -> None:
    """A ``ModelError`` that ends a ``--live`` example prints one line instead of a traceback
    (``GRAPH_AGENT_DEBUG=1`` keeps the traceback); every other error is left as it is."""
    default = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if isinstance(error, ModelError) and not os.environ.get("GRAPH_AGENT_DEBUG"):
            print(live_failure(error, base_url), file=sys.stderr)
        else:
            default(kind, error, tb)

    sys.excepthook = hook

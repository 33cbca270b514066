"""Serving agents, flows and graphs over HTTP, speaking the core of the Agent Protocol as
LangGraph's Agent Server does, so the official ``langgraph-sdk`` clients work unchanged
(extra ``server``: Starlette and uvicorn)::

    from graph_agent.server import create_app

    app = create_app({"assistant": agent})   # an ASGI app: uvicorn.run(app)

Served: assistants, threads (state, history, search, edits, deletion), runs (in the
background, ``wait``, ``stream`` with an id on every event and rejoin after
``Last-Event-ID``, ``join``, ``cancel``; stateless ones too) with the multitask strategies,
and a web page at ``/`` (``_page``: chat with streamed answers, interrupts to approve, edit
or reject, each run's timeline, the graph drawn). ``graph-agent serve module:object`` runs
it (docs/serving.md). ``Server`` is what the app's routes share (the served objects, the
threads, the runs); ``graph-agent worker`` drives queued runs through one, without HTTP.
"""

from __future__ import annotations

try:
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ModuleNotFoundError as error:  # pragma: no cover - exercised in tests/test_extras.py
    raise ImportError(
        "graph_agent.server needs Starlette and uvicorn, which are not installed: "
        "pip install 'graph-agent[server]'"
    ) from error

from ._agui_resume import is_cancelled
from ._agui_tools import ClientTools
from ._app import create_app
from ._server import Server

__all__ = ["ClientTools", "Server", "create_app", "is_cancelled"]

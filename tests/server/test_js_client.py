"""The official JS client (``@langchain/langgraph-sdk``, what ``useStream`` and
agent-chat-ui are built on) against a real uvicorn: assistants, a streamed run (its run id
from ``onRunCreated``), a finished run's stream rejoined from the start as ``useStream``
rejoins (``Last-Event-ID: -1``), an interrupt approved, history, search, a 404.

Needs Node.js and the client installed from ``tests/server/js`` (``npm ci``): ``.ci/run``
installs it and sets ``LANGGRAPH_SDK_JS`` to its ``node_modules``; without them the test
skips and says so (fails on CI: tests/_needs.py)."""

from __future__ import annotations

from pathlib import Path

from graph_agent.server import create_app

from .conftest import live_server
from .node_kit import run_client
from .test_sdk_client import refund_agent, weather_agent

HERE = Path(__file__).resolve().parent / "js"
PACKAGES = ("@langchain/langgraph-sdk",)


def test_the_js_client_streams_rejoins_and_approves(tmp_path: Path) -> None:
    app = create_app({"weather": weather_agent(), "refunds": refund_agent()})
    with live_server(app) as url:
        seen = run_client(HERE, "LANGGRAPH_SDK_JS", PACKAGES, url, tmp_path)
    assert seen == {
        "assistants": ["refunds", "weather"],
        "runCreated": True,
        "events": ["metadata", "values", "messages", "updates"],
        "answer": "It is sunny in Paris.",
        "rejoinedAll": True,
        "interrupt": "refund",
        "pausedStatus": "interrupted",
        "approved": "Refunded 5.",
        "history": 2,
        "found": True,
        "missing": 404,
    }

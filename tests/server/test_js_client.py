"""The official JS client (``@langchain/langgraph-sdk``, what ``useStream`` and
agent-chat-ui are built on) against a real uvicorn: assistants, a streamed run (its run id
from ``onRunCreated``), a finished run's stream rejoined from the start as ``useStream``
rejoins (``Last-Event-ID: -1``), an interrupt approved, history, search, a 404.

Needs Node.js and the client installed from ``tests/server/js`` (``npm ci``): ``.ci/run``
installs it and sets ``LANGGRAPH_SDK_JS`` to its ``node_modules``; without them the test
skips and says so (fails on CI: tests/_needs.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from graph_agent.server import create_app
from tests._needs import unavailable

from .conftest import live_server
from .test_sdk_client import refund_agent, weather_agent

HERE = Path(__file__).resolve().parent / "js"


def sdk_modules() -> Path | None:
    given = os.environ.get("LANGGRAPH_SDK_JS")
    for where in (Path(given) if given else None, HERE / "node_modules"):
        if where is not None and (where / "@langchain" / "langgraph-sdk").is_dir():
            return where
    return None


def test_the_js_client_streams_rejoins_and_approves(tmp_path: Path) -> None:
    modules, node = sdk_modules(), shutil.which("node")
    if modules is None or node is None:
        unavailable(
            "needs node and @langchain/langgraph-sdk: npm ci --prefix tests/server/js "
            "(or LANGGRAPH_SDK_JS=<its node_modules>); .ci/run installs both"
        )
    # an ES module finds its imports next to itself
    shutil.copy(HERE / "client.mjs", tmp_path / "client.mjs")
    (tmp_path / "node_modules").symlink_to(modules)
    app = create_app({"weather": weather_agent(), "refunds": refund_agent()})
    with live_server(app) as url:
        done = subprocess.run(
            [node, str(tmp_path / "client.mjs"), url],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
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

"""A failed run, served by ``graph-agent serve``: the client learns the error's class (and
the message of Python's own errors and ours), never the message of another error, whatever
way it asked (wait, stream, join); the server's log has the whole traceback."""

from __future__ import annotations

from pathlib import Path

from langgraph_sdk import get_sync_client

from tests.redis_servers import free_port

from .conftest import serve_process, stop_process

SERVED = """
from typing import Any
from graph_agent import StateGraph, START, END

class VaultError(Exception):
    pass

def open_vault(state: Any) -> dict[str, Any]:
    if state.get("secret"):
        raise VaultError(f"vault refused password={state['secret']}")
    raise ValueError("count must be positive")

graph = StateGraph()
graph.add_node("open_vault", open_vault)
graph.add_edge(START, "open_vault")
graph.add_edge("open_vault", END)
agent = graph
"""


def test_a_failed_run_shows_the_class_not_the_secret_and_the_log_has_it(tmp_path: Path) -> None:
    module = tmp_path / "vault.py"
    module.write_text(SERVED)
    port = free_port()
    process = serve_process(module, tmp_path / "threads.sqlite", port)
    try:
        with get_sync_client(url=f"http://127.0.0.1:{port}") as client:
            thread = client.threads.create()
            hidden = {"error": "VaultError", "message": "An internal error occurred"}
            waited = client.runs.wait(
                thread["thread_id"], "agent", input={"secret": "hunter2"}, raise_error=False
            )
            assert waited == {"__error__": hidden}
            streamed = list(client.runs.stream(thread["thread_id"], "agent", input={"secret": "x"}))
            assert (streamed[-1].event, streamed[-1].data) == ("error", hidden)
            (last, *_) = client.runs.list(thread["thread_id"])
            assert client.runs.join(thread["thread_id"], last["run_id"]) == {"__error__": hidden}
            other = client.threads.create()  # (the first one keeps its secret)
            shown = client.runs.wait(
                other["thread_id"], "agent", input={"count": 0}, raise_error=False
            )
            assert shown == {
                "__error__": {"error": "ValueError", "message": "count must be positive"}
            }
            assert client.threads.get(thread["thread_id"])["status"] == "error"
    finally:
        log = stop_process(process)
    assert "graph-agent serve: ERROR run " in log
    assert "VaultError: vault refused password=hunter2" in log  # the operator sees it all

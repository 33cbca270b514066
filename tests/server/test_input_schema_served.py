"""A served graph's input schema (``StateGraph(input_schema=...)``): the assistant's
``input_schema`` is its JSON Schema (what the web page builds its form from), and a run whose
input does not fit is a 422 naming the fields, before any run is recorded."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_sync_client

from graph_agent.server import create_app

from .conftest import live_server


def approval_workflow() -> Any:
    """``examples/approval_workflow.py``, which declares its input (``ExpenseInput``)."""
    path = Path(__file__).parents[2] / "examples" / "approval_workflow.py"
    spec = importlib.util.spec_from_file_location("_served_approval_workflow", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as the CLI loads it: its types are found by name
    spec.loader.exec_module(module)
    return module


def test_the_schema_is_served_and_a_misfit_input_is_a_422_before_any_run() -> None:
    example = approval_workflow()
    with live_server(create_app({"expenses": example.build_graph()})) as url:
        with get_sync_client(url=url) as client:
            schemas = client.assistants.get_schemas("expenses")
            thread = client.threads.create()["thread_id"]
            paused = client.runs.wait(thread, "expenses", input={"report": example.REPORT})
        bad = httpx.post(
            f"{url}/threads/{thread}/runs/wait",
            json={"assistant_id": "expenses", "input": {"report": {"employee": "Ada"}}},
        )
        runs = httpx.get(f"{url}/threads/{thread}/runs").json()
    schema = schemas["input_schema"]
    assert schema["required"] == ["report"]
    assert schema["$defs"]["Item"]["properties"]["amount"]["type"] == "number"
    assert paused["__interrupt__"][0]["value"]["question"] == "Pay 544.50 to Ada?"
    assert bad.status_code == 422
    detail = bad.json()["detail"]
    assert "does not fit its input_schema ExpenseInput" in detail
    assert "report.department: Field required" in detail
    assert len(runs) == 1  # the refused one was never recorded

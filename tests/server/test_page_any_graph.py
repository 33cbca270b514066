"""The page with a graph that is not a chat, in headless Chromium against a real uvicorn
(page_kit.py): the README's expense approval workflow (``examples/approval_workflow.py``)
run from the page's input form, its state shown as a tree, its approval answered; a wrong
input says what is wrong (the server's 422 detail, or the field's), with no script error;
and a form built from an input schema, a field per property."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from checkpoint import MemorySaver
from graph_agent.graph import END, START, StateGraph
from graph_agent.server import create_app

from .conftest import live_server
from .page_kit import browser_fixture, page_fixture, screenshot  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def approval_workflow() -> Any:
    """A fresh compile of the README's example (its own saver)."""
    path = ROOT / "examples" / "approval_workflow.py"
    spec = importlib.util.spec_from_file_location("_page_approval_workflow", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as the CLI loads it: its types are found by name
    spec.loader.exec_module(module)
    return module


def test_the_approval_workflow_runs_from_the_form_and_its_approval_is_answered(
    page: Any, tmp_path: Path
) -> None:
    example = approval_workflow()
    app = create_app({"expenses": example.build_graph()})
    with live_server(app) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        form = page.locator("#input-form")
        form.wait_for(state="visible")
        # not a chat: no conversation, no message box; the state and the form instead
        assert page.locator("#messages").is_hidden()
        assert page.locator("#input").is_hidden()
        assert page.locator("#state-view").is_visible()
        # its input schema (ExpenseInput) gives the form its one field, the report (an
        # object: a JSON box), required; the raw JSON editor is a switch away
        assert not page.locator("#use-json").is_checked()
        field = form.locator("label", has_text="report")
        assert "*" in field.inner_text() and "JSON" in field.inner_text()
        page.check("#use-json")
        raw = page.locator("#input-json")
        raw.wait_for(state="visible")

        raw.fill("{report: ")  # not JSON: said at once, nothing sent
        page.click("#run-input")
        error = page.locator("#input-error")
        error.wait_for(state="visible")
        assert "The input is not JSON" in error.inner_text()

        raw.fill("[1, 2]")  # JSON, but not an input: the server's 422 says why
        page.click("#run-input")
        refused = page.locator("#notice", has_text="input must be a JSON object of state keys")
        refused.wait_for()
        assert "got list [1, 2]" in refused.inner_text()
        screenshot(page, tmp_path, "page-any-graph-refused")

        raw.fill(json.dumps({"report": example.REPORT}, indent=2))
        page.click("#run-input")
        card = page.locator("#interrupts .interrupt", has_text="Pay 544.50 to Ada?")
        card.wait_for()
        assert page.locator("#notice").is_hidden()  # the 422 is gone with the good input
        tree = page.locator("#state-tree")
        for key, shown in (("total", "544.5"), ("risk", '"medium"'), ("proposal", '"approve"')):
            assert tree.locator(f"li[data-key={key}]").inner_text() == f"{key}: {shown}"
        findings = tree.locator("li[data-key=findings]")
        assert "[3]" in findings.locator("summary").first.inner_text()
        page.wait_for_selector("#thread-status.interrupted")
        page.wait_for_selector("#graph svg .node[data-node=approval]")
        screenshot(page, tmp_path, "page-any-graph-approval")

        card.locator("textarea.resume-value").fill("approve")
        card.locator("button.resume").click()
        page.wait_for_selector("#state-tree li[data-key=status]")
        assert tree.locator("li[data-key=status]").inner_text() == 'status: "paid 544.50"'
        assert tree.locator("li[data-key=decision]").inner_text() == 'decision: "approve"'
        assert page.locator("#interrupts").is_hidden()
        page.wait_for_selector("#thread-status.idle")
        screenshot(page, tmp_path, "page-any-graph-paid")
        # a branch of the tree opens and closes (native <details>)
        report = tree.locator("li[data-key=report] > details")
        assert report.get_attribute("open") is not None
        report.locator("summary").first.click()
        assert report.get_attribute("open") is None
    assert page.errors == []


INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "what it is about"},
        "count": {"type": "integer", "default": 2},
        "urgent": {"type": "boolean"},
        "level": {"enum": ["low", "high"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["title"],
}


def echo_graph() -> Any:
    graph = StateGraph()
    graph.add_node(
        "echo",
        lambda state: {
            "summary": f"{state['title']} x{state['count']} {state.get('level')} "
            f"urgent={state.get('urgent')} tags={','.join(state.get('tags', []))}"
        },
    )
    graph.add_edge(START, "echo")
    graph.add_edge("echo", END)
    return graph.compile(saver=MemorySaver())


def test_the_form_has_a_field_per_property_of_the_input_schema(page: Any, tmp_path: Path) -> None:
    """Our graphs declare no input schema (the server answers the state's keys): this one
    is given to the page as a server that has them would answer."""
    with live_server(create_app({"echo": echo_graph()})) as url:

        def schemas(route: Any) -> None:
            answer = {"graph_id": "echo", "input_schema": INPUT_SCHEMA, "state_schema": None}
            route.fulfill(status=200, content_type="application/json", body=json.dumps(answer))

        page.route("**/assistants/*/schemas", schemas)
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        page.locator("#input-form .field").first.wait_for()
        assert not page.locator("#use-json").is_checked()  # the form first
        fields = page.locator("#input-form .field")
        assert [fields.nth(i).get_attribute("data-type") for i in range(fields.count())] == [
            "string",
            "integer",
            "boolean",
            "enum",
            "json",
        ]
        assert page.locator("#field-count").input_value() == "2"  # the schema's default
        assert "*" in page.locator("label[for=field-title]").inner_text()  # required

        page.fill("#field-title", "Lunch")
        page.fill("#field-count", "1.5")
        page.click("#run-input")
        page.locator("#input-error", has_text="count: 1.5 is not an integer").wait_for()

        page.fill("#field-count", "3")
        page.check("#field-urgent")
        page.select_option("#field-level", label='"high"')
        page.fill("#field-tags", '["a", "b"]')
        screenshot(page, tmp_path, "page-any-graph-form")
        page.click("#run-input")
        summary = page.locator("#state-tree li[data-key=summary]")
        summary.wait_for()
        assert summary.inner_text() == 'summary: "Lunch x3 high urgent=True tags=a,b"'
        # the JSON editor, switched to, starts from what the form holds
        page.check("#use-json")
        assert json.loads(page.locator("#input-json").input_value()) == {
            "title": "Lunch",
            "count": 3,
            "urgent": True,
            "level": "high",
            "tags": ["a", "b"],
        }
    assert page.errors == []

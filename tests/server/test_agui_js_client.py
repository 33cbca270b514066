"""The official AG-UI JS client (``@ag-ui/client``'s ``HttpAgent``, what CopilotKit's
front ends run) against a real uvicorn: a streamed answer with a tool call and a second turn
that sends the whole history back, an interrupt and its resume, an interrupt cancelled, a
front-end tool answered by the client (and a result it was not asked for: the server's 422),
a graph's state deltas applied by the client, a sub-agent. Each run goes through the
client's own checks (its schemas and its verification of the event order): a stream it
refuses fails the test with the client's error. A user message with an image part comes
back with its parts in the messages snapshot.

Needs Node.js and the client installed from ``tests/server/agui-js`` (``npm ci``): ``.ci/run``
and ``make test`` install it and set ``AGUI_JS`` to its ``node_modules``; without them the
test skips and says so (fails on CI: tests/_needs.py)."""

from __future__ import annotations

from pathlib import Path

from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.server import ClientTools, create_app
from hooks import HumanInTheLoopHook

from .conftest import live_server
from .node_kit import run_client
from .served_kit import refund
from .test_agui import asks, boss, counting_graph, served

HERE = Path(__file__).resolve().parent / "agui-js"


def agents() -> dict[str, object]:
    ui = ReactAgent(
        name="ui",
        model=ScriptedChatModel(
            [asks("change_background", {"color": "blue"}, "call_bg"), "Done, it is blue."]
        ),
        tool_providers=[ClientTools()],
        saver=MemorySaver(),
    )
    refunds = ReactAgent(  # two threads: one approves, one cancels
        name="refunds",
        model=ScriptedChatModel([asks("refund", {"amount": 5}), "Refunded 5."] * 2),
        tools=[refund],
        hooks=[HumanInTheLoopHook(["refund"])],
        saver=MemorySaver(),
    )
    return {**served(), "refunds": refunds, "ui": ui, "counter": counting_graph(), "boss": boss()}


def test_the_js_client_runs_answers_resumes_and_calls_front_end_tools(tmp_path: Path) -> None:
    with live_server(create_app(agents())) as url:
        seen = run_client(HERE, "AGUI_JS", ("@ag-ui/client",), url, tmp_path)
    assert seen == {
        "weather": {
            "types": [
                "RUN_STARTED",
                "STATE_SNAPSHOT",
                "STEP_STARTED",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END",
                "STEP_FINISHED",
                "TOOL_CALL_RESULT",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "MESSAGES_SNAPSHOT",
                "RUN_FINISHED",
            ],
            "calls": [["get_weather", {"city": "Paris"}]],
            "outcome": "success",
            "roles": ["user", "assistant", "tool", "assistant"],
            "said": ["It is sunny in Paris."],
        },
        "secondTurn": ["user", "assistant", "tool", "assistant"] * 2,
        "interrupt": {
            "outcome": "interrupt",
            "reason": "tool_call",
            "toolCallId": "call_1",
            "required": ["approved"],
            "pending": 1,
        },
        "resumed": {
            "outcome": "success",
            "pending": 0,
            "tool": ["refunded 5"],
            "said": ["Refunded 5."],
        },
        "cancelled": {
            "outcome": "success",
            "tool": ["The user rejected this tool call: cancelled without an answer"],
        },
        "frontEnd": {
            "outcome": "success",
            "pendingToolCallIds": ["call_bg"],
            "calls": [["change_background", {"color": "blue"}]],
        },
        "frontEndAnswered": {
            "outcome": "success",
            "pendingToolCallIds": [],
            "roles": ["user", "assistant", "tool", "assistant"],
            "said": ["Done, it is blue."],
        },
        "refused": {"status": 422, "said": True},
        "state": {
            "value": {"count": 2, "note": "x"},
            "types": [
                "RUN_STARTED",
                "STATE_SNAPSHOT",
                "STEP_STARTED",
                "STEP_FINISHED",
                "STATE_DELTA",
                "CUSTOM",
                "MESSAGES_SNAPSHOT",
                "RUN_FINISHED",
            ],
        },
        "subagent": {
            "types": ["SUBAGENT_STARTED", "SUBAGENT_FINISHED"],
            "texts": [["subagent", "Paris is sunny."], ["agent", "Done: sunny."]],
            "said": ["Done: sunny."],  # the thread's messages: the sub-agent's are its own
        },
        "parts": {"sent": ["text", "image"], "said": ["Hello there!"]},
    }

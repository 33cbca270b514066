"""What a client is told of an error, in every way it can see one (the ``error`` event, ``wait``
and ``join``'s ``__error__``, a task's error in the ``tasks`` and ``debug`` modes, the
errors of ``run_events``): the message of Python's errors and ours, never a third party's,
not even quoted by an error of ours that wraps it (docs/serving.md, Security)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
from langgraph_sdk import get_sync_client

from checkpoint import MemorySaver
from checkpoint.errors import (
    CheckpointConflictError,
    CheckpointDataError,
    CheckpointNotFoundError,
    CheckpointUnavailableError,
    SerializationError,
)
from graph_agent import (
    END,
    START,
    AssistantMessage,
    ReactAgent,
    ScriptedChatModel,
    StateGraph,
    ToolCall,
    tool,
)
from graph_agent.errors import (
    GraphRecursionError,
    GraphResumeError,
    ModelError,
    ToolExecutionException,
    UnknownToolError,
)
from graph_agent.server import create_app
from graph_agent.server._wire_messages import error_text
from graph_agent.tools import DefaultToolExecutionExceptionProcessor
from hooks.builtin.errors import ModelCallLimitExceededError

from .conftest import live_server

SECRET = "hunter2-s3cret"
HIDDEN = "An internal error occurred"
EVERY_MODE = ["values", "updates", "tasks", "debug", "checkpoints", "run_events", "messages"]


class VendorError(Exception):
    """What a third-party library raises: its message may hold anything."""


class VendorValueError(ValueError):
    """A third party's subclass of one of Python's shown errors: still the third party's."""


def failing_graph(error: Callable[[], BaseException]) -> Any:
    def charge(state: Any) -> dict[str, Any]:
        raise error()

    graph = StateGraph()
    graph.add_node("charge", charge)
    graph.add_edge(START, "charge")
    graph.add_edge("charge", END)
    return graph.compile(saver=MemorySaver())


@tool
def pay(to: str) -> str:
    """Pay someone."""
    raise VendorError(f"gateway refused: password={SECRET}")


def paying_agent() -> ReactAgent:
    asks = AssistantMessage(
        "", tool_calls=[ToolCall(id="call_pay", name="pay", arguments='{"to": "Alice"}')]
    )
    return ReactAgent(
        name="payer",
        model=ScriptedChatModel([asks] * 5),
        tools=[pay],
        saver=MemorySaver(),
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True),
    )


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    served = {
        "vendor": failing_graph(lambda: VendorError(f"connect failed: password={SECRET}")),
        "vendor_value": failing_graph(lambda: VendorValueError(f"bad token {SECRET}")),
        "ours": failing_graph(lambda: GraphResumeError("thread 't' cannot resume here")),
        "python": failing_graph(lambda: ValueError("amount must be positive")),
        "payer": paying_agent(),
    }
    with live_server(create_app(served)) as base:
        yield base


def every_view(url: str, assistant: str, run_input: Any) -> list[tuple[str, Any]]:
    """What a client sees of one failed run streamed in every mode, then waited and joined."""
    with get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        streamed = [
            (part.event, part.data)
            for part in client.runs.stream(
                thread,
                assistant,
                input=run_input,
                stream_mode=EVERY_MODE,  # type: ignore[arg-type]
            )
        ]
        waited = client.runs.wait(thread, assistant, input=run_input, raise_error=False)
        (last, *_) = client.runs.list(thread)
        joined = client.runs.join(thread, last["run_id"])
    return [*streamed, ("wait", waited), ("join", joined)]


def task_errors(views: list[tuple[str, Any]]) -> list[Any]:
    errors = [data["error"] for event, data in views if event == "tasks" and "error" in data]
    errors += [
        data["payload"]["error"]
        for event, data in views
        if event == "debug" and data["type"] == "task_result"
    ]
    return [e for e in errors if e is not None]


def test_a_third_party_error_s_message_is_hidden_in_every_mode(url: str) -> None:
    for assistant, name in (("vendor", "VendorError"), ("vendor_value", "VendorValueError")):
        views = every_view(url, assistant, {"amount": 5})
        assert SECRET not in json.dumps(views)
        hidden = {"error": name, "message": HIDDEN}
        assert task_errors(views) == [f"{name}({HIDDEN})"] * 2
        assert ("error", hidden) in views
        assert ("wait", {"__error__": hidden}) in views
        assert ("join", {"__error__": hidden}) in views
        node_errors = [
            d["error"] for e, d in views if e == "run_events" and d["kind"] == "node_error"
        ]
        assert node_errors == [hidden]


def test_an_error_of_ours_that_quotes_a_third_party_s_is_hidden(url: str) -> None:
    """A tool's failure is a ``ToolExecutionException`` (ours) whose message quotes what the
    tool raised: the client gets its class, not the quote."""
    views = every_view(url, "payer", {"messages": [{"role": "user", "content": "pay Alice"}]})
    assert SECRET not in json.dumps(views)
    hidden = {"error": "ToolExecutionException", "message": HIDDEN}
    assert ("error", hidden) in views
    assert ("wait", {"__error__": hidden}) in views
    failures = [d for e, d in views if e == "run_events" and d["kind"].endswith("_error")]
    assert [(d["kind"], d["error"]) for d in failures] == [
        ("node_error", hidden),
        ("run_error", hidden),
    ]


def test_python_s_errors_and_ours_keep_their_message_in_every_mode(url: str) -> None:
    for assistant, error in (
        ("python", ValueError("amount must be positive")),
        ("ours", GraphResumeError("thread 't' cannot resume here")),
    ):
        views = every_view(url, assistant, {"amount": 5})
        shown = {"error": type(error).__name__, "message": str(error)}
        assert task_errors(views) == [f"{type(error).__name__}({error})"] * 2
        assert ("error", shown) in views
        assert ("wait", {"__error__": shown}) in views
        assert ("join", {"__error__": shown}) in views


def test_a_run_from_a_checkpoint_the_thread_lacks_says_so(url: str) -> None:
    with get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        answer = client.runs.wait(
            thread, "python", input={"amount": 1}, checkpoint_id="nope", raise_error=False
        )
    assert answer == {
        "__error__": {
            "error": "CheckpointNotFoundError",
            "message": f"thread '{thread}' has no checkpoint 'nope'; list the valid ids with "
            "get_state_history(config), or drop checkpoint_id to use the latest",
        }
    }


OURS: list[BaseException] = [
    CheckpointNotFoundError("thread 't' has no checkpoint 'c'", thread_id="t", checkpoint_id="c"),
    CheckpointConflictError.moved("t", "a", "b"),
    CheckpointDataError("thread 't' is corrupt", thread_id="t", checkpoint_id=None),
    CheckpointUnavailableError(
        "redis at h:1 is down", where="h:1", thread_id=None, operation="read"
    ),
    SerializationError("truncated bytes"),
    GraphRecursionError("recursion limit 3 reached"),
    GraphResumeError("nothing to resume"),
    ModelError("HTTP 500 from POST http://127.0.0.1:1/v1", status=500),
    UnknownToolError("no tool 'x'", tool_name="x", available=["y"]),
    ModelCallLimitExceededError("run limit 2 reached", scope="run", limit=2, count=2),
    KeyError("k"),
    TimeoutError("no answer in 5 s"),
]


@pytest.mark.parametrize("error", OURS, ids=lambda e: type(e).__name__)
def test_our_public_errors_and_python_s_show_their_message(error: BaseException) -> None:
    assert error_text(error) == str(error)


def test_what_an_error_was_raised_from_counts_too() -> None:
    def wrapped(cause: BaseException, *, explicit: bool) -> ToolExecutionException:
        try:
            try:
                raise cause
            except BaseException as inner:
                if explicit:
                    raise ToolExecutionException(f"failed: {inner}", tool_name="t") from inner
                raise ToolExecutionException(f"failed: {inner}", tool_name="t") from None
        except ToolExecutionException as outer:
            return outer

    assert error_text(wrapped(ValueError("no"), explicit=True)) == "failed: no"
    for explicit in (True, False):  # ``from None`` hides the cause from tracebacks, not here
        assert error_text(wrapped(VendorError(SECRET), explicit=explicit)) == HIDDEN
    assert error_text(OSError(f"/home/{SECRET}/key")) == HIDDEN  # Python's, but not shown

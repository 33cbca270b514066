"""Ours calling ours: ``RemoteA2AAgent`` pointed at an agent that our own server serves over
A2A (``/a2a/{assistant_id}``). The answer, a follow-up in the same served thread, and an
``interrupt()`` of the served agent asked of our caller and answered through it."""

from __future__ import annotations

from graph_agent import (
    AssistantMessage,
    Command,
    ReactAgent,
    ScriptedChatModel,
    ToolCall,
    UserMessage,
    interrupt,
    tool,
)
from graph_agent.a2a import RemoteA2AAgent
from graph_agent.server import create_app

from ._remote_server import served


@tool(description="Asks the user which city")
def city() -> str:
    return f"city: {interrupt('Which city?')}"


def test_our_served_agent_called_over_a2a_answers_follows_up_and_asks() -> None:
    booking = AssistantMessage("", tool_calls=[ToolCall(id="c1", name="city", arguments="{}")])
    model = ScriptedChatModel(["Hello there.", "Hello again.", booking, "Booked for Paris."])
    desk = ReactAgent(name="desk", description="The travel desk.", model=model, tools=[city])
    app = create_app({"desk": desk})
    with served(lambda url: app) as base:
        remote = RemoteA2AAgent(f"{base}/a2a/desk")
        assert (remote.name, remote.description) == ("desk", "The travel desk.")
        thread = {"thread_id": "caller"}
        assert remote.call("hi", thread).text == "Hello there."
        assert remote.call("again", thread).text == "Hello again."
        # the second message went to the same served thread: its model saw the first turn
        assert [m.text for m in model.prompts[1].messages if isinstance(m, UserMessage)] == [
            "hi",
            "again",
        ]
        remote.invoke("book", thread)
        (pause,) = remote.get_state(thread).interrupts
        assert pause.value["question"] == "Which city?"
        assert remote.call(Command(resume="Paris"), thread).text == "Booked for Paris."
        tool_results = [m.text for m in model.prompts[3].messages if m.message_type == "tool"]
        assert tool_results == ["city: Paris"]


@tool(description="Asks for the dates")
def dates() -> str:
    answer = interrupt("Which dates?")
    return f"dates: {answer['from']} to {answer['to']} ({type(answer).__name__})"


def test_a_structured_answer_reaches_the_served_agent_as_sent() -> None:
    """An answer that is JSON data (a dict, a list, a number) goes as an A2A data part and
    reaches the served agent's ``interrupt()`` as the same value, not wrapped."""
    asking = AssistantMessage("", tool_calls=[ToolCall(id="c1", name="dates", arguments="{}")])
    model = ScriptedChatModel([asking, "Noted."])
    desk = ReactAgent(name="desk", model=model, tools=[dates])
    app = create_app({"desk": desk})
    with served(lambda url: app) as base:
        remote = RemoteA2AAgent(f"{base}/a2a/desk")
        thread = {"thread_id": "caller"}
        remote.invoke("book", thread)
        assert (
            remote.call(Command(resume={"from": "May 1", "to": "May 3"}), thread).text == "Noted."
        )
        tool_results = [m.text for m in model.prompts[1].messages if m.message_type == "tool"]
        assert tool_results == ["dates: May 1 to May 3 (dict)"]

"""Running an agent: its graph, the run APIs and their async twins, inputs, and threads."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import networkx as nx
import pytest

from graph_agent import (
    AssistantMessage,
    ChatResponse,
    CompiledGraph,
    GraphUsageError,
    ModelError,
    NodeOutput,
    OverAllState,
    Prompt,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from hooks import AgentHook, JumpTo, ModelHook

from .conftest import Runner, tool_calls


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def weather_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            tool_calls(("get_weather", {"city": "Paris"}), text="Let me check."),
            "It is sunny in Paris.",
        ]
    )


class Audit(AgentHook):
    def before_agent(self, state: Any, config: Any) -> None:
        return None

    def after_agent(self, state: Any, config: Any) -> None:
        return None


class Trim(ModelHook):
    can_jump_to = (JumpTo.END,)

    def before_model(self, state: Any, config: Any) -> None:
        return None

    def after_model(self, state: Any, config: Any) -> None:
        return None


# -- the graph ----------------------------------------------------------------------------------


def test_the_agent_graph_is_a_compiled_graph_with_model_tools_and_hook_nodes() -> None:
    agent = ReactAgent(
        name="a", model=weather_model(), tools=[get_weather], hooks=[Audit(), Trim()]
    )
    graph = agent.graph
    assert isinstance(graph, CompiledGraph)
    assert set(graph.nodes) == {
        "model",
        "tools",
        "Audit.before_agent",
        "Audit.after_agent",
        "Trim.before_model",
        "Trim.after_model",
    }
    mermaid = graph.draw_mermaid()
    assert mermaid.startswith("flowchart TD")
    for node in ("model", "tools", "Audit.before_agent", "Trim.after_model", "Audit.after_agent"):
        assert f'["{node}"]' in mermaid
    assert '-.->|"tools"| tools' in mermaid


def test_the_graph_edges_follow_the_react_loop() -> None:
    agent = ReactAgent(
        name="a", model=weather_model(), tools=[get_weather], hooks=[Audit(), Trim()]
    )
    edges = {(a, b) for a, b in agent.graph.get_graph().edges}
    assert isinstance(agent.graph.get_graph(), nx.DiGraph)
    assert edges == {
        ("__start__", "Audit.before_agent"),
        ("Audit.before_agent", "Trim.before_model"),
        ("Trim.before_model", "model"),
        ("Trim.before_model", "Audit.after_agent"),  # Trim may jump to the end
        ("model", "Trim.after_model"),
        ("Trim.after_model", "tools"),
        ("Trim.after_model", "Audit.after_agent"),
        ("tools", "Trim.before_model"),  # back to the model, through its hooks
        ("tools", "Audit.after_agent"),  # a return-direct batch ends the run
        ("Audit.after_agent", "__end__"),
    }


def test_without_hooks_the_graph_is_model_and_tools() -> None:
    agent = ReactAgent(name="a", model=weather_model(), tools=[get_weather])
    assert set(agent.graph.nodes) == {"model", "tools"}
    edges = {(a, b) for a, b in agent.graph.get_graph().edges}
    assert edges == {
        ("__start__", "model"),
        ("model", "tools"),
        ("model", "__end__"),
        ("tools", "model"),
        ("tools", "__end__"),
    }


# -- call, invoke, stream -----------------------------------------------------------------------


def test_call_returns_the_final_assistant_message(run: Runner) -> None:
    agent = ReactAgent(name="a", model=weather_model(), tools=[get_weather])
    reply = run.call(agent, "Weather in Paris?")
    assert isinstance(reply, AssistantMessage)
    assert reply == AssistantMessage("It is sunny in Paris.")


def test_invoke_returns_the_whole_state(run: Runner) -> None:
    agent = ReactAgent(name="a", model=weather_model(), tools=[get_weather])
    state = run.invoke(agent, "Weather in Paris?")
    assert isinstance(state, OverAllState)
    messages = state["messages"]
    assert [m.message_type for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert isinstance(messages[2], ToolResponseMessage)
    assert messages[2].responses[0].response_data == "sunny in Paris"


def test_stream_yields_each_node_output_in_order(run: Runner) -> None:
    agent = ReactAgent(
        name="a", model=weather_model(), tools=[get_weather], hooks=[Audit(), Trim()]
    )
    outputs = run.stream(agent, "Weather in Paris?")
    assert all(isinstance(o, NodeOutput) for o in outputs)
    assert [o.node for o in outputs] == [
        "Audit.before_agent",
        "Trim.before_model",
        "model",
        "Trim.after_model",
        "tools",
        "Trim.before_model",
        "model",
        "Trim.after_model",
        "Audit.after_agent",
    ]
    model_updates = [o.update for o in outputs if o.node == "model"]
    assert model_updates[1] is not None
    assert model_updates[1]["messages"] == [AssistantMessage("It is sunny in Paris.")]
    assert outputs[-1].state["messages"][-1].text == "It is sunny in Paris."


# -- stream_messages ----------------------------------------------------------------------------


def test_stream_messages_yields_text_chunks_across_model_calls(run: Runner) -> None:
    model = weather_model()
    agent = ReactAgent(name="a", model=model, tools=[get_weather])
    config = RunnableConfig(thread_id="streamed")
    chunks = run.stream_messages(agent, "Weather in Paris?", config)
    assert chunks == ["Let ", "me ", "check.", "It ", "is ", "sunny ", "in ", "Paris."]
    snapshot = agent.get_state(config)  # the streamed run is checkpointed like any other
    assert snapshot is not None
    assert snapshot.values["messages"][-1] == AssistantMessage("It is sunny in Paris.")
    assert snapshot.values["messages"][2].responses[0].response_data == "sunny in Paris"


class GatedModel:
    """Streams "Hello " then waits until the consumer has it before streaming "world": a
    consumer that only got text after the run would never let it finish."""

    def __init__(self) -> None:
        self.received = threading.Event()

    def call(self, prompt: Prompt) -> ChatResponse:
        raise AssertionError("stream_messages uses the model's stream")

    async def acall(self, prompt: Prompt) -> ChatResponse:
        raise AssertionError("astream_messages uses the model's astream")

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        yield ChatResponse.of(AssistantMessage("Hello "))
        assert self.received.wait(10), "the first chunk did not reach the consumer"
        yield ChatResponse.of(AssistantMessage("world"))

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        yield ChatResponse.of(AssistantMessage("Hello "))
        arrived = await asyncio.get_running_loop().run_in_executor(None, self.received.wait, 10)
        assert arrived, "the first chunk did not reach the consumer"
        yield ChatResponse.of(AssistantMessage("world"))


def test_stream_messages_delivers_text_while_the_model_streams(run: Runner) -> None:
    model = GatedModel()
    agent = ReactAgent(name="a", model=model)
    chunks: list[str] = []

    def take(text: str) -> None:
        chunks.append(text)
        model.received.set()

    if run.is_async:

        async def consume() -> None:
            async for text in agent.astream_messages("hi"):
                take(text)

        asyncio.run(consume())
    else:
        for text in agent.stream_messages("hi"):
            take(text)
    assert chunks == ["Hello ", "world"]


def test_stream_messages_surfaces_errors(run: Runner) -> None:
    model = ScriptedChatModel(
        [tool_calls(("get_weather", {"city": "Oslo"}), text="One moment."), ModelError("down")]
    )
    agent = ReactAgent(name="a", model=model, tools=[get_weather])
    chunks: list[str] = []
    with pytest.raises(ModelError, match="down"):
        if run.is_async:

            async def consume() -> None:
                async for text in agent.astream_messages("go"):
                    chunks.append(text)

            asyncio.run(consume())
        else:
            for text in agent.stream_messages("go"):
                chunks.append(text)
    assert chunks == ["One ", "moment."]


# -- inputs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("hi", [UserMessage("hi")]),
        (UserMessage("hi"), [UserMessage("hi")]),
        (
            [UserMessage("hi"), AssistantMessage("hello"), UserMessage("how are you?")],
            [UserMessage("hi"), AssistantMessage("hello"), UserMessage("how are you?")],
        ),
        ((UserMessage("a tuple"),), [UserMessage("a tuple")]),
        ({"messages": [UserMessage("hi")], "topic": "greetings"}, [UserMessage("hi")]),
    ],
    ids=["str", "message", "list", "tuple", "dict"],
)
def test_input_forms(run: Runner, value: Any, stored: list[Any]) -> None:
    model = ScriptedChatModel(["fine"])
    agent = ReactAgent(name="a", model=model)
    state = run.invoke(agent, value)
    assert model.prompts[0].messages == stored
    assert state["messages"] == [*stored, AssistantMessage("fine")]
    if isinstance(value, dict):
        assert state["topic"] == "greetings"


@pytest.mark.parametrize("value", [42, [UserMessage("ok"), "not a message"], object(), b"hi"])
def test_bad_input_is_a_usage_error_and_writes_nothing(run: Runner, value: Any) -> None:
    model = ScriptedChatModel(["never"])
    agent = ReactAgent(name="strict", model=model)
    config = RunnableConfig(thread_id="bad")
    with pytest.raises(GraphUsageError, match="agent 'strict' takes a string, a message"):
        run.call(agent, value, config)
    assert model.prompts == []
    assert agent.get_state(config) is None


@pytest.mark.parametrize("messages", ["hi", ["hi"], [UserMessage("ok"), {"role": "user"}]])
def test_a_dict_input_must_hold_messages(run: Runner, messages: Any) -> None:
    model = ScriptedChatModel(["never"])
    agent = ReactAgent(name="strict", model=model)
    config = RunnableConfig(thread_id="bad dict")
    with pytest.raises(
        GraphUsageError, match=r"agent 'strict': state\['messages'\] takes messages"
    ):
        run.call(agent, {"messages": messages}, config)
    assert model.prompts == []
    assert agent.get_state(config) is None


# -- threads ------------------------------------------------------------------------------------


def test_a_thread_remembers_the_conversation_and_another_does_not(run: Runner) -> None:
    model = ScriptedChatModel(["Hi Ada!", "You are Ada.", "I don't know."])
    agent = ReactAgent(name="a", model=model, system_prompt="Be brief.")
    ada = RunnableConfig(thread_id="ada")
    run.call(agent, "I am Ada.", ada)
    run.call(agent, "Who am I?", ada)
    run.call(agent, "Who am I?", RunnableConfig(thread_id="someone else"))
    texts = [[m.text for m in p.messages] for p in model.prompts]
    assert texts == [
        ["Be brief.", "I am Ada."],
        ["Be brief.", "I am Ada.", "Hi Ada!", "Who am I?"],
        ["Be brief.", "Who am I?"],
    ]
    # The system prompt goes first on every call but is never stored.
    assert all(p.messages[0] == SystemMessage("Be brief.") for p in model.prompts)
    snapshot = agent.get_state(ada)
    assert snapshot is not None
    assert [m.message_type for m in snapshot.values["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_the_system_prompt_is_sent_on_every_model_call_of_a_run(run: Runner) -> None:
    model = weather_model()
    agent = ReactAgent(name="a", model=model, tools=[get_weather], system_prompt="Be brief.")
    state = run.invoke(agent, "Weather?")
    assert [p.messages[0] for p in model.prompts] == [SystemMessage("Be brief.")] * 2
    assert not any(isinstance(m, SystemMessage) for m in state["messages"])


def test_the_async_and_sync_apis_share_threads() -> None:
    model = ScriptedChatModel(["one", "two", "three"])
    agent = ReactAgent(name="a", model=model)
    config = RunnableConfig(thread_id="mixed")
    agent.call("1", config)
    asyncio.run(agent.acall("2", config))
    agent.call("3", config)
    assert [m.text for m in model.prompts[2].messages] == ["1", "one", "2", "two", "3"]
    history = list(agent.get_state_history(config))
    assert history and history[0].values["messages"][-1].text == "three"


def test_state_can_be_updated_between_turns(run: Runner) -> None:
    model = ScriptedChatModel(["noted", "ok"])
    agent = ReactAgent(name="a", model=model)
    config = RunnableConfig(thread_id="edit")
    run.call(agent, "first", config)
    if run.is_async:
        asyncio.run(agent.aupdate_state(config, {"messages": [UserMessage("(an aside)")]}))
    else:
        agent.update_state(config, {"messages": [UserMessage("(an aside)")]})
    run.call(agent, "second", config)
    assert [m.text for m in model.prompts[1].messages] == [
        "first",
        "noted",
        "(an aside)",
        "second",
    ]


def test_call_from_an_earlier_checkpoint_forks_the_thread(run: Runner) -> None:
    model = ScriptedChatModel(["Paris.", "Berlin.", "Rome."])
    agent = ReactAgent(name="a", model=model)
    config = RunnableConfig(thread_id="fork")
    run.call(agent, "Capital of France?", config)
    first = agent.get_state(config)
    assert first is not None
    run.call(agent, "Capital of Germany?", config)
    forked = run.call(agent, "Capital of Italy?", first.config)
    assert forked.text == "Rome."
    assert [m.text for m in model.prompts[2].messages] == [
        "Capital of France?",
        "Paris.",
        "Capital of Italy?",
    ]
    head = agent.get_state(config)
    assert head is not None
    assert [m.text for m in head.values["messages"]][-2:] == ["Capital of Italy?", "Rome."]


def test_a_refusal_is_the_answer_the_agent_shows(run) -> None:
    from graph_agent import AssistantMessage, ReactAgent
    from graph_agent.models import ScriptedChatModel

    refusal = AssistantMessage("", refusal="I can't help with that.")
    agent = ReactAgent(name="r", model=ScriptedChatModel([refusal, refusal]), output_key="answer")
    state = run.invoke(agent, "pick a lock", {"thread_id": "r"})
    assert state["answer"] == "I can't help with that."
    assert state["messages"][-1].refusal == "I can't help with that."
    assert "".join(run.stream_messages(agent, "again", {"thread_id": "r"})) == (
        "I can't help with that."
    )

"""Streaming a flow: ``stream_events`` (narrowed to one sub-agent with ``agent=``), the
namespaces of sub-agents' events, and ``stream_messages`` (every answering sub-agent, or one).

Each behaviour runs through the sync and the async API (``run``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from graph_agent import (
    BaseAgent,
    Command,
    GraphUsageError,
    LlmRoutingAgent,
    LoopAgent,
    ParallelAgent,
    RunnableConfig,
    ScriptedChatModel,
    SequentialAgent,
    SupervisorAgent,
    tool,
)
from graph_agent.events import (
    InterruptEvent,
    ModelDelta,
    ModelStart,
    RunEvent,
    ToolEnd,
    ToolStart,
)
from hooks import HumanInTheLoopHook, ToolFeedback

from .conftest import Runner, tool_calls
from .flow_kit import scripted


def events(
    run: Runner, agent: BaseAgent, value: Any, config: Any = None, *, only: str | None = None
) -> list[RunEvent]:
    """The run's events (``stream_events`` or its async twin)."""
    if run.is_async:

        async def collect() -> list[RunEvent]:
            return [e async for e in agent.astream_events(value, config, agent=only)]

        return asyncio.run(collect())
    return list(agent.stream_events(value, config, agent=only))


def texts(
    run: Runner, agent: BaseAgent, value: Any, config: Any = None, *, only: str | None = None
) -> list[str]:
    """The run's text chunks (``stream_messages`` or its async twin)."""
    if run.is_async:

        async def collect() -> list[str]:
            return [t async for t in agent.astream_messages(value, config, agent=only)]

        return asyncio.run(collect())
    return list(agent.stream_messages(value, config, agent=only))


def names(namespace: tuple[str, ...]) -> list[str]:
    return [part.partition(":")[0] for part in namespace]


@tool
def look_up(topic: str) -> str:
    """Look a topic up."""
    return f"facts about {topic}"


def pipeline() -> SequentialAgent:
    """researcher (with a tool) then writer."""
    researcher, _ = scripted(
        "researcher",
        tool_calls(("look_up", {"topic": "owls"})),
        "Owls hunt at night.",
        tools=[look_up],
    )
    writer, _ = scripted("writer", "An essay on owls.")
    return SequentialAgent(name="team", sub_agents=[researcher, writer])


# -- namespaces ---------------------------------------------------------------------------------


def test_sub_agent_events_carry_their_agent_namespace(run: Runner) -> None:
    seen = events(run, pipeline(), "Owls?")

    model_calls = {e.namespace for e in seen if isinstance(e, ModelStart)}
    assert sorted(names(ns)[0] for ns in model_calls) == ["researcher", "writer"]
    assert all(len(ns) == 1 and ns[0].partition(":")[2] for ns in model_calls)  # "name:id"
    deltas = {e.namespace for e in seen if isinstance(e, ModelDelta) and e.text}
    assert deltas == model_calls
    # the tool call ran in the researcher's run: under the namespace of its model calls
    (start,) = [e for e in seen if isinstance(e, ToolStart)]
    (end,) = [e for e in seen if isinstance(e, ToolEnd)]
    assert start.name == "look_up" and end.result == "facts about owls"
    assert names(start.namespace) == names(end.namespace) == ["researcher"]
    assert start.namespace in model_calls
    # the flow's own events (its nodes) are at the root
    roots = [e.node for e in seen if not e.namespace and e.kind == "node_start"]
    assert roots == ["researcher", "writer"]


def test_events_of_a_nested_sub_agent_carry_the_whole_path(run: Runner) -> None:
    inner = SequentialAgent(name="inner", sub_agents=[scripted("a", "A")[0]])
    middle = ParallelAgent(name="middle", sub_agents=[inner, scripted("b", "B")[0]])
    outer = SequentialAgent(name="outer", sub_agents=[middle])

    seen = events(run, outer, "go")

    paths = {tuple(names(e.namespace)) for e in seen if isinstance(e, ModelStart)}
    assert paths == {("middle", "inner", "a"), ("middle", "b")}


# -- stream_events(agent=...) -----------------------------------------------------------------


def test_stream_events_narrowed_to_one_sub_agent_holds_only_its_events(run: Runner) -> None:
    seen = events(run, pipeline(), "Owls?", only="writer")

    assert seen
    assert all(names(e.namespace)[:1] == ["writer"] for e in seen)
    kinds = {e.kind for e in seen}
    assert {"run_start", "model_start", "model_delta", "model_end", "run_end"} <= kinds
    text = "".join(e.text for e in seen if isinstance(e, ModelDelta))
    assert text == "An essay on owls."


def test_stream_events_narrowed_to_a_sub_agent_holds_its_tool_calls(run: Runner) -> None:
    seen = events(run, pipeline(), "Owls?", only="researcher")

    assert all(names(e.namespace)[:1] == ["researcher"] for e in seen)
    assert [e.name for e in seen if isinstance(e, ToolStart)] == ["look_up"]
    assert not any(isinstance(e, ModelDelta) and "essay" in e.text for e in seen)


def nested() -> SequentialAgent:
    """outer: first, then inner (a, then b)."""
    inner = SequentialAgent(name="inner", sub_agents=[scripted("a", "A")[0], scripted("b", "B")[0]])
    return SequentialAgent(name="outer", sub_agents=[scripted("first", "F")[0], inner])


def test_stream_events_narrowed_to_a_nested_flow_holds_what_runs_inside_it(run: Runner) -> None:
    seen = events(run, nested(), "go", only="inner")

    assert all(names(e.namespace)[:1] == ["inner"] for e in seen)
    starts = [tuple(names(e.namespace)) for e in seen if isinstance(e, ModelStart)]
    assert starts == [("inner", "a"), ("inner", "b")]


def test_stream_events_narrowed_to_an_agent_deep_inside(run: Runner) -> None:
    seen = events(run, nested(), "go", only="b")

    assert seen
    assert all(names(e.namespace)[:2] == ["inner", "b"] for e in seen)
    assert "".join(e.text for e in seen if isinstance(e, ModelDelta)) == "B"


def test_stream_events_for_an_unknown_agent_names_the_agents_it_runs(run: Runner) -> None:
    inner = SequentialAgent(name="inner", sub_agents=[scripted("a", "A")[0]])
    outer = SequentialAgent(name="outer", sub_agents=[inner, scripted("b", "B")[0]])

    with pytest.raises(GraphUsageError) as caught:
        events(run, outer, "go", only="c")

    assert str(caught.value) == ("agent 'outer' runs no agent named 'c' (it runs: a, b, inner)")


# -- stream_messages ----------------------------------------------------------------------------


def test_stream_messages_of_a_sequential_flow_gives_each_answer_as_a_paragraph(
    run: Runner,
) -> None:
    chunks = texts(run, pipeline(), "Owls?")

    assert chunks == ["Owls ", "hunt ", "at ", "night.", "\n\nAn ", "essay ", "on ", "owls."]


def test_stream_messages_narrowed_to_the_last_agent_gives_only_its_text(run: Runner) -> None:
    # spring-ai-alibaba #4222: the final agent's text only, without ad-hoc filters
    chunks = texts(run, pipeline(), "Owls?", only="writer")

    assert chunks == ["An ", "essay ", "on ", "owls."]


def test_stream_messages_of_a_loop_separates_each_answer(run: Runner) -> None:
    writer, _ = scripted("writer", "d1", "d2")
    critic, _ = scripted("critic", "c1", "c2")
    loop = LoopAgent(name="refine", sub_agents=[writer, critic], max_iterations=2)

    assert "".join(texts(run, loop, "go")) == "d1\n\nc1\n\nd2\n\nc2"
    writer2, _ = scripted("writer", "d1", "d2")
    critic2, _ = scripted("critic", "c1", "c2")
    loop = LoopAgent(name="refine", sub_agents=[writer2, critic2], max_iterations=2)
    assert "".join(texts(run, loop, "go", only="critic")) == "c1\n\nc2"


def test_stream_messages_narrowed_to_one_parallel_branch(run: Runner) -> None:
    left, _ = scripted("left", "one two three")
    right, _ = scripted("right", "four five six")
    flow = ParallelAgent(name="both", sub_agents=[left, right])

    assert texts(run, flow, "go", only="right") == ["four ", "five ", "six"]
    left, _ = scripted("left", "one two three")
    right, _ = scripted("right", "four five six")
    flow = ParallelAgent(name="both", sub_agents=[left, right])
    whole = "".join(texts(run, flow, "go"))
    # both branches stream at once: the first to speak streams, the other follows whole
    assert whole in ("one two three\n\nfour five six", "four five six\n\none two three")


def test_stream_messages_of_a_router_gives_the_chosen_answer_once(run: Runner) -> None:
    # spring-ai-alibaba #4616: neither the router's JSON nor the answer a second time
    billing, _ = scripted("billing", "Refund issued.", description="Money.")
    tech, _ = scripted("tech", "Restart it.", description="Devices.")
    router = ScriptedChatModel([json.dumps({"agents": [{"agent": "billing", "query": "Refund."}]})])
    flow = LlmRoutingAgent(name="desk", model=router, sub_agents=[billing, tech])

    assert texts(run, flow, "Money back!") == ["Refund ", "issued."]


def test_stream_messages_of_a_supervisor_gives_its_own_answer(run: Runner) -> None:
    researcher, _ = scripted("researcher", "Owls hunt at night.", description="Facts.")
    boss = ScriptedChatModel(
        [tool_calls(("researcher", {"input": "Owl facts."})), "They hunt at night."]
    )
    flow = SupervisorAgent(name="editor", model=boss, sub_agents=[researcher])

    assert texts(run, flow, "Owls?") == ["They ", "hunt ", "at ", "night."]


def test_a_supervisor_stream_holds_its_sub_agents_events_under_their_namespace(
    run: Runner,
) -> None:
    # openai-agents #864, pydantic-ai #2356: a delegated agent's events reach the caller
    researcher, _ = scripted(
        "researcher",
        tool_calls(("look_up", {"topic": "owls"})),
        "Owls hunt at night.",
        description="Facts.",
        tools=[look_up],
    )
    boss = ScriptedChatModel(
        [tool_calls(("researcher", {"input": "Owl facts."})), "They hunt at night."]
    )
    flow = SupervisorAgent(name="editor", model=boss, sub_agents=[researcher])

    seen = events(run, flow, "Owls?")

    calls = [(names(e.namespace), e.name) for e in seen if isinstance(e, ToolStart)]
    assert calls == [([], "researcher"), (["researcher"], "look_up")]
    inner = "".join(
        e.text for e in seen if isinstance(e, ModelDelta) and names(e.namespace) == ["researcher"]
    )
    assert inner == "Owls hunt at night."


def test_stream_messages_narrowed_to_a_delegated_agent(run: Runner) -> None:
    researcher, _ = scripted("researcher", "Owls hunt at night.", description="Facts.")
    boss = ScriptedChatModel(
        [tool_calls(("researcher", {"input": "Owl facts."})), "They hunt at night."]
    )
    flow = SupervisorAgent(name="editor", model=boss, sub_agents=[researcher])

    assert texts(run, flow, "Owls?", only="researcher") == ["Owls ", "hunt ", "at ", "night."]


def test_an_approval_in_a_sub_agent_streams_under_its_namespace_and_resumes_there(
    run: Runner,
) -> None:
    @tool
    def transfer(to: str, amount: int) -> str:
        """Send money."""
        return "sent"

    banker, _ = scripted(
        "banker",
        tool_calls(("transfer", {"to": "Bob", "amount": 5})),
        "Paid Bob 5.",
        tools=[transfer],
        hooks=[HumanInTheLoopHook(["transfer"])],
    )
    planner, _ = scripted("planner", "Pay Bob.")
    flow = SequentialAgent(name="office", sub_agents=[planner, banker])
    config = RunnableConfig(thread_id="approval")

    paused = events(run, flow, "Pay Bob 5.", config, only="banker")
    (asked,) = [e for e in paused if isinstance(e, InterruptEvent)]
    assert names(asked.namespace) == ["banker"]
    assert asked.interrupt.value["tool_calls"][0]["name"] == "transfer"

    resumed = events(run, flow, Command(resume=ToolFeedback.approve()), config, only="banker")

    # the same run of the banker goes on: same namespace, its tool, then its answer
    assert {e.namespace for e in resumed} == {asked.namespace}
    assert [e.name for e in resumed if isinstance(e, ToolStart)] == ["transfer"]
    assert "".join(e.text for e in resumed if isinstance(e, ModelDelta)) == "Paid Bob 5."


@tool(return_direct=True)
def quote(symbol: str) -> str:
    """The price of a stock; it is the answer."""
    return f"{symbol} trades at 42."


def test_stream_messages_of_a_flow_gives_an_answer_no_model_streamed(run: Runner) -> None:
    # a return-direct tool's result is its agent's answer: no model call streams it
    def flow() -> SequentialAgent:
        analyst, _ = scripted("analyst", "Looking up ACME.")
        quoter, _ = scripted("quoter", tool_calls(("quote", {"symbol": "ACME"})), tools=[quote])
        return SequentialAgent(name="desk", sub_agents=[analyst, quoter])

    assert texts(run, flow(), "ACME?") == ["Looking ", "up ", "ACME.", "\n\nACME trades at 42."]
    assert texts(run, flow(), "ACME?", only="quoter") == ["ACME trades at 42."]
    assert texts(run, flow(), "ACME?", only="analyst") == ["Looking ", "up ", "ACME."]


def test_stream_gives_the_flow_state_after_each_sub_agent(run: Runner) -> None:
    outputs = run.stream(pipeline(), "Owls?")

    assert [(o.node, o.namespace) for o in outputs] == [("researcher", ()), ("writer", ())]
    assert [m.text for m in outputs[0].state["messages"]] == ["Owls?", "Owls hunt at night."]
    assert outputs[-1].state["messages"][-1].text == "An essay on owls."


class _Turns:
    """Two models that stream two words each, their words forced to alternate between the
    runs of two parallel sub-agents (first's first word, second's first word, then the
    rest), in threads (sync runs) or tasks (async runs)."""

    def __init__(self) -> None:
        import threading

        self.first_said = threading.Event()
        self.second_said = threading.Event()
        self.afirst_said: asyncio.Event | None = None
        self.asecond_said: asyncio.Event | None = None

    def model(self, words: tuple[str, str], first: bool) -> Any:
        from graph_agent import AssistantMessage, ChatResponse

        turns = self

        def chunk(word: str) -> ChatResponse:
            return ChatResponse.of(AssistantMessage(word))

        class Model:
            provider_name = "test"

            def call(self, prompt: Any) -> ChatResponse:
                return chunk("".join(words))

            async def acall(self, prompt: Any) -> ChatResponse:
                return self.call(prompt)

            def stream(self, prompt: Any) -> Any:
                mine, theirs = (
                    (turns.first_said, turns.second_said)
                    if first
                    else (turns.second_said, turns.first_said)
                )
                if not first:
                    assert theirs.wait(5)
                yield chunk(words[0])
                mine.set()
                if first:
                    assert theirs.wait(5)
                yield chunk(words[1])

            async def astream(self, prompt: Any) -> Any:
                if turns.afirst_said is None or turns.asecond_said is None:
                    turns.afirst_said, turns.asecond_said = asyncio.Event(), asyncio.Event()
                mine, theirs = (
                    (turns.afirst_said, turns.asecond_said)
                    if first
                    else (turns.asecond_said, turns.afirst_said)
                )
                if not first:
                    await asyncio.wait_for(theirs.wait(), 5)
                yield chunk(words[0])
                mine.set()
                if first:
                    await asyncio.wait_for(theirs.wait(), 5)
                yield chunk(words[1])

        return Model()


def test_parallel_answers_stream_as_paragraphs_never_word_by_word(run: Runner) -> None:
    """Sub-agents that stream at the same time do not interleave in ``stream_messages``:
    the first to speak streams, what the other says meanwhile follows as its own paragraph
    (the docs' reader once got 'one \\n\\nuno \\n\\ntwo ...')."""
    from graph_agent import ReactAgent

    turns = _Turns()
    english = ReactAgent(name="english", model=turns.model(("one ", "two"), first=True))
    spanish = ReactAgent(name="spanish", model=turns.model(("uno ", "dos"), first=False))
    flow = ParallelAgent(name="counting", sub_agents=[english, spanish])
    assert "".join(texts(run, flow, "count")) == "one two\n\nuno dos"

"""Every flow on every saver: a SequentialAgent with a ParallelAgent inside, a router, a
supervisor and a swarm, two turns each, sync and async, on MemorySaver, SqliteSaver (a file),
RedisSaver on fakeredis, on a real server and on a real 3-node cluster (the fixtures of
tests/redis_servers.py: on CI they must run). Each thread is read back by a new agent on the
same saver, its history is in order, and no request any model got, nor the conversation
kept, holds an unanswered tool call.

Then an interrupt inside a router's sub-agent on a real Redis server, resumed by another
process (tests/agent/_router_worker.py), and seen finished by the first."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from checkpoint import BaseCheckpointSaver, RedisSaver
from graph_agent import (
    AssistantMessage,
    BaseAgent,
    LlmRoutingAgent,
    ParallelAgent,
    Prompt,
    ReactAgent,
    SequentialAgent,
    StateSnapshot,
    SupervisorAgent,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.models import FunctionChatModel, ScriptedChatModel

from ..checkpoint.conftest import SAVERS
from ._router_worker import build_router
from ._strict import assert_prompts_valid, assert_valid
from .conftest import tool_calls

ROOT = Path(__file__).resolve().parents[2]
SAVER_KINDS = ["memory", "sqlite", "redis-fake", "redis-real", "redis-cluster"]


@pytest.fixture(params=SAVER_KINDS)
def saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    if request.param == "redis-cluster":
        url = request.getfixturevalue("cluster_url")
        made = RedisSaver.from_url(url, cluster=True, key_prefix=f"flows-{uuid.uuid4().hex[:8]}")
        request.addfinalizer(made.close)
        return made
    return SAVERS[request.param](request)


def last_user(prompt: Prompt) -> str:
    return [m for m in prompt.messages if isinstance(m, UserMessage)][-1].text


def searching(prefix: str) -> Callable[[Prompt], AssistantMessage]:
    """A model that calls ``search`` for the latest request, then answers with the result."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return AssistantMessage(f"{prefix}{last.responses[0].response_data}")
        query = last_user(prompt)
        call = ToolCall(
            id=f"s{len(prompt.messages)}", name="search", arguments=json.dumps({"query": query})
        )
        return AssistantMessage("", tool_calls=[call])

    return reply


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


@dataclass
class Scenario:
    """A flow to run two turns of: ``make(saver)`` builds it (and the models it records
    prompts in); ``turns`` are (input, expected answer); ``shape`` the kinds of the kept
    messages at the end; ``check`` looks at the final state further."""

    make: Callable[[BaseCheckpointSaver], tuple[BaseAgent, Sequence[Any]]]
    turns: Sequence[tuple[str, str]]
    shape: Sequence[str]
    check: Callable[[StateSnapshot, Sequence[Any]], None] = lambda *_: None


# -- the flows ---------------------------------------------------------------------------------


def pipeline(saver: BaseCheckpointSaver) -> tuple[BaseAgent, Sequence[Any]]:
    researcher = FunctionChatModel(searching("notes: "))
    critic = FunctionChatModel(lambda p: f"critique of {last_user(p)}")
    writer = FunctionChatModel(lambda p: f"article on {last_user(p)}")
    gather = ParallelAgent(
        name="gather",
        sub_agents=[
            ReactAgent(name="researcher", model=researcher, tools=[search]),
            ReactAgent(name="critic", model=critic),
        ],
    )
    flow = SequentialAgent(
        name="pipeline",
        sub_agents=[gather, ReactAgent(name="writer", model=writer)],
        saver=saver,
    )
    return flow, (researcher, critic, writer)


def check_pipeline(snapshot: StateSnapshot, models: Sequence[Any]) -> None:
    researcher, critic, writer = models
    merged = snapshot.values["messages"][-2].text
    assert merged == "researcher:\nnotes: found topic two\n\ncritic:\ncritique of topic two"
    # the writer saw the parallel step's answer; the critic never saw the researcher's
    # answer of its own step (only the earlier turn's, in the conversation)
    assert writer.prompts[-1].messages[-1].text == merged
    assert not any("found topic two" in m.text for p in critic.prompts for m in p.messages)
    assert any("found topic one" in m.text for m in critic.prompts[-1].messages)
    assert len(researcher.prompts) == 4  # two model calls a turn: search, then answer


def router(saver: BaseCheckpointSaver) -> tuple[BaseAgent, Sequence[Any]]:
    def route(prompt: Prompt) -> str:
        request = last_user(prompt)
        agent = "weather" if "rain" in request else "news"
        return json.dumps({"agents": [{"agent": agent, "query": request}]})

    chooser = FunctionChatModel(route)
    weather = FunctionChatModel(searching("Forecast: "))
    news = FunctionChatModel(lambda p: f"News on {last_user(p)}")
    flow = LlmRoutingAgent(
        name="desk",
        model=chooser,
        sub_agents=[
            ReactAgent(name="weather", model=weather, tools=[search], description="Weather"),
            ReactAgent(name="news", model=news, description="The news"),
        ],
        saver=saver,
    )
    return flow, (chooser, weather, news)


def check_router(snapshot: StateSnapshot, models: Sequence[Any]) -> None:
    chooser, weather, news = models
    # the router's model saw the conversation without the weather agent's tool traffic
    second = chooser.prompts[-1].messages
    assert not any(isinstance(m, ToolResponseMessage) for m in second)
    assert [m.text for m in second[1:]] == [
        "rain in Paris?",
        "Forecast: found rain in Paris?",
        "news on elections?",
    ]
    assert len(weather.prompts) == 2 and len(news.prompts) == 1


def supervisor(saver: BaseCheckpointSaver) -> tuple[BaseAgent, Sequence[Any]]:
    def lead(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return AssistantMessage(" + ".join(r.response_data for r in last.responses))
        n = len(prompt.messages)
        calls = [("researcher", {"input": last.text})]
        if "both" in last.text:
            calls.append(("critic", {"input": last.text}))
        return AssistantMessage(
            "",
            tool_calls=[
                ToolCall(id=f"d{n}-{i}", name=name, arguments=json.dumps(args))
                for i, (name, args) in enumerate(calls)
            ],
        )

    chief = FunctionChatModel(lead)
    researcher = FunctionChatModel(searching("notes: "))
    critic = FunctionChatModel(lambda p: f"critique of {last_user(p)}")
    flow = SupervisorAgent(
        name="chief",
        model=chief,
        sub_agents=[
            ReactAgent(
                name="researcher", model=researcher, tools=[search], description="Researches"
            ),
            ReactAgent(name="critic", model=critic, description="Criticises"),
        ],
        saver=saver,
    )
    return flow, (chief, researcher, critic)


def check_supervisor(snapshot: StateSnapshot, models: Sequence[Any]) -> None:
    _, researcher, critic = models
    responses = snapshot.values["messages"][-2]
    assert isinstance(responses, ToolResponseMessage)
    assert [r.name for r in responses.responses] == ["researcher", "critic"]
    # a delegated agent sees the conversation without the supervisor's tool traffic (only
    # its own, after its task)
    for prompt in (*researcher.prompts, *critic.prompts):
        task = max(i for i, m in enumerate(prompt.messages) if isinstance(m, UserMessage))
        before = prompt.messages[:task]
        assert not any(isinstance(m, ToolResponseMessage) for m in before)
        assert not any(isinstance(m, AssistantMessage) and m.tool_calls for m in before)
    assert [m.text for m in critic.prompts[0].messages] == [
        "tides",
        "notes: found tides",
        "tides, both",
    ]


def swarm(saver: BaseCheckpointSaver) -> tuple[BaseAgent, Sequence[Any]]:
    triage_model = ScriptedChatModel([tool_calls(("transfer_to_billing", {}))])
    billing_model = ScriptedChatModel(["Which order?", "Order 42 is refunded."])
    billing = ReactAgent(
        name="billing", model=billing_model, description="Bills", handoffs=["triage"]
    )
    triage = ReactAgent(name="triage", model=triage_model, handoffs=[billing], saver=saver)
    return triage, (triage_model, billing_model)


def check_swarm(snapshot: StateSnapshot, models: Sequence[Any]) -> None:
    triage_model, billing_model = models
    assert snapshot.values["active_agent"] == "billing"
    assert len(triage_model.prompts) == 1 and len(billing_model.prompts) == 2


SCENARIOS = {
    "sequential-parallel": Scenario(
        pipeline,
        [("topic one", "article on topic one"), ("topic two", "article on topic two")],
        ["User", "Assistant", "Assistant"] * 2,
        check_pipeline,
    ),
    "router": Scenario(
        router,
        [
            ("rain in Paris?", "Forecast: found rain in Paris?"),
            ("news on elections?", "News on news on elections?"),
        ],
        ["User", "Assistant"] * 2,
        check_router,
    ),
    "supervisor": Scenario(
        supervisor,
        [
            ("tides", "notes: found tides"),
            ("tides, both", "notes: found tides, both + critique of tides, both"),
        ],
        ["User", "Assistant", "ToolResponse", "Assistant"] * 2,
        check_supervisor,
    ),
    "swarm": Scenario(
        swarm,
        [("I want a refund", "Which order?"), ("order 42", "Order 42 is refunded.")],
        ["User", "Assistant", "ToolResponse", "Assistant", "User", "Assistant"],
        check_swarm,
    ),
}


# -- running them ------------------------------------------------------------------------------


@dataclass
class Played:
    answers: list[str]
    snapshot: StateSnapshot
    history: list[StateSnapshot]
    read_back: StateSnapshot


def play(mode: str, scenario: Scenario, saver: BaseCheckpointSaver) -> tuple[Played, Sequence[Any]]:
    flow, models = scenario.make(saver)
    config = {"thread_id": f"thread-{uuid.uuid4().hex[:6]}"}
    if mode == "sync":
        answers = [flow.call(text, config).text for text, _ in scenario.turns]
        snapshot = flow.get_state(config)
        history = list(flow.get_state_history(config))
        twin, _ = scenario.make(saver)  # a new agent on the same saver: what it reads
        read_back = twin.get_state(config)
    else:

        async def go() -> tuple[list[str], Any, list[StateSnapshot], Any]:
            try:
                answers = [(await flow.acall(text, config)).text for text, _ in scenario.turns]
                snapshot = await flow.aget_state(config)
                history = [s async for s in flow.graph.aget_state_history(config)]
                twin, _ = scenario.make(saver)
                return answers, snapshot, history, await twin.aget_state(config)
            finally:
                if isinstance(saver, RedisSaver):
                    await saver.aclose()  # its async client belongs to this loop

        answers, snapshot, history, read_back = asyncio.run(go())
    assert snapshot is not None and read_back is not None
    return Played(answers, snapshot, history, read_back), models


def kinds(messages: Sequence[Any]) -> list[str]:
    return [type(m).__name__.removesuffix("Message") for m in messages]


def assert_history_in_order(
    history: list[StateSnapshot], latest: StateSnapshot, turns: int
) -> None:
    """Newest first, one checkpoint after another, the conversation only growing; a turn
    ends at each snapshot with nothing next."""
    assert history[0].checkpoint_id == latest.checkpoint_id
    assert [s.step for s in history] == list(range(len(history) - 1, -1, -1))
    for newer, older in itertools.pairwise(history):
        assert newer.parent_id == older.checkpoint_id
        before, after = list(older.values.get("messages") or ()), list(newer.values["messages"])
        assert after[: len(before)] == before
    ended = [s for s in history if not s.next]
    assert len(ended) == turns
    for snapshot in ended:
        answer = snapshot.values["messages"][-1]
        assert isinstance(answer, AssistantMessage) and not answer.tool_calls
        assert_valid(snapshot.values["messages"])


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_two_turns_of_each_flow_on_each_saver(
    name: str, mode: str, saver: BaseCheckpointSaver
) -> None:
    scenario = SCENARIOS[name]
    played, models = play(mode, scenario, saver)
    assert played.answers == [answer for _, answer in scenario.turns]
    messages = list(played.snapshot.values["messages"])
    assert kinds(messages) == list(scenario.shape)
    assert [m.text for m in messages if isinstance(m, UserMessage)] == [
        t for t, _ in scenario.turns
    ]
    assert list(played.read_back.values["messages"]) == messages
    assert played.read_back.checkpoint_id == played.snapshot.checkpoint_id
    assert played.snapshot.next == () and played.snapshot.interrupts == ()
    assert_valid(messages)
    assert_prompts_valid(*models)
    assert_history_in_order(played.history, played.snapshot, len(scenario.turns))
    scenario.check(played.snapshot, models)


# -- resumed by another process ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_interrupt_in_a_routers_agent_is_resumed_by_another_process(
    mode: str, redis_url: str, tmp_path: Path
) -> None:
    prefix = f"router-{uuid.uuid4().hex[:8]}"
    marks = tmp_path / "refunds"
    saver = RedisSaver.from_url(redis_url, key_prefix=prefix)
    try:
        router = build_router(saver, marks)
        config = {"thread_id": "customer-7"}
        assert router.call("rain in Oslo?", config).text == "Forecast: rain in Paris"
        if mode == "async":  # on a saver of its own: its async client closes with the loop
            own = RedisSaver.from_url(redis_url, key_prefix=prefix)

            async def pause() -> None:
                try:
                    await build_router(own, marks).ainvoke("a refund please", config)
                finally:
                    await own.aclose()

            asyncio.run(pause())
        else:
            router.invoke("a refund please", config)
        paused = router.get_state(config)
        assert paused is not None and paused.next == ("payments",)
        (pending,) = paused.interrupts
        assert pending.namespace[0].startswith("payments:")
        assert pending.value["tool_calls"][0]["name"] == "refund"
        assert not marks.exists()  # the refund waits for the approval

        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        worker = subprocess.run(
            [sys.executable, "-m", "tests.agent._router_worker", mode, redis_url, prefix,
             "customer-7", str(marks)],
            cwd=ROOT, env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert worker.returncode == 0, worker.stderr.decode()
        report = json.loads(worker.stdout.decode().strip().splitlines()[-1])
        assert report["answer"] == "Payments: refunded 5"
        assert marks.read_text().split() == [str(report["pid"])]  # ran once, over there
        assert report["pid"] != os.getpid()

        done = router.get_state(config)  # this process sees the thread the other finished
        assert done is not None and done.next == () and done.interrupts == ()
        messages = list(done.values["messages"])
        assert [m.text for m in messages] == [
            "rain in Oslo?",
            "Forecast: rain in Paris",
            "a refund please",
            "Payments: refunded 5",
        ]
        assert_valid(messages)
        assert_history_in_order(list(router.get_state_history(config)), done, turns=2)
        # and goes on from it
        assert router.call("any news?", config).text == "News about any news?"
    finally:
        saver.close()

"""``agent.running``: what a flow, a tool or a swarm asks of an agent it runs, through public
names (``RunningAgent``)."""

from __future__ import annotations

import pytest

from graph_agent import AssistantMessage, GraphUsageError, ReactAgent, UserMessage
from graph_agent.agent import RunningAgent
from graph_agent.models import ScriptedChatModel


class Listener:
    def on_event(self, event: object) -> None:
        pass


def test_a_run_starts_on_its_own_thread_and_ends_with_the_answer() -> None:
    agent = ReactAgent(name="helper", model=ScriptedChatModel(["done"]))
    running = agent.running
    assert isinstance(running, RunningAgent)
    config = running.config("hi", None)
    assert isinstance(config, dict) and config["thread_id"].startswith("helper-")
    assert running.config("hi", {"thread_id": "t"}) == {"thread_id": "t"}
    given = running.input("hi")
    assert isinstance(given, dict) and given["messages"] == [UserMessage("hi")]
    outcome = agent.graph.run(given, config)
    answer = running.answer(outcome, config["thread_id"])
    assert isinstance(answer, AssistantMessage) and answer.text == "done"


def test_bad_input_and_a_resume_without_thread_say_what_to_do() -> None:
    running = ReactAgent(name="helper", model=ScriptedChatModel(["done"])).running
    with pytest.raises(GraphUsageError, match="takes a string, a message"):
        running.input(3)  # type: ignore[arg-type]
    with pytest.raises(GraphUsageError, match="needs the paused run's thread"):
        running.config(None, None)


def test_with_handoffs_the_loop_is_its_own_and_the_swarm_has_its_listeners() -> None:
    listener = Listener()
    other = ReactAgent(name="other", model=ScriptedChatModel(["hi"]))
    agent = (
        ReactAgent.builder()
        .name("desk")
        .model(ScriptedChatModel(["hello"]))
        .handoffs(other)
        .listeners(listener)
        .build()
    )
    running = agent.running
    assert running.loop is not agent.graph  # agent.graph is the swarm
    assert set(agent.graph.nodes) == {"desk", "other"}
    assert running.listeners == (listener,)
    assert listener not in running.loop.listeners and listener in agent.graph.listeners
    assert running.speaks(("desk",)) and not running.speaks(())  # the swarm's agents speak
    assert running.fresh == {"jump_to": None}

"""return_direct, max_iterations and model errors: how a run ends, and what the thread keeps."""

from __future__ import annotations

from typing import Any

import pytest

from graph_agent import (
    AgentMaxIterationsError,
    AssistantMessage,
    FunctionChatModel,
    GraphRecursionError,
    ModelError,
    Prompt,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from hooks import AgentHook, ModelHook

from .conftest import Runner, tool_calls


@tool(return_direct=True)
def order_status(order_id: str) -> str:
    """The status of an order, told to the user as is."""
    return f"Order {order_id} has shipped."


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def always_tools(prompt: Prompt) -> AssistantMessage:
    return tool_calls(("ping", {}))


class Counting(ModelHook, AgentHook):
    """A hook at every position, counting how often each runs."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def _count(self, where: str) -> None:
        self.counts[where] = self.counts.get(where, 0) + 1

    def before_agent(self, state: Any, config: Any) -> None:
        self._count("before_agent")

    def before_model(self, state: Any, config: Any) -> None:
        self._count("before_model")

    def after_model(self, state: Any, config: Any) -> None:
        self._count("after_model")

    def after_agent(self, state: Any, config: Any) -> None:
        self._count("after_agent")


class AfterAgent(AgentHook):
    def after_agent(self, state: Any, config: Any) -> None:
        return None


# -- return_direct ------------------------------------------------------------------------------


def test_return_direct_ends_the_run_with_the_tool_result(run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("order_status", {"order_id": "A-1"}))])
    agent = ReactAgent(name="a", model=model, tools=[order_status], output_key="answer")
    config = RunnableConfig(thread_id="direct")
    reply = run.call(agent, "where is A-1?", config)
    assert reply.text == "Order A-1 has shipped."
    assert reply.metadata.get("return_direct") is True
    assert len(model.prompts) == 1  # the model is not asked again
    snapshot = agent.get_state(config)
    assert snapshot is not None and snapshot.next == ()
    assert snapshot.values["answer"] == "Order A-1 has shipped."
    kinds = [m.message_type for m in snapshot.values["messages"]]
    assert kinds == ["user", "assistant", "tool", "assistant"]


def test_return_direct_stream_ends_after_the_tool_node(run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("order_status", {"order_id": "B-2"}))])
    agent = ReactAgent(name="a", model=model, tools=[order_status])
    assert [o.node for o in run.stream(agent, "B-2?")] == ["model", "tools"]


def test_return_direct_runs_the_after_agent_hooks_and_the_next_turn_is_normal(run: Runner) -> None:
    hook = Counting()
    model = ScriptedChatModel([tool_calls(("order_status", {"order_id": "C-3"})), "Anything else?"])
    agent = ReactAgent(name="a", model=model, tools=[order_status], hooks=[hook])
    config = RunnableConfig(thread_id="next")
    assert run.call(agent, "C-3?", config).text == "Order C-3 has shipped."
    assert hook.counts == {"before_agent": 1, "before_model": 1, "after_model": 1, "after_agent": 1}
    assert run.call(agent, "thanks", config).text == "Anything else?"
    assert [m.text for m in model.prompts[1].messages][-2:] == ["Order C-3 has shipped.", "thanks"]


def test_a_mixed_batch_goes_back_to_the_model(run: Runner) -> None:
    batch = tool_calls(("order_status", {"order_id": "D-4"}), ("ping", {}))
    model = ScriptedChatModel([batch, "D-4 shipped, and pong."])
    agent = ReactAgent(name="a", model=model, tools=[order_status, ping])
    assert run.call(agent, "go").text == "D-4 shipped, and pong."
    assert len(model.prompts) == 2


# -- max_iterations -----------------------------------------------------------------------------


@pytest.mark.parametrize("hooks", ["none", "every position"])
def test_max_iterations_stops_a_runaway_loop(run: Runner, hooks: str) -> None:
    model = FunctionChatModel(always_tools)
    options: dict[str, Any] = {"hooks": [Counting()]} if hooks != "none" else {}
    agent = ReactAgent(name="looper", model=model, tools=[ping], max_iterations=3, **options)
    config = RunnableConfig(thread_id="loop")
    with pytest.raises(AgentMaxIterationsError) as caught:
        run.call(agent, "go", config)
    assert isinstance(caught.value, GraphRecursionError)
    message = str(caught.value)
    assert "agent 'looper' reached max_iterations=3" in message
    assert "thread 'loop'" in message and "raise max_iterations" in message
    assert len(model.prompts) == 3  # exactly max_iterations model calls

    # The thread keeps its last good step: the third round's tool results, before the
    # model would have been called a fourth time.
    snapshot = agent.get_state(config)
    assert snapshot is not None and snapshot.next == ("model",)
    kinds = [m.message_type for m in snapshot.values["messages"]]
    assert kinds == ["user", *["assistant", "tool"] * 3]


def test_after_max_iterations_the_thread_can_be_continued(run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("ping", {})), tool_calls(("ping", {})), "done at last"])
    agent = ReactAgent(name="a", model=model, tools=[ping], max_iterations=1)
    config = RunnableConfig(thread_id="again")
    with pytest.raises(AgentMaxIterationsError):
        run.call(agent, "go", config)
    with pytest.raises(AgentMaxIterationsError):
        run.call(agent, None, config)  # one more model call, then the limit again
    assert run.call(agent, None, config).text == "done at last"
    snapshot = agent.get_state(config)
    assert snapshot is not None and snapshot.next == ()
    kinds = [m.message_type for m in snapshot.values["messages"]]
    assert kinds == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


@pytest.mark.parametrize("hooks", ["none", "every position", "after agent"])
@pytest.mark.parametrize("ending", ["answer", "return direct"])
def test_max_iterations_model_calls_are_allowed(run: Runner, hooks: str, ending: str) -> None:
    hook_list = {"none": [], "every position": [Counting()], "after agent": [AfterAgent()]}[hooks]
    last = "the answer" if ending == "answer" else tool_calls(("order_status", {"order_id": "E"}))
    model = ScriptedChatModel([tool_calls(("ping", {})), tool_calls(("ping", {})), last])
    agent = ReactAgent(
        name="a", model=model, tools=[ping, order_status], hooks=hook_list, max_iterations=3
    )
    reply = run.call(agent, "go")
    assert reply.text == ("the answer" if ending == "answer" else "Order E has shipped.")
    assert len(model.prompts) == 3


def test_a_recursion_limit_in_the_config_is_the_callers_and_not_max_iterations(
    run: Runner,
) -> None:
    agent = ReactAgent(name="a", model=FunctionChatModel(always_tools), tools=[ping])
    with pytest.raises(GraphRecursionError, match="recursion_limit=3") as caught:
        run.call(agent, "go", RunnableConfig(recursion_limit=3))
    assert not isinstance(caught.value, AgentMaxIterationsError)


# -- model errors -------------------------------------------------------------------------------


def test_a_model_error_propagates_and_writes_no_half_step(run: Runner) -> None:
    model = ScriptedChatModel(["first", ModelError("rate limited", status=429), "second", "third"])
    agent = ReactAgent(name="a", model=model)
    config = RunnableConfig(thread_id="err")
    run.call(agent, "one", config)
    before = agent.get_state(config)
    with pytest.raises(ModelError, match="rate limited") as caught:
        run.call(agent, "two", config)
    assert caught.value.status == 429
    after = agent.get_state(config)
    assert before is not None and after is not None
    # Nothing of the failed model step: only the input is kept, as a checkpoint of its own,
    # on top of the previous one, waiting for the model.
    assert after.parent_id == before.checkpoint_id
    assert after.metadata["source"] == "input" and after.next == ("model",)
    assert [m.text for m in after.values["messages"]] == ["one", "first", "two"]
    assert not any("rate limited" in m.text for m in after.values["messages"])
    # invoke(None) / call(None) retries the model call ...
    assert run.call(agent, None, config).text == "second"
    # ... and the thread goes on as usual.
    assert run.call(agent, "three", config).text == "third"
    state = agent.get_state(config)
    assert state is not None
    texts = [m.text for m in state.values["messages"]]
    assert texts == ["one", "first", "two", "second", "three", "third"]


def test_a_model_error_after_tools_keeps_the_tool_step(run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("ping", {})), ModelError("overloaded")])
    agent = ReactAgent(name="a", model=model, tools=[ping])
    config = RunnableConfig(thread_id="mid")
    with pytest.raises(ModelError, match="overloaded"):
        run.call(agent, "go", config)
    snapshot = agent.get_state(config)
    assert snapshot is not None and snapshot.next == ("model",)
    assert isinstance(snapshot.values["messages"][-1], ToolResponseMessage)
    model.responses.append("recovered")
    assert run.call(agent, None, config).text == "recovered"  # continues at the model
    assert model.prompts[-1].messages[0] == UserMessage("go")


def test_a_tool_that_raises_does_not_stop_the_run(run: Runner) -> None:
    @tool
    def broken() -> str:
        """Broken."""
        raise ValueError("no such account")

    model = ScriptedChatModel([tool_calls(("broken", {})), "Sorry, that failed."])
    agent = ReactAgent(name="a", model=model, tools=[broken])
    assert run.call(agent, "go").text == "Sorry, that failed."
    tool_message = model.prompts[1].messages[-1]
    assert isinstance(tool_message, ToolResponseMessage)
    assert "no such account" in tool_message.responses[0].response_data

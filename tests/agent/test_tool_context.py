"""Inside an agent, each tool call gets a ``ToolContext``: the live state, the run's config,
the agent's entries, its call id, the store, and an ``extra_state`` merged back into state."""

from __future__ import annotations

import threading
from typing import Any

from graph_agent import (
    AssistantMessage,
    Command,
    KeyStrategy,
    Overwrite,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    ToolContext,
    ToolResponseMessage,
    UserMessage,
    interrupt,
    tool,
)

from .conftest import Runner, tool_calls


def test_a_tool_sees_the_live_state_and_the_config(run: Runner) -> None:
    seen: list[dict[str, Any]] = []

    @tool
    def accounts(ctx: ToolContext) -> str:
        """The user's accounts."""
        assert ctx.state is not None and ctx.config is not None
        seen.append(
            {
                "texts": [m.text for m in ctx.state["messages"]],
                "last": ctx.state["messages"][-1],
                "plan": ctx.state.get("plan"),
                "user_id": ctx.config.metadata["user_id"],
                "thread": ctx.config.thread_id,
                "keys": set(ctx.context),
            }
        )
        return f"accounts of {ctx.config.metadata['user_id']}"

    asking = tool_calls(("accounts", {}), text="let me look")
    model = ScriptedChatModel(["hi", asking, "you have two"])
    agent = ReactAgent(name="bank", model=model, tools=[accounts])
    config = RunnableConfig(thread_id="t1", metadata={"user_id": "u-42"})
    run.call(agent, "hello", config)
    reply = run.call(agent, {"messages": [UserMessage("my accounts?")], "plan": "gold"}, config)
    assert reply.text == "you have two"
    (call,) = seen
    assert call["texts"] == ["hello", "hi", "my accounts?", "let me look"]
    assert call["last"] == asking  # the live state: the call being answered is in it
    assert call["plan"] == "gold"
    assert call["user_id"] == "u-42"
    assert call["thread"] == "t1"
    assert {"state", "config", "extraState", "toolCallId"} <= call["keys"]
    assert "accounts of u-42" in model.prompts[2].messages[-1].text


def test_each_call_gets_its_own_id_and_extra_state(run: Runner) -> None:
    seen: list[tuple[str | None, dict[str, Any]]] = []

    @tool
    def mark(label: str, ctx: ToolContext) -> str:
        """Mark."""
        seen.append((ctx.tool_call_id, dict(ctx.extra_state)))
        ctx.extra_state[f"mark_{label}"] = ctx.tool_call_id
        return label

    model = ScriptedChatModel(
        [tool_calls(("mark", {"label": "a"}), ("mark", {"label": "b"})), "ok"]
    )
    agent = ReactAgent(name="a", model=model, tools=[mark])
    state = run.invoke(agent, "go")
    assert sorted(seen, key=lambda s: str(s[0])) == [("c1", {}), ("c2", {})]
    assert state["mark_a"] == "c1" and state["mark_b"] == "c2"


def test_extra_state_is_merged_after_the_tool_node_and_seen_by_the_model_node(run: Runner) -> None:
    @tool
    def set_mood(mood: str, ctx: ToolContext) -> str:
        """Set the mood."""
        ctx.extra_state["mood"] = mood
        return "set"

    model = ScriptedChatModel([tool_calls(("set_mood", {"mood": "calm"})), "ok"])
    agent = ReactAgent(name="a", model=model, tools=[set_mood])
    outputs = run.stream(agent, "go")
    tools = next(o for o in outputs if o.node == "tools")
    assert tools.update is not None and tools.update["mood"] == "calm"
    assert tools.state["mood"] == "calm"


def ordered_batch(run: Runner, strategies: dict[str, Any], write: Any) -> dict[str, Any]:
    """A batch of three parallel calls that finish in reverse order (c3, c2, c1); each writes
    ``write(n)`` to extra_state. The state afterwards."""
    done = {n: threading.Event() for n in (1, 2, 3)}

    @tool
    def work(n: int, ctx: ToolContext) -> str:
        """Work."""
        if n < 3:
            assert done[n + 1].wait(10), "the calls do not run in parallel"
        ctx.extra_state.update(write(n))
        done[n].set()
        return str(n)

    batch = tool_calls(("work", {"n": 1}), ("work", {"n": 2}), ("work", {"n": 3}))
    model = ScriptedChatModel([batch, "ok"])
    agent = ReactAgent(name="a", model=model, tools=[work], key_strategies=strategies)
    state = run.invoke(agent, {"messages": [UserMessage("go")], "log": ["before"]})
    return dict(state)


def test_parallel_calls_merge_extra_state_in_call_order(run: Runner) -> None:
    state = ordered_batch(
        run,
        {"log": KeyStrategy.APPEND, "seen": KeyStrategy.MERGE},
        lambda n: {"log": [f"call {n}"], "winner": n, "seen": {f"k{n}": n}},
    )
    assert state["log"] == ["before", "call 1", "call 2", "call 3"]  # APPEND concatenates
    assert state["winner"] == 3  # REPLACE: the last call wins, not the last to finish
    assert state["seen"] == {"k1": 1, "k2": 2, "k3": 3}


def test_parallel_single_items_are_appended_whole(run: Runner) -> None:
    state = ordered_batch(run, {"log": KeyStrategy.APPEND}, lambda n: {"log": f"call {n}"})
    assert state["log"] == ["before", "call 1", "call 2", "call 3"]


def test_a_custom_strategy_folds_in_call_order(run: Runner) -> None:
    state = ordered_batch(
        run, {"total": lambda old, new: (old or "") + new}, lambda n: {"total": str(n)}
    )
    assert state["total"] == "123"


def test_tool_context_is_rebuilt_for_every_run(run: Runner) -> None:
    users: list[str] = []

    @tool
    def whoami(ctx: ToolContext) -> str:
        """Who am I."""
        assert ctx.config is not None
        users.append(ctx.config.metadata["user_id"])
        return "ok"

    model = ScriptedChatModel([tool_calls(("whoami", {})), "a", tool_calls(("whoami", {})), "b"])
    agent = ReactAgent(name="a", model=model, tools=[whoami])
    run.call(agent, "1", RunnableConfig(thread_id="x", metadata={"user_id": "ann"}))
    run.call(agent, "2", RunnableConfig(thread_id="x", metadata={"user_id": "bob"}))
    assert users == ["ann", "bob"]


def test_the_assistant_message_with_the_calls_is_in_the_prompt_history(run: Runner) -> None:
    @tool
    def noop() -> str:
        """Nothing."""
        return "nothing"

    model = ScriptedChatModel([tool_calls(("noop", {})), "done"])
    agent = ReactAgent(name="a", model=model, tools=[noop], system_prompt="sys")
    run.call(agent, "go")
    second = model.prompts[1].messages
    assert [m.message_type for m in second] == ["system", "user", "assistant", "tool"]
    assert isinstance(second[2], AssistantMessage) and second[2].tool_calls[0].name == "noop"


def test_overwrite_in_extra_state_replaces_an_append_key(run: Runner) -> None:
    state = ordered_batch(
        run,
        {"log": KeyStrategy.APPEND},
        lambda n: {"log": Overwrite([f"reset by {n}"]) if n == 2 else f"call {n}"},
    )
    assert state["log"] == ["reset by 2", "call 3"]  # call 1's item went with the old list


def test_a_tool_may_pause_the_run_with_interrupt(run: Runner) -> None:
    @tool
    def ask_human(question: str) -> str:
        """Ask the user a question."""
        return f"the user said {interrupt(question)}"

    batch = tool_calls(("ask_human", {"question": "Colour?"}), ("ask_human", {"question": "Size?"}))
    model = ScriptedChatModel([batch, "A big blue one."])
    # One after another, so each answer goes to the question it was asked for.
    agent = ReactAgent(name="a", model=model, tools=[ask_human], parallel_tool_execution=False)
    config = RunnableConfig(thread_id="ask")
    run.invoke(agent, "buy a shirt", config)
    questions = []
    for answer in ("blue", "big"):
        snapshot = agent.get_state(config)
        assert snapshot is not None and snapshot.next == ("tools",)
        questions.append(snapshot.interrupts[0].value)
        state = run.invoke(agent, Command(resume=answer), config)
    assert questions == ["Colour?", "Size?"]
    tool_message = state["messages"][2]
    assert isinstance(tool_message, ToolResponseMessage)
    assert [r.response_data for r in tool_message.responses] == [
        "the user said blue",
        "the user said big",
    ]
    assert state["messages"][-1].text == "A big blue one."

"""Hooks inside an agent: where and in which order they run, their state updates, jumps,
errors, and a hook that pauses the run with ``interrupt()``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from graph_agent import (
    AssistantMessage,
    Command,
    GraphUsageError,
    KeyStrategy,
    OverAllState,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    ToolContext,
    ToolResponseMessage,
    UserMessage,
    interrupt,
    tool,
)
from hooks import AgentHook, HookPosition, JumpTo, ModelHook

from .conftest import Runner, tool_calls


@tool
def ping() -> str:
    """Ping."""
    return "pong"


class Logged(ModelHook, AgentHook):
    """Logs ``name position`` at every position."""

    def __init__(self, name: str, log: list[str], order: int = 0) -> None:
        self.name, self.log, self.order = name, log, order

    def before_agent(self, state: OverAllState, config: RunnableConfig) -> None:
        self.log.append(f"{self.name} before_agent")

    def before_model(self, state: OverAllState, config: RunnableConfig) -> None:
        self.log.append(f"{self.name} before_model")

    def after_model(self, state: OverAllState, config: RunnableConfig) -> None:
        self.log.append(f"{self.name} after_model")

    def after_agent(self, state: OverAllState, config: RunnableConfig) -> None:
        self.log.append(f"{self.name} after_agent")


class AsyncLogged(Logged):
    async def before_agent(self, state: OverAllState, config: RunnableConfig) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        self.log.append(f"{self.name} before_agent")

    async def after_model(self, state: OverAllState, config: RunnableConfig) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        self.log.append(f"{self.name} after_model")


# -- order --------------------------------------------------------------------------------------


def test_hooks_run_in_order_and_after_hooks_in_reverse(run: Runner) -> None:
    log: list[str] = []
    hooks = [Logged("late", log, order=5), Logged("first", log, order=-1), Logged("second", log)]
    model = ScriptedChatModel([tool_calls(("ping", {})), "done"])
    agent = ReactAgent(name="a", model=model, tools=[ping], hooks=hooks)
    run.call(agent, "go")
    before_model = ["first before_model", "second before_model", "late before_model"]
    after_model = ["late after_model", "second after_model", "first after_model"]
    assert log == [
        "first before_agent",
        "second before_agent",
        "late before_agent",
        *before_model,
        *after_model,
        *before_model,  # the second model call, after the tools
        *after_model,
        "late after_agent",
        "second after_agent",
        "first after_agent",
    ]


def test_positions_limit_where_a_hook_runs(run: Runner) -> None:
    log: list[str] = []

    class OnlyAfter(Logged):
        positions = (HookPosition.AFTER_AGENT,)

    agent = ReactAgent(name="a", model=ScriptedChatModel(["ok"]), hooks=[OnlyAfter("x", log)])
    run.call(agent, "go")
    assert log == ["x after_agent"]
    assert set(agent.graph.nodes) == {"model", "tools", "x.after_agent"}


def test_async_hooks_run_in_async_runs_with_sync_ones() -> None:
    log: list[str] = []
    agent = ReactAgent(
        name="a",
        model=ScriptedChatModel(["ok"]),
        hooks=[AsyncLogged("async", log, order=1), Logged("sync", log, order=2)],
    )
    asyncio.run(agent.acall("go"))
    assert log == [
        "async before_agent",
        "sync before_agent",
        "async before_model",
        "sync before_model",
        "sync after_model",
        "async after_model",
        "sync after_agent",
        "async after_agent",
    ]


def test_an_async_hook_in_a_sync_run_is_a_clear_error() -> None:
    agent = ReactAgent(name="a", model=ScriptedChatModel(["ok"]), hooks=[AsyncLogged("h", [])])
    config = RunnableConfig(thread_id="sync")
    with pytest.raises(
        GraphUsageError, match=r"hook 'h'\.before_agent is async; run the agent with acall"
    ):
        agent.call("go", config)
    snapshot = agent.get_state(config)  # only the input is kept; the hook's step left nothing
    assert snapshot is not None and snapshot.next == ("h.before_agent",)
    assert snapshot.values["messages"] == [UserMessage("go")]
    assert asyncio.run(agent.acall(None, config)).text == "ok"  # an async run takes it on


# -- state updates ------------------------------------------------------------------------------


class Profile(ModelHook):
    """After every model call: the user's name (from the first message) and a call trace."""

    key_strategies = {"trace": KeyStrategy.APPEND}

    def after_model(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        first = state["messages"][0].text
        return {
            "user_name": first.removeprefix("I am ").rstrip("."),
            "model_calls": state.get("model_calls", 0) + 1,
            "trace": f"answer {len(state['messages'])}",
        }


def test_a_hooks_dict_updates_the_state(run: Runner) -> None:
    seen: list[Any] = []

    @tool
    def whoami(ctx: ToolContext) -> str:
        """Who am I."""
        assert ctx.state is not None
        seen.append(ctx.state["user_name"])
        return f"you are {ctx.state['user_name']}"

    model = ScriptedChatModel([tool_calls(("whoami", {})), "Hello Ada.", "Bye Ada."])
    agent = ReactAgent(name="a", model=model, tools=[whoami], hooks=[Profile()])
    config = RunnableConfig(thread_id="p")
    run.call(agent, "I am Ada.", config)
    state = run.invoke(agent, "bye", config)
    assert seen == ["Ada"]  # the tool node saw what the hook wrote before it
    assert state["user_name"] == "Ada"
    assert state["model_calls"] == 3
    assert state["trace"] == ["answer 2", "answer 4", "answer 6"]  # the hook's strategy


def test_a_hook_returning_something_else_than_a_dict_is_an_error(run: Runner) -> None:
    class Bad(ModelHook):
        def before_model(self, state: Any, config: Any) -> Any:
            return ["not", "a", "dict"]

    agent = ReactAgent(name="a", model=ScriptedChatModel(["ok"]), hooks=[Bad()])
    with pytest.raises(GraphUsageError, match=r"hook 'Bad'\.before_model returned list"):
        run.call(agent, "go")


# -- jumps --------------------------------------------------------------------------------------


class Guard(ModelHook):
    """Answers itself and ends the run when the user says "forbidden"."""

    can_jump_to = (JumpTo.END,)

    def before_model(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any] | None:
        assert state.get("jump_to") is None  # a jump never lingers into the next step
        if state["messages"][-1].text == "forbidden":
            return {
                "messages": [AssistantMessage("I can't help with that.")],
                "jump_to": JumpTo.END,
            }
        return None


def test_jump_to_end_skips_the_model_once(run: Runner) -> None:
    log: list[str] = []
    model = ScriptedChatModel(["Sure."])
    agent = ReactAgent(name="a", model=model, hooks=[Guard(), Logged("audit", log, order=9)])
    config = RunnableConfig(thread_id="guard")
    assert run.call(agent, "forbidden", config).text == "I can't help with that."
    assert model.prompts == []
    assert log == [
        "audit before_agent",
        "audit after_agent",
    ]  # the end, through the after-agent hooks
    # The next turn is normal.
    log.clear()
    assert run.call(agent, "allowed", config).text == "Sure."
    assert log == [
        "audit before_agent",
        "audit before_model",
        "audit after_model",
        "audit after_agent",
    ]
    state = agent.get_state(config)
    assert state is not None and state.values.get("jump_to") is None


class Redraft(ModelHook):
    """Sends a first answer that says "draft" back to the model, once per draft."""

    can_jump_to = (JumpTo.MODEL,)

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def after_model(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any] | None:
        self.seen.append(state.get("jump_to"))
        if state["messages"][-1].text == "draft":
            return {"messages": [UserMessage("Improve it.")], "jump_to": JumpTo.MODEL}
        return None


def test_jump_to_model_calls_the_model_again_once(run: Runner) -> None:
    hook = Redraft()
    model = ScriptedChatModel(["draft", "final", "second turn"])
    agent = ReactAgent(name="a", model=model, hooks=[hook])
    config = RunnableConfig(thread_id="redraft")
    assert run.call(agent, "write", config).text == "final"
    assert [m.text for m in model.prompts[1].messages] == ["write", "draft", "Improve it."]
    assert run.call(agent, "again", config).text == "second turn"
    assert len(model.prompts) == 3
    assert hook.seen == [None, None, None]


class ReplayPending(AgentHook):
    """When a run starts with tool calls already pending, runs them before asking the model."""

    can_jump_to = (JumpTo.TOOL,)

    def before_agent(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any] | None:
        last = state["messages"][-1]
        if isinstance(last, AssistantMessage) and last.tool_calls:
            return {"jump_to": JumpTo.TOOL}
        return None


def test_jump_to_tool_runs_the_tool_node_once(run: Runner) -> None:
    model = ScriptedChatModel(["pong it is", "hello"])
    agent = ReactAgent(name="a", model=model, tools=[ping], hooks=[ReplayPending()])
    config = RunnableConfig(thread_id="pending")
    pending = {"messages": [UserMessage("ping please"), tool_calls(("ping", {}))]}
    assert [o.node for o in run.stream(agent, pending, config)] == [
        "ReplayPending.before_agent",
        "tools",
        "model",
    ]
    first = model.prompts[0].messages
    assert (
        isinstance(first[-1], ToolResponseMessage)
        and first[-1].responses[0].response_data == "pong"
    )
    assert [o.node for o in run.stream(agent, "hi", config)] == [
        "ReplayPending.before_agent",
        "model",
    ]


def test_a_jump_the_hook_does_not_declare_is_a_clear_error(run: Runner) -> None:
    class Sneaky(ModelHook):
        can_jump_to = (JumpTo.END,)

        def before_model(self, state: Any, config: Any) -> dict[str, Any]:
            return {"jump_to": JumpTo.TOOL}

    agent = ReactAgent(name="a", model=ScriptedChatModel(["ok"]), hooks=[Sneaky()])
    with pytest.raises(GraphUsageError) as caught:
        run.call(agent, "go")
    message = str(caught.value)
    assert (
        "hook 'Sneaky'.before_model jumped to 'tool' but its can_jump_to allows ['end']" in message
    )
    assert "can_jump_to = (JumpTo.TOOL,)" in message


def test_an_unknown_jump_target_is_a_clear_error(run: Runner) -> None:
    class Lost(ModelHook):
        can_jump_to = (JumpTo.END,)

        def after_model(self, state: Any, config: Any) -> dict[str, Any]:
            return {"jump_to": "sideways"}

    agent = ReactAgent(name="a", model=ScriptedChatModel(["ok"]), hooks=[Lost()])
    with pytest.raises(
        GraphUsageError, match=r"jump_to='sideways'; use JumpTo\.MODEL, JumpTo\.TOOL or JumpTo\.END"
    ):
        run.call(agent, "go")


# -- interrupts ---------------------------------------------------------------------------------


class Approval(ModelHook):
    """Asks a human before any ``transfer`` runs; a refusal answers the call with the reason."""

    def after_model(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any] | None:
        last = state["messages"][-1]
        calls = [c for c in last.tool_calls if c.name == "transfer"]
        if not calls:
            return None
        answer = interrupt({"approve": [c.arguments for c in calls]})
        if answer == "yes":
            return None
        return {"rejected_tool_calls": {c.id: answer for c in calls}}


class AsyncApproval(Approval):
    async def after_model(
        self, state: OverAllState, config: RunnableConfig
    ) -> dict[str, Any] | None:  # type: ignore[override]
        return Approval.after_model(self, state, config)


def transfer_agent(hook: ModelHook) -> tuple[ReactAgent, list[int], ScriptedChatModel]:
    done: list[int] = []

    @tool
    def transfer(amount: int) -> str:
        """Transfer money."""
        done.append(amount)
        return f"sent {amount}"

    model = ScriptedChatModel([tool_calls(("transfer", {"amount": 100})), "Finished."])
    return ReactAgent(name="bank", model=model, tools=[transfer], hooks=[hook]), done, model


def test_a_hook_pauses_with_interrupt_and_resumes_with_command(run: Runner) -> None:
    approve_then_resume(run, Approval)


def test_an_async_hook_pauses_with_interrupt_too() -> None:
    approve_then_resume(Runner("async"), AsyncApproval)


def approve_then_resume(run: Runner, hook: type[ModelHook]) -> None:
    agent, done, model = transfer_agent(hook())
    config = RunnableConfig(thread_id="approve")
    state = run.invoke(agent, "send 100 to Bob", config)
    assert done == []  # paused before the tool ran
    assert isinstance(state["messages"][-1], AssistantMessage)
    snapshot = agent.get_state(config)
    assert snapshot is not None
    assert snapshot.next == (f"{hook.__name__}.after_model",)
    (pending,) = snapshot.interrupts
    assert pending.value == {"approve": ['{"amount": 100}']}
    assert pending.when == "during"

    reply = run.call(agent, Command(resume="yes"), config)
    assert reply.text == "Finished."
    assert done == [100]
    assert len(model.prompts) == 2  # the model was not called again by the resume itself
    final = agent.get_state(config)
    assert final is not None and final.next == () and final.interrupts == ()


def test_a_refusal_reaches_the_model_as_the_tool_result(run: Runner) -> None:
    agent, done, model = transfer_agent(Approval())
    config = RunnableConfig(thread_id="refuse")
    run.invoke(agent, "send 100 to Bob", config)
    state = run.invoke(agent, Command(resume="too much"), config)
    assert done == []
    tool_message = model.prompts[1].messages[-1]
    assert isinstance(tool_message, ToolResponseMessage)
    assert tool_message.responses[0].response_data == "The user rejected this tool call: too much"
    assert "rejected_tool_calls" not in state  # private to the agent, and consumed
    assert state["messages"][-1].text == "Finished."


def test_call_on_a_run_that_pauses_says_so(run: Runner) -> None:
    agent, done, _ = transfer_agent(Approval())
    config = RunnableConfig(thread_id="paused")
    with pytest.raises(GraphUsageError) as caught:
        run.call(agent, "send 100 to Bob", config)
    message = str(caught.value)
    assert "agent 'bank' paused on thread 'paused' before answering" in message
    assert "Command(resume=...)" in message and "{'approve'" in message
    assert run.call(agent, Command(resume="yes"), config).text == "Finished."
    assert done == [100]

"""One graph per agent, and the agent's bookkeeping kept with the thread, out of user state."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from graph_agent import (
    AssistantMessage,
    Command,
    GraphResumeError,
    KeyStrategy,
    ReactAgent,
    RunnableConfig,
    ToolCall,
    ToolCallingChatOptions,
    ToolContext,
    tool,
)
from graph_agent.models import FunctionChatModel, Prompt, ScriptedChatModel
from hooks import HumanInTheLoopHook, ModelInterceptor, ToolFeedback

from .conftest import Runner, tool_calls

PRIVATE = ("jump_to", "offered_tools", "rejected_tool_calls")


def test_sync_and_async_runs_use_the_one_graph_and_share_threads() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    model = ScriptedChatModel([tool_calls(("add", {"a": 1, "b": 2})), "3", "again 3"])
    agent = ReactAgent(name="calc", model=model, tools=[add])
    assert not hasattr(agent, "_agraph")
    config = {"thread_id": "t"}
    assert agent.call("1+2?", config).text == "3"
    assert asyncio.run(agent.acall("and again?", config)).text == "again 3"
    messages = agent.get_state(config).values["messages"]
    assert [type(m).__name__ for m in messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
    ]


def test_every_node_has_a_sync_and_an_async_implementation() -> None:
    from hooks import ModelCallLimitHook

    agent = ReactAgent(name="a", model=ScriptedChatModel([]), hooks=[ModelCallLimitHook(3)])
    spec = agent.graph._spec
    assert set(spec.nodes) >= {"model", "tools"}
    assert all(n.fn is not None and n.afn is not None for n in spec.nodes.values())


def _approval_agent(saver: Any) -> tuple[ReactAgent, list[str]]:
    sent: list[str] = []

    @tool
    def transfer(to: str, amount: int) -> str:
        """Send money."""
        sent.append(f"{amount} to {to}")
        return "sent"

    model = ScriptedChatModel([tool_calls(("transfer", {"to": "Bob", "amount": 5})), "Done."])
    agent = ReactAgent(
        name="bank",
        model=model,
        tools=[transfer],
        saver=saver,
        hooks=[HumanInTheLoopHook(["transfer"])],
    )
    return agent, sent


def test_bookkeeping_keys_are_checkpointed_but_not_shown(run: Runner, durable: Any) -> None:
    agent, sent = _approval_agent(durable)
    config = RunnableConfig(thread_id="private")
    state = run.invoke(agent, "pay Bob 5", config)
    assert not set(PRIVATE) & set(state)
    snapshot = agent.get_state(config)
    assert snapshot is not None and snapshot.interrupts
    assert not set(PRIVATE) & set(snapshot.values)
    stored = durable.get("private")
    assert stored.values["offered_tools"] == ("transfer",)  # kept with the thread
    state = run.invoke(agent, Command(resume=ToolFeedback.reject("no")), config)
    assert sent == []
    assert not set(PRIVATE) & set(state)
    assert durable.get("private").values["rejected_tool_calls"] is None  # consumed


def test_offered_tools_are_written_only_when_they_change() -> None:
    from checkpoint import MemorySaver

    class Recording(MemorySaver):
        """Keeps the offered names each write replaced."""

        def __init__(self) -> None:
            super().__init__()
            self.offered: list[Any] = []

        def put(self, checkpoint: Any, delta: Any = None, **options: Any) -> None:
            if delta is not None and "offered_tools" in delta.replaced:
                self.offered.append(delta.replaced["offered_tools"])
            super().put(checkpoint, delta, **options)

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @tool
    def sub(a: int, b: int) -> int:
        """Subtract."""
        return a - b

    class SubOnlyTwice(ModelInterceptor):
        """Offers ``sub`` to the first two model calls only."""

        calls = 0

        def intercept_model(self, request: Any, handler: Any) -> Any:
            self.calls += 1
            if self.calls > 2:
                tools = tuple(
                    t for t in request.options.tool_callbacks if t.tool_definition.name != "sub"
                )
                request = request.replace(options=ToolCallingChatOptions(tool_callbacks=tools))
            return handler(request)

    rounds = [tool_calls(("add", {"a": i, "b": 1})) for i in range(3)]
    model = ScriptedChatModel([*rounds, tool_calls(("sub", {"a": 9, "b": 1})), "done"])
    saver = Recording()
    agent = ReactAgent(
        name="calc", model=model, tools=[add, sub], saver=saver, interceptors=[SubOnlyTwice()]
    )
    config = RunnableConfig(thread_id="offered")
    assert agent.call("go", config).text == "done"
    # Four tool-calling model steps: the names are written when first offered and when they
    # change, and each step's checkpoint holds the ones in force for its tool calls.
    assert saver.offered == [("add", "sub"), ("add",)]
    asked = [
        c.values["offered_tools"]
        for c in reversed(list(saver.list("offered")))
        if c.values["messages"] and getattr(c.values["messages"][-1], "tool_calls", None)
    ]
    assert asked == [("add", "sub"), ("add", "sub"), ("add",), ("add",)]
    messages = agent.get_state(config).values["messages"]
    refused = messages[-2].responses[0].response_data
    assert "sub" in refused  # the tool hidden from the last call did not run


def _per_user_tools() -> ModelInterceptor:
    """Offers each user a ``my_files`` tool bound to that user (a tool made per request)."""

    class PerUser(ModelInterceptor):
        def intercept_model(self, request: Any, handler: Any) -> Any:
            user = request.config.metadata["user"]

            @tool(name="my_files")
            def files() -> str:
                """The caller's files."""
                return f"files of {user}"

            tools = (*request.options.tool_callbacks, files)
            return handler(request.replace(options=ToolCallingChatOptions(tool_callbacks=tools)))

    return PerUser()


def test_a_tool_an_interceptor_made_for_one_conversation_never_runs_in_another(
    run: Runner,
) -> None:
    def reply(prompt: Prompt) -> Any:
        last = prompt.messages[-1]
        if last.message_type == "tool":
            return last.responses[0].response_data
        return tool_calls(("my_files", {}))

    agent = ReactAgent(
        name="a",
        model=FunctionChatModel(reply),
        interceptors=[_per_user_tools()],
        hooks=[HumanInTheLoopHook(["my_files"])],
    )
    ada = RunnableConfig(thread_id="ada", metadata={"user": "ada"})
    bob = RunnableConfig(thread_id="bob", metadata={"user": "bob"})
    # Both pause for approval between the model's call and the tool run, Bob's model call
    # coming after Ada's: each conversation still runs its own tool.
    run.invoke(agent, "list my files", ada)
    run.invoke(agent, "list my files", bob)
    assert run.call(agent, Command(resume=ToolFeedback.approve()), ada).text == "files of ada"
    assert run.call(agent, Command(resume=ToolFeedback.approve()), bob).text == "files of bob"


def test_a_tool_only_one_conversation_was_offered_is_refused_in_another(run: Runner) -> None:
    ran: list[str] = []

    @tool
    def audit(note: str) -> str:
        """Write an audit note."""
        ran.append(note)
        return "noted"

    class AuditForAdmins(ModelInterceptor):
        def intercept_model(self, request: Any, handler: Any) -> Any:
            if request.config.metadata.get("admin"):
                tools = (*request.options.tool_callbacks, audit)
                request = request.replace(options=ToolCallingChatOptions(tool_callbacks=tools))
            return handler(request)

    call = tool_calls(("audit", {"note": "x"}))
    model = ScriptedChatModel([call, "ok", call, "ok"])
    agent = ReactAgent(name="a", model=model, interceptors=[AuditForAdmins()])
    run.call(agent, "audit", RunnableConfig(thread_id="admin", metadata={"admin": True}))
    run.call(agent, "audit", RunnableConfig(thread_id="guest"))
    assert ran == ["x"]
    refused = model.prompts[3].messages[-1].responses[0].response_data
    assert "no tool named 'audit'" in refused


def test_a_paused_thread_runs_a_declared_interceptor_tool_after_a_restart(
    run: Runner, tmp_path: Any
) -> None:
    from checkpoint import SqliteSaver

    ran: list[str] = []

    @tool
    def refund(order: str) -> str:
        """Refund an order."""
        ran.append(order)
        return f"refunded {order}"

    class OfferRefunds(ModelInterceptor):
        tools = (refund,)

        def intercept_model(self, request: Any, handler: Any) -> Any:
            tools = (*request.options.tool_callbacks, refund)
            return handler(request.replace(options=ToolCallingChatOptions(tool_callbacks=tools)))

    savers: list[SqliteSaver] = []

    def agent_in_a_new_process() -> ReactAgent:
        model = ScriptedChatModel([tool_calls(("refund", {"order": "A-1"})), "Refunded."])
        savers.append(SqliteSaver(tmp_path / "threads.sqlite"))
        return ReactAgent(
            name="shop",
            model=model,
            saver=savers[-1],
            interceptors=[OfferRefunds()],
            hooks=[HumanInTheLoopHook(["refund"])],
        )

    config = RunnableConfig(thread_id="refund")
    run.invoke(agent_in_a_new_process(), "refund A-1", config)
    assert ran == []
    restarted = agent_in_a_new_process()
    restarted.model.responses.pop(0)  # the new process's model: only the answer is left
    answer = run.call(restarted, Command(resume=ToolFeedback.approve()), config)
    assert ran == ["A-1"]
    assert answer.text == "Refunded."
    for saver in savers:
        saver.close()


def test_an_interceptor_tool_clashing_with_an_agent_tool_is_a_build_error() -> None:
    from graph_agent import AgentBuildError

    @tool
    def lookup(q: str) -> str:
        """Look up."""
        return q

    class Clash(ModelInterceptor):
        tools = (lookup,)

    other = tool(name="lookup")(lambda q: q)
    with pytest.raises(AgentBuildError, match="declares a tool named 'lookup'"):
        ReactAgent(name="a", model=ScriptedChatModel([]), tools=[other], interceptors=[Clash()])


def test_parallel_tools_writing_extra_state_merge_in_call_order(run: Runner) -> None:

    @tool
    def note(text: str, ctx: ToolContext) -> str:
        """Note."""
        ctx.extra_state["notes"] = [text]
        ctx.extra_state["last"] = text
        ctx.extra_state["count"] = 1
        return "ok"

    both_notes = tool_calls(("note", {"text": "a"}), ("note", {"text": "b"}))
    model = ScriptedChatModel([both_notes, "ok", both_notes, "ok"])
    agent = ReactAgent(
        name="a",
        model=model,
        tools=[note],
        key_strategies={
            "notes": KeyStrategy.APPEND,
            "count": lambda old, new: (old or 0) + new,
        },
    )
    state = run.invoke(agent, "note a and b", {"thread_id": "t"})
    assert state["notes"] == ["a", "b"]
    assert state["last"] == "b"  # REPLACE: the last call wins
    assert state["count"] == 2
    tools_output = next(o for o in agent.stream("again", {"thread_id": "u"}) if o.node == "tools")
    # NodeOutput.update is one dict: the writes of the calls combined by the key strategies
    assert tools_output.update["notes"] == ["a", "b"]
    assert tools_output.update["last"] == "b"
    assert tools_output.update["count"] == 2
    assert [m.message_type for m in tools_output.update["messages"]] == ["tool"]


def test_parallel_tool_calls_that_each_interrupt_are_each_resumed_with_their_own_value(
    run: Runner, durable: Any
) -> None:
    from graph_agent import interrupt

    @tool
    def ask(question: str) -> str:
        """Ask a person."""
        return f"{question} -> {interrupt(question)}"

    calls = tool_calls(("ask", {"question": "colour?"}), ("ask", {"question": "size?"}))
    model = ScriptedChatModel([calls, "thanks"])
    agent = ReactAgent(name="a", model=model, tools=[ask], saver=durable)
    config = RunnableConfig(thread_id="two")
    run.invoke(agent, "order a shirt", config)
    pending = agent.get_state(config).interrupts
    assert sorted(i.value for i in pending) == ["colour?", "size?"]
    assert len({i.id for i in pending}) == 2
    answers = {i.id: {"colour?": "blue", "size?": "L"}[i.value] for i in pending}
    with pytest.raises(GraphResumeError, match="2 pending interrupts"):
        run.invoke(agent, Command(resume="blue"), config)
    run.invoke(agent, Command(resume=answers), config)
    results = model.prompts[1].messages[-1].responses
    assert [r.response_data for r in results] == ["colour? -> blue", "size? -> L"]


def test_interrupt_ids_of_tool_calls_are_stable_across_resumes(durable: Any) -> None:
    from graph_agent import interrupt

    @tool
    def confirm(what: str) -> str:
        """Confirm twice."""
        return f"{interrupt('first ' + what)} {interrupt('second ' + what)}"

    model = ScriptedChatModel([tool_calls(("confirm", {"what": "x"})), "done"])
    agent = ReactAgent(name="a", model=model, tools=[confirm], saver=durable)
    config = RunnableConfig(thread_id="stable")
    agent.invoke("go", config)
    first = agent.get_state(config).interrupts[0]
    agent.invoke(Command(resume={first.id: "yes"}), config)
    second = agent.get_state(config).interrupts[0]
    assert second.value == "second x" and second.id != first.id
    agent.invoke(Command(resume={second.id: "sure"}), config)
    assert model.prompts[1].messages[-1].responses[0].response_data == "yes sure"


def test_tool_call_arguments_reach_events_and_tools_unchanged() -> None:
    call = ToolCall(id="c1", name="echo", arguments=json.dumps({"text": "hé"}))

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    agent = ReactAgent(
        name="a",
        model=ScriptedChatModel([AssistantMessage("", tool_calls=[call]), "ok"]),
        tools=[echo],
    )
    starts = [e for e in agent.stream_events("hi") if e.kind == "tool_start"]
    assert [(e.call_id, e.name, e.arguments) for e in starts] == [("c1", "echo", call.arguments)]


def _flaky_pair(saver: Any) -> tuple[ReactAgent, dict[str, int]]:
    """Two parallel calls: ``book`` succeeds, ``pay`` fails on its first run."""
    from graph_agent import DefaultToolExecutionExceptionProcessor

    runs = {"book": 0, "pay": 0}

    @tool
    def book(room: str, ctx: ToolContext) -> str:
        """Book a room."""
        runs["book"] += 1
        ctx.extra_state["booked"] = [room]
        return f"booked {room}"

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        runs["pay"] += 1
        if runs["pay"] == 1:
            raise ConnectionError("payment service down")
        return f"paid {amount}"

    calls = tool_calls(("book", {"room": "101"}), ("pay", {"amount": 90}))
    model = ScriptedChatModel([calls, "All set."])
    agent = ReactAgent(
        name="hotel",
        model=model,
        tools=[book, pay],
        saver=saver,
        key_strategies={"booked": KeyStrategy.APPEND},
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True),
    )
    return agent, runs


def test_a_tool_call_that_finished_beside_a_failing_one_never_runs_again(
    run: Runner, durable: Any
) -> None:
    from graph_agent import ToolExecutionException

    agent, runs = _flaky_pair(durable)
    config = RunnableConfig(thread_id="flaky")
    with pytest.raises(ToolExecutionException, match="payment service down"):
        run.invoke(agent, "book and pay", config)
    assert runs == {"book": 1, "pay": 1}
    state = run.invoke(agent, None, config)  # retry: only the failed call runs again
    assert runs == {"book": 1, "pay": 2}
    assert state["booked"] == ["101"]
    responses = state["messages"][2].responses
    assert [r.response_data for r in responses] == ["booked 101", "paid 90"]
    assert state["messages"][-1].text == "All set."


def test_a_tool_call_that_finished_beside_a_paused_one_never_runs_again(
    run: Runner, durable: Any
) -> None:
    from graph_agent import interrupt

    sent: list[str] = []

    @tool
    def send(text: str) -> str:
        """Send a message."""
        sent.append(text)
        return "sent"

    @tool
    def confirm(what: str) -> str:
        """Ask the user."""
        return f"{what}: {interrupt(what)}"

    calls = tool_calls(("send", {"text": "hello"}), ("confirm", {"what": "go on?"}))
    model = ScriptedChatModel([calls, "ok"])
    agent = ReactAgent(name="a", model=model, tools=[send, confirm], saver=durable)
    config = RunnableConfig(thread_id="pause")
    run.invoke(agent, "go", config)
    assert sent == ["hello"]
    run.invoke(agent, Command(resume="yes"), config)
    assert sent == ["hello"]
    results = model.prompts[1].messages[-1].responses
    assert [r.response_data for r in results] == ["sent", "go on?: yes"]

"""``agent.as_tool()``: an agent another agent calls like a tool. Inside a run it runs under
the calling tool's namespace in the caller's thread: its events are in the caller's stream
(openai-agents #864, pydantic-ai #2356), an approval inside it pauses the caller, which
resumes it in place; parallel calls run apart. Sync and async throughout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from graph_agent import (
    AssistantMessage,
    Command,
    GraphUsageError,
    ReactAgent,
    SequentialAgent,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.errors import ModelError
from graph_agent.events import ModelDelta, ModelStart, RunEvent, RunStart, ToolEnd, ToolStart
from graph_agent.models import FunctionChatModel, Prompt, ScriptedChatModel
from hooks import HumanInTheLoopHook, ToolFeedback

from ._strict import assert_prompts_valid, assert_valid
from .conftest import Runner, tool_calls


def events(run: Runner, runs: Any, value: Any, config: Any, **kwargs: Any) -> list[RunEvent]:
    """``runs.stream_events`` (or its async twin) collected."""
    if run.is_async:

        async def collect() -> list[RunEvent]:
            return [e async for e in runs.astream_events(value, config, **kwargs)]

        return asyncio.run(collect())
    return list(runs.stream_events(value, config, **kwargs))


def ask(*calls: tuple[str, str]) -> AssistantMessage:
    """A caller's answer calling agent tools ``(tool, request)``, ids c1, c2, ..."""
    return tool_calls(*((name, {"input": text}) for name, text in calls))


class Researcher:
    """An agent that searches for the request, then answers "<request>: <result>"."""

    def __init__(self, hooks: Sequence[Any] = (), name: str = "researcher") -> None:
        self.searched: list[str] = []

        @tool
        def search(query: str) -> str:
            """Search the web."""
            self.searched.append(query)
            return f"found {query}"

        def reply(prompt: Prompt) -> AssistantMessage:
            last = prompt.messages[-1]
            if isinstance(last, ToolResponseMessage):
                request = [m for m in prompt.messages if isinstance(m, UserMessage)][-1].text
                return AssistantMessage(f"{request}: {last.responses[0].response_data}")
            call = ToolCall(
                id=f"s-{last.text}", name="search", arguments=json.dumps({"query": last.text})
            )
            return AssistantMessage("", tool_calls=[call])

        self.model = FunctionChatModel(reply)
        self.agent = ReactAgent(
            name=name,
            model=self.model,
            tools=[search],
            description="Finds facts on the web",
            hooks=hooks,
        )


class Payments:
    """An agent that refunds 5 (the refund needs a person's approval), then answers."""

    def __init__(self, name: str = "payments") -> None:
        self.refunded: list[int] = []

        @tool
        def refund(amount: int) -> str:
            """Refund an amount."""
            self.refunded.append(amount)
            return f"refunded {amount}"

        self.model = ScriptedChatModel([tool_calls(("refund", {"amount": 5})), "Refund done."])
        self.agent = ReactAgent(
            name=name,
            model=self.model,
            tools=[refund],
            description="Refunds money",
            hooks=[HumanInTheLoopHook(["refund"])],
        )


# -- what the tool does ------------------------------------------------------------------------


def test_the_tool_runs_the_agent_and_returns_its_answer(run: Runner) -> None:
    researcher = Researcher()
    caller_model = ScriptedChatModel([ask(("researcher", "tides")), "Tides: noted."])
    caller = ReactAgent(name="desk", model=caller_model, tools=[researcher.agent.as_tool()])
    config = {"thread_id": "t"}
    assert run.call(caller, "what about tides?", config).text == "Tides: noted."
    assert researcher.searched == ["tides"]
    answered = caller_model.prompts[1].messages[-1]
    assert isinstance(answered, ToolResponseMessage)
    assert answered.responses[0].response_data == "tides: found tides"
    # the agent saw the request only; the caller keeps no trace of the agent's own tools
    assert researcher.model.prompts[0].messages == [UserMessage("tides")]
    messages = caller.get_state(config).values["messages"]
    assert [
        m.name for m in messages if isinstance(m, ToolResponseMessage) for m in m.responses
    ] == ["researcher"]
    assert_valid(messages)
    assert_prompts_valid(caller_model, researcher.model)


def test_the_tool_is_named_and_described_after_the_agent_unless_told() -> None:
    agent = Researcher().agent
    definition = agent.as_tool().tool_definition
    assert definition.name == "researcher"
    assert definition.description == "Finds facts on the web"
    assert definition.schema["required"] == ["input"]
    assert definition.schema["properties"]["input"]["type"] == "string"
    other = agent.as_tool(name="web_search", description="Search").tool_definition
    assert (other.name, other.description) == ("web_search", "Search")
    plain = ReactAgent(name="helper", model=ScriptedChatModel([]))
    assert plain.as_tool().tool_definition.description == "Ask the agent 'helper'."


@pytest.mark.parametrize("name", ["two words", "x" * 65, "dots.in.it", "ünï"])
def test_a_tool_name_a_provider_would_refuse_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="must be 1-64 letters, digits"):
        Researcher().agent.as_tool(name=name)


@pytest.mark.parametrize(
    "arguments",
    ['{"query": "tides"}', '{"input": ""}', '{"input": 5}', "not json", "[1]"],
)
def test_bad_arguments_are_a_tool_error_the_model_sees(run: Runner, arguments: str) -> None:
    researcher = Researcher()
    bad = AssistantMessage(
        "", tool_calls=[ToolCall(id="c1", name="researcher", arguments=arguments)]
    )
    caller_model = ScriptedChatModel([bad, "Sorry."])
    caller = ReactAgent(name="desk", model=caller_model, tools=[researcher.agent.as_tool()])
    assert run.call(caller, "tides?", {"thread_id": "t"}).text == "Sorry."
    error = caller_model.prompts[1].messages[-1]
    assert isinstance(error, ToolResponseMessage)
    text = error.responses[0].response_data
    assert 'give the request as {"input": "..."}' in text or "not JSON" in text, text
    assert researcher.model.prompts == []  # the agent never ran


def test_an_agent_that_fails_is_a_tool_error_the_caller_goes_on_from(run: Runner) -> None:
    broken = ReactAgent(name="broken", model=ScriptedChatModel([ModelError("provider down")]))
    caller_model = ScriptedChatModel([ask(("broken", "hi")), "It failed; here is what I know."])
    caller = ReactAgent(name="desk", model=caller_model, tools=[broken.as_tool()])
    answer = run.call(caller, "go", {"thread_id": "t"})
    assert answer.text == "It failed; here is what I know."
    error = caller_model.prompts[1].messages[-1]
    assert isinstance(error, ToolResponseMessage)
    assert "provider down" in error.responses[0].response_data


def test_any_agent_is_a_tool_a_flow_too(run: Runner) -> None:
    first = ReactAgent(name="drafter", model=ScriptedChatModel(["draft"]))
    second = ReactAgent(name="editor", model=ScriptedChatModel(["edited draft"]))
    pipeline = SequentialAgent(name="pipeline", sub_agents=[first, second])
    caller_model = ScriptedChatModel([ask(("pipeline", "write")), "Here it is."])
    caller = ReactAgent(name="desk", model=caller_model, tools=[pipeline.as_tool()])
    run.call(caller, "write me something", {"thread_id": "t"})
    result = caller_model.prompts[1].messages[-1]
    assert isinstance(result, ToolResponseMessage)
    assert result.responses[0].response_data == "edited draft"  # the flow's answer


# -- its events --------------------------------------------------------------------------------


def test_its_events_are_in_the_callers_stream_under_the_calls_namespace(run: Runner) -> None:
    researcher = Researcher()
    caller_model = ScriptedChatModel([ask(("researcher", "tides")), "Noted."])
    caller = ReactAgent(name="desk", model=caller_model, tools=[researcher.agent.as_tool()])
    seen = events(run, caller, "tides?", {"thread_id": "t"})
    (call_start,) = [e for e in seen if isinstance(e, ToolStart) and e.name == "researcher"]
    (call_end,) = [e for e in seen if isinstance(e, ToolEnd) and e.name == "researcher"]
    assert call_start.namespace == call_end.namespace == ()
    inner = seen[seen.index(call_start) + 1 : seen.index(call_end)]
    namespaces = {e.namespace for e in inner if e.namespace}
    assert len(namespaces) == 1
    (namespace,) = namespaces
    assert len(namespace) == 1 and namespace[0].startswith("researcher:")
    # the agent's model calls, its streamed text and its own tool call, in order, inside
    kinds = [type(e).__name__ for e in inner if e.namespace == namespace]
    assert kinds.index("ModelStart") < kinds.index("ToolStart") < kinds.index("ToolEnd")
    text = "".join(e.text for e in inner if isinstance(e, ModelDelta) and e.namespace == namespace)
    assert text == "tides: found tides"
    (search,) = [e for e in inner if isinstance(e, ToolStart)]
    assert search.name == "search" and search.namespace == namespace
    # none of the agent's events is outside the call
    outside = seen[: seen.index(call_start)] + seen[seen.index(call_end) :]
    assert not any(e.namespace for e in outside)

    caller_model.responses.extend([ask(("researcher", "tides")), "Noted."])
    narrowed = events(run, caller, "tides?", {"thread_id": "u"}, agent="researcher")
    assert narrowed and all(
        e.namespace and e.namespace[0].startswith("researcher:") for e in narrowed
    )
    assert any(isinstance(e, ModelStart) for e in narrowed)


def test_stream_messages_of_the_caller_is_the_callers_answer_only(run: Runner) -> None:
    researcher = Researcher()
    caller_model = ScriptedChatModel([ask(("researcher", "tides")), "Tides are noted."])
    caller = ReactAgent(name="desk", model=caller_model, tools=[researcher.agent.as_tool()])
    assert "".join(run.stream_messages(caller, "tides?", {"thread_id": "t"})) == "Tides are noted."


# -- pauses ------------------------------------------------------------------------------------


def test_an_approval_inside_pauses_the_caller_and_resumes_in_place(
    run: Runner, durable: Any
) -> None:
    payments = Payments()
    noted: list[str] = []

    @tool
    def note(text: str) -> str:
        """Note something down."""
        noted.append(text)
        return "noted"

    caller_model = ScriptedChatModel(
        [
            tool_calls(("payments", {"input": "refund 5"}), ("note", {"text": "refund asked"})),
            "Done.",
        ]
    )
    caller = ReactAgent(
        name="desk", model=caller_model, tools=[payments.agent.as_tool(), note], saver=durable
    )
    config = {"thread_id": "t"}
    seen = events(run, caller, "refund me", config)
    snapshot = caller.get_state(config)
    assert snapshot is not None and snapshot.next == ("tools",)
    (pause,) = snapshot.interrupts
    assert pause.namespace[0].startswith("payments:")
    assert pause.value["tool_calls"][0]["name"] == "refund"
    assert pause.value["tool_calls"][0]["arguments"] == {"amount": 5}
    started = {e.namespace for e in seen if isinstance(e, ModelStart) and e.namespace}
    assert started == {pause.namespace}  # the pause is the agent's, in its namespace
    assert payments.refunded == [] and noted == ["refund asked"]

    resumed = events(run, caller, Command(resume=ToolFeedback.approve()), config)
    assert payments.refunded == [5]
    assert noted == ["refund asked"]  # the sibling call that finished did not run again
    assert len(payments.model.prompts) == 2  # the agent's first model call was not repeated
    assert len(caller_model.prompts) == 2
    inner = {e.namespace for e in resumed if isinstance(e, ModelStart) and e.namespace}
    assert inner == {pause.namespace}  # continued in place, under the same namespace
    final = caller.get_state(config)
    assert final is not None and final.interrupts == () and final.next == ()
    messages = final.values["messages"]
    assert messages[-1].text == "Done."
    answers = {r.name: r.response_data for r in messages[-2].responses}
    assert answers == {"payments": "Refund done.", "note": "noted"}
    assert_valid(messages)
    assert_prompts_valid(caller_model, payments.model)


def test_a_rejection_inside_reaches_the_agent_and_its_answer_the_caller(run: Runner) -> None:
    payments = Payments()
    payments.model.responses[1] = "I did not refund: you said no."
    caller_model = ScriptedChatModel([ask(("payments", "refund 5")), "No refund then."])
    caller = ReactAgent(name="desk", model=caller_model, tools=[payments.agent.as_tool()])
    config = {"thread_id": "t"}
    run.invoke(caller, "refund me", config)
    assert caller.get_state(config).interrupts
    answer = run.call(caller, Command(resume=ToolFeedback.reject("not today")), config)
    assert answer.text == "No refund then."
    assert payments.refunded == []
    told = payments.model.prompts[1].messages[-1]
    assert isinstance(told, ToolResponseMessage)
    assert "not today" in told.responses[0].response_data
    result = caller_model.prompts[1].messages[-1]
    assert isinstance(result, ToolResponseMessage)
    assert result.responses[0].response_data == "I did not refund: you said no."


def test_an_agent_tool_that_finished_beside_a_paused_one_is_not_run_again(
    run: Runner, durable: Any
) -> None:
    payments, researcher = Payments(), Researcher()
    caller_model = ScriptedChatModel(
        [ask(("researcher", "refund rules"), ("payments", "refund 5")), "Done."]
    )
    caller = ReactAgent(
        name="desk",
        model=caller_model,
        tools=[researcher.agent.as_tool(), payments.agent.as_tool()],
        saver=durable,
    )
    config = {"thread_id": "t"}
    run.invoke(caller, "refund me", config)
    (pause,) = caller.get_state(config).interrupts
    assert pause.namespace[0].startswith("payments:")
    assert researcher.searched == ["refund rules"] and len(researcher.model.prompts) == 2
    run.call(caller, Command(resume=ToolFeedback.approve()), config)
    assert researcher.searched == ["refund rules"]  # not run again
    assert len(researcher.model.prompts) == 2
    assert payments.refunded == [5]
    results = caller_model.prompts[1].messages[-1]
    assert isinstance(results, ToolResponseMessage)
    assert {r.name: r.response_data for r in results.responses} == {
        "researcher": "refund rules: found refund rules",
        "payments": "Refund done.",
    }
    assert_prompts_valid(caller_model, researcher.model, payments.model)


# -- parallel calls ----------------------------------------------------------------------------


def test_two_parallel_calls_of_one_agent_tool_run_apart(run: Runner) -> None:
    researcher = Researcher()
    caller_model = ScriptedChatModel([ask(("researcher", "tides"), ("researcher", "winds")), "Ok."])
    caller = ReactAgent(name="desk", model=caller_model, tools=[researcher.agent.as_tool()])
    seen = events(run, caller, "tides and winds?", {"thread_id": "t"})
    results = caller_model.prompts[1].messages[-1]
    assert isinstance(results, ToolResponseMessage)
    assert [(r.id, r.response_data) for r in results.responses] == [
        ("c1", "tides: found tides"),
        ("c2", "winds: found winds"),
    ]
    assert sorted(researcher.searched) == ["tides", "winds"]
    # each run in a namespace of its own, seeing its own request only
    asked: dict[tuple[str, ...], set[str]] = {}
    for event in seen:
        if isinstance(event, ModelStart) and event.namespace:
            users = {m.text for m in event.messages if isinstance(m, UserMessage)}
            asked.setdefault(event.namespace, set()).update(users)
    assert sorted(asked.values(), key=sorted) == [{"tides"}, {"winds"}]
    assert all(ns[0].startswith("researcher:") for ns in asked)
    # each nested run names the call that runs it: a UI nests it under that ToolStart
    called = {e.call_id: e.arguments for e in seen if isinstance(e, ToolStart) and not e.namespace}
    started = {e.namespace: e.call_id for e in seen if isinstance(e, RunStart) and e.namespace}
    for namespace, users in asked.items():
        assert json.loads(called[started[namespace]]) == {"input": next(iter(users))}
    assert [e.call_id for e in seen if isinstance(e, RunStart) and not e.namespace] == [""]
    for prompt in researcher.model.prompts:
        requests = [m.text for m in prompt.messages if isinstance(m, UserMessage)]
        assert len(requests) == 1
        assert all(
            c.arguments == json.dumps({"query": requests[0]})
            for m in prompt.messages
            if isinstance(m, AssistantMessage)
            for c in m.tool_calls
        )


def test_two_parallel_agent_tools_that_both_pause_resume_together(run: Runner) -> None:
    first, second = Payments(), Payments("payments_eu")
    caller_model = ScriptedChatModel(
        [ask(("payments", "refund 5"), ("payments_eu", "refund 5")), "Both done."]
    )
    caller = ReactAgent(
        name="desk", model=caller_model, tools=[first.agent.as_tool(), second.agent.as_tool()]
    )
    config = {"thread_id": "t"}
    run.invoke(caller, "refund twice", config)
    pauses = caller.get_state(config).interrupts
    assert sorted(p.namespace[0].partition(":")[0] for p in pauses) == ["payments", "payments_eu"]
    decisions = {p.id: ToolFeedback.approve() for p in pauses}
    assert run.call(caller, Command(resume=decisions), config).text == "Both done."
    assert first.refunded == [5] and second.refunded == [5]
    assert len(first.model.prompts) == len(second.model.prompts) == 2


# -- what it sees ------------------------------------------------------------------------------


@pytest.mark.parametrize("history", [False, True])
def test_history_shows_the_callers_conversation_without_tool_traffic(
    run: Runner, history: bool
) -> None:
    researcher = Researcher()

    @tool
    def clock() -> str:
        """The time."""
        return "noon"

    caller_model = ScriptedChatModel(
        [
            tool_calls(("clock", {})),
            "It is noon.",
            ask(("researcher", "tides at noon")),
            "High tide.",
        ]
    )
    tool_ = researcher.agent.as_tool(history=history)
    caller = ReactAgent(name="desk", model=caller_model, tools=[clock, tool_])
    config = {"thread_id": "t"}
    run.call(caller, "time?", config)
    run.call(caller, "and the tides?", config)
    seen = researcher.model.prompts[0].messages
    if history:
        assert seen == [
            UserMessage("time?"),
            AssistantMessage("It is noon."),
            UserMessage("and the tides?"),
            UserMessage("tides at noon"),
        ]
    else:
        assert seen == [UserMessage("tides at noon")]
    assert_prompts_valid(researcher.model, caller_model)


# -- outside a run -----------------------------------------------------------------------------


def test_called_outside_a_run_it_runs_on_a_fresh_thread(run: Runner) -> None:
    researcher = Researcher()
    tool_ = researcher.agent.as_tool()

    def call(text: str) -> str:
        arguments = json.dumps({"input": text})
        if run.is_async:
            return asyncio.run(tool_.acall(arguments))
        return tool_.call(arguments)

    assert call("tides") == "tides: found tides"
    assert call("winds") == "winds: found winds"
    # the second call did not see the first
    assert researcher.model.prompts[2].messages == [UserMessage("winds")]


def test_called_outside_a_run_an_agent_that_pauses_says_so(run: Runner) -> None:
    payments = Payments()
    tool_ = payments.agent.as_tool()
    arguments = json.dumps({"input": "refund 5"})
    with pytest.raises(GraphUsageError, match="paused on thread 'payments-") as caught:
        if run.is_async:
            asyncio.run(tool_.acall(arguments))
        else:
            tool_.call(arguments)
    thread = str(caught.value).split("paused on thread '")[1].split("'")[0]
    # the thread it names is the one to resume
    answer = run.call(payments.agent, Command(resume=ToolFeedback.approve()), {"thread_id": thread})
    assert answer.text == "Refund done." and payments.refunded == [5]


def test_an_approval_two_levels_down_in_a_swarm_pauses_and_resumes_in_place(
    run: Runner,
) -> None:
    """The agent that took over calls an agent tool, inside which a refund waits."""
    payments = Payments()
    billing_model = ScriptedChatModel([ask(("payments", "refund 5")), "Billing: done."])
    billing = ReactAgent(
        name="billing",
        model=billing_model,
        tools=[payments.agent.as_tool()],
        description="Bills",
    )
    triage_model = ScriptedChatModel([tool_calls(("transfer_to_billing", {}))])
    triage = ReactAgent(name="triage", model=triage_model, handoffs=[billing])
    config = {"thread_id": "t"}
    run.invoke(triage, "refund me", config)
    (pause,) = triage.get_state(config).interrupts
    assert [part.partition(":")[0] for part in pause.namespace] == ["billing", "payments"]
    answer = run.call(triage, Command(resume=ToolFeedback.approve()), config)
    assert answer.text == "Billing: done."
    assert payments.refunded == [5]
    assert [len(m.prompts) for m in (triage_model, billing_model, payments.model)] == [1, 2, 2]
    assert_prompts_valid(triage_model, billing_model, payments.model)
    assert_valid(triage.get_state(config).values["messages"])

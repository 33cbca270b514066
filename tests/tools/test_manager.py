"""ToolCallingManager: resolving, executing, failures, unknown tools, records."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from graph_agent.errors import ToolExecutionException, UnknownToolError
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage, UserMessage
from graph_agent.models.types import ChatResponse, Prompt, ToolCallingChatOptions
from graph_agent.tools.execution import DefaultToolExecutionExceptionProcessor
from graph_agent.tools.manager import (
    DefaultToolExecutionEligibilityPredicate,
    ToolCallingManager,
)

from ._fakes import FnTool


def _add(ctx, a, b):
    return a + b


def _boom(ctx):
    raise ValueError("no such city")


def _response(*calls: tuple[str, str, str]) -> ChatResponse:
    tool_calls = [ToolCall(id=i, name=n, arguments=a) for i, n, a in calls]
    return ChatResponse.of(AssistantMessage("", tool_calls=tool_calls), "tool_calls")


def _prompt(*tools: FnTool, **options) -> Prompt:
    return Prompt([UserMessage("go")], ToolCallingChatOptions(tool_callbacks=tools, **options))


def test_results_keep_call_order_and_history_is_complete():
    fast_ran = threading.Event()  # "slow" ends after "fast" has: the results are not in end order
    slow = FnTool("slow", lambda ctx: "slow done" if fast_ran.wait(10) else "fast never ran")
    fast = FnTool("fast", lambda ctx: fast_ran.set() or "fast done")
    response = _response(("c1", "slow", "{}"), ("c2", "fast", "{}"))
    result = ToolCallingManager().execute_tool_calls(_prompt(slow, fast), response)
    history = result.conversation_history
    assert isinstance(history[0], UserMessage)
    assert history[1] == response.result.output
    assert isinstance(history[2], ToolResponseMessage)
    assert [(r.id, r.name, r.response_data) for r in result.tool_response.responses] == [
        ("c1", "slow", "slow done"),
        ("c2", "fast", "fast done"),
    ]
    assert result.return_direct is False


def test_parallel_calls_run_concurrently():
    barrier = threading.Barrier(3, timeout=5)
    tools = [FnTool(f"t{i}", lambda ctx: barrier.wait() is not None) for i in range(3)]
    response = _response(*[(f"c{i}", f"t{i}", "{}") for i in range(3)])
    result = ToolCallingManager().execute_tool_calls(_prompt(*tools), response)
    # Run one after the other, the first call times out at the barrier and the others find it
    # broken: each failure becomes a response for the model, so the responses tell.
    assert [(r.error, r.result) for r in result.records] == [(None, "True")] * 3
    sequential = ToolCallingManager(parallel=False)
    plain = [FnTool(f"p{i}", lambda ctx: "ok") for i in range(3)]
    sequential.execute_tool_calls(
        _prompt(*plain), _response(*[(f"c{i}", f"p{i}", "{}") for i in range(3)])
    )
    assert len({t.threads[0] for t in plain}) == 1


def test_return_direct_only_when_every_executed_tool_has_it():
    direct = FnTool("direct", lambda ctx: "D", return_direct=True)
    other = FnTool("other", lambda ctx: "O")
    manager = ToolCallingManager()
    assert manager.execute_tool_calls(
        _prompt(direct), _response(("1", "direct", "{}"))
    ).return_direct
    mixed = manager.execute_tool_calls(
        _prompt(direct, other), _response(("1", "direct", "{}"), ("2", "other", "{}"))
    )
    assert mixed.return_direct is False
    unknown = manager.execute_tool_calls(
        _prompt(direct), _response(("1", "direct", "{}"), ("2", "ghost", "{}"))
    )
    assert unknown.return_direct is False


def test_tool_failure_reaches_the_model_or_raises_with_always_throw():
    boom = FnTool("weather", _boom)
    response = _response(("c1", "weather", "{}"))
    result = ToolCallingManager().execute_tool_calls(_prompt(boom), response)
    (reply,) = result.tool_response.responses
    assert reply.response_data == "tool 'weather' failed: ValueError: no such city"
    (record,) = result.records
    assert isinstance(record.error, ToolExecutionException) and record.result == reply.response_data
    strict = ToolCallingManager(
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True)
    )
    with pytest.raises(ToolExecutionException, match="no such city") as info:
        strict.execute_tool_calls(_prompt(boom), response)
    assert isinstance(info.value.__cause__, ValueError)


def test_rethrow_list_raises_the_original_exception():
    processor = DefaultToolExecutionExceptionProcessor(rethrow=[ValueError])
    with pytest.raises(ValueError, match="no such city"):
        ToolCallingManager(exception_processor=processor).execute_tool_calls(
            _prompt(FnTool("weather", _boom)), _response(("c1", "weather", "{}"))
        )


def test_a_callback_raising_a_plain_exception_is_wrapped_for_the_model():
    class Rude(FnTool):
        def call(self, tool_input, tool_context=None):
            raise RuntimeError("raw failure")

    result = ToolCallingManager().execute_tool_calls(
        _prompt(Rude("rude", lambda ctx: None)), _response(("c1", "rude", "{}"))
    )
    assert (
        result.tool_response.responses[0].response_data
        == "tool 'rude' failed: RuntimeError: raw failure"
    )


def test_keyboard_interrupt_is_never_swallowed():
    def stop(ctx):
        raise KeyboardInterrupt

    class Raw(FnTool):
        def call(self, tool_input, tool_context=None):
            return self.fn(tool_context)

    with pytest.raises(KeyboardInterrupt):
        ToolCallingManager().execute_tool_calls(
            _prompt(Raw("stop", stop)), _response(("c1", "stop", "{}"))
        )


def test_unknown_tool_strategies():
    known = FnTool("known", lambda ctx: "k")
    response = _response(("c1", "ghost", "{}"))
    result = ToolCallingManager().execute_tool_calls(_prompt(known), response)
    text = result.tool_response.responses[0].response_data
    assert "no tool named 'ghost'" in text and "Available tools: known" in text
    with pytest.raises(UnknownToolError) as info:
        ToolCallingManager(unknown_tool_strategy="throw").execute_tool_calls(
            _prompt(known), response
        )
    assert info.value.tool_name == "ghost" and info.value.available == ["known"]
    custom = ToolCallingManager(
        unknown_tool_strategy=lambda name, available: f"{name}? try {available}"
    )
    assert (
        custom.execute_tool_calls(_prompt(known), response).tool_response.responses[0].response_data
        == "ghost? try ['known']"
    )
    with pytest.raises(ValueError, match="unknown_tool_strategy"):
        ToolCallingManager(unknown_tool_strategy="ignore")  # type: ignore[arg-type]


def test_records_name_arguments_result_error_and_duration():
    add = FnTool("add", _add, delay=0.01)
    result = ToolCallingManager().execute_tool_calls(
        _prompt(add), _response(("c1", "add", json.dumps({"a": 2, "b": 3})))
    )
    (record,) = result.records
    assert (record.tool_call_id, record.name, record.result, record.error) == (
        "c1",
        "add",
        "5",
        None,
    )
    assert record.arguments == '{"a": 2, "b": 3}' and record.duration >= 0.01


def test_tool_context_entries_and_a_fresh_extra_state_per_call():
    def remember(ctx, value):
        ctx.extra_state["last"] = value
        return f"{ctx.get('user')} {ctx.tool_call_id}"

    tool = FnTool("remember", remember)
    prompt = _prompt(tool, tool_context={"user": "ada"})
    result = ToolCallingManager().execute_tool_calls(
        prompt,
        _response(("c1", "remember", '{"value": 1}'), ("c2", "remember", '{"value": 2}')),
        tool_context={"request": "r1"},
    )
    assert [r.response_data for r in result.tool_response.responses] == ["ada c1", "ada c2"]
    assert result.extra_states == ({"last": 1}, {"last": 2})
    assert all(c.get("request") == "r1" for c in tool.contexts)


def test_resolving_tool_names_needs_a_resolver_and_unique_names():
    tool = FnTool("t", lambda ctx: None)

    class Resolver:
        def resolve(self, name):
            return tool if name == "t" else None

    manager = ToolCallingManager(tool_callback_resolver=Resolver())
    assert [
        d.name for d in manager.resolve_tool_definitions(ToolCallingChatOptions(tool_names=("t",)))
    ] == ["t"]
    with pytest.raises(ValueError, match="tool name 'x' cannot be resolved"):
        manager.resolve_tool_callbacks(ToolCallingChatOptions(tool_names=("x",)))
    with pytest.raises(ValueError, match="no resolver is configured"):
        ToolCallingManager().resolve_tool_callbacks(ToolCallingChatOptions(tool_names=("t",)))
    with pytest.raises(ValueError, match="two tools are named 't'"):
        ToolCallingManager().resolve_tool_callbacks(
            ToolCallingChatOptions(tool_callbacks=(tool, FnTool("t", lambda ctx: None)))
        )


def test_eligibility_predicate():
    predicate = DefaultToolExecutionEligibilityPredicate()
    with_calls = _response(("c1", "t", "{}"))
    assert predicate(ToolCallingChatOptions(), with_calls)
    assert not predicate(ToolCallingChatOptions(internal_tool_execution_enabled=False), with_calls)
    assert not predicate(None, ChatResponse.of(AssistantMessage("hi")))
    with pytest.raises(ValueError, match="no tool calls"):
        ToolCallingManager().execute_tool_calls(_prompt(), ChatResponse.of(AssistantMessage("hi")))


def test_async_execution_runs_concurrently_in_call_order():
    barrier = threading.Barrier(4, timeout=5)  # only passes if all four run at once
    tools = [FnTool(f"t{i}", lambda ctx, i=i: barrier.wait() * 0 or f"r{i}") for i in range(4)]
    response = _response(*[(f"c{i}", f"t{i}", "{}") for i in range(4)])
    result = asyncio.run(ToolCallingManager().aexecute_tool_calls(_prompt(*tools), response))
    assert [r.response_data for r in result.tool_response.responses] == ["r0", "r1", "r2", "r3"]


def test_async_failures_follow_the_processor():
    boom = FnTool("weather", _boom)
    strict = ToolCallingManager(
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True)
    )
    with pytest.raises(ToolExecutionException):
        asyncio.run(strict.aexecute_tool_calls(_prompt(boom), _response(("c1", "weather", "{}"))))
    lenient = asyncio.run(
        ToolCallingManager().aexecute_tool_calls(_prompt(boom), _response(("c1", "weather", "{}")))
    )
    assert "no such city" in lenient.tool_response.responses[0].response_data


def test_rethrow_does_not_apply_to_the_models_own_argument_mistakes():
    from graph_agent.errors import ToolArgumentsError
    from graph_agent.tools import tool

    @tool
    def half(x: int) -> float:
        if x < 0:
            raise ValueError("negative")
        return x / 2

    manager = ToolCallingManager(
        exception_processor=DefaultToolExecutionExceptionProcessor(rethrow=[ValueError])
    )
    prompt = Prompt([UserMessage("go")], ToolCallingChatOptions(tool_callbacks=(half,)))
    for bad in ('{"x": 1', '{"x": "abc"}', "[1]"):
        result = manager.execute_tool_calls(prompt, _response(("c1", "half", bad)))
        assert isinstance(result.records[0].error, ToolArgumentsError)  # went back to the model
    with pytest.raises(ValueError, match="negative"):
        manager.execute_tool_calls(prompt, _response(("c1", "half", '{"x": -2}')))


def test_records_show_the_call_an_interceptor_actually_ran():
    class Double:
        def intercept_tool_call(self, request, handler):
            doubled = request.tool_call.model_copy(update={"arguments": '{"a": 4, "b": 6}'})
            return handler(request.replace(tool_call=doubled))

        async def aintercept_tool_call(self, request, handler):
            doubled = request.tool_call.model_copy(update={"arguments": '{"a": 4, "b": 6}'})
            return await handler(request.replace(tool_call=doubled))

    manager = ToolCallingManager(interceptors=[Double()])
    response = _response(("c1", "add", '{"a": 2, "b": 3}'))
    for result in (
        manager.execute_tool_calls(_prompt(FnTool("add", _add)), response),
        asyncio.run(manager.aexecute_tool_calls(_prompt(FnTool("add", _add)), response)),
    ):
        (record,) = result.records
        assert (record.arguments, record.result) == ('{"a": 4, "b": 6}', "10")


def test_an_async_interceptor_may_return_the_handler_s_awaitable_as_it_is():
    seen: list[str] = []

    class PassOn:  # not async: hands the handler's own coroutine back
        def intercept_tool_call(self, request, handler):
            return handler(request)

        def aintercept_tool_call(self, request, handler):
            seen.append(request.tool_call.name)
            return handler(request.replace(tool_call=request.tool_call))

    manager = ToolCallingManager(interceptors=[PassOn()])
    prompt = _prompt(FnTool("add", _add))
    calls = _response(("c1", "add", '{"a": 2, "b": 3}'), ("c2", "nope", "{}"))
    result = asyncio.run(manager.aexecute_tool_calls(prompt, calls))
    assert result.records[0].result == "5"
    assert "nope" in result.records[1].result  # an unknown tool's answer is awaitable too
    assert seen == ["add", "nope"]

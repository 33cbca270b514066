"""The tool node runs only the tools the model was offered (after model interceptors)."""

from __future__ import annotations

import asyncio
import json

from graph_agent import ReactAgent, ToolCallingChatOptions, tool
from graph_agent.messages import AssistantMessage, ToolCall
from graph_agent.models import ScriptedChatModel
from hooks import ModelInterceptor


def _agent(interceptor: ModelInterceptor, calls: list[str], extra=()):
    @tool
    def get_weather(city: str) -> str:
        """Weather."""
        return "sunny"

    @tool
    def delete_account(user: str) -> str:
        """Admins only."""
        calls.append(user)
        return f"deleted {user}"

    call = ToolCall(id="c1", name="delete_account", arguments=json.dumps({"user": "bob"}))
    model = ScriptedChatModel([AssistantMessage("", tool_calls=[call]), "ok"])
    agent = ReactAgent(
        name="a",
        model=model,
        tools=[get_weather, delete_account, *extra],
        interceptors=[interceptor],
    )
    return agent, model


class HideAdminTools(ModelInterceptor):
    def intercept_model(self, request, handler):
        kept = tuple(
            t for t in request.options.tool_callbacks if t.tool_definition.name != "delete_account"
        )
        return handler(request.replace(options=ToolCallingChatOptions(tool_callbacks=kept)))


def test_a_tool_hidden_by_an_interceptor_does_not_run():
    deleted: list[str] = []
    agent, model = _agent(HideAdminTools(), deleted)
    agent.call("delete bob", {"thread_id": "t"})
    assert deleted == []
    response = model.prompts[1].messages[-1].responses[0].response_data
    assert "no tool named 'delete_account'" in response and "get_weather" in response


def test_the_same_in_async_runs():
    deleted: list[str] = []
    agent, _ = _agent(HideAdminTools(), deleted)
    asyncio.run(agent.acall("delete bob", {"thread_id": "t"}))
    assert deleted == []


def test_a_tool_an_interceptor_adds_can_run():
    @tool
    def audit(note: str) -> str:
        """Write an audit note."""
        return f"noted {note}"

    class AddAudit(ModelInterceptor):
        def intercept_model(self, request, handler):
            tools = (*request.options.tool_callbacks, audit)
            return handler(request.replace(options=ToolCallingChatOptions(tool_callbacks=tools)))

    call = ToolCall(id="c1", name="audit", arguments=json.dumps({"note": "x"}))
    model = ScriptedChatModel([AssistantMessage("", tool_calls=[call]), "done"])
    agent = ReactAgent(name="a", model=model, interceptors=[AddAudit()])
    agent.call("go", {"thread_id": "t"})
    assert model.prompts[1].messages[-1].responses[0].response_data == "noted x"


def test_stream_messages_yields_the_answer_the_model_did_not_write_and_nothing_of_inner_agents():
    from graph_agent import FunctionChatModel

    @tool(return_direct=True)
    def order_status(order_id: str) -> str:
        """Status."""
        return f"Order {order_id} has shipped."

    call = ToolCall(id="c1", name="order_status", arguments='{"order_id": "A-1"}')
    agent = ReactAgent(
        name="a",
        model=ScriptedChatModel([AssistantMessage("", tool_calls=[call])]),
        tools=[order_status],
    )
    assert list(agent.stream_messages("?")) == ["Order A-1 has shipped."]
    inner = ReactAgent(name="inner", model=FunctionChatModel(lambda p: "inner secret words"))

    @tool
    def ask_expert(q: str) -> str:
        """Ask."""
        return inner.call(q).text

    ask = ToolCall(id="c1", name="ask_expert", arguments='{"q": "x"}')
    outer = ReactAgent(
        name="outer",
        tools=[ask_expert],
        model=ScriptedChatModel([AssistantMessage("", tool_calls=[ask]), "outer answer"]),
    )
    assert "".join(outer.stream_messages("go")) == "outer answer"

    async def collect():
        again = ReactAgent(
            name="a2",
            model=ScriptedChatModel([AssistantMessage("", tool_calls=[call])]),
            tools=[order_status],
        )
        return [c async for c in again.astream_messages("?")]

    assert asyncio.run(collect()) == ["Order A-1 has shipped."]

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

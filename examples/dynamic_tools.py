"""Dynamic tools: a ``ToolProvider`` chooses extra tools before every model call.

``booking_tools`` (made with ``@tool_provider``) offers ``get_booking_details`` only when
the user's latest message mentions a booking; the agent's own tool, ``opening_hours``, is
always offered. The provider gets a ``ToolProviderRequest`` (the messages, the agent's
state and the run's config). Each model call prints the tools it was offered.

    python examples/dynamic_tools.py [--live]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import (
    ChatResponse,
    ReactAgent,
    RunnableConfig,
    ToolProviderRequest,
    tool,
    tool_provider,
)
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graph_agent.models import ChatModel, FunctionChatModel, Prompt
from hooks import ModelCallHandler, ModelInterceptor, ModelRequest

BOOKINGS = {"BK-2231": "table for 4, Saturday 20:00, terrace"}
REF = re.compile(r"BK-\d+")


@tool(description="The restaurant's opening hours")
def opening_hours() -> str:
    return "Tuesday to Sunday, 12:00-15:00 and 19:00-23:00"


@tool(description="Details of a booking, by its reference (BK-...)")
def get_booking_details(booking_ref: str) -> str:
    return BOOKINGS.get(booking_ref, f"no booking {booking_ref}")


@tool_provider
def booking_tools(request: ToolProviderRequest):
    """Booking tools, only for a conversation turn about a booking."""
    if "booking" in request.last_user_text.lower():
        return [get_booking_details]
    return None


def offline_model() -> FunctionChatModel:
    """Uses the booking tool when it is offered, like an LLM would."""

    def ask(name: str, **arguments: str) -> AssistantMessage:
        call = ToolCall(id="call_1", name=name, arguments=json.dumps(arguments))
        return AssistantMessage("", tool_calls=[call])

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return AssistantMessage(f"Here you are: {last.responses[0].response_data}.")
        offered = [t.tool_definition.name for t in prompt.options.tool_callbacks]
        ref = REF.search(last.text)
        if "get_booking_details" in offered and ref:
            return ask("get_booking_details", booking_ref=ref.group())
        if "open" in last.text:
            return ask("opening_hours")
        return AssistantMessage("You're welcome!")

    return FunctionChatModel(reply)


class OfferedTools(ModelInterceptor):
    """Prints the tools offered on each model call, and what the model did with them."""

    def intercept_model(self, request: ModelRequest, handler: ModelCallHandler) -> ChatResponse:
        offered = [t.tool_definition.name for t in request.options.tool_callbacks]
        response = handler(request)
        calls = [f"{c.name}({c.arguments})" for c in response.result.output.tool_calls]
        did = f"calls {', '.join(calls)}" if calls else "answers"
        print(f"  model offered {offered} -> {did}")
        return response


def build(model: ChatModel) -> ReactAgent:
    """The restaurant's agent, on ``model``: the booking tool offered only when a booking is mentioned."""
    return (
        ReactAgent.builder()
        .name("restaurant")
        .model(model)
        .tools(opening_hours)
        .tool_providers(booking_tools)
        .interceptors(OfferedTools())
        .system_prompt("You answer a restaurant's guests. Use the tools; be brief.")
        .build()
    )


# served: `graph-agent serve examples/dynamic_tools.py:agent` (its model: see _models.py)
agent = build(served(offline_model))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("Tools offered only when the user mentions a booking.", argv)
    agent = build(choose(args, offline_model()))
    config = RunnableConfig(thread_id="guest-7")
    for text in [
        "When are you open on Sunday?",
        "Can you show my booking BK-2231?",
        "Thanks!",
    ]:
        print(f"user: {text}")
        reply = agent.call(text, config)
        print(f"assistant: {reply.text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""ChatClient (framework- and user-controlled tool loops) and MessageWindowChatMemory."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import pytest

from graph_agent.chat import ChatClient, MessageWindowChatMemory
from graph_agent.errors import ModelError, ToolCallLoopError
from graph_agent.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from graph_agent.models import (
    ChatResponse,
    Prompt,
    ScriptedChatModel,
    ToolCallingChatOptions,
)
from graph_agent.tools.manager import ToolCallingManager

from .tools._fakes import FnTool


def _call(name: str, call_id: str = "c1", **args) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=call_id, name=name, arguments=json.dumps(args))]
    )


def _weather():
    return FnTool("weather", lambda ctx, city: f"sunny in {city}")


def test_plain_call_returns_the_content_and_sends_the_system_message():
    model = ScriptedChatModel(["Hello!"])
    reply = ChatClient.create(model).prompt("hi").system("Be brief.").call()
    assert reply.content() == "Hello!"
    (prompt,) = model.prompts
    assert prompt.messages == [SystemMessage("Be brief."), UserMessage("hi")]


def test_framework_runs_the_tool_loop():
    model = ScriptedChatModel([_call("weather", city="Paris"), "It is sunny in Paris."])
    reply = ChatClient.create(model).prompt("Weather in Paris?").tools(_weather()).call()
    assert reply.content() == "It is sunny in Paris."
    second = model.prompts[1].messages
    assert isinstance(second[-1], ToolResponseMessage)
    assert second[-1].responses[0].response_data == "sunny in Paris"
    assert [r.name for r in reply.tool_records] == ["weather"]
    assert [m.message_type for m in reply.messages] == ["user", "assistant", "tool", "assistant"]
    assert model.prompts[0].tool_options.tool_callbacks[0].tool_definition.name == "weather"


def test_tool_loop_cap_raises_a_clear_error():
    model = ScriptedChatModel([_call("weather", f"c{i}", city="x") for i in range(5)])
    client = ChatClient.create(model, max_tool_rounds=3)
    with pytest.raises(ToolCallLoopError, match="3 rounds"):
        client.prompt("loop").tools(_weather()).call()


def test_return_direct_answers_with_the_tool_result():
    direct = FnTool("lookup", lambda ctx: "order 42: shipped", return_direct=True)
    model = ScriptedChatModel([_call("lookup")])
    reply = ChatClient.create(model).prompt("where is my order?").tools(direct).call()
    assert reply.content() == "order 42: shipped"
    assert len(model.prompts) == 1  # the model was not called again


def test_user_controlled_tool_execution():
    model = ScriptedChatModel([_call("weather", city="Oslo"), "Cold in Oslo."])
    options = ToolCallingChatOptions(
        tool_callbacks=(_weather(),), internal_tool_execution_enabled=False
    )
    client = ChatClient.create(model)
    first = client.prompt("Weather in Oslo?").options(options).call()
    assert first.chat_response.has_tool_calls()  # handed back, not executed
    manager = ToolCallingManager()
    result = manager.execute_tool_calls(model.prompts[0], first.chat_response)
    final = client.prompt().messages(*result.conversation_history).options(options).call()
    assert final.content() == "Cold in Oslo."


def test_tool_context_reaches_tools():
    seen = {}

    def whoami(ctx):
        seen["user"] = ctx.get("user_id")
        return "ok"

    model = ScriptedChatModel([_call("whoami"), "done"])
    ChatClient.create(model).prompt("who am I?").tools(FnTool("whoami", whoami)).tool_context(
        {"user_id": "u7"}
    ).call()
    assert seen == {"user": "u7"}


def test_memory_keeps_the_conversation_per_id():
    memory = MessageWindowChatMemory(max_messages=10)
    model = ScriptedChatModel(
        ["Nice to meet you, Ada.", "You asked my name... no: you told me yours, Ada.", "Hi Bob."]
    )
    client = ChatClient.create(model, memory=memory, default_system="You are kind.")
    client.prompt("I am Ada").conversation_id("ada").call()
    client.prompt("What did I just say?").conversation_id("ada").call()
    client.prompt("I am Bob").conversation_id("bob").call()
    second = model.prompts[1].messages
    assert [m.text for m in second] == [
        "You are kind.",
        "I am Ada",
        "Nice to meet you, Ada.",
        "What did I just say?",
    ]
    assert [m.text for m in model.prompts[2].messages] == ["You are kind.", "I am Bob"]
    assert len(memory.get("ada")) == 4 and not any(
        isinstance(m, SystemMessage) for m in memory.get("ada")
    )


def test_model_errors_propagate_and_nothing_is_remembered():
    memory = MessageWindowChatMemory()
    model = ScriptedChatModel([ModelError("provider down", status=503)])
    with pytest.raises(ModelError, match="provider down"):
        ChatClient.create(model, memory=memory).prompt("hi").call()
    assert memory.get("default") == []


def test_stream_yields_text_across_tool_rounds():
    model = ScriptedChatModel([_call("weather", city="Rome"), "Sunny in Rome today."])
    chunks = list(ChatClient.create(model).prompt("Rome?").tools(_weather()).stream())
    assert "".join(chunks) == "Sunny in Rome today." and len(chunks) > 1


def test_async_call_and_stream():
    async def main():
        model = ScriptedChatModel([_call("weather", city="Nice"), "Warm.", "Again warm."])
        client = ChatClient.create(model)
        reply = await client.prompt("Nice?").tools(_weather()).acall()
        chunks = [c async for c in client.prompt("again").astream()]
        return reply.content(), "".join(chunks)

    assert asyncio.run(main()) == ("Warm.", "Again warm.")


def test_bad_requests_are_refused():
    with pytest.raises(TypeError, match="needs a ChatModel"):
        ChatClient.create(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no message"):
        ChatClient.create(ScriptedChatModel([])).prompt().call()
    with pytest.raises(TypeError, match="is not a tool"):
        ChatClient.create(ScriptedChatModel(["x"])).prompt("hi").tools(len).call()


class TestMessageWindowChatMemory:
    def test_keeps_the_last_messages_and_the_system_message(self):
        memory = MessageWindowChatMemory(max_messages=3)
        memory.add("c", [SystemMessage("rules"), UserMessage("1"), AssistantMessage("2")])
        memory.add("c", [UserMessage("3"), AssistantMessage("4")])
        assert [m.text for m in memory.get("c")] == ["rules", "3", "4"]
        memory.add("c", [SystemMessage("new rules")])
        assert [m.text for m in memory.get("c")] == ["new rules", "3", "4"]

    def test_never_keeps_a_tool_response_without_its_call(self):
        memory = MessageWindowChatMemory(max_messages=3)
        call = _call("weather", city="x")
        response = ToolResponseMessage(
            responses=[ToolResponse(id="c1", name="weather", response_data="sunny")]
        )
        memory.add("kept", [UserMessage("q"), call, response, AssistantMessage("sunny")])
        assert [m.message_type for m in memory.get("kept")] == ["assistant", "tool", "assistant"]
        memory = MessageWindowChatMemory(max_messages=2)
        response = ToolResponseMessage(
            responses=[ToolResponse(id="c1", name="weather", response_data="sunny")]
        )
        memory.add("c", [UserMessage("q"), call, response, AssistantMessage("sunny")])
        kept = memory.get("c")
        assert [m.message_type for m in kept] == ["assistant"]  # the orphan tool response went too

    def test_conversations_are_separate_and_clearable(self):
        memory = MessageWindowChatMemory()
        memory.add("a", [UserMessage("x")])
        memory.add("b", [UserMessage("y")])
        memory.clear("a")
        assert memory.get("a") == [] and [m.text for m in memory.get("b")] == ["y"]
        with pytest.raises(ValueError):
            MessageWindowChatMemory(max_messages=0)


def test_tool_providers_offer_tools_per_model_call():
    from graph_agent.tools import ToolProviderRequest, tool_provider

    booking = FnTool("get_booking_details", lambda ctx, ref: f"booking {ref}: 2 nights")

    @tool_provider
    def booking_tools(request: ToolProviderRequest):
        return [booking] if "booking" in request.last_user_text.lower() else None

    model = ScriptedChatModel(["Hello.", _call("get_booking_details", ref="B7"), "Two nights."])
    client = ChatClient.create(model)
    client.prompt("Hi there").tool_providers(booking_tools).call()
    assert model.prompts[0].tool_options.tool_callbacks == ()
    reply = client.prompt("What about my booking B7?").tool_providers(booking_tools).call()
    assert reply.content() == "Two nights."
    offered = [c.tool_definition.name for c in model.prompts[1].tool_options.tool_callbacks]
    assert offered == ["get_booking_details"]
    assert reply.tool_records[0].result == "booking B7: 2 nights"


def test_a_streamed_exchange_is_remembered_as_a_called_one_sync_and_async():
    def remembered(how: str) -> list[str]:
        model = ScriptedChatModel([_call("weather", city="Oslo"), "Cold in Oslo."])
        memory = MessageWindowChatMemory()
        request = ChatClient.create(model, memory=memory).prompt("Oslo?").tools(_weather())
        if how == "call":
            text = request.call().content()
        elif how == "stream":
            text = "".join(request.stream())
        else:

            async def read() -> str:
                return "".join([c async for c in request.astream()])

            text = asyncio.run(read())
        assert text == "Cold in Oslo."
        return [f"{m.message_type}: {m.text}" for m in memory.get("default")]

    called = remembered("call")
    assert called[-1] == "assistant: Cold in Oslo." and len(called) == 4
    assert remembered("stream") == called
    assert remembered("astream") == called


def test_return_direct_when_streaming_yields_the_tool_result():
    direct = FnTool("lookup", lambda ctx: "order 42: shipped", return_direct=True)
    model = ScriptedChatModel([_call("lookup"), _call("lookup")])
    chunks = list(ChatClient.create(model).prompt("where?").tools(direct).stream())
    assert chunks == ["order 42: shipped"]

    async def collect():
        return [c async for c in ChatClient.create(model).prompt("where?").tools(direct).astream()]

    assert asyncio.run(collect()) == ["order 42: shipped"]


def test_tool_names_are_resolved_and_offered_to_the_model_before_it_is_called():
    from graph_agent.tools import StaticToolCallbackResolver

    weather = _weather()
    manager = ToolCallingManager(tool_callback_resolver=StaticToolCallbackResolver([weather]))
    model = ScriptedChatModel([_call("weather", city="Oslo"), "Cold."])
    client = ChatClient.create(model, tool_calling_manager=manager)
    assert client.prompt("Oslo?").tool_names("weather").call().content() == "Cold."
    assert [c.tool_definition.name for c in model.prompts[0].tool_options.tool_callbacks] == [
        "weather"
    ]
    with pytest.raises(ValueError, match="tool name 'wether' cannot be resolved"):
        client.prompt("typo").tool_names("wether").call()
    assert len(model.prompts) == 2  # the model was never called with the bad request


def test_duplicate_tools_are_sent_once_and_name_clashes_are_refused():
    weather = _weather()
    model = ScriptedChatModel(["fine"])
    ChatClient.create(model).prompt("q").tools(weather, weather).call()
    assert len(model.prompts[0].tool_options.tool_callbacks) == 1
    with pytest.raises(ValueError, match="two tools are named 'weather'"):
        ChatClient.create(model).prompt("q").tools(weather, _weather()).call()
    with pytest.raises(ValueError, match="max_tool_rounds"):
        ChatClient.create(model, max_tool_rounds=0)


class _Exhausted:
    """A model whose script ran out: next() on an empty iterator escapes it."""

    def __init__(self) -> None:
        self.answers: Iterator[str] = iter(())

    def call(self, prompt: Prompt) -> ChatResponse:
        return ChatResponse.of(AssistantMessage(next(self.answers)))

    async def acall(self, prompt: Prompt) -> ChatResponse:
        return self.call(prompt)

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        yield self.call(prompt)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        yield self.call(prompt)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_model_raising_stop_iteration_is_a_model_error_not_an_empty_answer(
    asynchronous: bool,
) -> None:
    request = ChatClient.create(_Exhausted()).prompt("hi")
    with pytest.raises(ModelError, match=r"_Exhausted\.call raised StopIteration"):
        asyncio.run(request.acall()) if asynchronous else request.call()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_agents_model_raising_stop_iteration_is_a_model_error(asynchronous: bool) -> None:
    from graph_agent import ReactAgent

    agent = ReactAgent(name="a", model=_Exhausted())
    with pytest.raises(ModelError, match="raised StopIteration instead of returning"):
        asyncio.run(agent.acall("hi")) if asynchronous else agent.call("hi")

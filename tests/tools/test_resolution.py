"""Finding tools: resolvers by name, static providers, and per-request ``ToolProvider``s."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from graph_agent.graph import OverAllState, RunnableConfig
from graph_agent.messages import AssistantMessage, SystemMessage, UserMessage
from graph_agent.tools.callback import ToolCallback
from graph_agent.tools.function import tool
from graph_agent.tools.resolution import (
    DelegatingToolCallbackResolver,
    FunctionToolProvider,
    StaticToolCallbackProvider,
    StaticToolCallbackResolver,
    ToolCallbackProvider,
    ToolCallbackResolver,
    ToolProvider,
    ToolProviderRequest,
    tool_provider,
)


@tool
def get_weather(city: str) -> str:
    """Current weather."""
    return f"sunny in {city}"


@tool
def get_time() -> str:
    """Current time."""
    return "12:00"


@tool
def get_booking_details(booking_id: str) -> str:
    """Details of a booking."""
    return f"booking {booking_id}: confirmed"


class Calendar:
    @tool
    def next_meeting(self) -> str:
        return "standup at 9"


def names(callbacks: Sequence[ToolCallback]) -> list[str]:
    return [c.tool_definition.name for c in callbacks]


def test_static_resolver_finds_tools_by_name() -> None:
    resolver = StaticToolCallbackResolver([get_weather, get_time])
    assert isinstance(resolver, ToolCallbackResolver)
    assert resolver.resolve("get_time") is get_time
    assert resolver.resolve("unknown") is None
    assert resolver.tool_names == ["get_weather", "get_time"]


def test_static_resolver_rejects_duplicate_names() -> None:
    @tool(name="get_time")
    def other_time() -> str:
        return "13:00"

    with pytest.raises(ValueError, match="duplicate tool name 'get_time'"):
        StaticToolCallbackResolver([get_time, other_time])


def test_delegating_resolver_first_hit_wins() -> None:
    @tool(name="get_time")
    def utc_time() -> str:
        return "10:00 UTC"

    first = StaticToolCallbackResolver([get_weather])
    second = StaticToolCallbackResolver([utc_time, get_booking_details])
    third = StaticToolCallbackResolver([get_time])
    resolver = DelegatingToolCallbackResolver([first, second, third])
    assert resolver.resolve("get_weather") is get_weather
    assert resolver.resolve("get_time") is utc_time
    assert resolver.resolve("get_booking_details") is get_booking_details
    assert resolver.resolve("nope") is None


def test_delegating_resolver_accepts_any_resolver() -> None:
    class Lazy:
        def __init__(self) -> None:
            self.asked: list[str] = []

        def resolve(self, tool_name: str) -> ToolCallback | None:
            self.asked.append(tool_name)
            return get_time if tool_name == "clock" else None

    lazy = Lazy()
    resolver = DelegatingToolCallbackResolver([StaticToolCallbackResolver([get_weather]), lazy])
    assert resolver.resolve("get_weather") is get_weather
    assert lazy.asked == []  # never consulted after a hit
    assert resolver.resolve("clock") is get_time
    assert lazy.asked == ["clock"]


def test_static_provider_accepts_callbacks_objects_and_providers() -> None:
    calendar = Calendar()
    inner = StaticToolCallbackProvider(get_time)
    provider = StaticToolCallbackProvider(get_weather, calendar, inner)
    assert isinstance(provider, ToolCallbackProvider)
    callbacks = provider.get_tool_callbacks()
    assert names(callbacks) == ["get_weather", "next_meeting", "get_time"]
    assert callbacks[1].call("") == "standup at 9"


def test_static_provider_rejects_non_tools_and_duplicates() -> None:
    def plain(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="@tool"):
        StaticToolCallbackProvider(plain)
    with pytest.raises(ValueError, match="duplicate tool name 'get_time'"):
        StaticToolCallbackProvider(get_time, get_time)
    with pytest.raises(ValueError, match="no @tool methods"):
        StaticToolCallbackProvider(object())


@tool_provider
def booking_tools(request: ToolProviderRequest) -> list[ToolCallback] | None:
    """Offer the booking tool only when the user talks about a booking."""
    if "booking" in request.last_user_text.lower():
        return [get_booking_details]
    return None


def test_tool_provider_offers_booking_tool_only_when_the_user_mentions_a_booking() -> None:
    assert isinstance(booking_tools, ToolProvider)
    about_booking = ToolProviderRequest(
        [SystemMessage("be helpful"), UserMessage("Where is my Booking B-42?")]
    )
    about_weather = ToolProviderRequest([UserMessage("Is it sunny in Paris?")])
    assert names(booking_tools(about_booking)) == ["get_booking_details"]
    assert booking_tools(about_weather) == []


def test_tool_provider_reads_the_last_user_message_only() -> None:
    request = ToolProviderRequest(
        [
            UserMessage("I have a booking question"),
            AssistantMessage("Sure, what is it?"),
            UserMessage("actually, what's the weather?"),
            AssistantMessage("Let me check."),
        ]
    )
    assert request.last_user_message == UserMessage("actually, what's the weather?")
    assert booking_tools(request) == []
    assert ToolProviderRequest([]).last_user_text == ""
    assert ToolProviderRequest([]).last_user_message is None


def test_tool_provider_can_use_state_and_config() -> None:
    @tool_provider
    def by_role(request: ToolProviderRequest) -> list[object]:
        assert request.config is not None and request.state is not None
        tools: list[object] = [get_time]
        if request.config.metadata.get("role") == "admin":
            tools.append(Calendar())
        if request.state.get("city"):
            tools.append(get_weather)
        return tools

    admin = ToolProviderRequest(
        [UserMessage("hi")],
        state=OverAllState({"city": "Paris"}),
        config=RunnableConfig(metadata={"role": "admin"}),
    )
    guest = ToolProviderRequest([UserMessage("hi")], OverAllState({}), RunnableConfig())
    assert names(by_role(admin)) == ["get_time", "next_meeting", "get_weather"]
    assert names(by_role(guest)) == ["get_time"]


def test_a_plain_function_is_a_tool_provider_too() -> None:
    def always(request: ToolProviderRequest) -> Sequence[ToolCallback]:
        return [get_time]

    assert isinstance(always, ToolProvider)
    assert names(always(ToolProviderRequest([]))) == ["get_time"]


def test_function_tool_provider_checks_what_it_returns() -> None:
    single = FunctionToolProvider(lambda request: get_time)
    assert names(single(ToolProviderRequest([]))) == ["get_time"]
    duplicated = FunctionToolProvider(lambda request: [get_time, get_time])
    with pytest.raises(ValueError, match="duplicate"):
        duplicated(ToolProviderRequest([]))

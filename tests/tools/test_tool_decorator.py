"""``@tool`` on functions and methods: names, descriptions, plain calls, async, context."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from graph_agent.errors import GraphUsageError, ToolExecutionException
from graph_agent.graph import OverAllState, RunnableConfig
from graph_agent.tools.callback import ToolCallback
from graph_agent.tools.context import ToolContext
from graph_agent.tools.definition import ToolMetadata
from graph_agent.tools.function import FunctionToolCallback, tool
from graph_agent.tools.method import MethodToolCallback


@tool
def get_weather(city: str, unit: str = "C") -> str:
    """Get the current weather for a city.

    The unit is C or F; this paragraph is not part of the description.
    """
    return f"sunny in {city} ({unit})"


@tool(name="lookup_user", description="Find a user by id", return_direct=True)
def find_user(user_id: int) -> dict[str, Any]:
    return {"id": user_id, "name": "Ada"}


def test_bare_decorator_takes_name_and_docstring_first_paragraph() -> None:
    definition = get_weather.tool_definition
    assert definition.name == "get_weather"
    assert definition.description == "Get the current weather for a city."
    assert isinstance(get_weather, FunctionToolCallback)
    assert isinstance(get_weather, ToolCallback)


def test_decorator_arguments_set_name_description_and_return_direct() -> None:
    assert find_user.tool_definition.name == "lookup_user"
    assert find_user.tool_definition.description == "Find a user by id"
    assert find_user.tool_metadata == ToolMetadata(return_direct=True)
    assert get_weather.tool_metadata.return_direct is False


def test_multi_line_first_paragraph_is_joined_on_one_line() -> None:
    @tool
    def f() -> None:
        """Book a table
        at a restaurant.

        Details."""

    assert f.tool_definition.description == "Book a table at a restaurant."


def test_description_falls_back_to_the_name() -> None:
    @tool
    def ping() -> str:
        return "pong"

    @tool(name="health")
    def check() -> str:
        return "ok"

    assert ping.tool_definition.description == "ping"
    assert check.tool_definition.description == "health"


def test_tool_is_still_callable_as_the_plain_function() -> None:
    assert get_weather("Paris") == "sunny in Paris (C)"
    assert get_weather("Oslo", unit="F") == "sunny in Oslo (F)"
    assert find_user(7) == {"id": 7, "name": "Ada"}
    assert get_weather.__name__ == "get_weather"
    assert get_weather.__doc__ is not None and "current weather" in get_weather.__doc__


def test_invalid_tool_name_is_rejected_at_decoration() -> None:
    with pytest.raises(ValueError, match="invalid tool name"):

        @tool(name="get weather!")
        def f() -> None: ...

    with pytest.raises(ValueError, match="name="):
        tool(lambda: None)


class Counter:
    """A stateful object with tool methods."""

    def __init__(self, start: int = 0) -> None:
        self.value = start

    @tool
    def increment(self, by: int = 1) -> int:
        """Add to the counter."""
        self.value += by
        return self.value

    @tool
    @staticmethod
    def describe_counter() -> str:
        """What this counter is."""
        return "a counter"

    @tool
    @classmethod
    def kind(cls) -> str:
        """The counter's class name."""
        return cls.__name__

    def not_a_tool(self) -> None: ...


def test_method_is_still_callable_on_the_instance_and_the_class() -> None:
    counter = Counter()
    assert counter.increment() == 1
    assert counter.increment(by=5) == 6
    assert Counter.increment(counter, 4) == 10
    assert Counter.describe_counter() == "a counter"
    assert counter.kind() == "Counter"


def test_method_read_from_an_instance_is_a_bound_tool() -> None:
    counter = Counter(10)
    bound = counter.increment
    assert isinstance(bound, MethodToolCallback)
    assert bound.tool_object is counter
    assert bound == counter.increment
    assert bound.tool_definition.schema["properties"] == {"by": {"default": 1, "type": "integer"}}
    assert bound.call('{"by": 2}') == "12"
    assert counter.value == 12


def test_unbound_method_tool_refuses_to_run() -> None:
    with pytest.raises(GraphUsageError, match="from_object"):
        Counter.increment.call("{}")


def test_tool_context_is_injected_and_writes_are_visible() -> None:
    seen: dict[str, Any] = {}

    @tool
    def remember(note: str, context: ToolContext) -> str:
        """Remember a note for the user."""
        assert context.state is not None and context.config is not None
        seen["user"] = context.config.metadata["user_id"]
        seen["history"] = context.state["history"]
        seen["tenant"] = context.get("tenant")
        context.extra_state["notes"] = [note]
        context.context["written"] = True
        return "saved"

    context = ToolContext(
        {
            "state": OverAllState({"history": ["hi"]}),
            "config": RunnableConfig(metadata={"user_id": "u1"}),
            "tenant": "acme",
        }
    )
    assert remember.call('{"note": "buy milk"}', context) == "saved"
    assert seen == {"user": "u1", "history": ["hi"], "tenant": "acme"}
    assert context.extra_state == {"notes": ["buy milk"]}
    assert context.context["written"] is True


def test_tool_context_defaults_to_an_empty_context() -> None:
    @tool
    def probe(context: ToolContext | None = None) -> str:
        assert context is not None
        return f"{context.state} {context.config} {context.extra_state}"

    assert probe.call("") == "None None {}"


def test_tool_context_in_a_method() -> None:
    class Notes:
        @tool
        def add(self, text: str, context: ToolContext) -> str:
            context.extra_state["last_note"] = text
            return "ok"

    context = ToolContext()
    assert Notes().add.call('{"text": "x"}', context) == "ok"
    assert context.extra_state == {"last_note": "x"}


@tool
async def async_lookup(key: str) -> dict[str, str]:
    """Look a key up asynchronously."""
    await asyncio.sleep(0)
    return {"key": key, "thread": threading.current_thread().name}


def test_call_runs_an_async_tool_without_a_running_loop() -> None:
    assert async_lookup.call('{"key": "k"}') == '{"key": "k", "thread": "MainThread"}'


def test_call_of_an_async_tool_inside_a_running_loop_runs_it_on_a_worker_thread() -> None:
    async def main() -> str:
        return async_lookup.call('{"key": "k"}')

    result = asyncio.run(main())
    assert '"key": "k"' in result and "MainThread" not in result


def test_acall_awaits_an_async_tool_on_the_loop_thread() -> None:
    result = asyncio.run(async_lookup.acall('{"key": "k"}'))
    assert result == '{"key": "k", "thread": "MainThread"}'


def test_acall_runs_a_sync_tool_in_a_worker_thread() -> None:
    threads: list[threading.Thread] = []

    @tool
    def which_thread() -> str:
        threads.append(threading.current_thread())
        return "ok"

    async def main() -> tuple[str, threading.Thread]:
        return await which_thread.acall(""), threading.current_thread()

    result, loop_thread = asyncio.run(main())
    assert result == "ok"
    assert threads and threads[0] is not loop_thread


def test_acall_of_a_sync_tool_does_not_block_the_loop() -> None:
    release = threading.Event()

    @tool
    def blocking() -> str:
        assert release.wait(5)
        return "done"

    async def main() -> str:
        task = asyncio.ensure_future(blocking.acall(""))
        await asyncio.sleep(0.01)  # the loop still runs while the tool waits
        release.set()
        return await task

    assert asyncio.run(main()) == "done"


def test_async_tool_errors_are_wrapped_like_sync_ones() -> None:
    @tool
    async def broken() -> str:
        raise RuntimeError("backend down")

    with pytest.raises(ToolExecutionException, match="backend down"):
        broken.call("")
    with pytest.raises(ToolExecutionException, match="backend down"):
        asyncio.run(broken.acall(""))


def test_async_method_tool() -> None:
    class Service:
        @tool
        async def status(self) -> str:
            return "up"

    assert asyncio.run(Service().status.acall("")) == "up"

"""Async-only tools and interceptors in sync runs: one event loop per run."""

from __future__ import annotations

import asyncio
import contextvars
import http.server
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from graph_agent import END, START, ReactAgent, StateGraph, tool
from graph_agent._runtime.run_loop import RunLoopScope, run_coroutine_sync
from graph_agent.models import ScriptedChatModel
from hooks import ModelInterceptor

from ..agent.conftest import tool_calls
from .test_pool import TIMEOUT, finishes


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello {self.path.strip('/')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class CachingFetcher:
    """An async-only tool that creates one ``httpx.AsyncClient`` and reuses it, as real tools
    do; the client is bound to the loop it was first used on."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.client: httpx.AsyncClient | None = None
        self.loops: list[asyncio.AbstractEventLoop] = []

    async def fetch(self, name: str) -> str:
        loop = asyncio.get_running_loop()
        if self.client is None or self.loops[-1] is not loop:  # a new run: a new client
            self.client = httpx.AsyncClient(base_url=self.base_url)
            self.loops.append(loop)
        response = await self.client.get(f"/{name}")
        return response.text


def _agent(fetcher: CachingFetcher, turns: list[Any]) -> ReactAgent:
    @tool
    async def fetch(name: str) -> str:
        """Fetch a greeting."""
        return await fetcher.fetch(name)

    return ReactAgent(name="f", model=ScriptedChatModel(turns), tools=[fetch])


def test_an_async_tool_reuses_its_client_across_the_calls_of_a_sync_run(server_url: str) -> None:
    fetcher = CachingFetcher(server_url)
    turns = [
        tool_calls(("fetch", {"name": "ada"})),
        tool_calls(("fetch", {"name": "bob"})),
        tool_calls(("fetch", {"name": "cy"}), ("fetch", {"name": "di"})),  # in parallel
        "done",
    ]
    agent = _agent(fetcher, turns)
    state = agent.invoke("greet everyone", {"thread_id": "t"})
    results = [r.response_data for m in state["messages"][2::2] for r in m.responses]
    assert results == ["hello ada", "hello bob", "hello cy", "hello di"]
    assert len(fetcher.loops) == 1  # one loop, one client, for the whole run
    assert fetcher.loops[0].is_closed()  # the run closed its loop when it ended


def test_each_sync_run_gets_its_own_loop(server_url: str) -> None:
    fetcher = CachingFetcher(server_url)
    turns = [
        tool_calls(("fetch", {"name": "a"})),
        "one",
        tool_calls(("fetch", {"name": "b"})),
        "two",
    ]
    agent = _agent(fetcher, turns)
    assert agent.call("first", {"thread_id": "t"}).text == "one"
    assert agent.call("second", {"thread_id": "t"}).text == "two"
    assert len(fetcher.loops) == 2 and all(loop.is_closed() for loop in fetcher.loops)


def test_stream_events_runs_async_tools_on_one_loop_too(server_url: str) -> None:
    fetcher = CachingFetcher(server_url)
    agent = _agent(
        fetcher, [tool_calls(("fetch", {"name": "a"})), tool_calls(("fetch", {"name": "b"})), "ok"]
    )
    ends = [e.result for e in agent.stream_events("go", {"thread_id": "t"}) if e.kind == "tool_end"]
    assert ends == ["hello a", "hello b"] and len(fetcher.loops) == 1


def test_an_async_only_interceptor_shares_the_runs_loop() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    class AsyncOnly(ModelInterceptor):
        async def aintercept_model(self, request: Any, handler: Any) -> Any:
            loops.append(asyncio.get_running_loop())
            return await handler(request)

    @tool
    def noop() -> str:
        """Nothing."""
        return "ok"

    model = ScriptedChatModel([tool_calls(("noop", {})), "done"])
    agent = ReactAgent(name="i", model=model, tools=[noop], interceptors=[AsyncOnly()])
    assert agent.call("go").text == "done"
    assert len(loops) == 2 and loops[0] is loops[1]


def test_a_run_that_meets_no_coroutine_starts_no_thread() -> None:
    before = threading.active_count()
    with RunLoopScope():
        assert threading.active_count() == before
    assert threading.active_count() == before


def test_nested_scopes_share_one_loop_and_the_outer_one_closes_it() -> None:
    async def current() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    with RunLoopScope():
        outer = run_coroutine_sync(current())
        with RunLoopScope():
            inner = run_coroutine_sync(current())
        assert inner is outer and not outer.is_closed()
    assert outer.is_closed()


def test_a_coroutines_error_reaches_the_caller() -> None:
    async def fail() -> None:
        raise LookupError("nothing here")

    with RunLoopScope(), pytest.raises(LookupError, match="nothing here"):
        run_coroutine_sync(fail())
    with pytest.raises(LookupError):  # outside a run: asyncio.run
        run_coroutine_sync(fail())


def test_sync_code_inside_a_coroutine_on_the_runs_loop_does_not_wait_on_itself() -> None:
    async def current() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    async def outer() -> tuple[asyncio.AbstractEventLoop, asyncio.AbstractEventLoop]:
        return asyncio.get_running_loop(), run_coroutine_sync(current())  # blocks this loop

    with RunLoopScope():
        run_loop, inner_loop = finishes(lambda: run_coroutine_sync(outer()))
        assert inner_loop is not run_loop  # a loop of its own, not the blocked one


def test_a_keyboard_interrupt_in_a_coroutine_reaches_the_caller_and_the_loop_serves_on() -> None:
    async def interrupted() -> None:
        raise KeyboardInterrupt("stop")

    async def fine() -> str:
        return "ok"

    def body() -> str:
        with RunLoopScope():
            with pytest.raises(KeyboardInterrupt, match="stop"):
                run_coroutine_sync(interrupted())
            return run_coroutine_sync(fine())

    assert finishes(body) == "ok"


def test_an_async_tool_that_calls_a_sync_agent_with_parallel_async_tools_finishes() -> None:
    @tool
    async def leaf(key: str) -> str:
        """Answer with the key."""
        await asyncio.sleep(0.01)
        return key.upper()

    @tool
    async def ask_inner() -> str:
        """Call another agent, synchronously, from async code (blocking the run's loop)."""
        inner = ReactAgent(
            name="inner",
            model=ScriptedChatModel(
                [tool_calls(("leaf", {"key": "a"}), ("leaf", {"key": "b"})), "AB"]
            ),
            tools=[leaf],
        )
        return inner.call("both").text

    model = ScriptedChatModel([tool_calls(("ask_inner", {}), ("ask_inner", {})), "done"])
    outer = ReactAgent(name="outer", model=model, tools=[ask_inner])
    state = finishes(lambda: outer.invoke("go", {"thread_id": "t"}))
    assert [r.response_data for r in state["messages"][2].responses] == ["AB", "AB"]


def test_a_stream_closed_from_another_thread_still_closes_its_loop() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def current() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    def node(state: Any) -> dict[str, Any]:
        loops.append(run_coroutine_sync(current()))
        return {"x": state["x"] + 1}

    graph = StateGraph()
    graph.add_node("a", node).add_node("b", node)
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)

    def body() -> None:
        stream = graph.compile().stream({"x": 0})
        next(stream)  # the run's scope is open in this context, between steps
        closer = threading.Thread(target=stream.close)  # another context: no token to reset
        closer.start()
        closer.join(TIMEOUT)
        assert len(loops) == 1 and loops[0].is_closed()
        with RunLoopScope():  # the closed scope still set in this context is not reused
            assert run_coroutine_sync(current()) is not loops[0]
        assert run_coroutine_sync(current()) is not loops[0]  # nor outside a scope

    contextvars.copy_context().run(body)  # leaves the test's own context clean


def test_the_callers_context_reaches_the_coroutine() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    async def read() -> str:
        return var.get()

    with RunLoopScope():
        var.set("caller")
        assert run_coroutine_sync(read()) == "caller"


def test_leftover_tasks_are_cancelled_when_the_run_ends() -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def start_background() -> None:
        asyncio.get_running_loop().create_task(forever())
        await asyncio.sleep(0)

    with RunLoopScope():
        run_coroutine_sync(start_background())
    assert cancelled.is_set()


def test_a_naively_cached_async_client_works_on_every_call_of_the_run(server_url: str) -> None:
    client: list[httpx.AsyncClient] = []

    @tool
    async def fetch(name: str) -> str:
        """Fetch a greeting with one client, made on first use."""
        if not client:
            client.append(httpx.AsyncClient(base_url=server_url))
        return (await client[0].get(f"/{name}")).text

    turns = [tool_calls(("fetch", {"name": n})) for n in ("a", "b", "c")] + ["done"]
    agent = ReactAgent(name="n", model=ScriptedChatModel(turns), tools=[fetch])
    state = agent.invoke("go", {"thread_id": "t"})
    assert [m.responses[0].response_data for m in state["messages"][2::2]] == [
        "hello a",
        "hello b",
        "hello c",
    ]


def test_a_chat_clients_tool_rounds_share_one_loop() -> None:
    from graph_agent import ChatClient

    loops: list[asyncio.AbstractEventLoop] = []

    @tool
    async def where() -> str:
        """Which loop runs this call."""
        loops.append(asyncio.get_running_loop())
        return "here"

    model = ScriptedChatModel([tool_calls(("where", {})), tool_calls(("where", {})), "done"])
    assert ChatClient.create(model).prompt("go").tools(where).call().content() == "done"
    assert len(loops) == 2 and loops[0] is loops[1] and loops[0].is_closed()
    model = ScriptedChatModel([tool_calls(("where", {})), tool_calls(("where", {})), "again"])
    assert "".join(ChatClient.create(model).prompt("go").tools(where).stream()) == "again"
    assert loops[2] is loops[3] and loops[2] is not loops[0]

"""A run fenced by its lease (``RunnableConfig.lease``): every checkpoint write of the run
carries it, and a run whose lease went to another worker stops at its next write with
``LeaseLostError``, leaving none of its later work in the thread."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from checkpoint import (
    BaseCheckpointSaver,
    CheckpointConflictError,
    LeaseLostError,
    MemorySaver,
    RedisSaver,
)
from graph_agent import END, START, KeyStrategy, RunnableConfig, StateGraph
from graph_agent.errors import GraphUsageError

from ..checkpoint.conftest import SAVERS

WAIT = 10.0  # seconds a test waits for an event before it fails


@pytest.fixture(params=["memory", "sqlite", "redis-fake", "redis-real"])
def saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    return SAVERS[request.param](request)


def _wait_expired(saver: BaseCheckpointSaver, thread: str) -> None:
    deadline = time.monotonic() + WAIT
    while saver.lease_holder(thread) is not None:  # the expiry itself
        assert time.monotonic() < deadline, "the lease never expired"
        time.sleep(0.01)


class Hold:
    """A node of the first run waits here until the test lets it go; ``entered`` says it is
    waiting."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.go = threading.Event()

    def __call__(self) -> None:
        self.entered.set()
        assert self.go.wait(WAIT), "the test never let the node go"


def _graph(saver: BaseCheckpointSaver, hold: Hold) -> Any:
    """a -> b -> c, each appending "<node> by <run>"; b of the run named "first" holds."""

    def node(name: str) -> Any:
        def run(state: Any, config: RunnableConfig) -> dict[str, Any]:
            who = config.metadata["who"]
            if name == "b" and who == "first":
                hold()
            return {"log": [f"{name} by {who}"]}

        return run

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    for name in "abc":
        graph.add_node(name, node(name))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    return graph.compile(saver=saver)


def _config(lease: str, who: str) -> RunnableConfig:
    return RunnableConfig(thread_id="t", lease=lease, metadata={"who": who})


def test_a_run_whose_lease_went_to_another_stops_and_writes_nothing_more(
    saver: BaseCheckpointSaver,
) -> None:
    hold = Hold()
    app = _graph(saver, hold)
    assert saver.acquire_lease("t", "first", 30)
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(app.invoke, {"log": ["go"]}, _config("first", "first"))
        assert hold.entered.wait(WAIT)
        # The first worker is paused past its lease (its last renewal was a short one); a
        # second one takes the thread over and runs it from its last checkpoint (after a).
        assert saver.renew_lease("t", "first", 0.05)
        _wait_expired(saver, "t")
        assert saver.acquire_lease("t", "second", 30)
        second = app.invoke(None, _config("second", "second"))
        assert second["log"] == ["go", "a by first", "b by second", "c by second"]
        hold.go.set()  # the first one resumes: its next write is refused
        with pytest.raises(LeaseLostError) as lost:
            first.result(WAIT)
    assert not isinstance(lost.value, CheckpointConflictError)
    assert (lost.value.thread_id, lost.value.token, lost.value.holder) == ("t", "first", "second")
    state = app.get_state({"thread_id": "t"})
    assert state.values["log"] == ["go", "a by first", "b by second", "c by second"]
    assert not any("b by first" in str(s.values) for s in app.get_state_history({"thread_id": "t"}))
    if isinstance(saver, RedisSaver):
        saver.close()


def test_the_async_run_stops_the_same_way(saver: BaseCheckpointSaver) -> None:
    hold = Hold()
    app = _graph(saver, hold)  # a sync node: it runs in a worker thread, off the loop

    async def main() -> None:
        try:
            assert await saver.aacquire_lease("t", "first", 30)
            first = asyncio.ensure_future(app.ainvoke({"log": ["go"]}, _config("first", "first")))
            assert await asyncio.to_thread(hold.entered.wait, WAIT)
            assert await saver.arenew_lease("t", "first", 0.05)
            await asyncio.to_thread(_wait_expired, saver, "t")
            assert await saver.aacquire_lease("t", "second", 30)
            await app.ainvoke(None, _config("second", "second"))
            hold.go.set()
            with pytest.raises(LeaseLostError):
                await first
        finally:
            if isinstance(saver, RedisSaver):
                await saver.aclose()

    asyncio.run(main())
    assert app.get_state({"thread_id": "t"}).values["log"] == [
        "go",
        "a by first",
        "b by second",
        "c by second",
    ]


class Signalling:
    """Wraps a saver's ``put_writes`` to say when one was tried (the test waits for it)."""

    def __init__(self, saver: BaseCheckpointSaver) -> None:
        self.tried = threading.Event()
        original = saver.put_writes

        def put_writes(checkpoint: Any, **options: Any) -> None:
            try:
                original(checkpoint, **options)
            finally:
                self.tried.set()

        saver.put_writes = put_writes  # type: ignore[method-assign]


@pytest.fixture(params=["sqlite", "redis-fake"])
def durable_saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    return SAVERS[request.param](request)


def test_pending_writes_of_a_run_that_lost_its_lease_are_refused(
    durable_saver: BaseCheckpointSaver,
) -> None:
    """A parallel step's finished work (``put_writes``) is fenced too: refused once the lease
    is another's, and the run stops with ``LeaseLostError`` when its step ends."""
    saver = durable_saver
    signal = Signalling(saver)
    fast, slow = Hold(), Hold()

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("fast", lambda s: (fast(), {"log": ["fast"]})[1])
    graph.add_node("slow", lambda s: (slow(), {"log": ["slow"]})[1])
    graph.add_edge(START, "fast").add_edge(START, "slow")
    graph.add_edge("fast", END).add_edge("slow", END)
    app = graph.compile(saver=saver)
    assert saver.acquire_lease("t", "first", 30)
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(app.invoke, {"log": ["go"]}, RunnableConfig(thread_id="t", lease="first"))
        assert fast.entered.wait(WAIT) and slow.entered.wait(WAIT)
        assert saver.renew_lease("t", "first", 0.05)
        _wait_expired(saver, "t")
        assert saver.acquire_lease("t", "second", 30)
        fast.go.set()  # finishes while slow runs: its work is written as pending writes...
        assert signal.tried.wait(WAIT)  # ...which are refused
        slow.go.set()
        with pytest.raises(LeaseLostError):
            run.result(WAIT)
    head = app.get_state({"thread_id": "t"})
    assert head.values == {"log": ["go"]}  # the input's checkpoint, and nothing after it
    assert saver.get("t").pending_writes == {}


def test_without_a_lease_nothing_is_fenced(saver: BaseCheckpointSaver) -> None:
    hold = Hold()
    hold.go.set()
    app = _graph(saver, hold)
    assert saver.acquire_lease("t", "someone-else", 30)  # a lease the run does not carry
    result = app.invoke({"log": ["go"]}, {"thread_id": "t", "metadata": {"who": "plain"}})
    assert result["log"] == ["go", "a by plain", "b by plain", "c by plain"]
    if isinstance(saver, RedisSaver):
        saver.close()


def test_update_state_with_a_lease_is_fenced() -> None:
    saver = MemorySaver()
    hold = Hold()
    hold.go.set()
    app = _graph(saver, hold)
    assert saver.acquire_lease("t", "mine", 30)
    app.invoke({"log": ["go"]}, _config("mine", "me"))
    with pytest.raises(LeaseLostError):
        app.update_state(_config("stale", "me"), {"log": ["late"]})
    app.update_state(_config("mine", "me"), {"log": ["edit"]})
    assert app.get_state({"thread_id": "t"}).values["log"][-1] == "edit"


def test_a_lease_on_a_saver_without_leases_is_a_clear_error() -> None:
    from checkpoint import Checkpoint

    class DictSaver(MemorySaver):
        """A saver written before leases: its put takes no fence."""

        acquire_lease = BaseCheckpointSaver.acquire_lease  # type: ignore[assignment]

        def put(
            self, checkpoint: Checkpoint, delta: Any = None, *, check_head: bool = True
        ) -> None:  # type: ignore[override]
            super().put(checkpoint, delta, check_head=check_head)

    hold = Hold()
    hold.go.set()
    app = _graph(DictSaver(), hold)
    with pytest.raises(GraphUsageError, match="DictSaver keeps no leases"):
        app.invoke({"log": ["go"]}, _config("mine", "me"))
    # without a lease, a saver written before fencing works as it did
    assert app.invoke({"log": ["go"]}, {"thread_id": "u", "metadata": {"who": "me"}})["log"][-1]


@pytest.mark.parametrize("bad", ["", 7])
def test_a_bad_lease_says_what_it_must_be(bad: Any) -> None:
    with pytest.raises(GraphUsageError, match=r"RunnableConfig\.lease must be a non-empty str"):
        RunnableConfig(thread_id="t", lease=bad)


def test_the_config_takes_the_lease_from_a_dict() -> None:
    assert RunnableConfig.coerce({"thread_id": "t", "lease": "tok"}).lease == "tok"
    with pytest.raises(GraphUsageError, match="lease"):
        RunnableConfig.coerce({"thread_id": "t", "leese": "tok"})

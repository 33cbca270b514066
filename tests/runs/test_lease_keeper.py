"""``LeaseKeeper``: a thread's lease held for a run and renewed off the run's event loop, so a
node that blocks the loop for several lease lengths keeps it (LangGraph's #7213), on every
saver that keeps leases."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from checkpoint import BaseCheckpointSaver, LeaseBusyError, MemorySaver, RedisSaver
from graph_agent import END, START, KeyStrategy, RunnableConfig, StateGraph
from graph_agent.runs._lease import LeaseKeeper

from ..checkpoint.conftest import SAVERS

WAIT = 10.0  # seconds a test waits for an event before it fails
TTL = 0.5  # seconds a lease lasts unless renewed


@pytest.fixture(params=["memory", "sqlite", "redis-fake", "redis-real"])
def saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    return SAVERS[request.param](request)


class Rival:
    """Another worker trying to take the thread over, from a thread of its own, until
    stopped: ``took`` says whether it ever acquired the lease."""

    def __init__(self, saver: BaseCheckpointSaver, thread_id: str) -> None:
        self.saver = saver
        self.thread_id = thread_id
        self.tries = 0
        self.took = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(TTL / 10):
            self.tries += 1
            if self.saver.acquire_lease(self.thread_id, "rival", 30):
                self.took = True
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(WAIT)


def test_a_node_blocking_the_loop_for_three_lease_lengths_keeps_the_lease(
    saver: BaseCheckpointSaver,
) -> None:
    """The run's node blocks the event loop (a sync call in an ``async def``) for three lease
    lengths; the keeper renews from its own thread, no rival takes the thread, and the run's
    fenced writes after the block are not refused."""

    async def block(state: Any) -> dict[str, Any]:
        time.sleep(3 * TTL)  # blocks the loop: what the test is about, not an ordering
        return {"log": ["blocked"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("block", block).add_node("after", lambda s: {"log": ["after"]})
    graph.add_edge(START, "block").add_edge("block", "after").add_edge("after", END)
    app = graph.compile(saver=saver)
    config = RunnableConfig(thread_id="t", lease="worker-1/run-1/1")

    async def main() -> tuple[dict[str, Any], LeaseKeeper, Rival]:
        try:
            async with LeaseKeeper(saver, "t", "worker-1/run-1/1", TTL) as keeper:
                rival = Rival(saver, "t")
                try:
                    result = await app.ainvoke({"log": ["go"]}, config)
                finally:
                    rival.stop()
                assert keeper.held and not keeper.lost.is_set()
            return result, keeper, rival
        finally:
            if isinstance(saver, RedisSaver):
                await saver.aclose()

    result, keeper, rival = asyncio.run(main())
    assert result["log"] == ["go", "blocked", "after"]
    assert rival.tries > 0 and not rival.took
    assert keeper.renewals >= 3
    assert saver.lease_holder("t") is None  # released on exit
    assert saver.get("t").values["log"] == ["go", "blocked", "after"]


def test_without_the_keeper_the_same_run_loses_the_thread() -> None:
    """The same run holding a lease nobody renews: a rival takes the thread while the node
    blocks, and the run's next write is refused (what the keeper prevents)."""
    from checkpoint import LeaseLostError

    saver = MemorySaver()
    taken = threading.Event()

    async def block(state: Any) -> dict[str, Any]:
        assert taken.wait(WAIT)  # blocks the loop until the rival has the thread
        return {"log": ["blocked"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("block", block).add_edge(START, "block").add_edge("block", END)
    app = graph.compile(saver=saver)
    assert saver.acquire_lease("t", "worker-1", TTL)

    def rival() -> None:
        while not saver.acquire_lease("t", "rival", 30):
            time.sleep(TTL / 10)
        taken.set()

    threading.Thread(target=rival, daemon=True).start()
    with pytest.raises(LeaseLostError):
        asyncio.run(app.ainvoke({"log": ["go"]}, RunnableConfig(thread_id="t", lease="worker-1")))
    assert saver.get("t").values["log"] == ["go"]


def test_a_sync_keeper_releases_and_a_busy_thread_is_refused(saver: BaseCheckpointSaver) -> None:
    with LeaseKeeper(saver, "t", "first", 30) as keeper:
        assert saver.lease_holder("t") == "first" and keeper.held
        with pytest.raises(LeaseBusyError) as busy:
            LeaseKeeper(saver, "t", "second", 30).__enter__()
        assert busy.value.holder == "first" and "another worker runs it" in str(busy.value)
    assert not keeper.held and saver.lease_holder("t") is None
    keeper.release()  # twice: nothing more happens
    if isinstance(saver, RedisSaver):
        saver.close()


def test_a_lost_lease_is_reported(saver: BaseCheckpointSaver) -> None:
    """Another worker took the thread (the lease was dropped behind the keeper's back): the
    next renewal reports the loss through the event, the callback and ``wait_lost``."""
    called: list[LeaseKeeper] = []

    async def main() -> LeaseKeeper:
        try:
            async with LeaseKeeper(saver, "t", "first", TTL, on_lost=called.append) as keeper:
                saver.release_lease("t", "first")  # as if it had expired during a pause
                assert saver.acquire_lease("t", "second", 30)
                await asyncio.wait_for(keeper.wait_lost(), WAIT)
                assert not keeper.held
            return keeper
        finally:
            if isinstance(saver, RedisSaver):
                await saver.aclose()

    keeper = asyncio.run(main())
    assert keeper.lost.is_set() and called == [keeper]
    assert saver.lease_holder("t") == "second"  # leaving did not release another's lease


def test_renewals_that_fail_until_the_lease_expires_are_a_loss() -> None:
    class Unreachable(MemorySaver):
        def renew_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
            raise ConnectionError("the saver's server is down")

    saver = Unreachable()
    with LeaseKeeper(saver, "t", "first", TTL) as keeper:
        assert keeper.lost.wait(WAIT)
    assert keeper.renewals == 0


def test_a_keeper_needs_a_saver_with_leases_and_a_positive_ttl() -> None:
    class NoLeases(MemorySaver):
        acquire_lease = BaseCheckpointSaver.acquire_lease  # type: ignore[assignment]

    with pytest.raises(TypeError, match="NoLeases does not"):
        LeaseKeeper(NoLeases(), "t", "tok")
    with pytest.raises(ValueError, match="positive number of seconds"):
        LeaseKeeper(MemorySaver(), "t", "tok", 0)

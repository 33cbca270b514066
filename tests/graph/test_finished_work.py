"""Finished work is never done twice: a task that finished is not run again, whatever stopped
its step (a sibling's failure, a cancel, an async run whose sync sibling was still running in
a worker thread, or a killed process)."""

from __future__ import annotations

import asyncio
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checkpoint import BaseCheckpointSaver, RedisSaver, SqliteSaver
from graph_agent import END, START, KeyStrategy, OverAllState, Send, StateGraph

from .._kill import kill_when


def payment_graph(
    saver: BaseCheckpointSaver, paid: list[str], fail: list[bool], fan_out: str
) -> Any:
    """``pay`` (a slow sync node) and ``check`` (an async node that fails while ``fail[0]``)
    run in one step: as two nodes after START, or as two ``Send``s."""

    check_failed = threading.Event()

    def pay(state: OverAllState) -> dict[str, Any]:
        assert check_failed.wait(10)  # still running in its worker thread when ``check`` fails
        paid.append("paid")
        return {"log": ["paid"]}

    async def check(state: OverAllState) -> dict[str, Any]:
        if fail[0]:
            check_failed.set()
            raise RuntimeError("card check is down")
        return {"log": ["checked"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("pay", pay)
    graph.add_node("check", check)
    if fan_out == "edges":
        graph.add_edge(START, "pay")
        graph.add_edge(START, "check")
    else:
        graph.add_node("start", lambda s: None)
        graph.add_edge(START, "start")
        graph.add_conditional_edges(
            "start", lambda s: [Send("pay", {}), Send("check", {})], ["pay", "check"]
        )
    graph.add_edge("pay", END)
    graph.add_edge("check", END)
    return graph.compile(saver=saver)


@pytest.mark.parametrize("fan_out", ["edges", "sends"])
def test_an_async_run_keeps_a_sync_task_that_finishes_after_its_sibling_failed(
    durable: BaseCheckpointSaver, fan_out: str
) -> None:
    paid: list[str] = []
    fail = [True]
    app = payment_graph(durable, paid, fail, fan_out)
    config = {"thread_id": f"pay-{fan_out}"}

    async def scenario() -> dict[str, Any]:
        with pytest.raises(RuntimeError, match="card check is down"):
            await app.ainvoke({"log": []}, config)
        assert paid == ["paid"]  # the run waited for the thread, and kept what it returned
        fail[0] = False
        return dict(await app.ainvoke(None, config))

    values = asyncio.run(scenario())
    assert paid == ["paid"]  # once: the retry ran only the failed task
    assert sorted(values["log"]) == ["checked", "paid"]


async def cancel_then_resume(
    app: Any,
    config: dict[str, Any],
    started: threading.Event,
    cancelled: threading.Event,
    kept: Callable[[], bool],
) -> dict[str, Any]:
    """Start a run, cancel it once ``started`` is set (then set ``cancelled``: a task that
    waits for it is still running when the cancel comes), check ``kept()`` (what finished
    before the cancel took effect), then resume the thread."""
    task = asyncio.ensure_future(app.ainvoke({"log": []}, config))
    while not started.is_set():
        await asyncio.sleep(0.005)
    task.cancel()
    cancelled.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert kept()
    return dict(await app.ainvoke(None, config))


def test_a_cancelled_async_run_keeps_a_sync_node_that_finished_in_its_thread(
    durable: BaseCheckpointSaver,
) -> None:
    paid: list[str] = []
    started, cancelled = threading.Event(), threading.Event()

    def pay(state: OverAllState) -> dict[str, Any]:
        started.set()
        assert cancelled.wait(10)
        paid.append("paid")
        return {"log": ["paid"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("pay", pay).add_node("after", lambda s: {"log": ["after"]})
    graph.add_edge(START, "pay").add_edge("pay", "after").add_edge("after", END)
    app = graph.compile(saver=durable)
    config = {"thread_id": "cancelled"}

    values = asyncio.run(
        cancel_then_resume(app, config, started, cancelled, lambda: paid == ["paid"])
    )
    assert paid == ["paid"]
    assert values["log"] == ["paid", "after"]


def test_a_cancelled_parallel_step_keeps_what_finished(durable: BaseCheckpointSaver) -> None:
    ran: list[str] = []
    started, cancelled = threading.Event(), threading.Event()

    def pay(state: OverAllState) -> dict[str, Any]:
        started.set()
        assert cancelled.wait(10)
        ran.append("pay")
        return {"log": ["paid"]}

    async def wait(state: OverAllState) -> dict[str, Any]:
        await asyncio.sleep(0 if ran else 30)
        ran.append("wait")
        return {"log": ["waited"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("pay", pay).add_node("wait", wait)
    graph.add_edge(START, "pay").add_edge(START, "wait")
    graph.add_edge("pay", END).add_edge("wait", END)
    app = graph.compile(saver=durable)
    config = {"thread_id": "cancelled-step"}

    values = asyncio.run(
        cancel_then_resume(app, config, started, cancelled, lambda: ran == ["pay"])
    )
    assert ran == ["pay", "wait"]  # pay once; wait ran again (it had not finished)
    assert sorted(values["log"]) == ["paid", "waited"]


# -- a killed process ------------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from graph_agent import END, START, KeyStrategy, StateGraph

    kind, where, marks = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    if kind == "sqlite":
        from checkpoint import SqliteSaver
        saver = SqliteSaver(where)
    else:
        from checkpoint import RedisSaver
        saver = RedisSaver.from_url(where)

    def fast(state):
        with marks.open("a") as f:
            f.write("fast\\n")
        return {"log": ["fast"]}

    def slow(state):
        with marks.open("a") as f:
            f.write("slow started\\n")
        time.sleep(60)  # killed before it ends
        return {"log": ["slow"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("fast", fast).add_node("slow", slow)
    graph.add_edge(START, "fast").add_edge(START, "slow")
    graph.add_edge("fast", END).add_edge("slow", END)
    app = graph.compile(saver=saver)
    if sys.argv[4] == "async":
        import asyncio
        asyncio.run(app.ainvoke({"log": []}, {"thread_id": "killed"}))
    else:
        app.invoke({"log": []}, {"thread_id": "killed"})
    """
)


def kill_after(marks: Path, wanted: str, args: list[str]) -> None:
    """Run the worker; SIGKILL it once ``marks`` holds every word of ``wanted``."""

    def there() -> bool:
        return marks.exists() and set(wanted.split()) <= set(marks.read_text().split())

    kill_when(WORKER, args, there, marks, stored_after="fast")


def resumed_graph(saver: BaseCheckpointSaver, marks: Path) -> Any:
    def fast(state: OverAllState) -> dict[str, Any]:
        with marks.open("a") as f:
            f.write("fast\n")
        return {"log": ["fast"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("fast", fast).add_node("slow", lambda s: {"log": ["slow"]})
    graph.add_edge(START, "fast").add_edge(START, "slow")
    graph.add_edge("fast", END).add_edge("slow", END)
    return graph.compile(saver=saver)


def check_resumed_once(saver: BaseCheckpointSaver, marks: Path) -> None:
    app = resumed_graph(saver, marks)
    config = {"thread_id": "killed"}
    snapshot = app.get_state(config)
    # what the killed step finished is a pending write of the checkpoint it started from
    # (the input's), never a checkpoint of its own
    assert snapshot.metadata["source"] == "input"
    assert [s.checkpoint_id for s in app.get_state_history(config)] == [snapshot.checkpoint_id]
    stored = saver.get("killed")
    assert stored is not None
    finished = [w[0] for k, w in stored.pending_writes.items() if not k.startswith("__")]
    assert finished == ["fast"]
    assert snapshot.next == ("fast", "slow")
    values = app.invoke(None, config)
    assert sorted(values["log"]) == ["fast", "slow"]
    assert marks.read_text().split("\n").count("fast") == 1  # not run again


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_killed_process_does_not_lose_a_finished_task_sqlite(tmp_path: Path, mode: str) -> None:
    path, marks = tmp_path / "threads.db", tmp_path / "marks.txt"
    kill_after(marks, "fast slow", ["sqlite", str(path), str(marks), mode])
    with SqliteSaver(path) as saver:
        check_resumed_once(saver, marks)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_killed_process_does_not_lose_a_finished_task_redis(
    tmp_path: Path, redis_url: str, mode: str
) -> None:
    marks = tmp_path / "marks.txt"
    with RedisSaver.from_url(redis_url) as saver:
        saver.delete_thread("killed")
        kill_after(marks, "fast slow", ["redis", redis_url, str(marks), mode])
        check_resumed_once(saver, marks)


class CountingSqliteSaver(SqliteSaver):
    """A ``SqliteSaver`` that counts its ``put_writes`` calls."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writes = 0

    def put_writes(self, checkpoint: Any, *, check_head: bool = True) -> None:
        self.writes += 1
        super().put_writes(checkpoint, check_head=check_head)


def test_one_task_steps_write_no_pending_writes(tmp_path: Path) -> None:
    """Pending writes are stored only when a task finishes while others of its step run."""
    with CountingSqliteSaver(tmp_path / "t.db") as saver:
        graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
        graph.add_node("a", lambda s: {"log": ["a"]}).add_node("b", lambda s: {"log": ["b"]})
        graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
        app = graph.compile(saver=saver)
        app.invoke({"log": []}, {"thread_id": "t"})
        assert saver.writes == 0
        sources = [s.metadata["source"] for s in app.get_state_history({"thread_id": "t"})]
        assert sources == ["loop", "loop", "input"]

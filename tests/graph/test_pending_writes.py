"""What a parallel step finishes while the rest of it runs is kept as pending writes of the
checkpoint the step started from, never as a checkpoint of its own: one checkpoint per step
in every history, the same in sync and async runs and on every saver, and ``max_retained``
counts steps (docs/graph.md, "Finished work is never done twice")."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from checkpoint import BaseCheckpointSaver, Checkpoint, RedisSaver, SqliteSaver
from graph_agent import (
    END,
    START,
    Command,
    CompiledGraph,
    KeyStrategy,
    OverAllState,
    StateGraph,
    interrupt,
)


class Watched:
    """Wraps a saver's ``put_writes``: ``written`` is set once pending writes are stored."""

    def __init__(self, saver: BaseCheckpointSaver) -> None:
        self.saver = saver
        self.written = threading.Event()
        self.calls = 0
        real, areal = saver.put_writes, saver.aput_writes

        def put_writes(checkpoint: Checkpoint, *, check_head: bool = True) -> None:
            real(checkpoint, check_head=check_head)
            self.calls += 1
            self.written.set()

        async def aput_writes(checkpoint: Checkpoint, *, check_head: bool = True) -> None:
            before = self.calls
            await areal(checkpoint, check_head=check_head)
            if self.calls == before:  # not counted by put_writes (a saver's default twin)
                self.calls += 1
            self.written.set()

        saver.put_writes = put_writes  # type: ignore[method-assign]
        saver.aput_writes = aput_writes  # type: ignore[method-assign]


@pytest.fixture(params=["sqlite", "redis-fake", "redis-real"])
def durable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Watched]:
    if request.param == "sqlite":
        saver: BaseCheckpointSaver = SqliteSaver(tmp_path / "t.sqlite")
        yield Watched(saver)
        saver.close()  # type: ignore[attr-defined]
    elif request.param == "redis-fake":
        client = fakeredis.FakeRedis()
        yield Watched(RedisSaver(client))
        client.close()
    else:
        url = request.getfixturevalue("redis_url")
        redis_saver = RedisSaver.from_url(url, key_prefix=f"pw-{id(request)}")
        redis_saver.delete_thread("t")
        yield Watched(redis_saver)
        redis_saver.close()


def fan_graph(watched: Watched, steps: int = 1) -> CompiledGraph:
    """``steps`` parallel steps of a ``quick`` and a ``slow`` node; ``slow`` ends only once
    ``quick``'s result was stored as a pending write (so every run stores one)."""

    def quick(state: OverAllState) -> dict[str, Any]:
        return {"log": ["quick"]}

    def slow(state: OverAllState) -> dict[str, Any]:
        assert watched.written.wait(10), "quick's result was never stored"
        watched.written.clear()
        return {"log": ["slow"]}

    async def aslow(state: OverAllState) -> dict[str, Any]:
        while not watched.written.is_set():
            await asyncio.sleep(0.001)
        watched.written.clear()
        return {"log": ["slow"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    previous = START
    for i in range(steps):
        graph.add_node(f"quick{i}", quick).add_node(f"slow{i}", slow, aslow)
        graph.add_node(f"join{i}", lambda s: None)
        graph.add_edge(previous, f"quick{i}").add_edge(previous, f"slow{i}")
        graph.add_edge(f"quick{i}", f"join{i}").add_edge(f"slow{i}", f"join{i}")
        previous = f"join{i}"
    graph.add_edge(previous, END)
    return graph.compile(saver=watched.saver)


def shape(app: CompiledGraph) -> list[tuple[int, str, list[str]]]:
    return [
        (s.step, s.metadata["source"], list(s.next))
        for s in app.get_state_history({"thread_id": "t"})
    ]


def test_one_checkpoint_per_step_in_sync_and_async_runs(durable: Watched) -> None:
    app = fan_graph(durable, steps=2)
    app.invoke({"log": []}, {"thread_id": "t"})
    sync_shape = shape(app)
    assert durable.calls == 2  # each parallel step stored its quick task's result
    durable.saver.delete_thread("t")

    async def run() -> None:
        await app.ainvoke({"log": []}, {"thread_id": "t"})
        if isinstance(durable.saver, RedisSaver):
            await durable.saver.aclose()

    asyncio.run(run())
    assert durable.calls == 4
    assert shape(app) == sync_shape
    assert sync_shape == [
        (4, "loop", []),
        (3, "loop", ["join1"]),
        (2, "loop", ["quick1", "slow1"]),
        (1, "loop", ["join0"]),
        (0, "input", ["quick0", "slow0"]),
    ]
    last = app.get_state({"thread_id": "t"})
    assert sorted(last.values["log"]) == ["quick", "quick", "slow", "slow"]


def test_max_retained_counts_steps(tmp_path: Path) -> None:
    saver = SqliteSaver(tmp_path / "t.sqlite", max_retained=3)
    with saver:
        watched = Watched(saver)
        app = fan_graph(watched, steps=2)
        app.invoke({"log": []}, {"thread_id": "t"})
        assert watched.calls == 2
        assert [step for step, _, _ in shape(app)] == [4, 3, 2]


class Stop(BaseException):
    """Stands for the process dying mid-step: not an ``Exception``, so nothing of the step
    is stored by the engine on its way out (as with a SIGKILL)."""


def test_a_resumed_step_killed_midway_keeps_its_answers_and_finished_work(
    durable: Watched,
) -> None:
    """A step paused by two questions is answered and runs again; one task finishes (its
    result and the answers are stored as pending writes) and the process dies. The next
    run neither asks again nor runs the finished task again."""
    ran: list[str] = []

    def ask_a(state: OverAllState) -> dict[str, Any]:
        answer = interrupt("a?")
        ran.append(f"a:{answer}")
        return {"log": [f"a={answer}"]}

    def ask_b(state: OverAllState) -> dict[str, Any]:
        answer = interrupt("b?")
        if len(ran) == 1 and not watched_done:
            assert durable.written.wait(10)
            watched_done.append(True)
            raise Stop
        ran.append(f"b:{answer}")
        return {"log": [f"b={answer}"]}

    watched_done: list[bool] = []
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("a", ask_a).add_node("b", ask_b)
    graph.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    app = graph.compile(saver=durable.saver)
    config = {"thread_id": "t"}
    app.invoke({"log": []}, config)
    paused = app.get_state(config)
    answers = {i.id: i.value.upper() for i in paused.interrupts}
    with pytest.raises(Stop):
        app.invoke(Command(resume=answers), config)
    assert ran == ["a:A?"]
    left = app.get_state(config)
    assert left.checkpoint_id == paused.checkpoint_id  # no checkpoint was added
    assert left.interrupts == ()  # both were answered: nothing waits for a person
    values = app.invoke(None, config)
    assert ran == ["a:A?", "b:B?"]  # a ran once; b got its stored answer
    assert sorted(values["log"]) == ["a=A?", "b=B?"]

"""The run queue on docket (graph_agent/runs/queue.py): each queued run id reaches one
handler once; a worker killed mid-run hands its run to another after the redelivery timeout;
a healthy worker keeps a long run (its loop blocked or not, draining or not); a stop drains.
On a real redis-server (and a 3-node Cluster), and on docket's in-process ``memory://``."""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._needs import need_module
from tests.redis_servers import free_port

need_module("docket", "pip install 'graph-agent[queue]'")

from graph_agent.runs.queue import QueueUnavailableError, RunQueue, work  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds before a wait fails the test
LEASE = 1.0  # the redelivery timeout of the tests that reach it


@pytest.fixture(params=["redis", "memory"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    return str(request.getfixturevalue("redis_url"))


@pytest.fixture
def name() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"  # a queue of the test's own


def in_a_loop(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """The test, run in an event loop of its own (``asyncio.run``)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


async def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


class Workers:
    """``work()`` tasks on one queue, each with its own stop, recording who handled what."""

    def __init__(self, url: str, name: str) -> None:
        self.url, self.name = url, name
        self.handled: list[tuple[int, str]] = []  # (worker, run id), when a handler returns
        self.started: list[tuple[int, str]] = []
        self.stops: list[asyncio.Event] = []
        self.tasks: list[asyncio.Task[None]] = []

    def start(
        self,
        body: Callable[[int, str], Awaitable[None]] | None = None,
        *,
        concurrency: int = 4,
        lease: float = 30.0,
    ) -> int:
        me = len(self.tasks)
        stop = asyncio.Event()

        async def handler(run_id: str) -> None:
            self.started.append((me, run_id))
            if body is not None:
                await body(me, run_id)
            self.handled.append((me, run_id))

        self.stops.append(stop)
        self.tasks.append(
            asyncio.create_task(
                work(
                    self.url,
                    self.name,
                    handler,
                    concurrency=concurrency,
                    stop=stop,
                    redelivery_timeout=lease,
                )
            )
        )
        return me

    def runs(self) -> list[str]:
        return [run for _, run in self.handled]

    async def stop(self) -> None:
        for stop in self.stops:
            stop.set()
        await asyncio.wait_for(asyncio.gather(*self.tasks), WAIT)


@in_a_loop
async def test_a_queued_run_reaches_one_handler_once_with_its_id(url: str, name: str) -> None:
    async with RunQueue(url, name) as queue:
        await queue.enqueue("run-1")
        await queue.enqueue("run-1")  # queued already: not twice
        await queue.enqueue("run-2")
        workers = Workers(url, name)
        workers.start(concurrency=1)  # in queue order: a second run-1 would come before run-2
        await until(lambda: "run-2" in workers.runs(), "run-2")
        await workers.stop()
    assert workers.runs() == ["run-1", "run-2"]


@in_a_loop
async def test_a_run_queued_while_it_runs_is_not_run_again(url: str, name: str) -> None:
    release = asyncio.Event()

    async def body(_: int, run_id: str) -> None:
        if run_id == "run-1":
            await release.wait()

    async with RunQueue(url, name) as queue:
        workers = Workers(url, name)
        workers.start(body, concurrency=2)
        await queue.enqueue("run-1")
        await until(lambda: (0, "run-1") in workers.started, "run-1 to start")
        await queue.enqueue("run-1")  # running: not queued again
        await queue.enqueue("run-2")  # a free slot takes the next message: run-2
        await until(lambda: "run-2" in workers.runs(), "run-2")
        release.set()
        await until(lambda: "run-1" in workers.runs(), "run-1")
        await workers.stop()
    assert sorted(workers.runs()) == ["run-1", "run-2"]


@in_a_loop
async def test_a_run_queued_again_by_its_own_handler_runs_again(url: str, name: str) -> None:
    async with RunQueue(url, name) as queue:

        async def body(_: int, run_id: str) -> None:
            if len(workers.started) == 1:  # the run stops here and goes back to the queue
                await queue.enqueue(run_id)

        workers = Workers(url, name)
        workers.start(body)
        await queue.enqueue("run-1")
        await until(lambda: len(workers.handled) == 2, "run-1 twice")
        await workers.stop()
    assert workers.runs() == ["run-1", "run-1"]


@in_a_loop
async def test_two_workers_handle_each_of_20_runs_exactly_once(url: str, name: str) -> None:
    runs = [f"run-{n}" for n in range(20)]

    async def body(_: int, run_id: str) -> None:
        await asyncio.sleep(0)

    async with RunQueue(url, name) as queue:
        workers = Workers(url, name)
        workers.start(body, concurrency=3)
        workers.start(body, concurrency=3)
        for run in runs:
            await queue.enqueue(run)
        await until(lambda: len(set(workers.runs())) == 20, "the 20 runs")
        await workers.stop()
    assert Counter(workers.runs()) == Counter(runs)


@in_a_loop
async def test_stop_waits_for_the_running_handlers_and_leaves_the_queue_to_others(
    url: str, name: str
) -> None:
    release = asyncio.Event()

    async def body(_: int, run_id: str) -> None:
        await release.wait()

    async with RunQueue(url, name) as queue:
        workers = Workers(url, name)
        workers.start(body)
        await queue.enqueue("run-1")
        await until(lambda: workers.started == [(0, "run-1")], "run-1 to start")
        workers.stops[0].set()
        done, _ = await asyncio.wait({workers.tasks[0]}, timeout=0.5)
        assert not done, "work() returned while its handler was running"
        release.set()
        await asyncio.wait_for(workers.tasks[0], WAIT)
        assert workers.runs() == ["run-1"]

        await queue.enqueue("run-2")  # no worker: it waits in the queue for the next one
        later = Workers(url, name)
        later.start()
        await until(lambda: later.runs() == ["run-2"], "run-2 on the next worker")
        await later.stop()


@in_a_loop
async def test_an_unreachable_redis_is_named_with_its_password_masked(name: str) -> None:
    url = f"redis://:sekret-pw@127.0.0.1:{free_port()}/0"

    async def handler(run_id: str) -> None:
        raise AssertionError("no run")

    for attempt in (
        lambda: RunQueue(url, name).__aenter__(),
        lambda: work(url, name, handler, concurrency=1, redelivery_timeout=LEASE),
    ):
        with pytest.raises(QueueUnavailableError) as caught:
            await attempt()
        said = str(caught.value)
        assert f"redis://:***@127.0.0.1:{url.rsplit(':', 1)[1]}" in said, said
        assert "cannot be reached" in said and "sekret" not in said, said


def test_a_url_that_is_not_redis_says_which_urls_are() -> None:
    with pytest.raises(QueueUnavailableError, match="redis://HOST:PORT/DB"):
        RunQueue("localhost:6379")
    with pytest.raises(QueueUnavailableError, match="'http'"):
        RunQueue("http://:pw@localhost:6379")


# Processes: a worker killed, a worker whose loop is blocked.

WORKER = """
import asyncio, sys, time
from pathlib import Path
from graph_agent.runs.queue import work

url, name, folder, mode, lease = sys.argv[1:6]
folder = Path(folder)
stop = asyncio.Event()

async def handler(run_id):
    with open(folder / "started", "a") as marks:
        print(run_id, file=marks)
    if mode == "hang":
        await asyncio.Event().wait()
    stop.set()  # this worker runs one run: it drains it, then the process ends
    time.sleep(3 * float(lease))  # blocks the event loop: docket's own renewal stops

async def main():
    await work(url, name, handler, concurrency=1, stop=stop, redelivery_timeout=float(lease))

asyncio.run(main())
"""

Start = Callable[[str, str, str], "subprocess.Popen[bytes]"]


@pytest.fixture
def worker_process(tmp_path: Path) -> Iterator[Start]:
    """Starts a worker process on (url, queue name, mode): its handler writes the run id
    to ``tmp_path / "started"``, then hangs ("hang") or blocks its loop for 3 redelivery
    timeouts and ends its process ("block")."""
    started: list[subprocess.Popen[bytes]] = []

    def start(url: str, name: str, mode: str) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-c", WORKER, url, name, str(tmp_path), mode, str(LEASE)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def marks(tmp_path: Path) -> list[str]:
    path = tmp_path / "started"
    return path.read_text().split() if path.exists() else []


@in_a_loop
async def test_a_killed_worker_s_run_goes_to_another_after_the_redelivery_timeout(
    redis_url: str, name: str, tmp_path: Path, worker_process: Start
) -> None:
    process = worker_process(redis_url, name, "hang")
    async with RunQueue(redis_url, name) as queue:
        await queue.enqueue("run-1")
        await until(lambda: marks(tmp_path) == ["run-1"], "the process to start run-1")
        process.kill()
        killed = time.monotonic()
        workers = Workers(redis_url, name)
        workers.start(lease=LEASE)
        await until(lambda: workers.runs() == ["run-1"], "run-1 on the other worker")
        waited = time.monotonic() - killed
        await workers.stop()
    # not before the timeout (less the renewal just before the kill), nor long after it
    assert LEASE * 0.5 < waited < LEASE * 3, waited


@in_a_loop
async def test_a_worker_whose_loop_is_blocked_past_the_timeout_keeps_its_run(
    redis_url: str, name: str, tmp_path: Path, worker_process: Start
) -> None:
    process = worker_process(redis_url, name, "block")
    async with RunQueue(redis_url, name) as queue:
        await queue.enqueue("run-1")
        await until(lambda: marks(tmp_path) == ["run-1"], "the process to start run-1")
        workers = Workers(redis_url, name)  # idle beside it: it would take a lapsed run
        workers.start(lease=LEASE)
        await until(lambda: process.poll() is not None, "the process to finish run-1 and end")
        await queue.enqueue("run-2")
        await until(lambda: "run-2" in workers.runs(), "run-2")
        await workers.stop()
    assert process.returncode == 0
    assert workers.started == [(0, "run-2")]


@pytest.fixture(params=["redis", "cluster"])
def server_url(request: pytest.FixtureRequest) -> str:
    """A real redis-server, or a 3-node Redis Cluster."""
    if request.param == "cluster":
        return f"redis+cluster://127.0.0.1:{request.getfixturevalue('cluster_ports')[0]}"
    return str(request.getfixturevalue("redis_url"))


@in_a_loop
async def test_a_run_three_timeouts_long_stays_with_its_worker_while_it_drains(
    server_url: str, name: str
) -> None:
    """docket stops renewing when its worker stops: only our renewal thread keeps the run."""

    async def body(me: int, run_id: str) -> None:
        if run_id == "run-1":
            workers.stops[me].set()  # its worker stops: it drains this run
            await asyncio.sleep(3 * LEASE)

    async with RunQueue(server_url, name) as queue:
        workers = Workers(server_url, name)
        workers.start(body, lease=LEASE)
        workers.start(body, lease=LEASE)
        await queue.enqueue("run-1")
        await until(lambda: "run-1" in workers.runs(), "run-1")
        [(first, _)] = workers.handled
        await queue.enqueue("run-2")  # its worker has stopped: the other one takes it
        await until(lambda: "run-2" in workers.runs(), "run-2")
        await workers.stop()
    assert workers.started == [(first, "run-1"), (1 - first, "run-2")]


@in_a_loop
async def test_a_long_run_on_a_healthy_worker_is_not_handed_to_another(
    redis_url: str, name: str
) -> None:
    async def body(_: int, run_id: str) -> None:
        await asyncio.sleep(3 * LEASE)

    async with RunQueue(redis_url, name) as queue:
        workers = Workers(redis_url, name)
        workers.start(body, lease=LEASE)
        workers.start(body, lease=LEASE)  # idle beside it: it would take a lapsed run
        await queue.enqueue("run-1")
        await until(lambda: "run-1" in workers.runs(), "run-1")
        await workers.stop()
    assert [run for _, run in workers.started] == ["run-1"]


# A Redis Cluster: docket's keys share one hash tag, named by a redis+cluster:// URL.


@in_a_loop
async def test_runs_on_a_redis_cluster_are_handled_once_each(
    cluster_ports: list[int], name: str
) -> None:
    url = f"redis+cluster://127.0.0.1:{cluster_ports[0]}"
    runs = [f"run-{n}" for n in range(5)]
    async with RunQueue(url, name) as queue:
        workers = Workers(url, name)
        workers.start(concurrency=2)
        workers.start(concurrency=2)
        for run in [*runs, "run-0"]:
            await queue.enqueue(run)
        await until(lambda: len(set(workers.runs())) == 5, "the 5 runs")
        await workers.stop()
    assert sorted(workers.runs()) == runs


@in_a_loop
async def test_a_plain_url_to_a_cluster_node_says_to_use_redis_cluster(
    cluster_ports: list[int], name: str
) -> None:
    with pytest.raises(QueueUnavailableError) as caught:
        await RunQueue(f"redis://127.0.0.1:{cluster_ports[0]}/0", name).__aenter__()
    assert f"use redis+cluster://127.0.0.1:{cluster_ports[0]}" in str(caught.value)

"""Several processes on one real Redis (the ``redis_url`` fixture): many threads at once, two
writers on one thread, and a process killed in the middle of a run.

The processes run ``tests/checkpoint/_redis_worker.py`` with ``sys.executable``; every test
has a key prefix of its own. Nothing here depends on timing: workers meet on files, every
wait is bounded, and every process is killed by pid when a test ends.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checkpoint import RedisSaver
from graph_agent import ToolResponseMessage

from . import _redis_worker as worker

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120.0  # a generous bound on any one process (they take a few seconds)


class Workers:
    """Starts worker processes (output in files) and kills any still alive by pid at the end."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.started: list[subprocess.Popen[bytes]] = []
        self.outputs: dict[int, tuple[Path, Path]] = {}

    def start(self, mode: str, **args: Any) -> subprocess.Popen[bytes]:
        name = f"{mode}-{len(self.started)}"
        out, err = self.directory / f"{name}.out", self.directory / f"{name}.err"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.checkpoint._redis_worker", mode, json.dumps(args)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
            )
        self.started.append(process)
        self.outputs[process.pid] = (out, err)
        return process

    def stderr(self, process: subprocess.Popen[bytes]) -> str:
        return self.outputs[process.pid][1].read_text(errors="replace")[-4000:]

    def report(self, process: subprocess.Popen[bytes]) -> dict[str, Any]:
        """Wait for the process to finish and return its JSON report."""
        try:
            code = process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            pytest.fail(f"worker {process.args[3]} took over {TIMEOUT}s:\n{self.stderr(process)}")
        assert code == 0, f"worker {process.args[3]} exited with {code}:\n{self.stderr(process)}"
        lines = self.outputs[process.pid][0].read_text().strip().splitlines()
        return json.loads(lines[-1])

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(tmp_path)
    try:
        yield pool
    finally:
        pool.stop_all()


@pytest.fixture
def prefix() -> str:
    return f"proc-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def saver(redis_url: str, prefix: str) -> Iterator[RedisSaver]:
    saver = RedisSaver.from_url(redis_url, key_prefix=prefix)
    try:
        yield saver
    finally:
        saver.client.close()


def _wait_for(paths: list[Path], workers: Workers, timeout: float = TIMEOUT) -> None:
    """Wait until every path exists; fail early if a worker died meanwhile."""
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        for process in workers.started:
            if process.poll() is not None and process.returncode != 0:
                pytest.fail(f"worker exited with {process.returncode}:\n{workers.stderr(process)}")
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout}s for {[p.name for p in paths if not p.exists()]}")
        time.sleep(0.01)


def _rendered(messages: Any) -> list[tuple[str, str]]:
    return [
        (
            m.message_type,
            m.responses[0].response_data if isinstance(m, ToolResponseMessage) else m.text,
        )
        for m in messages
    ]


# -- four processes, fifty threads each ------------------------------------------------------------


def test_four_processes_fifty_threads_each_keep_every_message(
    workers, redis_url, prefix, saver, tmp_path
):
    processes, threads, turns = 4, 50, 2
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{w}" for w in range(processes)]
    started = [
        workers.start(
            "threads",
            url=redis_url,
            prefix=prefix,
            worker=w,
            threads=threads,
            turns=turns,
            ready=str(ready[w]),
            go=str(go),
        )
        for w in range(processes)
    ]
    _wait_for(ready, workers)  # all four are up: they start together
    go.touch()
    reports = [workers.report(p) for p in started]
    assert [r["runs"] for r in reports] == [threads * turns] * processes

    app = worker.agent(saver)
    for w in range(processes):
        for thread in worker.thread_ids(w, threads):
            state = app.get_state({"thread_id": thread})
            assert state is not None and state.next == (), thread
            expected = [
                m
                for turn in range(turns)
                for m in worker.expected_turn(worker.user_text(thread, turn))
            ]
            # exactly its own messages, in order: nothing lost, doubled or from another thread
            assert _rendered(state.values["messages"]) == expected, thread
            # one unbroken line of checkpoints (model, tools, model per turn)
            history = list(app.get_state_history({"thread_id": thread}))
            assert len(history) == 4 * turns, thread  # per turn: input, model, tools, model
            assert all(a.parent_id == b.checkpoint_id for a, b in itertools.pairwise(history))
            assert history[-1].parent_id is None
    # and no thread beyond those
    heads = set(saver.client.scan_iter(match=f"{prefix}:*:head", count=1000))
    assert len(heads) == processes * threads


# -- two processes on one thread -------------------------------------------------------------------


def test_two_writers_on_one_thread_conflict_and_lose_nothing(
    workers, redis_url, prefix, saver, tmp_path
):
    steps = 15
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    common = {"url": redis_url, "prefix": prefix, "thread": "shared", "steps": steps}
    started = [
        workers.start("contend", worker="A", other="B", barrier=str(barrier), **common),
        workers.start("contend", worker="B", other="A", barrier=str(barrier), **common),
    ]
    reports = [workers.report(p) for p in started]
    successes = [s for r in reports for s in r["successes"]]
    conflicts = sum(r["conflicts"] for r in reports)
    assert len(successes) == 2 * steps  # each worker got all its steps in, retrying
    assert conflicts >= 1, reports  # the barrier made them write from the same head
    # every refused attempt was retried: attempts = successes + conflicts, per worker
    assert all(len(r["outcomes"]) == len(r["successes"]) + r["conflicts"] for r in reports)
    # both workers met before every attempt both made, so both wrote from the same head:
    # exactly one of them got in and the other got CheckpointConflictError, every round
    a, b = (r["outcomes"] for r in reports)
    contested = list(zip(a, b))
    assert contested and all(sorted(pair) == ["conflict", "ok"] for pair in contested), reports

    state = worker.counter_graph(saver).get_state({"thread_id": "shared"})
    assert state is not None
    messages = list(state.values["messages"])
    # exactly the successful steps' messages: none lost, none doubled, none of a refused write
    assert sorted(messages) == sorted(successes) and len(messages) == len(set(messages))
    for name in "AB":  # each writer's steps in its order
        assert [m for m in messages if m.startswith(name)] == [f"{name}-{i}" for i in range(steps)]
    assert state.values["n"] == 2 * steps  # no read-modify-write was lost
    # two checkpoints per successful run (its input, its step), in one line: no silent fork
    history = list(worker.counter_graph(saver).get_state_history({"thread_id": "shared"}))
    assert len(history) == 4 * steps
    assert all(a.parent_id == b.checkpoint_id for a, b in itertools.pairwise(history))
    assert [h.values.get("n") for h in history] == [
        n for k in range(2 * steps, 0, -1) for n in (k, (k - 1) or None)
    ]


# -- a process killed in the middle of a run -------------------------------------------------------


def test_a_killed_process_leaves_the_last_complete_step_and_another_resumes(
    workers, redis_url, prefix, saver, tmp_path
):
    inside = tmp_path / "inside-c"
    args = {"url": redis_url, "prefix": prefix, "thread": "job"}
    crashing = workers.start("crash", inside=str(inside), **args)
    _wait_for([inside], workers)  # a and b are done and checkpointed; c is running
    os.kill(crashing.pid, signal.SIGKILL)
    assert crashing.wait(timeout=30) == -signal.SIGKILL

    app = worker.line_graph(saver)
    state = app.get_state({"thread_id": "job"})
    assert state is not None
    assert list(state.values["messages"]) == ["start", "a", "b"]
    assert state.values["done"] == 2 and state.next == ("c",)
    assert [h.next for h in app.get_state_history({"thread_id": "job"})] == [
        ("c",),
        ("b",),
        ("a",),  # the input, checkpointed first
    ]

    report = workers.report(workers.start("resume", **args))
    assert report["messages"] == ["start", "a", "b", "c", "d"] and report["done"] == 4
    assert report["pid"] != crashing.pid
    state = app.get_state({"thread_id": "job"})
    assert list(state.values["messages"]) == ["start", "a", "b", "c", "d"] and state.next == ()
    assert len(list(app.get_state_history({"thread_id": "job"}))) == 5


def test_a_process_killed_at_any_moment_leaves_a_whole_turn_and_another_continues(
    workers, redis_url, prefix, saver
):
    """SIGKILL at whatever point a busy writer is (possibly mid-command): the thread holds
    whole turns only, in one line, and a second process goes on from there."""
    args = {"url": redis_url, "prefix": prefix, "thread": "busy"}
    busy = workers.start("chat", turns=100_000, **args)  # far more than it gets to do
    deadline = time.monotonic() + TIMEOUT
    while True:  # until it has written some turns
        latest = saver.get("busy")
        if latest is not None and latest.step >= 20:
            break
        if busy.poll() is not None:
            pytest.fail(f"the busy worker exited with {busy.returncode}:\n{workers.stderr(busy)}")
        if time.monotonic() > deadline:
            pytest.fail("the busy worker wrote fewer than 20 turns")
        time.sleep(0.01)
    os.kill(busy.pid, signal.SIGKILL)
    assert busy.wait(timeout=30) == -signal.SIGKILL

    app = worker.chat_graph(saver)
    state = app.get_state({"thread_id": "busy"})
    if state.next:  # killed between a turn's input and its reply: the input is kept
        assert state.next == ("reply",) and state.metadata["source"] == "input"
        app.invoke(None, {"thread_id": "busy"})  # another process finishes the turn
        state = app.get_state({"thread_id": "busy"})
    turns = len(state.values["messages"]) // 2
    assert turns >= 11 and state.step == 2 * turns - 1 and state.next == ()
    assert list(state.values["messages"]) == [
        m for t in range(turns) for m in (f"u{t}", f"re: u{t}")
    ]
    history = list(app.get_state_history({"thread_id": "busy"}))
    assert len(history) == 2 * turns  # per turn: its input, its reply
    assert all(a.parent_id == b.checkpoint_id for a, b in itertools.pairwise(history))

    workers.report(workers.start("chat", turns=3, start=turns, **args))
    messages = list(app.get_state({"thread_id": "busy"}).values["messages"])
    assert messages == [m for t in range(turns + 3) for m in (f"u{t}", f"re: u{t}")]

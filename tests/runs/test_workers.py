"""Runs that outlive every process (``graph-agent serve --queue`` and ``graph-agent worker``
on a real redis-server): every accepted run ends once as the client sees it, however its
workers and servers stop; no thread ever has two runners; no message is lost or doubled;
no side effect happens twice; a worker paused past its lease cannot write."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests._needs import need_module
from tests.redis_servers import redis_server

from .worker_kit import Fleet, expected_messages, fleet, said, wait_for

need_module("docket", "the queue extra: pip install -e '.[queue]' (make test)")
need_module("uvicorn", "the server extra: pip install -e '.[server]' (make test)")


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:  # a server of its own: queues never mix
    with redis_server(tmp_path / "redis") as port:
        yield f"redis://127.0.0.1:{port}/0"


def start_runs(base: str, threads: list[str], notes: dict[str, list[str]]) -> list[tuple[str, str]]:
    runs: list[tuple[str, str]] = []
    with httpx.Client(base_url=base, timeout=60) as http:
        for thread in threads:
            assert http.post("/threads", json={"thread_id": thread}).status_code == 200
        for round_ in range(max(len(n) for n in notes.values())):
            for thread in threads:
                if round_ < len(notes[thread]):
                    body = {"assistant_id": "recorder", "input": said(notes[thread][round_])}
                    answer = http.post(f"/threads/{thread}/runs", json=body)
                    assert answer.status_code == 200, answer.text
                    runs.append((thread, answer.json()["run_id"]))
    return runs


def finished(base: str, runs: list[tuple[str, str]]) -> dict[str, str]:
    statuses: dict[str, str] = {}
    with httpx.Client(base_url=base, timeout=120) as http:
        for thread, run_id in runs:
            joined = http.get(f"/threads/{thread}/runs/{run_id}/join").json()
            status = http.get(f"/threads/{thread}/runs/{run_id}").json()["status"]
            statuses[run_id] = status if status == "success" else f"{status}: {joined}"
    return statuses


def texts(base: str, thread: str) -> list[str]:
    state = httpx.get(f"{base}/threads/{thread}/state", timeout=30).json()
    return [m["content"] for m in (state["values"] or {}).get("messages", [])]


def victim(f: Fleet, note: str) -> int:
    board = f.board()
    pid = wait_for(lambda: board.get(f"victim:{note}"), f"the worker that runs {note}")
    return int(pid)


def test_four_workers_two_hundred_runs_one_killed_one_paused(
    tmp_path: Path, redis_url: str
) -> None:
    count, per_thread = (int(n) for n in os.environ.get("WORKERS_TEST_SIZE", "40x5").split("x"))
    threads = [f"t{n}" for n in range(count)]
    notes = {t: [f"{t}:{k}" for k in range(per_thread)] for t in threads}
    notes["t7"][0] += ":kill"  # its worker is SIGKILLed inside that run's model call
    notes["t9"][-1] += ":stop"  # later, another is SIGSTOPped there past its lease, resumed
    # one run at a time per worker: a victim is stopped inside its victim run's model call,
    # with no other run's tool half done (a tool cut between its side effect and the record
    # of its result runs again when its run is taken up: only finished work is never redone)
    with fleet(redis_url, tmp_path) as f:
        base = f.serve()
        for _ in range(4):
            f.worker("--lease-seconds", "2", "--concurrency", "1")
        runs = start_runs(base, threads, notes)
        killed = victim(f, notes["t7"][0])
        os.kill(killed, signal.SIGKILL)
        paused = victim(f, notes["t9"][-1])
        assert paused != killed  # its run began after the kill
        os.kill(paused, signal.SIGSTOP)
        f.worker("--lease-seconds", "2", "--concurrency", "1")  # the killed one's stand-in
        statuses = finished(base, runs)
        os.kill(paused, signal.SIGCONT)
        board = f.board()
        contents = {t: texts(base, t) for t in threads}
        effects = board.lrange("effects", 0, -1)
        violations = board.lrange("violations", 0, -1)
        stopped = next(p for p in f.workers if p.pid == paused)
        wait_for(lambda: "lost the thread's lease" in f.worker_log(stopped), "the paused worker")
    assert list(statuses.values()) == ["success"] * len(runs)
    for thread in threads:
        assert contents[thread] == expected_messages(notes[thread]), thread
    everything = [note for thread in threads for note in notes[thread]]
    twice = sorted(n for n, c in Counter(effects).items() if c > 1)
    assert twice == []  # no side effect happened twice
    assert sorted(effects) == sorted(everything)  # and each happened
    assert violations == []


def test_a_run_whose_node_blocks_for_three_lease_lengths_runs_once(
    tmp_path: Path, redis_url: str
) -> None:
    with fleet(redis_url, tmp_path) as f:
        base = f.serve()
        for _ in range(2):
            f.worker("--lease-seconds", "1", BLOCK_SECONDS="3")
        runs = start_runs(base, ["slow"], {"slow": ["slow:block"]})
        statuses = finished(base, runs)
        effects = f.board().lrange("effects", 0, -1)
        violations = f.board().lrange("violations", 0, -1)
        contents = texts(base, "slow")
    assert list(statuses.values()) == ["success"]
    assert effects == ["slow:block"]
    assert violations == []
    assert contents == expected_messages(["slow:block"])


def test_a_run_accepted_by_a_server_killed_at_once_still_runs(
    tmp_path: Path, redis_url: str
) -> None:
    with fleet(redis_url, tmp_path) as f:
        first, second = f.serve(), f.serve()
        runs = start_runs(first, ["k"], {"k": ["k:1"]})
        os.kill(f.servers[0][0].pid, signal.SIGKILL)
        f.worker()
        statuses = finished(second, runs)
        contents = texts(second, "k")
    assert list(statuses.values()) == ["success"]
    assert contents == expected_messages(["k:1"])


def test_a_run_started_through_one_server_is_streamed_and_rejoined_through_another(
    tmp_path: Path, redis_url: str
) -> None:
    with fleet(redis_url, tmp_path) as f:
        first, second = f.serve(), f.serve()
        f.worker()
        with httpx.Client(base_url=first, timeout=60) as http:
            assert http.post("/threads", json={"thread_id": "s"}).status_code == 200
            body = {"assistant_id": "recorder", "input": said("s:1"), "stream_mode": ["values"]}
            with http.stream("POST", "/threads/s/runs/stream", json=body) as answer:
                lines = [line for line in answer.iter_lines() if line.startswith("id: ")]
        run_id = httpx.get(f"{second}/threads/s/runs").json()[0]["run_id"]
        with httpx.Client(base_url=second, timeout=60) as http:
            where = f"/threads/s/runs/{run_id}/stream"
            with http.stream("GET", where, headers={"Last-Event-ID": "2"}) as answer:
                later = [line for line in answer.iter_lines() if line.startswith("id: ")]
    ids = [line.removeprefix("id: ") for line in lines]
    assert ids == [str(n) for n in range(1, len(ids) + 1)] and len(ids) > 3
    assert [line.removeprefix("id: ") for line in later] == ids[2:]


def test_a_cancel_sent_to_any_server_stops_the_run_at_once(tmp_path: Path, redis_url: str) -> None:
    with fleet(redis_url, tmp_path) as f:
        first, second = f.serve(), f.serve()
        f.worker()
        runs = start_runs(first, ["c"], {"c": ["c:1:stop"]})
        victim(f, "c:1:stop")  # the run waits in its model call
        thread, run_id = runs[0]
        answer = httpx.post(f"{second}/threads/{thread}/runs/{run_id}/cancel?wait=1", timeout=30)
        status = httpx.get(f"{first}/threads/{thread}/runs/{run_id}", timeout=30).json()["status"]
    assert answer.status_code == 200, answer.text
    assert status == "interrupted"


def test_on_a_redis_cluster_a_killed_worker_s_runs_are_finished_by_another(
    tmp_path: Path, cluster_url: str, redis_url: str
) -> None:
    """The same promises on a 3-node Redis Cluster (queue, records, streams, threads and
    leases spread over its slots), smaller: 2 workers, 12 runs on 4 threads, one killed."""
    url = cluster_url.replace("redis://", "redis+cluster://", 1)
    tag = uuid.uuid4().hex[:6]  # the cluster is the session's: threads of this test's own
    threads = [f"c{tag}-{n}" for n in range(4)]
    notes = {t: [f"{t}:{k}" for k in range(3)] for t in threads}
    notes[threads[0]][0] += ":kill"
    with fleet(url, tmp_path, board_url=redis_url) as f:
        base = f.serve()
        for _ in range(2):
            f.worker("--lease-seconds", "2", "--concurrency", "1")
        runs = start_runs(base, threads, notes)
        os.kill(victim(f, notes[threads[0]][0]), signal.SIGKILL)
        f.worker("--lease-seconds", "2", "--concurrency", "1")
        statuses = finished(base, runs)
        contents = {t: texts(base, t) for t in threads}
        effects = [e for e in f.board().lrange("effects", 0, -1) if e.startswith(f"c{tag}")]
    assert list(statuses.values()) == ["success"] * len(runs)
    for thread in threads:
        assert contents[thread] == expected_messages(notes[thread]), thread
    assert sorted(effects) == sorted(n for t in threads for n in notes[t])


def test_a_worker_stopped_with_sigterm_drains_its_run_to_another(
    tmp_path: Path, redis_url: str
) -> None:
    """SIGTERM: the worker takes no new run, its run stops at the end of the step it is in
    and goes back to the queue; another worker finishes it, each step once."""
    with fleet(redis_url, tmp_path) as f:
        base = f.serve()
        f.worker("--lease-seconds", "2")
        runs = start_runs(base, ["d"], {"d": ["d:1:hold"]})
        pid = victim(f, "d:1:hold")  # inside its first model call
        os.kill(pid, signal.SIGTERM)
        f.worker("--lease-seconds", "2")
        f.board().set("go:d:1:hold", "1")  # the step ends; the run goes back to the queue
        draining = next(p for p in f.workers if p.pid == pid)
        assert draining.wait(60) == 0  # it drained and ended by itself
        statuses = finished(base, runs)
        contents = texts(base, "d")
        effects = f.board().lrange("effects", 0, -1)
    assert list(statuses.values()) == ["success"]
    assert contents == expected_messages(["d:1:hold"])
    assert effects == ["d:1:hold"]


def test_a_run_whose_worker_dies_each_time_ends_as_an_error_after_max_attempts(
    tmp_path: Path, redis_url: str
) -> None:
    with fleet(redis_url, tmp_path) as f:
        base = f.serve()
        for _ in range(4):
            f.worker("--lease-seconds", "1", "--max-attempts", "3", "--concurrency", "1")
        runs = start_runs(base, ["x"], {"x": ["x:1:die"]})
        statuses = finished(base, runs)
        died = f.board().llen("died:x:1:die")
        thread, run_id = runs[0]
        events = httpx.get(f"{base}/threads/{thread}/runs/{run_id}/stream", timeout=30).text
    (status,) = statuses.values()
    assert status.startswith("error: ")
    assert "taken up 3 times and its worker stopped each time" in status
    assert died == 3
    assert "event: error" in events and "taken up 3 times" in events  # the client reads why


def test_a_run_past_the_workers_run_timeout_ends_as_timeout_saying_why(
    tmp_path: Path, redis_url: str
) -> None:
    with fleet(redis_url, tmp_path) as f:
        base = f.serve()
        f.worker("--run-timeout", "1")
        runs = start_runs(base, ["o"], {"o": ["o:1:stop"]})  # its model call never ends
        statuses = finished(base, runs)
        thread, run_id = runs[0]
        events = httpx.get(f"{base}/threads/{thread}/runs/{run_id}/stream", timeout=30).text
        contents = texts(base, thread)
    (status,) = statuses.values()
    assert status.startswith("timeout: ") and "TimeoutError" in status
    assert "event: error" in events and "longer than 1 s" in events  # the client reads why
    assert contents == ["o:1:stop"]  # the thread holds the input, nothing half-done


def test_three_hundred_clients_follow_runs_at_once_through_one_server(
    tmp_path: Path, redis_url: str
) -> None:
    """Each client that waits for a run holds one of the server's Redis connections while
    it waits (a blocking read of the run's stream): 300 at once are all answered (redis-py's
    default pool of 100 made the rest fail with 500)."""
    threads = [f"j{n}" for n in range(300)]
    with fleet(redis_url, tmp_path) as f:
        base = f.serve()
        f.worker("--concurrency", "32")
        f.worker("--concurrency", "32")
        runs = start_runs(base, threads, {t: [f"{t}:1"] for t in threads})

        async def join_all() -> list[int]:
            limits = httpx.Limits(max_connections=400)
            async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as http:
                answers = await asyncio.gather(
                    *(http.get(f"/threads/{t}/runs/{r}/join") for t, r in runs)
                )
            return [a.status_code for a in answers]

        codes = asyncio.run(join_all())
        statuses = finished(base, runs)
    assert codes == [200] * len(runs)
    assert list(statuses.values()) == ["success"] * len(runs)

"""Order without clocks: "latest", history order and retention follow the order in which
checkpoints were written (the checkpoint chain), never the time in their ids. Two writers
whose clocks disagree (two processes, one of them an hour behind) cannot lose a head.

The clocks are faked in ``checkpoint._savers.ids``: each "process" has its own clock and its own
guard that keeps its ids increasing, as separate processes do."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import fakeredis
import pytest

from checkpoint import BaseCheckpointSaver, MemorySaver, RedisSaver, SqliteSaver
from checkpoint._savers import ids as _ids
from graph_agent import RunnableConfig

from ._graphs import chat_graph

HOUR_NS = 3600 * 10**9


class Clocks:
    """Wall clocks for checkpoint ids: process "B" runs an hour behind process "A"."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1_700_000_000 * 10**9
        self.skew = {"A": 0, "B": -HOUR_NS}
        self.last = {"A": 0, "B": 0}  # each process's own "last id" guard
        self.current = "A"
        self.monkeypatch = monkeypatch
        monkeypatch.setattr(_ids, "time", SimpleNamespace(time_ns=self._time_ns))
        monkeypatch.setattr(_ids, "_last_ns", 0)

    def _time_ns(self) -> int:
        self.now += 1_000
        return self.now + self.skew[self.current]

    def use(self, process: str) -> None:
        """The next ids are made by ``process``."""
        self.last[self.current] = _ids._last_ns
        self.current = process
        self.monkeypatch.setattr(_ids, "_last_ns", self.last[process])


@pytest.fixture
def clocks(monkeypatch: pytest.MonkeyPatch) -> Clocks:
    return Clocks(monkeypatch)


KINDS = ["memory", "memory-copy", "sqlite", "redis-fake", "redis-real", "redis-cluster"]


def two_processes(
    kind: str, request: pytest.FixtureRequest, max_retained: int | None = None
) -> tuple[BaseCheckpointSaver, BaseCheckpointSaver]:
    """What processes A and B write with: one MemorySaver (a memory saver cannot be shared
    between processes, so this is one process whose clock was stepped back), two
    SqliteSavers on one file, or two RedisSavers with clients of their own on one server
    (fakeredis, the real server of the ``redis_url`` fixture, or the real cluster of
    ``cluster_url``)."""
    tmp_path: Path = request.getfixturevalue("tmp_path")
    if kind == "redis-fake":
        server = fakeredis.FakeServer()
        return (
            RedisSaver(fakeredis.FakeRedis(server=server), max_retained=max_retained),
            RedisSaver(fakeredis.FakeRedis(server=server), max_retained=max_retained),
        )
    if kind in ("redis-real", "redis-cluster"):
        cluster = kind == "redis-cluster"
        url = request.getfixturevalue("cluster_url" if cluster else "redis_url")
        prefix = f"skew-{uuid.uuid4().hex[:8]}"
        return (
            RedisSaver.from_url(url, cluster=cluster, key_prefix=prefix, max_retained=max_retained),
            RedisSaver.from_url(url, cluster=cluster, key_prefix=prefix, max_retained=max_retained),
        )
    if kind == "sqlite":
        path = tmp_path / "shared.sqlite"
        return SqliteSaver(path, max_retained=max_retained), SqliteSaver(
            path, max_retained=max_retained
        )
    saver = MemorySaver(max_retained=max_retained, copy=kind == "memory-copy")
    return saver, saver


@pytest.fixture
def savers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[BaseCheckpointSaver]]:
    opened: list[BaseCheckpointSaver] = []
    yield opened
    for saver in opened:
        if isinstance(saver, SqliteSaver):
            saver.close()
        elif isinstance(saver, RedisSaver):
            saver.close()
            if isinstance(saver.client, fakeredis.FakeRedis):
                saver.client.close()


def test_ids_of_a_lagging_process_sort_before_the_leaders(clocks: Clocks) -> None:
    """The premise: by id, B's newer checkpoints look an hour older than A's."""
    clocks.use("A")
    first = _ids.new_checkpoint_id()
    clocks.use("B")
    second = _ids.new_checkpoint_id()
    assert second < first


@pytest.mark.parametrize("kind", KINDS)
def test_retention_keeps_the_head_written_by_a_lagging_clock(
    kind: str, clocks: Clocks, request: pytest.FixtureRequest, savers: list[BaseCheckpointSaver]
) -> None:
    saver_a, saver_b = two_processes(kind, request, max_retained=3)
    savers += [saver_a, saver_b]
    apps = {"A": chat_graph(saver_a), "B": chat_graph(saver_b)}
    config = RunnableConfig(thread_id="t")
    expected: list[str] = []
    for turn, process in enumerate("AABBABBA"):
        clocks.use(process)
        apps[process].invoke({"messages": [f"turn {turn}"]}, config)
        expected += [f"turn {turn}", f"reply to turn {turn}"]
        for reader in (saver_a, saver_b):
            head = reader.get("t")
            assert head is not None, f"turn {turn} by {process}: the head was pruned"
            assert head.values["messages"] == expected and head.values["turns"] == turn + 1
            history = list(reader.list("t"))
            assert history[0].id == head.id  # newest first: the head, whatever its id's time
            assert [c.parent_id for c in history[:-1]] == [c.id for c in history[1:]]
            # an input and a reply per turn: the newest three steps are kept
            assert [c.step for c in history] == list(range(2 * turn + 1, -1, -1))[:3]


@pytest.mark.parametrize("kind", KINDS)
def test_history_and_before_follow_the_writes_not_the_clocks(
    kind: str, clocks: Clocks, request: pytest.FixtureRequest, savers: list[BaseCheckpointSaver]
) -> None:
    saver_a, saver_b = two_processes(kind, request)
    savers += [saver_a, saver_b]
    apps = {"A": chat_graph(saver_a), "B": chat_graph(saver_b)}
    config = RunnableConfig(thread_id="h")
    for turn, process in enumerate("ABAB"):
        clocks.use(process)
        apps[process].invoke({"messages": [f"turn {turn}"]}, config)
    history = list(apps["A"].get_state_history(config))
    turns = [4, 3, 3, 2, 2, 1, 1, None]  # each turn: its reply, then its input
    assert [s.values.get("turns") for s in history] == turns
    ids = [s.checkpoint_id for s in history]
    assert ids != sorted(ids, reverse=True)  # the ids alone would give another order
    for reader in (saver_a, saver_b):
        assert [c.id for c in reader.list("h")] == ids
        for i, checkpoint_id in enumerate(ids):
            assert [c.id for c in reader.list("h", before=checkpoint_id)] == ids[i + 1 :]
            assert [c.id for c in reader.list("h", before=checkpoint_id, limit=2)] == ids[
                i + 1 : i + 3
            ]
        assert list(reader.list("h", before="0" * 24)) == []  # an id the thread never had
    before = RunnableConfig(thread_id="h", checkpoint_id=ids[1])
    assert [s.checkpoint_id for s in apps["B"].get_state_history(before)] == ids[2:]

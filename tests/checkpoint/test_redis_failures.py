"""When Redis fails, the saver says so clearly: a ``CheckpointError`` subclass naming the
server (never its password), the thread and what to do; refused credentials are not retried;
a stalled server fails within the socket timeout; corrupt, truncated or evicted data is a
``CheckpointDataError`` naming the thread, never a raw ``KeyError``, a msgpack error, a
thread that silently looks empty, or a script that loops until Redis answers BUSY."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
import redis

from checkpoint import (
    Checkpoint,
    CheckpointAuthError,
    CheckpointDataError,
    CheckpointDelta,
    CheckpointTimeoutError,
    CheckpointUnavailableError,
    EvictionPolicyWarning,
    RedisSaver,
    RedisStore,
    created_at_of,
    new_checkpoint_id,
)
from checkpoint.redis._eviction import evicting_policy

from ..redis_servers import free_port, redis_server
from ._graphs import chat_graph

PASSWORD = "s3cret-Pa55"


@pytest.fixture(scope="module")
def secured_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A real redis-server that wants a password."""
    with redis_server(tmp_path_factory.mktemp("secured"), "--requirepass", PASSWORD) as port:
        yield port


def connections_received(port: int) -> int:
    """Connections the server has accepted, not counting the one that asks."""
    with redis.Redis(host="127.0.0.1", port=port, password=PASSWORD) as admin:
        return int(admin.info("stats")["total_connections_received"])


@pytest.mark.parametrize(
    "credentials", [":wrong-password@", "default:wrong-password@", ""], ids=["pw", "user", "none"]
)
def test_refused_credentials_are_an_auth_error_tried_once(
    secured_port: int, credentials: str
) -> None:
    sleeps: list[float] = []
    url = f"redis://{credentials}127.0.0.1:{secured_port}/0"
    before = connections_received(secured_port)
    with (
        RedisSaver.from_url(url, sleep=sleeps.append) as saver,
        pytest.raises(CheckpointAuthError) as caught,
    ):
        chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "auth-t"})
    error = caught.value
    assert isinstance(error, CheckpointUnavailableError) and isinstance(error, PermissionError)
    assert (error.where, error.thread_id) == (f"127.0.0.1:{secured_port}/0", "auth-t")
    text = str(error)
    assert text.startswith(f"Redis at 127.0.0.1:{secured_port}/0 refused the saver's credentials")
    assert "while reading thread 'auth-t'" in text and "requirepass" in text
    assert "wrong-password" not in text and "wrong-password" not in repr(saver)
    assert sleeps == []  # not retried by the saver ...
    # ... nor by the client: one connection for the saver, one for the second count
    assert connections_received(secured_port) - before == 2


def test_refused_credentials_async(secured_port: int) -> None:
    async def main() -> CheckpointAuthError:
        url = f"redis://:wrong-password@127.0.0.1:{secured_port}/0"
        async with RedisSaver.from_url(url) as saver:
            with pytest.raises(CheckpointAuthError) as caught:
                await saver.aget("auth-async")
        return caught.value

    error = asyncio.run(main())
    assert error.thread_id == "auth-async" and "wrong-password" not in str(error)


def test_the_right_password_works(secured_port: int) -> None:
    url = f"redis://:{PASSWORD}@127.0.0.1:{secured_port}/0"
    with RedisSaver.from_url(url, key_prefix=uuid.uuid4().hex) as saver:
        assert chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "t"})["turns"] == 1
        assert PASSWORD not in repr(saver)


class SilentServer:
    """A TCP server that accepts connections and never answers: a stalled Redis."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.listener.close()
        for conn in self.accepted:
            conn.close()
        self.thread.join(5)


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def test_from_url_bounds_every_wait_by_default() -> None:
    saver = RedisSaver.from_url("redis://127.0.0.1:1/0")
    try:
        for client in (saver.client, saver.async_client):
            kwargs = client.get_connection_kwargs()
            assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (5.0, 5.0)
        with RedisStore.from_url("redis://127.0.0.1:1/0") as store:
            kwargs = store.client.get_connection_kwargs()
            assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (5.0, 5.0)
        from_query = RedisSaver.from_url("redis://127.0.0.1:1/0?socket_timeout=2")
        assert from_query.client.get_connection_kwargs()["socket_timeout"] == 2.0  # URL wins
        from_query.close()
    finally:
        saver.close()


def test_a_stalled_server_fails_a_read_and_a_write_within_the_timeout(
    silent: SilentServer,
) -> None:
    url = f"redis://127.0.0.1:{silent.port}/0"
    with RedisSaver.from_url(url, socket_timeout=0.3, socket_connect_timeout=0.3) as saver:
        app = chat_graph(saver)
        started = time.monotonic()
        with pytest.raises(CheckpointTimeoutError) as caught:
            app.invoke({"messages": ["hi"]}, {"thread_id": "stalled"})
        assert time.monotonic() - started < 2.0  # once 0.3 s, not retried, never for ever
        error = caught.value
        assert isinstance(error, TimeoutError) and error.thread_id == "stalled"
        assert f"Redis at 127.0.0.1:{silent.port}/0 did not answer within 0.3 s" in str(error)
        assert "socket_timeout" in str(error)
        cid = new_checkpoint_id()
        started = time.monotonic()
        with pytest.raises(CheckpointTimeoutError, match=r"while writing thread 'stalled'.*reload"):
            saver.put(Checkpoint(cid, "stalled", None, 0, (), {"n": 1}, created_at_of(cid)))
        assert time.monotonic() - started < 2.0


def test_a_stalled_server_fails_an_async_read_within_the_timeout(silent: SilentServer) -> None:
    async def main() -> float:
        url = f"redis://127.0.0.1:{silent.port}/0"
        async with RedisSaver.from_url(url, socket_timeout=0.3) as saver:
            started = time.monotonic()
            with pytest.raises(CheckpointTimeoutError, match="thread 'stalled-async'"):
                await chat_graph(saver).ainvoke(
                    {"messages": ["hi"]}, {"thread_id": "stalled-async"}
                )
            return time.monotonic() - started

    assert asyncio.run(main()) < 2.0


def test_nothing_listening_is_retried_then_a_clear_error(caplog) -> None:
    port, sleeps = free_port(), []
    saver = RedisSaver.from_url(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", sleep=sleeps.append)
    with (
        caplog.at_level(logging.DEBUG, logger="checkpoint"),
        saver,
        pytest.raises(CheckpointUnavailableError) as caught,
    ):
        saver.get("nobody")
    assert len(sleeps) == 3 and sleeps[2] > sleeps[0]  # read_retries, with backoff
    retried = [r for r in caplog.records if r.name == "checkpoint.redis"]
    assert [r.levelname for r in retried] == ["WARNING"] * 3  # each retry is logged
    assert (
        retried[0]
        .getMessage()
        .startswith(
            f"Redis at 127.0.0.1:{port}/0: reading thread 'nobody' failed (ConnectionError: "
        )
    )
    assert retried[2].getMessage().endswith(f"retry 3 of 3 in {sleeps[2]:.2f} s")
    assert PASSWORD not in caplog.text
    text = str(caught.value)
    assert text.startswith(f"could not reach Redis at 127.0.0.1:{port}/0 while reading thread")
    assert "Is redis-server running there" in text and PASSWORD not in text
    assert isinstance(caught.value, ConnectionError) and caught.value.operation == "read"


# -- corrupt, truncated and evicted data ------------------------------------------------------


@pytest.fixture(params=["fake", "real"])
def saver(request: pytest.FixtureRequest) -> Iterator[RedisSaver]:
    """A saver that holds no head: each read reads the stored data (as a new process does;
    a saver holding the head reads only what changed, see test_head_cache.py)."""
    if request.param == "fake":
        client = fakeredis.FakeRedis()
        yield RedisSaver(client, key_prefix="corrupt", cache_threads=0)
        client.close()
    else:
        url = request.getfixturevalue("redis_url")
        prefix = f"corrupt-{uuid.uuid4().hex[:8]}"
        with RedisSaver.from_url(url, key_prefix=prefix, cache_threads=0) as made:
            yield made


@pytest.mark.parametrize("part", ["idx", "meta", "ids", "cps", "head"])
def test_a_saver_holding_the_head_notices_its_keys_evicted(part: str) -> None:
    client = fakeredis.FakeRedis()
    holding = RedisSaver(client, key_prefix="corrupt")
    app = two_turns(holding)
    assert holding.get("t") is not None  # held: a read sends nothing back
    keys = dict(zip(PARTS, holding.keys("t")))
    head = client.get(keys["head"])
    if part == "idx":
        client.hdel(keys["idx"], head)
    else:
        client.delete(keys[part])
    with pytest.raises(CheckpointDataError):
        holding.get("t")
    with pytest.raises(CheckpointDataError):
        app.invoke({"messages": ["third"]}, {"thread_id": "t"})


def two_turns(saver: RedisSaver, thread: str = "t") -> Any:
    app = chat_graph(saver)
    for text in ("hi", "again"):
        app.invoke({"messages": [text]}, {"thread_id": thread})
    return app


def head_index(saver: RedisSaver, thread: str = "t") -> tuple[str, dict[str, Any]]:
    keys = saver.keys(thread)
    head = saver.client.get(keys[0]).decode()
    return head, json.loads(saver.client.hget(keys[3], head))


def plant_index(saver: RedisSaver, index: dict[str, Any], thread: str = "t") -> None:
    head, _ = head_index(saver, thread)
    saver.client.hset(saver.keys(thread)[3], head, json.dumps(index))


def read_error(saver: RedisSaver, thread: str = "t") -> CheckpointDataError:
    with pytest.raises(CheckpointDataError) as caught:
        saver.get(thread)
    assert caught.value.thread_id == thread
    assert str(caught.value).startswith(
        f"thread '{thread}' cannot be read: its data in Redis is corrupt or incomplete: "
    )
    return caught.value


@pytest.mark.parametrize("length", [10**6, 10**12])
def test_a_planted_list_length_is_refused_not_looped_over(saver: RedisSaver, length: int) -> None:
    two_turns(saver)
    good = saver.get("t")
    assert good is not None
    _, index = head_index(saver)
    index["messages"][2] = length
    plant_index(saver, index)
    started = time.monotonic()
    error = read_error(saver)
    assert f"the list 'messages' claims {length} items, more than are stored" in str(error)
    assert time.monotonic() - started < 1.0  # no loop over a length nobody stored
    # A writer that had read the thread before the damage appends onto the planted index.
    keys = saver.keys("t")
    head, stored = saver.client.get(keys[0]), saver.client.hlen(keys[5])
    cid = new_checkpoint_id()
    values = {**good.values, "messages": [*good.values["messages"], "third"]}
    step = Checkpoint(cid, "t", good.id, good.step + 1, (), values, created_at_of(cid))
    with pytest.raises(CheckpointDataError, match="cannot be extended") as caught:
        saver.put(step, CheckpointDelta(appended={"messages": ["third"]}))
    assert caught.value.thread_id == "t" and caught.value.checkpoint_id == good.id
    assert time.monotonic() - started < 1.0
    assert saver.client.get(keys[0]) == head  # nothing was written
    assert saver.client.hlen(keys[5]) == stored


def test_a_missing_value_names_the_thread_and_the_key(saver: RedisSaver) -> None:
    two_turns(saver)
    values = saver.keys("t")[4]
    for field in saver.client.hkeys(values):
        if field.endswith(b"\nturns"):
            saver.client.hdel(values, field)
    assert "the stored value of 'turns' is missing" in str(read_error(saver))


def test_a_missing_list_item_names_its_position(saver: RedisSaver) -> None:
    two_turns(saver)
    _, index = head_index(saver)
    items = saver.keys("t")[5]
    saver.client.hdel(items, f"{index['messages'][1]}:2")
    saver.client.hset(items, "999:0", b"\x01")  # as many items as before, one of them astray
    assert "item 2 of the list 'messages' is missing" in str(read_error(saver))


PARTS = ["head", "meta", "cps", "idx", "vals", "items", "ids"]


@pytest.mark.parametrize("part", range(7), ids=PARTS)
def test_any_evicted_key_but_the_whole_thread_is_an_error_not_an_empty_thread(
    saver: RedisSaver, part: int
) -> None:
    app = two_turns(saver)
    saver.client.delete(saver.keys("t")[part])
    if PARTS[part] == "ids":  # a read needs no history: it still works, history does not
        assert saver.get("t") is not None
        with pytest.raises(CheckpointDataError, match="missing from its list of checkpoints"):
            list(saver.list("t"))
    else:
        read_error(saver)
    with pytest.raises(CheckpointDataError):
        app.invoke({"messages": ["third"]}, {"thread_id": "t"})
    saver.delete_thread("t")  # the way out: start the thread again
    assert saver.get("t") is None
    assert app.invoke({"messages": ["anew"]}, {"thread_id": "t"})["turns"] == 1


def test_an_index_that_is_not_json_is_an_error(saver: RedisSaver) -> None:
    app = two_turns(saver)
    head, _ = head_index(saver)
    saver.client.hset(saver.keys("t")[3], head, b"\xff{not json")
    assert f"the index of checkpoint {head} is not valid JSON" in str(read_error(saver))
    with pytest.raises(CheckpointDataError, match=f"the index of checkpoint {head}"):
        app.invoke({"messages": ["third"]}, {"thread_id": "t"})


def test_undecodable_bytes_name_the_thread_and_the_key(saver: RedisSaver) -> None:
    two_turns(saver)
    _, index = head_index(saver)
    saver.client.hset(saver.keys("t")[5], f"{index['messages'][1]}:0", b"\xc1")
    error = read_error(saver)
    assert "'messages' of checkpoint" in str(error) and "cannot be decoded" in str(error)


# -- eviction ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "maxmemory", "ttl", "evicts"),
    [
        ("noeviction", 10**8, 60, False),
        ("allkeys-lru", 0, None, False),  # no limit: nothing is ever evicted
        ("allkeys-lru", 10**8, None, True),
        ("allkeys-lfu", 10**8, None, True),
        ("volatile-lru", 10**8, None, False),  # the saver's keys have no TTL
        ("volatile-ttl", 10**8, 3600, True),
    ],
)
def test_which_policies_may_evict_checkpoints(
    policy: str, maxmemory: int, ttl: int | None, evicts: bool
) -> None:
    node = {"maxmemory_policy": policy, "maxmemory": maxmemory}
    assert (evicting_policy(node, ttl) == policy) is evicts
    cluster = {"127.0.0.1:1": {"maxmemory_policy": "noeviction", "maxmemory": 0}, "x:2": node}
    assert (evicting_policy(cluster, ttl) == policy) is evicts


def test_a_server_that_does_not_evict_gets_no_warning(redis_url: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvictionPolicyWarning)
        with RedisSaver.from_url(redis_url, key_prefix=uuid.uuid4().hex) as saver:
            chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "t"})


def test_an_evicting_server_warns_once_and_evicted_threads_are_clear_errors(
    tmp_path: Path,
) -> None:
    options = ("--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru")
    with (
        redis_server(tmp_path, *options) as port,
        RedisSaver.from_url(f"redis://127.0.0.1:{port}/0") as saver,
    ):
        app = chat_graph(saver)
        with pytest.warns(EvictionPolicyWarning, match="maxmemory-policy allkeys-lru") as seen:
            app.invoke({"messages": ["x" * 2000]}, {"thread_id": "c-0"})
        assert f"Redis at 127.0.0.1:{port}/0" in str(seen[0].message)
        with warnings.catch_warnings():
            warnings.simplefilter("error", EvictionPolicyWarning)  # once per client
            threads = [f"c-{n}" for n in range(1, 800)]
            for thread in threads:
                for turn in range(3):
                    try:
                        app.invoke({"messages": [f"{turn}" * 2000]}, {"thread_id": thread})
                    except CheckpointDataError as error:  # lost a key between two turns
                        assert error.thread_id == thread
                        break
        assert int(saver.client.info("stats")["evicted_keys"]) > 0
        outcomes = {"whole": 0, "gone": 0, "broken": 0}
        for thread in threads:
            try:
                found = saver.get(thread)
            except CheckpointDataError as error:
                assert error.thread_id == thread
                outcomes["broken"] += 1
            else:
                outcomes["gone" if found is None else "whole"] += 1
                # a thread evicted whole between two turns starts again: fewer turns, whole
                assert found is None or 1 <= found.values["turns"] <= 3
        assert outcomes["broken"] > 0 and outcomes["whole"] > 0, outcomes


def test_the_documented_acl_user_runs_a_saver(redis_url: str) -> None:
    """The ``ACL SETUSER`` line in docs/redis.md grants what the scripts call, no more: a saver
    logged in as that user writes, reads, lists and deletes; INFO is not granted, so the
    eviction check is skipped without an error."""
    docs = (Path(__file__).parents[2] / "docs" / "redis.md").read_text()
    line = next(x for x in docs.splitlines() if x.startswith("$ redis-cli ACL SETUSER saver "))
    user = f"saver-{uuid.uuid4().hex[:8]}"
    rules = line.split()[5:]  # after "$ redis-cli ACL SETUSER saver"
    rules = [f">{PASSWORD}" if r.startswith(">") else r for r in rules]
    with redis.Redis.from_url(redis_url) as admin:
        admin.execute_command("ACL", "SETUSER", user, "reset", *rules)
        try:
            host_port = redis_url.removeprefix("redis://").split("/")[0]
            url = f"redis://{user}:{PASSWORD}@{host_port}/0"
            prefix = f"graph_agent:acl-{uuid.uuid4().hex[:8]}"
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with RedisSaver.from_url(url, key_prefix=prefix, max_retained=2) as saver:
                    app = chat_graph(saver)
                    for turn in range(3):
                        app.invoke({"messages": [f"turn {turn}"]}, {"thread_id": "acl"})
                    assert [c.step for c in saver.list("acl")] == [5, 4]
                    assert [c.step for c in saver.list("acl", before=saver.get("acl").id)] == [4]
                    saver.delete_thread("acl")
                    assert saver.get("acl") is None
        finally:
            admin.execute_command("ACL", "DELUSER", user)


def test_a_command_the_acl_user_may_not_run_is_an_auth_error(redis_url: str) -> None:
    user = f"saver-{uuid.uuid4().hex[:8]}"
    with redis.Redis.from_url(redis_url) as admin:  # no HLEN: the read script needs it
        admin.execute_command(
            "ACL", "SETUSER", user, "reset", "on", f">{PASSWORD}", "~*", "+@all", "-hlen"
        )
        try:
            host_port = redis_url.removeprefix("redis://").split("/")[0]
            url = f"redis://{user}:{PASSWORD}@{host_port}/0"
            sleeps: list[float] = []
            saver = RedisSaver.from_url(url, key_prefix=uuid.uuid4().hex, sleep=sleeps.append)
            with saver, pytest.raises(CheckpointAuthError, match="while writing thread 'noperm'"):
                chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "noperm"})
            assert sleeps == []
        finally:
            admin.execute_command("ACL", "DELUSER", user)

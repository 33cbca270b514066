"""A RedisSaver on a plain ``redis.Redis`` sends its scripts on connections of its own
(``checkpoint/redis/_lean.py``); anything that customises how commands are sent keeps
redis-py's path."""

from __future__ import annotations

import os
import sys
import time
import uuid
from typing import Any

import fakeredis
import pytest
import redis

from checkpoint import RedisSaver
from checkpoint.redis._lean import ScriptCalls, lean_pool, pack_command, packer

from .._needs import unavailable
from ._graphs import chat_graph


def require_hiredis(for_redis_py: bool = False) -> None:
    """Skip the calling test where the ``hiredis`` extra is not installed, except on CI
    (``CI`` set), whose ``make test`` installs it: there its absence is a failure.
    ``for_redis_py``: redis-py must read replies with it too (it takes hiredis 3.2 or newer)."""
    try:
        import hiredis
    except ImportError:
        missing = "hiredis is not installed: pip install 'graph-agent[hiredis]'"
    else:
        missing = None
        if for_redis_py and not redis.utils.HIREDIS_AVAILABLE:
            missing = f"redis-py does not use hiredis {hiredis.__version__} (it takes 3.2 or newer)"
    if missing is not None:
        unavailable(missing, "CI installs the hiredis extra")


@pytest.mark.parametrize("ci", [None, "true"], ids=["elsewhere", "on-ci"])
def test_a_missing_hiredis_skips_its_tests_except_on_ci(
    monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    monkeypatch.setitem(sys.modules, "hiredis", None)  # import hiredis: ImportError
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome, match=r"^hiredis is not installed: pip install") as info:
        require_hiredis()
    assert str(info.value).endswith(": CI installs the hiredis extra") == bool(ci)


def _saver(url: str, **options: Any) -> RedisSaver:
    return RedisSaver.from_url(url, key_prefix=f"lean-{uuid.uuid4().hex[:8]}", **options)


def _commands(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


def test_pack_command_is_resp_bulk_strings() -> None:
    packed = pack_command(("EVALSHA", b"\x00\xff", 2, "día"), "utf-8", "strict")
    assert packed == (b"*4\r\n$7\r\nEVALSHA\r\n$2\r\n\x00\xff\r\n$1\r\n2\r\n$4\r\nd\xc3\xada\r\n")
    with pytest.raises(TypeError, match="bytes, str or int, got <class 'float'>"):
        pack_command(("SET", "k", 1.5), "utf-8", "strict")


def test_hiredis_packs_utf_8_and_our_packer_anything_else() -> None:
    require_hiredis()
    import hiredis

    parts = ("EVALSHA", "a" * 40, 2, "k:{día}", "k2", b"\x00\xff", 0, -7, "")
    assert packer("utf-8", "strict") is hiredis.pack_command
    assert packer("UTF_8", "strict") is hiredis.pack_command
    assert hiredis.pack_command(parts) == pack_command(parts, "utf-8", "strict")
    latin = packer("latin-1", "strict")
    assert latin is not hiredis.pack_command
    assert latin(("SET", "día")) == b"*2\r\n$3\r\nSET\r\n$3\r\nd\xeda\r\n"
    assert packer("utf-8", "replace") is not hiredis.pack_command


@pytest.mark.parametrize("parser", ["resp2-python", "resp3-python", "hiredis"])
def test_lean_calls_read_replies_with_the_client_s_parser(redis_url: str, parser: str) -> None:
    if parser == "hiredis":
        require_hiredis(for_redis_py=True)
    from redis._parsers import _HiredisParser, _RESP2Parser, _RESP3Parser

    parser_class, protocol = {
        "resp2-python": (_RESP2Parser, 2),
        "resp3-python": (_RESP3Parser, 3),
        "hiredis": (_HiredisParser, 3),
    }[parser]
    client = redis.Redis.from_url(redis_url, parser_class=parser_class, protocol=protocol)
    with client, RedisSaver(client, key_prefix=f"lean-{uuid.uuid4().hex[:8]}") as saver:
        assert saver._calls.lean
        app = chat_graph(saver)
        for turn in ("one", "two"):
            app.invoke({"messages": [turn]}, {"thread_id": "p"})
        (conn,) = saver._calls._idle
        assert type(conn._parser) is parser_class
        assert saver.get("p").values["messages"] == ["one", "reply to one", "two", "reply to two"]
        history = list(saver.list("p"))
        assert [len(c.values["messages"]) for c in history] == [4, 3, 2, 1]


def test_meanwhile_runs_between_sending_and_reading(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    with client:
        calls = ScriptCalls(client)
        script = client.register_script("return redis.call('INCR', KEYS[1])")
        key = f"lean-{uuid.uuid4().hex[:8]}"
        seen: list[int] = []

        def meanwhile() -> None:  # the command is on its way: the server has run it or will
            seen.append(len(calls._idle))

        assert calls.call(script, [key], [], meanwhile) == 1
        assert seen == [0]  # the connection was in use, not idle
        assert calls.call(script, [key], [], meanwhile) == 2 and seen == [0, 0]

        def fails() -> None:
            raise RuntimeError("meanwhile failed")

        with pytest.raises(RuntimeError, match="meanwhile failed"):
            calls.call(script, [key], [], fails)
        assert client.get(key) == b"3"  # the script ran, and its reply was read
        (conn,) = calls._idle
        assert calls.call(script, [key], []) == 4 and calls._idle == [conn]  # the link is sound
        client.delete(key)
        calls.close()


def test_only_a_plain_client_gets_lean_calls(redis_url: str) -> None:
    class Counting(redis.Redis):
        def execute_command(self, *args: Any, **options: Any) -> Any:
            return super().execute_command(*args, **options)

    plain = redis.Redis.from_url(redis_url)
    overridden = Counting.from_url(redis_url)
    patched = redis.Redis.from_url(redis_url)
    patched.execute_command = lambda *a, **k: None  # type: ignore[method-assign]
    single = redis.Redis.from_url(redis_url, single_connection_client=True)
    try:
        assert lean_pool(plain) is plain.connection_pool
        for client in (overridden, patched, single, fakeredis.FakeRedis(), None):
            assert lean_pool(client) is None, client
    finally:
        for client in (plain, overridden, patched, single):
            client.close()


def test_one_evalsha_per_write_and_read_on_the_saver_s_own_connection(
    redis_url: str, real_redis: redis.Redis
) -> None:
    with _saver(redis_url) as saver:
        assert saver._calls.lean
        app = chat_graph(saver)
        app.invoke({"messages": ["warm"]}, {"thread_id": "rt"})
        real_redis.config_resetstat()
        for turn in range(10):
            app.invoke({"messages": [f"turn {turn}"]}, {"thread_id": "rt"})
        commands = _commands(real_redis)
        # a turn: one head read, two writes; the server runs the script's own commands too
        assert commands["evalsha"] == 30
        assert "eval" not in commands and "script|load" not in commands
        assert len(saver.get("rt").values["messages"]) == 22


def test_a_flushed_script_cache_is_refilled_by_the_next_call(
    redis_url: str, real_redis: redis.Redis
) -> None:
    with _saver(redis_url) as saver:
        app = chat_graph(saver)
        app.invoke({"messages": ["one"]}, {"thread_id": "f"})
        real_redis.script_flush()
        app.invoke({"messages": ["two"]}, {"thread_id": "f"})
        app.invoke({"messages": ["three"]}, {"thread_id": "f"})
        assert [m for m in saver.get("f").values["messages"] if m in ("one", "two", "three")] == [
            "one",
            "two",
            "three",
        ]


def test_a_killed_connection_is_dropped_and_the_write_retried(
    redis_url: str, real_redis: redis.Redis
) -> None:
    with _saver(redis_url) as saver:
        app = chat_graph(saver)
        app.invoke({"messages": ["one"]}, {"thread_id": "k"})
        idle = list(saver._calls._idle)
        assert len(idle) == 1
        real_redis.client_kill_filter(_type="normal", skipme=True)
        app.invoke({"messages": ["two"]}, {"thread_id": "k"})
        assert saver._calls._idle and saver._calls._idle[0] is not idle[0]
        assert saver.get("k").values["messages"][-2:] == ["two", "reply to two"]


def test_an_error_reply_keeps_the_connection(redis_url: str, real_redis: redis.Redis) -> None:
    with _saver(redis_url) as saver:
        chat_graph(saver).invoke({"messages": ["one"]}, {"thread_id": "ok"})
        (conn,) = saver._calls._idle
        real_redis.hset(saver.keys("bad")[0], "not", "a string")  # a head key of the wrong type
        with pytest.raises(Exception, match="WRONGTYPE"):
            saver.get("bad")
        assert saver._calls._idle == [conn]
        assert saver.get("ok") is not None


def test_close_closes_the_saver_s_own_connections(redis_url: str, real_redis: redis.Redis) -> None:
    def clients() -> int:
        return len(real_redis.client_list(_type="normal"))

    before = clients()
    saver = _saver(redis_url)
    chat_graph(saver).invoke({"messages": ["one"]}, {"thread_id": "c"})
    assert clients() > before
    saver.close()
    # The server sees a closed connection when its event loop reads it, which may come
    # after it answers our CLIENT LIST: a connection left open would stay past the deadline.
    deadline = time.monotonic() + 5
    while clients() != before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert clients() == before


def test_a_forked_child_makes_connections_of_its_own(redis_url: str) -> None:
    with _saver(redis_url) as saver:
        app = chat_graph(saver)
        app.invoke({"messages": ["parent"]}, {"thread_id": "p"})
        pid = os.fork()
        if pid == 0:  # the child: write, then leave without running the parent's cleanup
            try:
                app.invoke({"messages": ["child"]}, {"thread_id": "c"})
                os._exit(0 if saver.get("c") is not None else 1)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        app.invoke({"messages": ["parent again"]}, {"thread_id": "p"})
        assert saver.get("c").values["messages"] == ["child", "reply to child"]
        assert saver.get("p").values["messages"][-2] == "parent again"


def test_script_calls_without_a_plain_client_use_redis_py() -> None:
    client = fakeredis.FakeRedis()
    calls = ScriptCalls(client)
    assert not calls.lean
    script = client.register_script("return ARGV[1]")
    assert calls.call(script, [], ["x"]) == b"x"

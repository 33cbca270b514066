"""A RedisSaver makes a thread's keys once for the threads it used lately; what ``keys``
returns is the caller's, and a new ``key_prefix`` makes new keys."""

from __future__ import annotations

import fakeredis

from checkpoint import RedisSaver

from ._graphs import chat_graph


def test_keys_are_the_caller_s_and_follow_the_prefix() -> None:
    with fakeredis.FakeRedis() as client:
        saver = RedisSaver(client, key_prefix="one")
        keys = saver.keys("t")
        keys[0] = "changed by the caller"
        assert saver.keys("t")[0] == "one:{t}:head" and saver.keys("t") is not saver.keys("t")
        saver.key_prefix = "two"
        assert saver.keys("t")[0] == "two:{t}:head"
        chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "t"})
        assert sorted(k.decode() for k in client.keys("*")) == sorted(saver.keys("t"))


def test_many_threads_keep_their_own_keys() -> None:
    with fakeredis.FakeRedis() as client:
        saver = RedisSaver(client)
        threads = [f"t{n}" for n in range(2500)]  # more than the saver keeps made
        for thread in threads:
            assert saver.keys(thread)[0] == f"graph_agent:{{{thread}}}:head"
        assert len(saver._key_cache) <= 1024
        assert saver.keys("a{b}")[0] == "graph_agent:{{" + b"a{b}".hex() + "}:head"

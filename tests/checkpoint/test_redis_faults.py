"""Fault tests against a real redis-server: conversations keep running while the server is
SIGKILLed and restarted on its AOF file, and while a proxy stalls or cuts their connections.

Every turn either completes or raises a ``CheckpointError`` naming the server and the
thread (never a raw redis-py error, a ``KeyError`` or a msgpack error); a stalled server
fails a turn within the socket timeout; afterwards every thread continues, its history is
one a strict OpenAI-compatible server accepts (no unanswered tool call, nothing repeated),
and with ``appendfsync always`` it holds every acknowledged turn (docs/checkpoints.md,
"Durability")."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from checkpoint import (
    CheckpointConflictError,
    CheckpointTimeoutError,
    CheckpointUnavailableError,
    RedisSaver,
)
from graph_agent import (
    AssistantMessage,
    FunctionChatModel,
    Message,
    Prompt,
    ReactAgent,
    ToolCall,
    UserMessage,
    tool,
)

from ..agent.test_killed_workers import assert_consistent
from ..redis_servers import free_port, redis_server, require_binary, stop_server, wait_ready
from ._tcp_proxy import TcpProxy

CONVERSATIONS = 20
HUNG = 30.0  # seconds after which a conversation that has not stopped is reported as hung


# -- the agent -------------------------------------------------------------------------------


def answer(prompt: Prompt) -> AssistantMessage:
    """An offline model that checks what a strict server checks, then calls the tool for a
    user message that asks for it, and answers in text otherwise."""
    messages = list(prompt.messages)
    assert_consistent(messages)
    last = messages[-1]
    users = sum(isinstance(m, UserMessage) for m in messages)
    if isinstance(last, UserMessage) and last.text.endswith("(use the tool)"):
        call = ToolCall(id=f"call_{users}", name="note", arguments=json.dumps({"n": users}))
        return AssistantMessage("", tool_calls=(call,))
    return AssistantMessage(f"answer {users}")


@tool
def note(n: int) -> str:
    """Notes a number."""
    return f"noted {n}"


# -- conversations ---------------------------------------------------------------------------


@dataclass
class Turn:
    text: str
    started: float
    took: float
    error: Exception | None


@dataclass
class Conversation:
    """One agent on its own thread with its own saver; remembers every turn it tried."""

    thread: str
    saver: RedisSaver
    agent: ReactAgent = field(init=False)
    turns: list[Turn] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.agent = ReactAgent(
            name="faults", model=FunctionChatModel(answer), tools=[note], saver=self.saver
        )

    @property
    def config(self) -> dict[str, str]:
        return {"thread_id": self.thread}

    def _text(self) -> str:
        n = len(self.turns)
        return f"{self.thread} says {n}" + (" (use the tool)" if n % 2 == 0 else "")

    def _record(self, text: str, started: float, error: Exception | None) -> bool:
        self.turns.append(Turn(text, started, time.monotonic() - started, error))
        return error is None

    def turn(self) -> bool:
        text, started = self._text(), time.monotonic()
        try:
            self.agent.call(text, self.config)
        except Exception as error:
            return self._record(text, started, error)
        return self._record(text, started, None)

    async def aturn(self) -> bool:
        text, started = self._text(), time.monotonic()
        try:
            await self.agent.acall(text, self.config)
        except Exception as error:
            return self._record(text, started, error)
        return self._record(text, started, None)

    def acked_since(self, moment: float) -> int:
        """Turns started at or after ``moment`` that completed."""
        return sum(t.error is None and t.started >= moment for t in self.turns)

    def finish(self) -> None:
        """One more turn, which must succeed; then read the stored history."""
        assert self.turn(), f"{self.thread} did not resume: {self.turns[-1].error!r}"
        state = self.agent.get_state(self.config)
        assert state is not None, self.thread
        self.history = list(state.values["messages"])

    async def afinish(self) -> None:
        assert await self.aturn(), f"{self.thread} did not resume: {self.turns[-1].error!r}"
        state = await self.agent.aget_state(self.config)
        assert state is not None, self.thread
        self.history = list(state.values["messages"])


def keep_talking(conversation: Conversation, stop: threading.Event) -> None:
    while not stop.is_set():
        if not conversation.turn():
            stop.wait(0.01)


async def akeep_talking(conversation: Conversation, stop: threading.Event) -> None:
    while not stop.is_set():
        if not await conversation.aturn():
            await asyncio.sleep(0.01)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting until {what}")
        time.sleep(0.01)


async def await_until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting until {what}")
        await asyncio.sleep(0.01)


def start_threads(
    conversations: list[Conversation], stop: threading.Event
) -> list[threading.Thread]:
    threads = [
        threading.Thread(target=keep_talking, args=(c, stop), name=c.thread, daemon=True)
        for c in conversations
    ]
    for thread in threads:
        thread.start()
    return threads


def stop_threads(threads: list[threading.Thread], stop: threading.Event) -> None:
    stop.set()
    deadline = time.monotonic() + HUNG
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    hung = [thread.name for thread in threads if thread.is_alive()]
    assert not hung, f"still inside a turn {HUNG:g} s after being told to stop: {hung}"


# -- what every test checks ------------------------------------------------------------------


def check_errors(conversations: list[Conversation], where: str) -> list[Turn]:
    """The failed turns, each checked to have raised a clear error: the saver's, naming the
    server (``host:port``) and the thread; never a raw redis-py, KeyError or msgpack error."""
    failed: list[Turn] = []
    unclear: list[str] = []
    for conversation in conversations:
        quoted = f"'{conversation.thread}'"
        for turn in conversation.turns:
            error = turn.error
            if error is None:
                continue
            failed.append(turn)
            text = str(error)
            if isinstance(error, CheckpointConflictError):
                clear = error.thread_id == conversation.thread and quoted in text
            elif isinstance(error, CheckpointUnavailableError):
                clear = (
                    error.thread_id == conversation.thread
                    and error.where.startswith(where)
                    and where in text
                    and quoted in text
                )
            else:
                clear = False
            if not clear:
                kind = f"{type(error).__module__}.{type(error).__qualname__}"
                unclear.append(f"{conversation.thread}, turn {turn.text!r}: {kind}: {text}")
    assert not unclear, (
        f"{len(unclear)} turns failed without a CheckpointError naming {where} and the thread:\n"
        + "\n".join(unclear[:10])
    )
    return failed


def check_histories(conversations: list[Conversation]) -> None:
    """Each stored history is one a strict server accepts; it holds every acknowledged turn
    (its user message once, and its answer), nothing twice and nothing the test did not send,
    in the order sent."""
    for conversation in conversations:
        thread, history = conversation.thread, conversation.history
        assert_consistent(history)  # no unanswered tool call; every call answered once
        said = [m.text for m in history if isinstance(m, UserMessage)]
        assert len(said) == len(set(said)), f"{thread}: a user message is stored twice: {said}"
        stored = set(said)
        sent = [turn.text for turn in conversation.turns]
        assert said == [text for text in sent if text in stored], (thread, said, sent)
        lost = [t.text for t in conversation.turns if t.error is None and t.text not in stored]
        assert not lost, f"{thread}: acknowledged turns missing after the faults: {lost}"
        calls = [c.id for m in history if isinstance(m, AssistantMessage) for c in m.tool_calls]
        assert len(calls) == len(set(calls)), f"{thread}: a tool call is stored twice: {calls}"
        for turn in conversation.turns:
            if turn.error is None:  # an acknowledged turn's answer is stored with it
                after = history[said_at(history, turn.text) + 1 :]
                end = next((i for i, m in enumerate(after) if isinstance(m, UserMessage)), None)
                last = after[:end][-1] if after[:end] else None
                assert isinstance(last, AssistantMessage) and not last.tool_calls, (
                    f"{thread}: the answer to the acknowledged {turn.text!r} is missing: {after[:end]}"
                )


def said_at(history: list[Message], text: str) -> int:
    return next(i for i, m in enumerate(history) if isinstance(m, UserMessage) and m.text == text)


# -- a redis-server to SIGKILL ---------------------------------------------------------------


class AofRedis:
    """A redis-server on a fixed loopback port and directory whose AOF is fsynced before
    each reply (``appendfsync always``): SIGKILLed and started again on the same files."""

    def __init__(self, directory: Path) -> None:
        self.binary = require_binary()
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        directory.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_ready(self.port, self.process, answers=(b"+PONG",))

    def kill(self) -> None:
        """SIGKILL: no shutdown, no last save."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None:
            stop_server(self.process)


@pytest.fixture
def aof_server(tmp_path: Path) -> Iterator[AofRedis]:
    server = AofRedis(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


DOWN = 0.45  # seconds between the SIGKILL and the restart


# -- the tests -------------------------------------------------------------------------------


def test_kill_9_and_restart_during_20_sync_conversations(aof_server: AofRedis) -> None:
    conversations = [
        Conversation(
            f"sync-{i}",
            RedisSaver.from_url(aof_server.url, socket_timeout=1, socket_connect_timeout=1),
        )
        for i in range(CONVERSATIONS)
    ]
    stop = threading.Event()
    try:
        threads = start_threads(conversations, stop)
        try:
            wait_until(
                lambda: all(c.acked_since(0) >= 2 for c in conversations),
                "every conversation has 2 acknowledged turns",
            )
            aof_server.kill()
            time.sleep(DOWN)
            aof_server.start()
            restarted = time.monotonic()
            wait_until(
                lambda: all(c.acked_since(restarted) >= 1 for c in conversations),
                "every conversation completes a turn after the restart",
            )
        finally:
            stop_threads(threads, stop)
        for conversation in conversations:
            conversation.finish()
    finally:
        for conversation in conversations:
            conversation.saver.close()
    failed = check_errors(conversations, f"127.0.0.1:{aof_server.port}")
    assert failed, "the SIGKILL failed no turn: it did not hit the conversations"
    check_histories(conversations)


def test_kill_9_and_restart_during_20_async_conversations(aof_server: AofRedis) -> None:
    async def main() -> list[Conversation]:
        conversations = [
            Conversation(
                f"async-{i}",
                RedisSaver.from_url(aof_server.url, socket_timeout=1, socket_connect_timeout=1),
            )
            for i in range(CONVERSATIONS)
        ]
        stop = threading.Event()

        async def kill_and_restart() -> None:
            try:
                await await_until(
                    lambda: all(c.acked_since(0) >= 2 for c in conversations),
                    "every conversation has 2 acknowledged turns",
                )
                aof_server.kill()
                await asyncio.sleep(DOWN)
                await asyncio.to_thread(aof_server.start)
                restarted = time.monotonic()
                await await_until(
                    lambda: all(c.acked_since(restarted) >= 1 for c in conversations),
                    "every conversation completes a turn after the restart",
                )
            finally:
                stop.set()

        try:
            ran = asyncio.gather(
                kill_and_restart(),
                *(akeep_talking(c, stop) for c in conversations),
                return_exceptions=True,
            )
            for outcome in await asyncio.wait_for(ran, timeout=2 * HUNG):
                if isinstance(outcome, BaseException):
                    raise outcome
            for conversation in conversations:
                await conversation.afinish()
        finally:
            for conversation in conversations:
                await conversation.saver.aclose()
        return conversations

    conversations = asyncio.run(main())
    failed = check_errors(conversations, f"127.0.0.1:{aof_server.port}")
    assert failed, "the SIGKILL failed no turn: it did not hit the conversations"
    check_histories(conversations)


TIMEOUT = 0.5  # the proxied savers' socket timeout


def talk_async(
    conversations: list[Conversation], stop: threading.Event, errors: list[BaseException]
) -> None:
    """Run in a thread of its own: the conversations' turns on one event loop until
    ``stop``, then one more turn each; their savers closed."""

    async def main() -> None:
        try:
            await asyncio.gather(*(akeep_talking(c, stop) for c in conversations))
            for conversation in conversations:
                await conversation.afinish()
        finally:
            for conversation in conversations:
                await conversation.saver.aclose()

    try:
        asyncio.run(main())
    except BaseException as error:
        errors.append(error)


def test_a_proxy_that_stalls_and_cuts_connections(tmp_path: Path) -> None:
    with redis_server(tmp_path / "redis") as port, TcpProxy(port, seed=12) as proxy:

        def saver() -> RedisSaver:
            return RedisSaver.from_url(
                f"redis://{proxy.address}/0", socket_timeout=TIMEOUT, socket_connect_timeout=TIMEOUT
            )

        synced = [Conversation(f"proxied-{i}", saver()) for i in range(CONVERSATIONS)]
        awaited = [Conversation(f"proxied-async-{i}", saver()) for i in range(4)]
        everyone = synced + awaited
        stop = threading.Event()
        async_errors: list[BaseException] = []
        try:
            threads = start_threads(synced, stop)
            threads.append(
                threading.Thread(
                    target=talk_async, args=(awaited, stop, async_errors), name="async", daemon=True
                )
            )
            threads[-1].start()
            try:
                wait_until(
                    lambda: all(c.acked_since(0) >= 1 for c in everyone),
                    "every conversation has an acknowledged turn",
                )
                proxy.set_mode("stall")  # replies never come: each call waits its timeout
                time.sleep(2 * TIMEOUT)
                proxy.set_mode("pass")
                resumed = time.monotonic()
                wait_until(
                    lambda: all(c.acked_since(resumed) >= 1 for c in everyone),
                    "every conversation completes a turn after the stall",
                )
                proxy.set_mode("cut", cut_ratio=0.5)  # lost replies, retried: writes land once
                time.sleep(0.6)
                proxy.set_mode("cut")  # every reply cut: the retries run out
                time.sleep(0.6)
                proxy.set_mode("pass")
                resumed = time.monotonic()
                wait_until(
                    lambda: all(c.acked_since(resumed) >= 1 for c in everyone),
                    "every conversation completes a turn after the cuts",
                )
            finally:
                stop_threads(threads, stop)
            assert not async_errors, async_errors
            for conversation in synced:
                conversation.finish()
        finally:
            for conversation in synced:
                conversation.saver.close()

    failed = check_errors(everyone, proxy.address)
    slow = [
        f"{t.text!r} failed after {t.took:.2f} s: {t.error!r}"
        for t in failed
        if t.took >= TIMEOUT * 3 + 1
    ]
    assert not slow, slow
    assert proxy.stalled and proxy.cuts, (proxy.stalled, proxy.cuts)
    timeouts = [t for t in failed if isinstance(t.error, CheckpointTimeoutError)]
    assert timeouts, "no call timed out while the proxy stalled"
    assert all(f"within {TIMEOUT:g} s" in str(t.error) for t in timeouts)
    cut = [t for t in failed if not isinstance(t.error, CheckpointTimeoutError)]
    assert cut, "no call failed while the proxy cut every reply"
    check_histories(everyone)

"""Shared by the flow tests: scripted sub-agents, and models that prove sub-agents run at the
same time without measuring time (a model that must meet its siblings before it answers
waits alone, and fails, when they run one after another)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from graph_agent import (
    AssistantMessage,
    FunctionChatModel,
    Message,
    Prompt,
    ReactAgent,
    ScriptedChatModel,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)

from .conftest import Runner

TIMEOUT = 5.0  # seconds a waiting model gives its siblings before it fails the test


def scripted(name: str, *replies: Any, **options: Any) -> tuple[ReactAgent, ScriptedChatModel]:
    """A ReactAgent named ``name`` whose model plays ``replies``; and that model."""
    model = ScriptedChatModel(replies)
    return ReactAgent(name=name, model=model, **options), model


def seen(model: ScriptedChatModel | FunctionChatModel, call: int = 0) -> list[Message]:
    """The messages of the model's ``call``-th prompt, without its system message."""
    return [m for m in model.prompts[call].messages if not isinstance(m, SystemMessage)]


def system_of(model: ScriptedChatModel | FunctionChatModel, call: int = 0) -> str:
    return "\n".join(m.text for m in model.prompts[call].messages if isinstance(m, SystemMessage))


def said(messages: Any) -> list[tuple[str, str]]:
    """Who said what: ("user" | "assistant" | "tool" | "system", text)."""
    kinds = {
        UserMessage: "user",
        AssistantMessage: "assistant",
        ToolResponseMessage: "tool",
        SystemMessage: "system",
    }
    return [(kinds[type(m)], m.text) for m in messages]


def user(text: str) -> tuple[str, str]:
    return ("user", text)


def bot(text: str) -> tuple[str, str]:
    return ("assistant", text)


def unanswered(messages: Iterable[Message]) -> list[str]:
    """The ids of tool calls that no later tool response answers before the next assistant
    message (what a provider rejects)."""
    open_calls: list[str] = []
    missing: list[str] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            missing.extend(open_calls)
            open_calls = [c.id for c in message.tool_calls]
        elif isinstance(message, ToolResponseMessage):
            done = {r.id for r in message.responses}
            open_calls = [c for c in open_calls if c not in done]
    return missing + open_calls


def _wait_until(ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {TIMEOUT}s for {what}")
        time.sleep(0.001)


async def _await_until(ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {TIMEOUT}s for {what}")
        await asyncio.sleep(0.001)


class Meeting:
    """``n`` parties arrive; none goes on until all have arrived. Run one after another, the
    first party waits alone and fails the test."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.arrived: list[str] = []
        self._lock = threading.Lock()

    def _arrive(self, who: str) -> None:
        with self._lock:
            self.arrived.append(who)

    def _all_here(self) -> bool:
        return len(self.arrived) >= self.n

    def wait(self, who: str) -> None:
        self._arrive(who)
        _wait_until(self._all_here, f"{self.n} parties at once (only {self.arrived} came)")

    async def await_(self, who: str) -> None:
        self._arrive(who)
        await _await_until(self._all_here, f"{self.n} parties at once (only {self.arrived} came)")


class Flags:
    """Named flags set when something happened (an agent finished), to wait for."""

    def __init__(self) -> None:
        self.set: list[str] = []

    def raise_(self, name: str) -> None:
        self.set.append(name)

    def wait(self, name: str) -> None:
        _wait_until(lambda: name in self.set, f"{name!r} (set: {self.set})")

    async def await_(self, name: str) -> None:
        await _await_until(lambda: name in self.set, f"{name!r} (set: {self.set})")


class Concurrency:
    """Counts the model calls in progress at once, and the order of starts and ends."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.log: list[str] = []
        self._lock = threading.Lock()

    def enter(self, who: str) -> None:
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.log.append(f"start {who}")

    def leave(self, who: str) -> None:
        with self._lock:
            self.active -= 1
            self.log.append(f"end {who}")


def waiting_model(
    run: Runner,
    who: str,
    reply: str | Callable[[Prompt], str],
    *,
    meet: Meeting | None = None,
    after: Iterable[str] = (),
    flags: Flags | None = None,
    count: Concurrency | None = None,
) -> FunctionChatModel:
    """A model answering ``reply`` that first meets ``meet``'s other parties and waits for
    the ``after`` flags; it raises flag ``who`` once it answered. Sync for a sync run (the
    flow's threads), async for an async one (its tasks)."""
    waits = tuple(after)

    def answer(prompt: Prompt) -> str:
        return reply(prompt) if callable(reply) else reply

    if run.is_async:

        async def areply(prompt: Prompt) -> str:
            if count is not None:
                count.enter(who)
            if meet is not None:
                await meet.await_(who)
            for name in waits:
                assert flags is not None
                await flags.await_(name)
            if count is not None:
                count.leave(who)
            if flags is not None:
                flags.raise_(who)
            return answer(prompt)

        return FunctionChatModel(areply)

    def sreply(prompt: Prompt) -> str:
        if count is not None:
            count.enter(who)
        if meet is not None:
            meet.wait(who)
        for name in waits:
            assert flags is not None
            flags.wait(name)
        if count is not None:
            count.leave(who)
        if flags is not None:
            flags.raise_(who)
        return answer(prompt)

    return FunctionChatModel(sreply)

"""Memories written after each turn, in the background: ``MemoryWriterHook`` hands the
finished turn to a worker thread and returns at once, so the answer is never slowed; the
worker asks an extractor (a chat model, or a function) what to remember and writes it to a
store, in a namespace made from the run's config (per user), where ``memory_tools()`` and a
search by meaning find it in any later thread."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from checkpoint import BaseStore, Item
from checkpoint.store import NoIndexError
from graph_agent.graph import OverAllState, RunnableConfig
from graph_agent.messages import AssistantMessage, Message, UserMessage
from graph_agent.models import ChatModel
from graph_agent.models.base import call_model
from graph_agent.tools import ToolContext
from graph_agent.tools.memory import DEFAULT_NAMESPACE, memory_namespace

from ..base import AgentHook, HookResult
from ._backlog import Backlog, BacklogCounts
from ._memory_prompt import DEFAULT_MEMORY_INSTRUCTIONS, memory_prompt, parsed_changes
from ._messages import messages_of
from .summarization import is_summary

__all__ = [
    "DEFAULT_MEMORY_INSTRUCTIONS",
    "MemoryChange",
    "MemoryExtractor",
    "MemoryWriterHook",
    "MemoryWriterStats",
]

_log = logging.getLogger("graph_agent.hooks.memory")

Action = Literal["add", "update", "delete"]
_ACTIONS = ("add", "update", "delete")

MemoryExtractor = Callable[
    [Sequence[Message], Sequence[Item]],
    "Iterable[MemoryChange | Mapping[str, Any]] | Awaitable[Iterable[MemoryChange | Mapping[str, Any]]]",
]
"""A function ``(messages, existing) -> changes``: the turn's messages and the memories kept
that match it (``Item``s: ``key``, ``value["content"]``), to ``MemoryChange``s or dicts of
the same fields; sync or async."""


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryChange:
    """One change to the memories: ``add`` a memory (``content``; ``key`` optional, a new one
    by default), ``update`` the memory ``key`` to ``content``, or ``delete`` the memory
    ``key``. A memory is kept as ``{"content": content}``, as ``memory_tools()`` keeps it."""

    action: Action
    content: str | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        if self.action not in _ACTIONS:
            raise ValueError(
                f"a memory change's action is 'add', 'update' or 'delete', got {self.action!r}"
            )
        if self.action != "add" and not (isinstance(self.key, str) and self.key):
            raise ValueError(f"a memory change {self.action!r} needs the key of the memory")
        if self.action != "delete" and not (isinstance(self.content, str) and self.content):
            raise ValueError(f"a memory change {self.action!r} needs its content (a non-empty str)")
        if self.key is not None and not isinstance(self.key, str):
            raise ValueError(f"a memory change's key is a str, got {self.key!r}")

    @classmethod
    def of(cls, change: MemoryChange | Mapping[str, Any]) -> MemoryChange:
        """``change`` as a ``MemoryChange``: one as it is, a dict of its fields checked."""
        if isinstance(change, MemoryChange):
            return change
        if not isinstance(change, Mapping):
            raise ValueError(
                "a memory extractor returns MemoryChange objects or dicts such as "
                f"{{'action': 'add', 'content': '...'}}, got {type(change).__name__}"
            )
        unknown = sorted(set(change) - {"action", "content", "key"})
        if unknown:
            raise ValueError(
                f"a memory change has unknown field(s) {unknown}; its fields are action, "
                "content and key"
            )
        return cls(change.get("action"), change.get("content"), change.get("key"))  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryWriterStats:
    """What a ``MemoryWriterHook`` did since it was made: ``turns`` handed to it,
    ``written`` (extracted and written, ``changes`` memories added, updated or deleted in
    all), ``failed`` (logged), ``coalesced`` (folded into a newer turn of the same thread,
    which saw them too), ``dropped`` (the backlog was full: logged), ``pending`` (waiting or
    being written now)."""

    turns: int
    written: int
    changes: int
    failed: int
    coalesced: int
    dropped: int
    pending: int


@dataclasses.dataclass(frozen=True, slots=True)
class _Turn:
    """A finished turn waiting to be remembered: the thread's messages at its end, and how
    many turns at their end are not remembered yet (more than one once turns coalesce)."""

    thread_id: str
    namespace: tuple[str, ...]
    messages: tuple[Message, ...]
    turns: int = 1


def _merged(older: _Turn, newer: _Turn) -> _Turn:
    return dataclasses.replace(newer, turns=older.turns + newer.turns)


def recent_turns(messages: Sequence[Message], turns: int) -> list[Message]:
    """The last ``turns`` turns of ``messages``: from the ``turns``-th last user message (a
    summary does not count) to the end; all of them when there are fewer."""
    starts = [i for i, m in enumerate(messages) if isinstance(m, UserMessage) and not is_summary(m)]
    start = starts[-turns] if len(starts) >= turns else 0
    return list(messages[start:])


def _query_of(messages: Sequence[Message], limit: int = 2000) -> str:
    """What a turn is about, to find the memories it may change: what the user said, and
    the answers."""
    texts = [
        m.text
        for m in messages
        if isinstance(m, (UserMessage, AssistantMessage)) and m.text and not is_summary(m)
    ]
    return "\n".join(texts)[:limit]


def _settled(result: Any) -> Any:
    """An async extractor's result, awaited on this (worker) thread's own loop."""
    if not inspect.isawaitable(result):
        return result

    async def wait() -> Any:
        return await result

    return asyncio.run(wait())


class MemoryWriterHook(AgentHook):
    """After each turn, remembers what is worth remembering, in the background.

    ``after_agent`` (when a run ends, not when it pauses) queues the thread's messages and
    returns at once: the run returns, and a stream ends, without waiting. A worker thread
    then finds the memories kept in the turn's namespace that match the turn (a search by
    ``query`` when the store has an index; else the newest ``existing_limit``), asks
    ``extractor`` what to change, and applies the changes to ``store``. The thread's
    history is never touched.

    ``extractor``: a ``ChatModel`` (asked with ``instructions``, whose ``{memories}`` and
    ``{conversation}`` are filled, for ``{"changes": [...]}``, as a ``json_schema``
    ``response_format`` when the model declares ``supports_native_output``), or a function
    ``(messages, existing) -> changes`` (``MemoryExtractor``). ``namespace`` is filled per
    run as ``memory_tools()`` fills it (``{user_id}`` and other keys of the config's
    ``metadata``, ``{thread_id}``); use the same one for both.

    The backlog holds at most ``max_pending`` threads; a newer turn of a thread still
    waiting replaces it and sees its turns too, and a full backlog drops its oldest
    thread. Failures are logged (logger ``graph_agent.hooks.memory``, a WARNING with the
    traceback) and counted in ``stats()``; they never reach a run. ``flush(timeout)`` /
    ``aflush(timeout)`` wait for the pending writes (tests, shutdown); a process that exits
    finishes them first.
    """

    def __init__(
        self,
        extractor: ChatModel | MemoryExtractor,
        *,
        store: BaseStore | None = None,
        namespace: Sequence[str] = DEFAULT_NAMESPACE,
        instructions: str = DEFAULT_MEMORY_INSTRUCTIONS,
        existing_limit: int = 10,
        max_pending: int = 100,
        name: str | None = None,
    ) -> None:
        if not isinstance(extractor, ChatModel) and not callable(extractor):
            raise TypeError(
                "MemoryWriterHook(extractor=...) takes a ChatModel or a function "
                f"(messages, existing) -> changes, got {extractor!r}"
            )
        for method in ("put", "search", "delete") if store is not None else ():
            if not callable(getattr(store, method, None)):
                raise TypeError(
                    f"MemoryWriterHook(store=...) takes a store (checkpoint.MemoryStore, "
                    f"RedisStore, ...), got {store!r}"
                )
        template = tuple(namespace)
        if not template or not all(isinstance(p, str) and p for p in template):
            raise ValueError(
                f"MemoryWriterHook(namespace=...) takes non-empty strings such as "
                f"('memories', '{{user_id}}'), got {namespace!r}"
            )
        for what, value in (("existing_limit", existing_limit), ("max_pending", max_pending)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"MemoryWriterHook({what}=...) takes a positive int, got {value!r}"
                )
        if isinstance(extractor, ChatModel):
            for slot in ("{memories}", "{conversation}"):
                if slot not in instructions:
                    raise ValueError(
                        f"MemoryWriterHook(instructions=...) must contain {slot}, where it goes"
                    )
        self.extractor = extractor
        self.store: BaseStore | None = store
        self.namespace = template
        self.instructions = instructions
        self.existing_limit = existing_limit
        if name is not None:
            self.name = name
        self._changes = 0
        self._backlog: Backlog[_Turn] = Backlog(
            self._remember,
            failed=self._failed,
            dropped=self._dropped,
            limit=max_pending,
            thread_name=f"graph_agent-{self.hook_name}",
        )

    def use_store(self, store: BaseStore | None) -> str | None:
        """The agent's build hands the hook its store (``ReactAgent(store=...)``): the hook
        writes there unless it was given one. The problem, or ``None``: no store on either
        side, or the hook's own store differing from the agent's."""
        if self.store is None:
            if store is None:
                return (
                    "MemoryWriterHook has no store to write to: give the agent one "
                    "(ReactAgent(store=MemoryStore(...))) or the hook (store=...)"
                )
            self.store = store
        elif store is not None and store is not self.store:
            return (
                f"MemoryWriterHook writes to {self.store!r} but the agent's store is {store!r}: "
                "memory_tools() would search another store than the one the hook fills; "
                "give the hook no store= (it takes the agent's) or the same one"
            )
        return None

    def after_agent(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        try:
            where = memory_namespace(self.namespace, ToolContext({"config": config}))
        except ValueError as error:
            self._backlog.count_failure()
            _log.warning(
                "%s: no memories written for thread %r: %s", self.hook_name, config.thread_id, error
            )
            return None
        turn = _Turn(config.thread_id, where, tuple(messages_of(state)))
        self._backlog.submit((turn.thread_id, where), turn, _merged)
        return None

    def stats(self) -> MemoryWriterStats:
        """What the hook did so far (see ``MemoryWriterStats``)."""
        counts: BacklogCounts = self._backlog.counts()
        return MemoryWriterStats(
            turns=counts.queued,
            written=counts.done,
            changes=self._changes,
            failed=counts.failed,
            coalesced=counts.coalesced,
            dropped=counts.dropped,
            pending=counts.pending,
        )

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued turn is written (or failed); ``False`` if ``timeout``
        seconds passed first."""
        return self._backlog.flush(timeout)

    async def aflush(self, timeout: float | None = None) -> bool:
        """``flush`` for async code: waits without blocking the event loop."""
        return await self._backlog.aflush(timeout)

    def existing(self, namespace: tuple[str, ...], messages: Sequence[Message]) -> list[Item]:
        """The memories kept under ``namespace`` that match ``messages``: closest first by a
        search by query, or, in a store without an index, the newest."""
        store = self._store()
        query = _query_of(messages)
        if query:
            try:
                return list(store.search(namespace, query=query, limit=self.existing_limit))
            except NoIndexError as error:  # no index: the newest instead
                _log.debug(
                    "%s: no search by query (%s); the newest memories instead",
                    self.hook_name,
                    error,
                )
        return list(store.search(namespace, limit=self.existing_limit))

    def _store(self) -> BaseStore:
        if self.store is None:
            raise RuntimeError(
                "MemoryWriterHook has no store: give it store=..., or give it to a ReactAgent "
                "that has one (the agent hands the hook its store)"
            )
        return self.store

    def extract(self, messages: Sequence[Message], existing: Sequence[Item]) -> list[MemoryChange]:
        """The extractor's changes for a turn's ``messages``, given the ``existing``
        memories."""
        if isinstance(self.extractor, ChatModel):
            prompt = memory_prompt(self.extractor, self.instructions, messages, existing)
            found: Any = parsed_changes(call_model(self.extractor, prompt).text)
        else:
            found = _settled(self.extractor(messages, existing))
        if isinstance(found, (str, bytes, Mapping)) or not isinstance(found, Iterable):
            raise ValueError(
                f"the memory extractor returned {type(found).__name__}; it returns a list of "
                "MemoryChange (or dicts with action, content, key)"
            )
        return [MemoryChange.of(change) for change in found]

    def _remember(self, turn: _Turn) -> None:
        store = self._store()
        messages = recent_turns(turn.messages, turn.turns)
        changes = self.extract(messages, self.existing(turn.namespace, messages))
        for change in changes:
            if change.action == "delete":
                assert change.key is not None
                store.delete(turn.namespace, change.key)
            else:
                key = change.key or uuid.uuid4().hex[:12]
                store.put(turn.namespace, key, {"content": change.content})
            self._changes += 1  # one worker thread writes it

    def _failed(self, turn: _Turn, error: Exception) -> None:
        _log.warning(
            "%s: the memories of thread %r (namespace %r) were not written: %s",
            self.hook_name,
            turn.thread_id,
            turn.namespace,
            error,
            exc_info=error,
        )

    def _dropped(self, turn: _Turn) -> None:
        _log.warning(
            "%s: the backlog is full; the turn of thread %r (namespace %r) is dropped, not "
            "remembered (raise max_pending, or give the extractor more speed)",
            self.hook_name,
            turn.thread_id,
            turn.namespace,
        )

"""Tools that give an agent a memory in its store (``ToolContext.store``): it saves, updates,
searches and deletes what it learned, in a namespace made from the run's config (per user,
per thread), so another thread of the same user finds it again.

``memory_tools()`` returns ``save_memory``, ``search_memories`` and ``delete_memory``; give
them to a ``ReactAgent`` with a store, one built with an ``index`` for ``search_memories``
to find memories by meaning (``checkpoint.store``)."""

from __future__ import annotations

import string
import uuid
from collections.abc import Sequence
from typing import Any

from .callback import ToolCallback
from .context import ToolContext
from .function import tool

__all__ = ["memory_namespace", "memory_tools"]

DEFAULT_NAMESPACE = ("memories", "{user_id}")


def memory_namespace(template: Sequence[str], context: ToolContext) -> tuple[str, ...]:
    """``template``'s parts filled from the run: ``{thread_id}`` and any key of its config's
    ``metadata`` (``{user_id}``). A ``ValueError`` names a part the run does not give, and
    how to give it."""
    config = context.config
    values: dict[str, Any] = dict(config.metadata) if config is not None else {}
    if config is not None and config.thread_id is not None:
        values.setdefault("thread_id", config.thread_id)
    filled = []
    for part in template:
        names = [name for _, name, _, _ in string.Formatter().parse(part) if name]
        missing = [name for name in names if values.get(name) in (None, "")]
        if missing:
            raise ValueError(
                f"the memory namespace {tuple(template)!r} names {missing}, which this run "
                f"does not give; run with RunnableConfig(metadata={{'{missing[0]}': ...}})"
            )
        filled.append(part.format(**{name: str(values[name]) for name in names}))
    return tuple(filled)


def _store(context: ToolContext) -> Any:
    store = context.store
    if store is None:
        raise ValueError(
            "this agent has no store to keep memories in; build it with store=... (a "
            "checkpoint store, with an index to search by meaning)"
        )
    return store


def memory_tools(
    namespace: Sequence[str] = DEFAULT_NAMESPACE, *, search_limit: int = 5
) -> list[ToolCallback]:
    """``save_memory``, ``search_memories`` and ``delete_memory``, keeping memories as
    ``{"content": text}`` under ``namespace`` (its parts filled per run:
    ``memory_namespace``). ``search_memories`` asks the store by meaning (``query``): the
    store needs an ``index`` over ``content`` (``fields=["content"]``, or the default
    ``"$"``); it returns at most ``search_limit`` memories, each with its key."""
    template = tuple(namespace)
    if not template or not all(isinstance(p, str) and p for p in template):
        raise ValueError(
            f"memory_tools(namespace=...) takes non-empty strings such as ('memories', "
            f"'{{user_id}}'), got {namespace!r}"
        )
    if not isinstance(search_limit, int) or isinstance(search_limit, bool) or search_limit < 1:
        raise ValueError(
            f"memory_tools(search_limit=...) takes a positive int, got {search_limit!r}"
        )

    @tool
    def save_memory(content: str, context: ToolContext, key: str | None = None) -> str:
        """Remember something worth knowing later, in a few plain words. Give the key of a
        memory to replace it with what is true now."""
        store, where = _store(context), memory_namespace(template, context)
        key = key or uuid.uuid4().hex[:12]
        store.put(where, key, {"content": content})
        return f"saved as {key}"

    @tool
    def search_memories(query: str, context: ToolContext) -> str:
        """Look up what you remember about something; each memory comes with its key."""
        store, where = _store(context), memory_namespace(template, context)
        found = store.search(where, query=query, limit=search_limit)
        if not found:
            return "nothing remembered about that"
        return "\n".join(f"{item.key}: {item.value.get('content', item.value)}" for item in found)

    @tool
    def delete_memory(key: str, context: ToolContext) -> str:
        """Forget the memory with this key (it is wrong, or no longer true)."""
        store, where = _store(context), memory_namespace(template, context)
        if store.get(where, key) is None:
            return f"no memory has the key {key}"
        store.delete(where, key)
        return f"forgot {key}"

    return [save_memory, search_memories, delete_memory]

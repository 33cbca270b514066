"""``RemoteA2AAgent``: an agent served elsewhere over A2A, standing where a ``ReactAgent``
stands: called on a thread, a sub-agent of our flows, a tool (``as_tool()``).

It compiles to a graph of two nodes. ``send`` sends the conversation's new messages to the
remote agent and reads its task to the end; ``ask`` runs when the remote task asks for input
(``input-required``): it pauses our run with an ``interrupt()`` carrying the remote's
question, and the answer it is resumed with goes to the same remote task. ``ask`` sends only
after its ``interrupt()`` has its answer, so a resumed run never sends a message twice.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from a2a.types.a2a_pb2 import AgentCard

from checkpoint import BaseCheckpointSaver, MemorySaver

from .._runtime.task_scope import current_task
from ..agent import AgentTool, BaseAgent
from ..errors import AgentBuildError
from ..events import ModelDelta, ModelEnd, ModelStart, emit
from ..graph import (
    END,
    START,
    CompiledGraph,
    KeyStrategy,
    OverAllState,
    Overwrite,
    RunnableConfig,
    StateGraph,
    interrupt,
    run_coroutine_sync,
)
from ..messages import DATA, FILES, AssistantMessage, Message, ToolResponseMessage, UserMessage
from ..tools import ToolContext
from . import _exchange
from ._card import parse_card, read_card
from ._exchange import DONE, Remote, Reply
from ._parts import answer_part, message_parts
from .errors import RemoteA2AError

__all__ = ["CONTEXT_KEY", "RemoteA2AAgent", "RemoteA2ATool"]

MESSAGES = "messages"
CONTEXT_KEY = "a2a_context_{name}"
"""The state key that keeps the remote context id of our thread for the remote agent
``name``: the next message to that agent continues its conversation. A key per agent, so
that parallel calls of several remote agents (a tool batch) never write one key twice."""
_PENDING = "a2a_pending"  # private: the remote task that waits for our answer
_NAME = re.compile(r"[^A-Za-z0-9_-]+")  # what a card's name may not keep of itself
_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class RemoteA2AAgent(BaseAgent):
    """A remote agent spoken to over A2A (``a2a-sdk``'s client), built from its agent card
    (read at ``url``, its base URL or the card's own URL).

    It runs like any agent (``call``, ``invoke``, ``stream_events``, ``stream_messages`` and
    the async twins, on a thread) and stands where a ``ReactAgent`` stands: a sub-agent of a
    flow, a tool of another agent (``as_tool()``). Each run sends the conversation's new
    messages to the remote agent, streaming when its card says it streams: the answer's text
    arrives as ``model_delta`` events (``model`` is ``a2a:<name>``), each remote event as a
    ``custom`` event (``data["a2a"]``). The remote context id is kept in the thread's state
    (``a2a_context_<name>``), so a follow-up continues the remote conversation. A remote
    task that asks for input pauses the run with an interrupt whose value is
    ``{"question": ..., "agent": ..., "task_id": ..., "context_id": ...}``; resuming with the
    answer (``Command(resume="...")``) sends it to the same remote task.

    In async code, make it with ``await RemoteA2AAgent.aconnect(url, ...)``: the constructor
    reads the card synchronously (a thin driver over the same coroutine), so where an event
    loop runs it raises ``GraphUsageError`` instead of blocking the loop, unless ``card`` is
    given. A card that says the agent has an authenticated extended card gets that card
    read too (with ``headers``), and it is the one used.

    ``name`` and ``description`` default to the card's; ``headers`` go with every request
    (credentials); ``timeout`` is how long, in seconds, the remote may stay silent. A remote
    that is down, a bad card, refused credentials, a silent remote and a failed task raise
    ``RemoteA2AError``, saying what, where and how to fix it; a bad argument raises
    ``AgentBuildError``.
    """

    _fresh: Mapping[str, Any] = {_PENDING: None}

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        description: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        output_key: str | None = None,
        saver: BaseCheckpointSaver | None = None,
        listeners: Sequence[Any] = (),
        card: AgentCard | Mapping[str, Any] | None = None,
    ) -> None:
        _check(url, timeout, name)
        sent = dict(headers or {})
        if card is None:  # where a loop runs (a notebook), read on a thread of its own
            card = run_coroutine_sync(read_card(url, sent, float(timeout)))
        elif not isinstance(card, AgentCard):
            card = parse_card(card, url, "the card given")
        self.card = card
        self.remote = Remote(url, card, sent, float(timeout))
        self.name = name or _NAME.sub("_", card.name).strip("_")[:64] or "remote_agent"
        self.description = description or card.description or None
        self.output_key = output_key
        self.context_key = CONTEXT_KEY.format(name=self.name)
        self.saver = saver if saver is not None else MemorySaver()
        self._listeners = tuple(listeners)
        self._graph = self._compile()

    @classmethod
    async def aconnect(
        cls,
        url: str,
        *,
        name: str | None = None,
        description: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        output_key: str | None = None,
        saver: BaseCheckpointSaver | None = None,
        listeners: Sequence[Any] = (),
    ) -> RemoteA2AAgent:
        """``RemoteA2AAgent(url, ...)`` for async code: its card (and its extended card) read
        on the running event loop, which it never blocks. (The constructor, called where a
        loop runs, says to use this.)"""
        _check(url, timeout, name)
        card = await read_card(url, dict(headers or {}), float(timeout))
        return cls(
            url,
            name=name,
            description=description,
            headers=headers,
            timeout=timeout,
            output_key=output_key,
            saver=saver,
            listeners=listeners,
            card=card,
        )

    def __repr__(self) -> str:
        return f"RemoteA2AAgent({self.name!r}, url={self.remote.url!r})"

    def as_tool(
        self, name: str | None = None, description: str | None = None, *, history: bool = False
    ) -> RemoteA2ATool:
        """This remote agent as a tool of another agent: the model gives it
        ``{"input": "..."}`` and gets the remote's final answer. It runs under the caller's
        thread, so its events are in the caller's stream, a remote question pauses the
        caller (resumed in place), and the remote context id is kept in the caller's state:
        the next call continues the same remote conversation."""
        return RemoteA2ATool(self, name, description, history)

    # -- the graph ---------------------------------------------------------------------------

    def _compile(self) -> CompiledGraph:
        graph = StateGraph({MESSAGES: KeyStrategy.APPEND}, private_keys=(_PENDING,))
        graph.add_node("send", self._send, self._asend)
        graph.add_node("ask", self._ask, self._aask)
        graph.add_edge(START, "send")
        route = {"ask": "ask", END: END}
        graph.add_conditional_edges("send", _next, route)
        graph.add_conditional_edges("ask", _next, route)
        return graph.compile(saver=self.saver, listeners=self._listeners, name=self.name)

    def _outgoing(self, state: OverAllState) -> list[Message]:
        """The conversation since this agent last answered (what the remote has not seen),
        without tool traffic."""
        new: list[Message] = []
        for message in reversed(state.get(MESSAGES) or ()):
            if isinstance(message, AssistantMessage):
                if (message.metadata.get("a2a") or {}).get("agent") == self.name:
                    break
                if message.tool_calls:
                    continue
            if isinstance(message, ToolResponseMessage):
                continue
            new.append(message)
        return new[::-1]

    def _send(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        return run_coroutine_sync(self._asend(state, config))

    async def _asend(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        outgoing = self._outgoing(state)
        parts = [part for m in outgoing for part in message_parts(m, self.name)]
        if not parts:
            raise RemoteA2AError(
                f"remote A2A agent '{self.name}' was given no message to send: give it a "
                "user message (agent.call('...')) or run it after one",
                url=self.remote.url,
            )
        context_id = state.get(self.context_key)
        sent = _exchange.message(parts, context_id, None)
        return self._after(await self._talk(sent, outgoing))

    def _question(self, state: OverAllState) -> tuple[Any, dict[str, Any]]:
        pending = state.get(_PENDING) or {}
        asked = {
            "question": pending.get("question", ""),
            "agent": self.name,
            "task_id": pending.get("task_id"),
            "context_id": pending.get("context_id"),
        }
        asked.update((key, pending[key]) for key in (FILES, DATA) if key in pending)
        return interrupt(asked), pending

    def _ask(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        answer, pending = self._question(state)
        return run_coroutine_sync(self._answer_remote(answer, pending))

    async def _aask(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        answer, pending = self._question(state)
        return await self._answer_remote(answer, pending)

    async def _answer_remote(self, answer: Any, pending: Mapping[str, Any]) -> dict[str, Any]:
        parts = [answer_part(answer)]
        sent = _exchange.message(parts, pending.get("context_id"), pending.get("task_id"))
        said = UserMessage(answer if isinstance(answer, str) else repr(answer))
        return self._after(await self._talk(sent, [said]))

    async def _talk(self, sent: Any, outgoing: Sequence[Message]) -> Reply:
        """One exchange, its events in our run's events."""
        task = current_task.get()
        model = f"a2a:{self.name}"
        if task is not None:
            task.run.event(ModelStart, task, model=model, messages=tuple(outgoing), provider="a2a")

        def say(text: str) -> None:
            if task is not None:
                task.run.event(ModelDelta, task, model=model, text=text)

        def tell(event: Mapping[str, Any]) -> None:
            emit({"a2a": {"agent": self.name, **event}})

        began = time.monotonic()
        try:
            reply = await _exchange.exchange(self.remote, self.name, sent, say, tell)
        except BaseException as error:
            if task is not None:
                took = time.monotonic() - began
                task.run.event(ModelEnd, task, model=model, error=error, duration=took)
            raise
        if task is not None:
            answered = AssistantMessage(reply.text) if reply.state == DONE else None
            took = time.monotonic() - began
            task.run.event(ModelEnd, task, model=model, message=answered, duration=took)
        return reply

    def _after(self, reply: Reply) -> dict[str, Any]:
        """The state update after an exchange: the answer, or the remote task that waits."""
        update: dict[str, Any] = {}
        if reply.context_id:
            update[self.context_key] = reply.context_id
        ids = {"agent": self.name, "task_id": reply.task_id, "context_id": reply.context_id}
        extras: dict[str, Any] = {}
        if reply.files:
            extras[FILES] = reply.files
        if reply.data:
            extras[DATA] = reply.data
        if reply.state == DONE:
            metadata = {"a2a": ids, **extras}
            update[MESSAGES] = [AssistantMessage(reply.text, metadata=metadata)]
            update[_PENDING] = None
        else:
            update[_PENDING] = {**ids, "question": reply.text, **extras}
        return update


def _check(url: Any, timeout: Any, name: Any) -> None:
    """An ``AgentBuildError`` listing every bad argument, before anything is sent."""
    problems = []
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        problems.append(f"url must be the agent's http(s) URL (or its card's), got {url!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        problems.append(f"timeout must be a positive number of seconds, got {timeout!r}")
    if name is not None and not (isinstance(name, str) and _VALID_NAME.match(name)):
        problems.append(
            f"name {name!r} must be 1-64 letters, digits, '_' or '-' (it names the agent's "
            "tool and namespaces)"
        )
    if problems:
        raise AgentBuildError(name or url, problems)


def _next(state: OverAllState) -> str:
    return "ask" if state.get(_PENDING) else END


class RemoteA2ATool(AgentTool):
    """``RemoteA2AAgent.as_tool()``: an ``AgentTool`` that also carries the remote context
    id of the caller's thread in (from the caller's state) and out (to the call's
    ``extra_state``, which the caller's tool node merges into its state)."""

    def __init__(
        self,
        agent: RemoteA2AAgent,
        name: str | None = None,
        description: str | None = None,
        history: bool = False,
    ) -> None:
        super().__init__(agent, name, description, history)
        self.context_key = agent.context_key

    def _entry(self, request: str, context: ToolContext | None) -> tuple[OverAllState, Any]:
        state, config = super()._entry(request, context)
        key = self.context_key
        known = context.state.get(key) if context and context.state is not None else None
        if not known:
            return state, config
        # the remote has the conversation already (history=True): only the request goes
        return OverAllState({MESSAGES: [UserMessage(request)], key: known}), config

    def _counted(self, update: Any, context: ToolContext | None) -> str:
        key = self.context_key
        known = update.get(key)
        if isinstance(known, Overwrite):  # the sub-agent's whole value of the key
            known = known.value
        if context is not None and known:
            context.extra_state[key] = known
        return super()._counted(update, context)

"""What ``graph-agent chat TARGET`` talks to: the user's own agent or graph.

A ``ReactAgent`` is chatted with as it is (its model, tools and hooks): each line is its
input. Anything else that ``TARGET`` names (a compiled graph, a ``StateGraph``, an object
whose ``.graph`` is a compiled graph) is chatted with through its graph, whose state must
keep the conversation under ``messages`` (a declared key strategy): each line is sent as
``{"messages": [UserMessage(line)]}`` and the last ``AssistantMessage`` is the answer.

The thread is kept by the target's own saver when it has a durable one (anything but a
``MemorySaver``, which ``ReactAgent`` uses when built without a saver); then ``--saver`` is
refused, not silently ignored. Otherwise the target's graph is given the ``--saver`` store
(default ``sqlite:~/.graph-agent/chat.sqlite``), so the thread survives the chat.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from checkpoint import BaseCheckpointSaver, MemorySaver

from ..agent import ReactAgent
from ..events import RunEvent
from ..graph import CompiledGraph, RunnableConfig, StateSnapshot
from ..messages import MESSAGES, UserMessage
from ._errors import CliError
from ._failures import mask_url, url_password
from ._load import load_target
from ._options import DEFAULT_SAVER, ChatOptions
from ._saver import check_saver, close_saver, make_saver

__all__ = ["Conversation", "GraphConversation", "Partner", "open_target"]


class Conversation(Protocol):
    """What the chat runs a turn on: a ``ReactAgent``, or a graph behind ``GraphConversation``.
    ``input`` is the user's line, or ``None`` to run the thread's pending step again."""

    def stream_events(self, input: str | None, config: RunnableConfig) -> Iterator[RunEvent]: ...

    def get_state(self, config: RunnableConfig) -> StateSnapshot | None: ...


class GraphConversation:
    """A compiled graph chatted with: a line is sent as ``{"messages": [UserMessage(line)]}``."""

    def __init__(self, graph: CompiledGraph) -> None:
        self.graph = graph

    def stream_events(self, input: str | None, config: RunnableConfig) -> Iterator[RunEvent]:
        inputs = None if input is None else {MESSAGES: [UserMessage(input)]}
        return self.graph.stream_events(inputs, config)

    def get_state(self, config: RunnableConfig) -> StateSnapshot | None:
        return self.graph.get_state(config)


@dataclass(frozen=True)
class Partner:
    """What a chat talks to: the user's agent or graph (or the built-in agent), ready.

    ``what``: how the banner names it (``agent 'helper' (gpt-4o at URL) from app.py:agent``);
    ``model``: its model's name for failure lines (``""`` for a graph); ``thread``: the
    default thread (the graph's name); ``kept``: where the thread is kept, for the banner,
    and ``store`` for failure lines (both masked); ``saver``: the saver the chat made for it
    (closed when the chat ends), or ``None`` when the target keeps its threads in its own;
    ``secrets``: passwords to mask."""

    conversation: Conversation
    what: str
    model: str
    thread: str
    kept: str
    store: str
    saver: BaseCheckpointSaver | None
    secrets: tuple[str | None, ...]


def _model_of(agent: ReactAgent) -> tuple[str, str | None]:
    """The agent's model name (``OpenAIChatModel.model``, else the model's class) and the
    server it talks to (``base_url``, when it has one)."""
    model = agent.model
    name = getattr(model, "model", None)
    base_url = getattr(model, "base_url", None)
    return (
        name if isinstance(name, str) and name else type(model).__name__,
        base_url if isinstance(base_url, str) else None,
    )


def _check_chattable(graph: CompiledGraph, target: str) -> None:
    async_only = list(graph.async_only)
    if async_only:
        raise CliError(
            f"{target}: nodes {async_only} are async only, and graph-agent chat runs a "
            "graph synchronously: give them a sync version (or use a ReactAgent)"
        )
    if MESSAGES not in graph.key_strategies:
        raise CliError(
            f"{target} is a graph whose state has no 'messages' key: graph-agent chat sends "
            "each line as {'messages': [UserMessage(line)]} and prints the last AssistantMessage "
            "in state['messages'], so declare the key, StateGraph(key_strategies={'messages': "
            "KeyStrategy.APPEND}), or point at a ReactAgent"
        )


def _own_saver(graph: CompiledGraph) -> BaseCheckpointSaver | None:
    """The target's saver if it keeps threads beyond this process, else ``None``."""
    saver = graph.saver
    return None if saver is None or isinstance(saver, MemorySaver) else saver


def open_target(options: ChatOptions) -> Partner:
    """Load ``options.target`` and give it the chat's saver when it has no durable one of
    its own; ``CliError`` for what cannot work (one line, as ``graph-agent graph`` says it)."""
    assert options.target is not None
    target = options.target
    if options.model is not None or options.base_url is not None:
        flag = "--model" if options.model is not None else "--base-url"
        raise CliError(
            f"{flag} applies to the built-in agent; {target} brings its own model (set it "
            "where the agent is built, or leave it to OPENAI_BASE_URL and GRAPH_AGENT_MODEL "
            "when it is an OpenAIChatModel())"
        )
    loaded = load_target(target)
    graph, owner = loaded.graph, loaded.owner
    _check_chattable(graph, target)
    own = _own_saver(graph)
    made: BaseCheckpointSaver | None = None
    if own is not None:
        if options.saver is not None:
            raise CliError(
                f"--saver: {target} keeps its threads in its own saver ({type(own).__name__}); "
                "drop --saver, or build it without a saver to choose one here"
            )
        store = repr(own)
        kept = f"its own {store}"
    else:
        spec = options.saver or DEFAULT_SAVER
        made = make_saver(spec)
        try:
            check_saver(made, spec)
        except BaseException:
            close_saver(made)
            raise
        # The graph (an agent's too: agent.graph is the one it runs) keeps this thread in
        # the chat's saver from now on; the object is the CLI's to run, in this process.
        graph.saver = made
        if isinstance(owner, ReactAgent):
            owner.saver = made
        store = mask_url(spec)
        kept = "memory, gone when the chat ends" if spec == "memory" else store
    name = graph.name or "graph"
    secrets: tuple[str | None, ...] = ()
    conversation: Conversation
    if isinstance(owner, ReactAgent):
        model, base_url = _model_of(owner)
        at = f" at {base_url}" if base_url else ""
        what = f"agent '{owner.name}' ({model}{at}) from {target}"
        conversation = owner
        secrets = (url_password(base_url or ""),)
    else:
        model, what = "", f"graph '{name}' from {target}"
        conversation = GraphConversation(graph)
    return Partner(conversation, what, model, name, kept, store, made, secrets)

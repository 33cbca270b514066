"""The Agent Protocol's JSON, as LangGraph's Agent Server speaks it: states and records.

Pure conversions, no web framework and no I/O: a run's input, command and config from what the
``langgraph-sdk`` clients send, and thread states, interrupts, threads, runs, assistants and a
graph's drawing as the dicts they expect; messages and other values go through
``_wire_messages``. The contract is what the official clients send and read (``langgraph-sdk``
0.4.14's source), and docs/serving.md says where we differ.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from ..errors import GraphUsageError
from ..graph import Command, Interrupt, RunnableConfig, StateSnapshot
from ._wire_inbound import messages_from_wire, short_repr
from ._wire_messages import (
    MESSAGE_TYPES,
    NAMESPACE_WIRE,
    MessagesMemo,
    WireDict,
    interrupt_to_wire,
    to_jsonable,
)

__all__ = [
    "INTERRUPT_KEY",
    "NAMESPACE_GRAPH",
    "assistant_id_for",
    "assistant_to_wire",
    "checkpoint_to_wire",
    "command_from_wire",
    "empty_state_to_wire",
    "graph_to_wire",
    "input_from_wire",
    "interrupts_to_wire",
    "run_config_from_wire",
    "run_to_wire",
    "state_to_wire",
    "tasks_to_wire",
    "thread_interrupts",
    "thread_status",
    "thread_to_wire",
    "values_to_wire",
]

# LangGraph's namespace for the default assistant of a graph: its id is uuid5(this, graph_id),
# so a graph gets the same assistant id here as on LangGraph's server.
NAMESPACE_GRAPH: Final = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")

INTERRUPT_KEY: Final = "__interrupt__"


# -- run input, command and config ------------------------------------------------------------


def input_from_wire(
    value: Any,
    *,
    message_keys: Iterable[str] = ("messages",),
    fits: Callable[[Mapping[str, Any]], None] | None = None,
) -> Any:
    """A run's ``input`` (or a state update's ``values``) as ours: the values under
    ``message_keys`` go through ``messages_from_wire``; ``None`` stays ``None`` (resume).
    A list of updates (LangGraph's ``[[key, value], ...]`` form) is not a dict: refused;
    so is one that ``fits`` refuses (a graph's ``check_input``: its input schema)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(
            f"input must be a JSON object of state keys (or null to resume), got "
            f"{type(value).__name__} {short_repr(value)}"
        )
    keys = set(message_keys)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in keys and item is not None:
            try:
                out[key] = messages_from_wire(item)
            except ValueError as error:
                raise ValueError(f"input[{key!r}]: {error}") from None
        else:
            out[key] = item
    if fits is not None:
        try:
            fits(out)
        except GraphUsageError as error:
            raise ValueError(str(error)) from None
    return out


def command_from_wire(
    command: Mapping[str, Any], *, message_keys: Iterable[str] = ("messages",)
) -> Command:
    """A run's ``command`` (``{resume, update}``) as our ``Command``. ``update`` may be a
    dict or LangGraph's list of ``[key, value]`` pairs (later pairs win for a key). A client
    sends no ``resume`` key for ``resume=None`` (the SDK drops ``None`` fields): that is no
    resume here either. ``goto`` is refused (``ValueError``, a 422): as input, a graph's
    ``Command`` takes ``resume`` and ``update`` only (a node returns ``Command(goto=...)`` to
    steer its own run), and a run that silently went elsewhere would be worse."""
    if not isinstance(command, Mapping):
        raise ValueError(f"command must be a JSON object, got {type(command).__name__}")
    unknown = set(command) - {"resume", "update", "goto"}
    if unknown:
        raise ValueError(
            f"command has unknown field(s) {sorted(unknown)}; known: resume, update, goto"
        )
    update = command.get("update")
    if isinstance(update, (list, tuple)):
        pairs: dict[str, Any] = {}
        for pair in update:
            if not (
                isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str)
            ):
                raise ValueError(
                    f"command.update pairs must be [key, value], got {short_repr(pair)}"
                )
            pairs[pair[0]] = pair[1]
        update = pairs
    if update is not None:
        update = input_from_wire(update, message_keys=message_keys)
    if command.get("goto") is not None:
        raise ValueError(
            "command.goto is not supported: a run's command takes resume and update (a node "
            "returns Command(goto=...) to steer its own run). To send a thread to a node, "
            "edit its state as the node before it (POST /threads/{thread_id}/state with "
            "as_node), then run with input null"
        )
    if "resume" in command and command["resume"] is not None:
        return Command(resume=command["resume"], update=update)
    return Command(update=update)


def run_config_from_wire(thread_id: str, body: Mapping[str, Any]) -> RunnableConfig:
    """The ``RunnableConfig`` of a run (or a state read/update) from its request body: the
    thread from the path; the checkpoint from ``checkpoint.checkpoint_id``, ``checkpoint_id``
    or ``config.configurable.checkpoint_id``; ``config.recursion_limit``; and the caller's
    context (``context``, or ``config.configurable`` less the ids LangGraph keeps there) as
    ``metadata``. Both ``context`` and ``configurable`` keys: refused, as LangGraph does."""
    config = body.get("config") or {}
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a JSON object, got {type(config).__name__}")
    configurable = dict(config.get("configurable") or {})
    context = body.get("context") or {}
    if not isinstance(context, Mapping):
        raise ValueError(f"context must be a JSON object, got {type(context).__name__}")
    checkpoint = body.get("checkpoint") or {}
    checkpoint_id = (
        (checkpoint.get("checkpoint_id") if isinstance(checkpoint, Mapping) else None)
        or body.get("checkpoint_id")
        or configurable.get("checkpoint_id")
    )
    ns = (checkpoint.get("checkpoint_ns") if isinstance(checkpoint, Mapping) else None) or (
        configurable.get("checkpoint_ns")
    )
    if ns:
        raise ValueError(f"checkpoint_ns {ns!r}: runs and updates address the root graph only")
    for key in ("thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map"):
        configurable.pop(key, None)
    if configurable and context:
        raise ValueError(
            "Cannot specify both configurable and context. Prefer setting context alone."
        )
    limit = config.get("recursion_limit")
    return RunnableConfig(
        thread_id=thread_id,
        checkpoint_id=checkpoint_id if isinstance(checkpoint_id, str) and checkpoint_id else None,
        metadata=dict(context or configurable),
        recursion_limit=limit if isinstance(limit, int) and limit > 0 else None,
    )


# -- values, interrupts, thread state -------------------------------------------------------


def values_to_wire(
    values: Mapping[str, Any],
    *,
    thread_id: str = "",
    interrupts: Iterable[Interrupt] = (),
    memo: Callable[[str], MessagesMemo] | None = None,
) -> WireDict:
    """A state's values as JSON (messages as LangChain dicts); with interrupts waiting for
    an answer, ``"__interrupt__": [{value, id}, ...]`` too, as LangGraph's last ``values``
    of a paused run and ``runs.wait`` carry them. ``memo(key)``: the ``MessagesMemo`` that
    converts the message list under ``key`` (a run's successive states)."""
    if memo is None:
        wire = {str(k): to_jsonable(v, thread_id=thread_id) for k, v in values.items()}
    else:
        wire = {
            str(k): memo(str(k)).convert(v)
            if _all_messages(v)
            else to_jsonable(v, thread_id=thread_id)
            for k, v in values.items()
        }
    waiting = interrupts_to_wire(interrupts, thread_id=thread_id)
    if waiting:
        wire[INTERRUPT_KEY] = waiting
    return wire


def _all_messages(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(item, MESSAGE_TYPES) for item in value)
    )


def interrupts_to_wire(interrupts: Iterable[Interrupt], *, thread_id: str = "") -> list[WireDict]:
    """The interrupts waiting for an answer (``interrupt()`` calls). An ``interrupt_before``
    / ``interrupt_after`` pause is not one on LangGraph's wire (the thread is ``interrupted``
    with ``next`` set, and a run with ``input: null`` goes on): it is left out."""
    return [interrupt_to_wire(i, thread_id=thread_id) for i in interrupts if i.when == "during"]


def checkpoint_to_wire(
    thread_id: str, checkpoint_id: str | None, namespace: Sequence[str] = ()
) -> WireDict:
    """The SDK's ``Checkpoint``: ``{thread_id, checkpoint_ns, checkpoint_id, checkpoint_map}``
    (``checkpoint_ns`` is ``""`` for the root graph, ``"node:task|node:task"`` below)."""
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "|".join(namespace),
        "checkpoint_id": checkpoint_id,
        "checkpoint_map": None,
    }


def _root_thread(snapshot: StateSnapshot) -> str:
    """The client's thread id of ``snapshot`` (a subgraph's checkpoints live in a saver
    thread named ``"<thread>|<node>:<task>..."``)."""
    suffix = "|" + "|".join(snapshot.namespace)
    if snapshot.namespace and snapshot.thread_id.endswith(suffix):
        return snapshot.thread_id[: -len(suffix)]
    return snapshot.thread_id


def _task_id(thread_id: str, checkpoint_id: str, name: str, index: int) -> str:
    return str(
        uuid.uuid5(NAMESPACE_WIRE, f"task\x1f{thread_id}\x1f{checkpoint_id}\x1f{name}\x1f{index}")
    )


def tasks_to_wire(snapshot: StateSnapshot, thread_id: str) -> list[WireDict]:
    """One task per node in ``next``: its interrupts, and for a node that runs a paused
    subgraph the subgraph's checkpoint (and its state, when the snapshot has it)."""
    ns = tuple(snapshot.namespace)
    depth = len(ns)
    # the root-level task of each interrupt: the node (and the task id, for a subgraph's)
    owners: list[tuple[str, str | None, Interrupt]] = []
    for interrupt in snapshot.interrupts:
        inner = (
            tuple(interrupt.namespace)[depth:] if tuple(interrupt.namespace)[:depth] == ns else ()
        )
        if inner:
            node, _, task = inner[0].partition(":")
            owners.append((node, task or None, interrupt))
        else:
            owners.append((interrupt.node, None, interrupt))
    children = {tuple(child.namespace)[depth : depth + 1]: child for child in snapshot.subgraphs}
    tasks: list[WireDict] = []
    claimed: set[int] = set()
    for index, name in enumerate(snapshot.next):
        mine = [k for k, (node, _, _) in enumerate(owners) if node == name and k not in claimed]
        claimed.update(mine)
        task_id = next((owners[k][1] for k in mine if owners[k][1]), None)
        sub: tuple[str, ...] = (f"{name}:{task_id}",) if task_id else ()
        child = children.get(sub) if sub else None
        tasks.append(
            {
                "id": task_id or _task_id(thread_id, snapshot.checkpoint_id, name, index),
                "name": name,
                "path": ["__pregel_pull", name],
                "error": None,
                "interrupts": interrupts_to_wire((owners[k][2] for k in mine), thread_id=thread_id),
                "checkpoint": checkpoint_to_wire(thread_id, None, (*ns, *sub)) if sub else None,
                "state": state_to_wire(child, thread_id=thread_id) if child is not None else None,
                "result": None,
            }
        )
    return tasks


def state_to_wire(
    snapshot: StateSnapshot,
    *,
    thread_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> WireDict:
    """A snapshot as the SDK's ``ThreadState``: ``values`` (messages as LangChain dicts),
    ``next``, ``tasks`` (one per next node, with its interrupts; a paused subgraph's state
    when the snapshot was read with ``subgraphs=True``), ``checkpoint``,
    ``parent_checkpoint``, ``metadata`` (ours: ``source``, ``nodes``, plus ``step`` and the
    given ``metadata``), ``created_at`` (ISO 8601), ``interrupts``; and LangGraph's deprecated
    ``checkpoint_id`` / ``parent_checkpoint_id``. ``thread_id``: the client's thread id
    (default: the snapshot's, less a subgraph's suffix)."""
    thread = thread_id if thread_id is not None else _root_thread(snapshot)
    ns = tuple(snapshot.namespace)
    return {
        "values": values_to_wire(snapshot.values, thread_id=thread),
        "next": list(snapshot.next),
        "tasks": tasks_to_wire(snapshot, thread),
        "checkpoint": checkpoint_to_wire(thread, snapshot.checkpoint_id, ns),
        "parent_checkpoint": (
            checkpoint_to_wire(thread, snapshot.parent_id, ns) if snapshot.parent_id else None
        ),
        "metadata": {
            **to_jsonable(dict(snapshot.metadata), thread_id=thread),
            "step": snapshot.step,
            **to_jsonable(dict(metadata or {}), thread_id=thread),
        },
        "created_at": snapshot.created_at.isoformat(),
        "interrupts": interrupts_to_wire(snapshot.interrupts, thread_id=thread),
        "checkpoint_id": snapshot.checkpoint_id,
        "parent_checkpoint_id": snapshot.parent_id,
    }


def empty_state_to_wire() -> WireDict:
    """The ``ThreadState`` of a thread with no checkpoint yet (what LangGraph answers:
    ``checkpoint`` is ``null``, which is how ``useStream`` tells an empty thread)."""
    return {
        "values": {},
        "next": [],
        "tasks": [],
        "checkpoint": None,
        "parent_checkpoint": None,
        "metadata": None,
        "created_at": None,
        "interrupts": [],
        "checkpoint_id": None,
        "parent_checkpoint_id": None,
    }


def thread_interrupts(state: Mapping[str, Any]) -> dict[str, list[WireDict]]:
    """A ``Thread``'s ``interrupts``: ``{task_id: [interrupt, ...]}`` from a wire
    ``ThreadState`` (``state_to_wire``'s), for the tasks that have some."""
    return {t["id"]: list(t["interrupts"]) for t in state.get("tasks") or () if t["interrupts"]}


def thread_status(
    snapshot: StateSnapshot | None, *, busy: bool = False, failed: bool = False
) -> str:
    """A thread's ``status`` as LangGraph spells it: ``"busy"`` while a run is pending or
    running on it, ``"error"`` when its last run failed, ``"interrupted"`` when its state has
    nodes to run (a pause, ``interrupt_before``/``after``, or a run that stopped between
    steps), ``"idle"`` otherwise."""
    if busy:
        return "busy"
    if failed:
        return "error"
    if snapshot is not None and snapshot.next:
        return "interrupted"
    return "idle"


# -- threads, runs, assistants, graphs --------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def thread_to_wire(
    thread_id: str,
    *,
    created_at: datetime,
    updated_at: datetime,
    metadata: Mapping[str, Any],
    status: str,
    values: Mapping[str, Any] | None = None,
    interrupts: Mapping[str, list[WireDict]] | None = None,
    state_updated_at: datetime | None = None,
    config: Mapping[str, Any] | None = None,
) -> WireDict:
    """The SDK's ``Thread``. ``values`` is the wire values of its latest state (``None``
    before its first checkpoint), ``interrupts`` ``thread_interrupts(state)``."""
    return {
        "thread_id": thread_id,
        "created_at": _iso(created_at),
        "updated_at": _iso(updated_at),
        "state_updated_at": _iso(state_updated_at or updated_at),
        "metadata": to_jsonable(dict(metadata)),
        "status": status,
        "config": to_jsonable(dict(config or {})),
        "values": dict(values) if values is not None else None,
        "interrupts": dict(interrupts or {}),
    }


def run_to_wire(
    run_id: str,
    *,
    thread_id: str,
    assistant_id: str,
    created_at: datetime,
    updated_at: datetime,
    status: str,
    metadata: Mapping[str, Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    multitask_strategy: str = "enqueue",
) -> WireDict:
    """The SDK's ``Run``. ``status``: ``pending``, ``running``, ``success`` (also when the
    run ended paused on an interrupt: the thread is then ``interrupted``), ``error``,
    ``timeout`` or ``interrupted`` (cancelled)."""
    return {
        "run_id": run_id,
        "thread_id": thread_id,
        "assistant_id": assistant_id,
        "created_at": _iso(created_at),
        "updated_at": _iso(updated_at),
        "status": status,
        "metadata": to_jsonable(dict(metadata or {})),
        "kwargs": to_jsonable(dict(kwargs or {})),
        "multitask_strategy": multitask_strategy,
    }


def assistant_id_for(graph_id: str) -> str:
    """The id of a graph's default assistant, the one LangGraph's server gives it."""
    return str(uuid.uuid5(NAMESPACE_GRAPH, graph_id))


def assistant_to_wire(
    graph_id: str,
    *,
    created_at: datetime,
    name: str | None = None,
    description: str | None = None,
    config: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    version: int = 1,
) -> WireDict:
    """The SDK's ``Assistant`` for a served graph's default assistant (LangGraph makes one per
    graph: ``metadata`` ``{"created_by": "system"}``, ``version`` 1)."""
    return {
        "assistant_id": assistant_id_for(graph_id),
        "graph_id": graph_id,
        "config": to_jsonable(dict(config or {})),
        "context": to_jsonable(dict(context or {})),
        "created_at": _iso(created_at),
        "updated_at": _iso(created_at),
        "metadata": to_jsonable(
            dict(metadata if metadata is not None else {"created_by": "system"})
        ),
        "version": version,
        "name": name if name is not None else graph_id,
        "description": description,
    }


def graph_to_wire(graph: Any) -> WireDict:
    """``CompiledGraph.get_graph()`` (a networkx ``DiGraph``) as ``assistants.get_graph``
    answers it, LangChain's ``Graph.to_json()``: ``{"nodes": [{id, type, data}], "edges":
    [{source, target, conditional?, data?}]}``; ``__end__`` has only an ``id``."""
    nodes: list[WireDict] = []
    for node in graph.nodes:
        name = str(node)
        nodes.append(
            {"id": name}
            if name == "__end__"
            else {"id": name, "type": "runnable", "data": {"name": name}}
        )
    edges: list[WireDict] = []
    for source, target, attrs in graph.edges(data=True):
        edge: WireDict = {"source": str(source), "target": str(target)}
        if attrs.get("label") is not None:
            edge["data"] = str(attrs["label"])
        if attrs.get("conditional"):
            edge["conditional"] = True
        edges.append(edge)
    return {"nodes": nodes, "edges": edges}

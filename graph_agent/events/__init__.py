"""Run events: one stream for streaming, logging, tracing and servers.

Every event is a frozen ``RunEvent`` with ``kind``, ``run_id``, ``thread_id``,
``namespace`` (``()`` for the root graph; a subgraph's or sub-agent's path otherwise),
``node`` and ``task_id`` (``None`` outside a task) and ``time`` (epoch seconds). Read them
with ``CompiledGraph.stream_events`` / ``ReactAgent.stream_events`` (and the async twins),
or pass listeners (objects with ``on_event(event)``) to ``compile(listeners=[...])`` or
``ReactAgent.builder().listeners(...)``, or to every run in the process with
``install_listener(listener)``. A node writes its own with ``emit(data)``.

What an event carries is a copy of the run's own objects as they were when it was built
(every dict, list and set in ``input``, ``values``, ``update``, ``data`` and the interrupts;
see ``_detached``): a listener or a stream's reader that changes it changes its event only,
never the run's state, its checkpoints or what the next node sees. The model events carry
frozen messages, which cannot change.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from .._runtime.bus import Listener
from .._runtime.task_scope import current_task
from ._detached import detached
from .listeners import install_listener, installed_listeners, uninstall_listener

__all__ = [
    "EVENT_TYPES",
    "CheckpointEvent",
    "CustomEvent",
    "InterruptEvent",
    "Listener",
    "ModelDelta",
    "ModelEnd",
    "ModelStart",
    "NodeEnd",
    "NodeError",
    "NodeStart",
    "RunEnd",
    "RunError",
    "RunEvent",
    "RunStart",
    "ToolEnd",
    "ToolStart",
    "emit",
    "install_listener",
    "installed_listeners",
    "uninstall_listener",
]

_frozen = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)


@_frozen
class RunEvent:
    """What every event carries; ``kind`` names the event."""

    KIND: ClassVar[str] = ""  # each class's own ``kind``
    kind: str
    run_id: str
    thread_id: str
    namespace: tuple[str, ...] = ()
    node: str | None = None
    task_id: str | None = None
    time: float = 0.0


@_frozen
class RunStart(RunEvent):
    """A run began with ``input`` (a dict, ``None`` to resume, or a ``Command``). ``graph``
    is the graph's name (``compile(name=...)``; an agent's name; a subgraph's node name when
    it has none); ``agent`` says the graph is a ``ReactAgent``'s; ``call_id`` is the id of
    the tool call that runs it (an agent called as a tool: the ``ToolStart.call_id`` its
    events nest under), else ``""``."""

    kind: Literal["run_start"] = "run_start"
    input: Any = None
    graph: str = ""
    agent: bool = False
    call_id: str = ""


@_frozen
class RunEnd(RunEvent):
    """A run ended: finished (``interrupts`` empty) or paused; ``values`` is the state."""

    kind: Literal["run_end"] = "run_end"
    interrupts: tuple[Any, ...] = ()
    values: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@_frozen
class RunError(RunEvent):
    """A run stopped on ``error``."""

    kind: Literal["run_error"] = "run_error"
    error: BaseException | None = None


@_frozen
class NodeStart(RunEvent):
    """A task started running ``node``."""

    kind: Literal["node_start"] = "node_start"


@_frozen
class NodeEnd(RunEvent):
    """A task finished; ``update`` is (a copy of) what the node returned."""

    kind: Literal["node_end"] = "node_end"
    update: Any = None


@_frozen
class NodeError(RunEvent):
    """A task's ``attempt`` (1 for the first) failed with ``error``; with a ``RetryPolicy``
    a later attempt may follow."""

    kind: Literal["node_error"] = "node_error"
    error: BaseException | None = None
    attempt: int = 1


@_frozen
class ModelStart(RunEvent):
    """An agent's model is called with ``messages``; ``provider`` names who serves it
    (``"openai"`` for ``OpenAIChatModel``, a model's ``provider_name``)."""

    kind: Literal["model_start"] = "model_start"
    model: str = ""
    messages: tuple[Any, ...] = ()
    provider: str = ""


@_frozen
class ModelDelta(RunEvent):
    """A streamed piece of the model's answer: ``text``, or a ``tool_call_delta``."""

    kind: Literal["model_delta"] = "model_delta"
    model: str = ""
    text: str = ""
    tool_call_delta: Any = None


@_frozen
class ModelEnd(RunEvent):
    """The model answered ``message`` (an ``AssistantMessage``) in ``duration`` seconds; or,
    with ``error`` set, the call failed (``message`` is ``None``) and any text its deltas
    streamed is not part of the answer (a retry interceptor may call the model again)."""

    kind: Literal["model_end"] = "model_end"
    model: str = ""
    message: Any = None
    usage: Any = None
    duration: float = 0.0
    error: BaseException | None = None


@_frozen
class ToolStart(RunEvent):
    """A tool call began."""

    kind: Literal["tool_start"] = "tool_start"
    call_id: str = ""
    name: str = ""
    arguments: str = ""


@_frozen
class ToolEnd(RunEvent):
    """A tool call ended: ``result`` is what the model gets; ``error`` the failure, if any
    (even when it was turned into a response for the model)."""

    kind: Literal["tool_end"] = "tool_end"
    call_id: str = ""
    name: str = ""
    result: str | None = None
    error: BaseException | None = None
    duration: float = 0.0
    return_direct: bool = False


@_frozen
class InterruptEvent(RunEvent):
    """The run paused: ``interrupt`` is the ``Interrupt`` (one event per pending one)."""

    kind: Literal["interrupt"] = "interrupt"
    interrupt: Any = None


@_frozen
class CheckpointEvent(RunEvent):
    """A checkpoint was written."""

    kind: Literal["checkpoint"] = "checkpoint"
    checkpoint_id: str = ""
    step: int = 0


@_frozen
class CustomEvent(RunEvent):
    """What a node handed to ``emit(data)``."""

    kind: Literal["custom"] = "custom"
    data: Any = None


# The fields whose values are the run's own objects: an event holds copies of them (built once
# per event, only when some listener reads its kind). The model events' fields are not among
# them: a tuple of frozen messages, a frozen message, tool call and usage cannot change.
_PAYLOADS = frozenset({"input", "values", "interrupts", "update", "interrupt", "data"})

EVENT_TYPES: tuple[type[RunEvent], ...] = (
    RunStart, RunEnd, RunError, NodeStart, NodeEnd, NodeError, ModelStart, ModelDelta,
    ModelEnd, ToolStart, ToolEnd, InterruptEvent, CheckpointEvent, CustomEvent,
)  # fmt: skip
"""Every kind of event a run sends, one class each (a run's log keeps them all)."""


def _quick_init(cls: type[Any]) -> None:
    """Give ``cls`` an ``__init__`` with the dataclass's signature and defaults that sets each
    slot through its descriptor instead of ``object.__setattr__``: about 40% cheaper, and a
    run builds an event for every step a listener reads. The payload fields get
    ``detached`` copies of what they are given."""
    namespace: dict[str, Any] = {"_MISSING": dataclasses.MISSING, "_detached": detached}
    params: list[str] = []
    body: list[str] = []
    for field in dataclasses.fields(cls):
        name = field.name
        slot = getattr(cls, name)
        assert isinstance(slot, types.MemberDescriptorType), (cls, name)
        namespace[f"_set_{name}"] = slot.__set__
        value = f"_detached({name})" if name in _PAYLOADS else name
        if field.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = field.default
            params.append(f"{name}=_default_{name}")
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = field.default_factory
            params.append(f"{name}=_MISSING")
            value = f"_factory_{name}() if {name} is _MISSING else {value}"
        else:
            params.append(name)
        body.append(f"    _set_{name}(self, {value})\n")
    exec(f"def __init__(self, *, {', '.join(params)}):\n{''.join(body)}", namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init


for _event_class in EVENT_TYPES:
    # what RunScope.event compares with a listener's event_kinds before building an event
    _event_class.KIND = _event_class.__dataclass_fields__["kind"].default  # type: ignore[attr-defined]
    _quick_init(_event_class)


def emit(data: Any) -> None:
    """From inside a node (or a tool, or a hook): send ``data`` to the run's listeners and
    event streams as a ``custom`` event. Outside a run, or when nobody listens, it does
    nothing."""
    task = current_task.get()
    if task is not None:
        task.run.event(CustomEvent, task, data=data)

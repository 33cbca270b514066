"""What running an agent as a node or a tool reads of it: ``AgentRef``, the shape of a
``BaseAgent`` as ``_subagent`` and ``_as_tool`` see it (a protocol, so that they need nothing
of ``base``, which offers ``as_tool``), and the input and config an agent takes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, Protocol

from ..errors import GraphRecursionError
from ..graph import Command, CompiledGraph, RunnableConfig, RunOutcome
from ..messages import AssistantMessage, Message

__all__ = ["AgentInput", "AgentRef", "ConfigLike", "RunningRef"]

ConfigLike = RunnableConfig | Mapping[str, Any] | None
AgentInput = str | Message | Sequence[Message] | Mapping[str, Any] | Command | None


class RunningRef(Protocol):
    """What ``_subagent`` and ``_as_tool`` ask of a running agent (``RunningAgent``, in
    ``base``): how a run of it starts and ends."""

    def config(self, input: AgentInput, config: ConfigLike) -> ConfigLike: ...

    def input(self, value: AgentInput) -> Mapping[str, Any] | Command | None: ...

    def answer(self, outcome: RunOutcome, thread_id: str) -> AssistantMessage: ...

    def raise_limit_error(self, error: GraphRecursionError, config: ConfigLike) -> NoReturn: ...


class AgentRef(Protocol):
    """An agent (a ``BaseAgent``): who it is, where its answer goes, its graph, and how a run
    of it starts and ends (``running``)."""

    name: str
    description: str | None
    output_key: str | None

    @property
    def graph(self) -> CompiledGraph: ...

    @property
    def running(self) -> RunningRef: ...

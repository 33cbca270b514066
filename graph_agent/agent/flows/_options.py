"""The options of the flows, written once: each option's type, default, one-line doc, the form
of its builder method, and which flows take it (``only``; every flow when it names none).
``FlowAgent(...)``'s keywords are the options every flow takes (a test checks the signature
against this record); a flow's own options come as further keywords, and a flow given one it
does not take says so (``taken_by``). ``FlowAgentBuilder``'s methods are made from this
record, every flow's reads its values from it (defaults included), and the options table of
docs/multi-agent.md is rendered from it (a test checks the page). Adding an option of one
flow: a field here, and its check and use in that flow's ``_configure``; then
``python tests/agent/test_option_methods.py`` writes the builder method's types again."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from .._option_record import about, settle, taken_by

if TYPE_CHECKING:
    from checkpoint import BaseCheckpointSaver

    from ...graph import OverAllState
    from ...models import ChatModel
    from ..base import BaseAgent

__all__ = ["FlowOptions"]

_CHOOSERS = ("LlmRoutingAgent", "SupervisorAgent")


@dataclasses.dataclass(frozen=True)
class FlowOptions:
    """Every option of a flow, as given; ``sub_agents`` and ``listeners`` are kept as tuples.
    An option of another kind of flow keeps its default."""

    name: str | None = field(
        default=None,
        metadata=about(
            "the flow's name (it names the flow's tools and namespaces)", shown="required"
        ),
    )
    sub_agents: Iterable[BaseAgent] = field(
        default=(),
        metadata=about(
            "its agents (`ReactAgent`s or other flows), in order",
            form="add",
            arg="agents",
            shown="required",
        ),
    )
    description: str | None = field(
        default=None,
        metadata=about("what the flow does (a router or supervisor above it reads it)", arg="text"),
    )
    saver: BaseCheckpointSaver | None = field(
        default=None,
        metadata=about(
            "where threads are kept (its sub-agents' checkpoints too)",
            shown="a new `MemorySaver()`",
        ),
    )
    listeners: Iterable[Any] = field(
        default=(),
        metadata=about(
            "objects with `on_event(event)` that get every run event, its sub-agents' included",
            form="add",
        ),
    )
    output_key: str | None = field(
        default=None,
        metadata=about(
            "a state key that receives the flow's result (for a flow above it)", arg="key"
        ),
    )
    merge_strategy: Any = field(
        default="dict",
        metadata=about(
            'what its `output_key` receives: `"dict"`, `"list"`, `"concat"` or a function of '
            "the results (a dict by agent name)",
            arg="strategy",
            only=("ParallelAgent",),
        ),
    )
    max_concurrency: int | None = field(
        default=None,
        metadata=about(
            "at most this many sub-agents run at once",
            arg="count",
            shown="all at once",
            only=("ParallelAgent",),
        ),
    )
    max_iterations: int = field(
        default=10,
        metadata=about(
            "a loop's rounds of its sub-agents (at most, with `until`) or a supervisor's model "
            "calls in one run",
            arg="count",
            only=("LoopAgent", "SupervisorAgent"),
        ),
    )
    until: Callable[[OverAllState], bool] | None = field(
        default=None,
        metadata=about(
            "stop after the round at which `until(state)` is true",
            arg="predicate",
            only=("LoopAgent",),
        ),
    )
    model: ChatModel | None = field(
        default=None,
        metadata=about("the model that chooses", shown="required", only=_CHOOSERS),
    )
    instruction: str | None = field(
        default=None,
        metadata=about("instructions for the choosing model", arg="text", only=_CHOOSERS),
    )
    fallback_agent: BaseAgent | None = field(
        default=None,
        metadata=about(
            "the agent that answers when the model names no valid one",
            arg="agent",
            only=("LlmRoutingAgent",),
        ),
    )

    def __post_init__(self) -> None:
        settle(self)

    @classmethod
    def of(cls, flow: type, given: Mapping[str, Any]) -> FlowOptions:
        """The record of the options in ``given`` that ``flow`` takes."""
        return cls(**{f.name: given[f.name] for f in taken_by(flow, cls) if f.name in given})

    @classmethod
    def unknown(cls, flow: type, given: Iterable[str]) -> list[str]:
        """The names in ``given`` that are no option of ``flow``, sorted."""
        return sorted(set(given) - {f.name for f in taken_by(flow, cls)})

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of option ``name``."""
        return cls.__dataclass_fields__[name].default

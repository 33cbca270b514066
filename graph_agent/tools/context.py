"""What a running tool can see: the agent's state, the run's config, a place to write state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..graph import OverAllState, RunnableConfig

__all__ = ["ToolContext"]

STATE = "state"
CONFIG = "config"
EXTRA_STATE = "extraState"
TOOL_CALL_ID = "toolCallId"
STORE = "store"


class ToolContext:
    """The context handed to a tool whose function has a ``ToolContext`` parameter.

    ``context`` is the plain dict (keys ``"state"``, ``"config"``, ``"extraState"``, plus
    the agent's ``tool_context`` entries); the attributes read it: ``state`` (the live
    ``OverAllState``), ``config`` (the ``RunnableConfig``, e.g. ``config.metadata["user_id"]``),
    ``extra_state`` (a dict; what a tool writes there is merged into the agent's state after
    the tool node), ``tool_call_id`` and ``store`` (long-term memory, when configured).
    """

    __slots__ = ("context",)

    def __init__(self, context: Mapping[str, Any] | None = None) -> None:
        entries = dict(context) if context else {}
        if EXTRA_STATE not in entries:  # (setdefault would make a dict even when not needed)
            entries[EXTRA_STATE] = {}
        self.context: dict[str, Any] = entries

    @property
    def state(self) -> OverAllState | None:
        state: OverAllState | None = self.context.get(STATE)
        return state

    @property
    def config(self) -> RunnableConfig | None:
        config: RunnableConfig | None = self.context.get(CONFIG)
        return config

    @property
    def extra_state(self) -> dict[str, Any]:
        extra: dict[str, Any] = self.context[EXTRA_STATE]
        return extra

    @property
    def tool_call_id(self) -> str | None:
        value: str | None = self.context.get(TOOL_CALL_ID)
        return value

    @property
    def store(self) -> Any:
        return self.context.get(STORE)

    def get(self, key: str, default: Any = None) -> Any:
        """An entry of ``context`` (e.g. one of the agent's ``tool_context`` entries)."""
        return self.context.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self.context[key]

    def with_call(self, tool_call_id: str) -> ToolContext:
        """A copy for one tool call: same entries, this call's id, its own ``extra_state``."""
        context = dict(self.context)
        context[TOOL_CALL_ID] = tool_call_id
        context[EXTRA_STATE] = {}
        made = ToolContext.__new__(ToolContext)  # the copy is its own: not copied again
        made.context = context
        return made

    def __repr__(self) -> str:
        keys = sorted(k for k in self.context if k not in (STATE, CONFIG))
        return f"ToolContext(keys={keys}, tool_call_id={self.tool_call_id!r})"

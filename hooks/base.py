"""Hooks: code that runs at fixed points of an agent's loop and may update its state."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from graph_agent.graph import KeyStrategyLike, OverAllState, RunnableConfig

__all__ = ["AgentHook", "Hook", "HookPosition", "HookResult", "JumpTo", "ModelHook"]

HookResult = Mapping[str, Any] | None


class HookPosition(str, enum.Enum):
    """Where a hook runs: once around the whole run, or around every model call."""

    BEFORE_AGENT = "before_agent"
    AFTER_AGENT = "after_agent"
    BEFORE_MODEL = "before_model"
    AFTER_MODEL = "after_model"


class JumpTo(str, enum.Enum):
    """Where a hook may send the run instead of the next step: ``{"jump_to": JumpTo.END}``.

    ``MODEL`` goes to the model (through the before-model hooks), ``TOOL`` to the tool node,
    ``END`` to the end of the run (through the after-agent hooks). The jump happens once.
    """

    MODEL = "model"
    TOOL = "tool"
    END = "end"


class Hook:
    """Base class of every hook. Override any of the four methods; each takes the agent's
    ``OverAllState`` and the run's ``RunnableConfig`` and returns a dict of state updates (or
    ``None``), sync or ``async``. ``{"jump_to": JumpTo.X}`` in the dict redirects the run
    once, to a target listed in ``can_jump_to``.

    ``positions`` defaults to the methods the class overrides; ``name`` to the class name;
    hooks run in ``order`` (then in the order given), the after-hooks in reverse.
    ``key_strategies`` declares how the state keys the hook writes are merged.
    """

    name: str | None = None
    order: int = 0
    positions: tuple[HookPosition, ...] | None = None
    key_strategies: ClassVar[Mapping[str, KeyStrategyLike]] = {}
    can_jump_to: tuple[JumpTo, ...] = ()

    def before_agent(
        self, state: OverAllState, config: RunnableConfig
    ) -> HookResult | Awaitable[HookResult]:
        return None

    def after_agent(
        self, state: OverAllState, config: RunnableConfig
    ) -> HookResult | Awaitable[HookResult]:
        return None

    def before_model(
        self, state: OverAllState, config: RunnableConfig
    ) -> HookResult | Awaitable[HookResult]:
        return None

    def after_model(
        self, state: OverAllState, config: RunnableConfig
    ) -> HookResult | Awaitable[HookResult]:
        return None

    @property
    def hook_name(self) -> str:
        return self.name or type(self).__name__

    def tool_names_used(self) -> tuple[str, ...]:
        """The tool names this hook acts on; the agent checks at ``build()`` that it has
        each of them (a misspelt name would otherwise silently match no call)."""
        return ()

    def implemented_positions(self) -> tuple[HookPosition, ...]:
        """The positions whose method this hook's class overrides."""
        return tuple(
            p for p in HookPosition if getattr(type(self), p.value) is not getattr(Hook, p.value)
        )

    def hook_positions(self) -> tuple[HookPosition, ...]:
        """Where the hook runs: ``positions`` if set, else every implemented position."""
        return tuple(self.positions) if self.positions is not None else self.implemented_positions()

    def __repr__(self) -> str:
        positions = ", ".join(p.value for p in self.hook_positions())
        return f"{type(self).__name__}(name={self.hook_name!r}, positions=[{positions}])"


class AgentHook(Hook):
    """A hook around the whole run: ``before_agent`` when a run starts, ``after_agent`` when
    it ends (not when it pauses)."""


class ModelHook(Hook):
    """A hook around every model call: ``before_model`` may edit what the model will see,
    ``after_model`` may inspect or change what it answered."""

"""An agent's hook nodes: call the hook's method for its position; its dict is the update,
checked (a ``jump_to`` must be one the hook declared)."""

from __future__ import annotations

import inspect
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from checkpoint.effects import Effect

from .._runtime.workers import to_worker
from ..errors import GraphUsageError
from ..graph import OverAllState, RunnableConfig
from ._keys import JUMP_TO
from ._node_kit import Logic

if TYPE_CHECKING:
    from hooks import Hook, HookPosition


class _CallHook(Effect):
    __slots__ = ("config", "method", "state", "where")

    def __init__(
        self, method: Any, where: str, state: OverAllState, config: RunnableConfig
    ) -> None:
        self.method = method
        self.where = where
        self.state = state
        self.config = config

    def run(self, context: Any) -> Any:
        result = self.method(self.state, self.config)
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise GraphUsageError(
                f"hook {self.where} is async; run the agent with acall/ainvoke/astream, or "
                "make it sync"
            )
        return result

    async def arun(self, context: Any) -> Any:
        if inspect.iscoroutinefunction(self.method):
            return await self.method(self.state, self.config)
        # a sync hook may block (a summarizing model call): keep it off the loop
        result = await to_worker(self.method, self.state, self.config)
        return (await result) if inspect.isawaitable(result) else result


def _hook_update(hook: Hook, where: str, result: Any) -> dict[str, Any]:
    if result is None:
        return {}
    if not isinstance(result, Mapping):
        raise GraphUsageError(
            f"hook {where} returned {type(result).__name__}; a hook returns a dict of state "
            "updates or None"
        )
    update = dict(result)
    jump = update.get(JUMP_TO)
    if jump is not None:
        from hooks import JumpTo

        try:
            target = JumpTo(jump)
        except ValueError:
            raise GraphUsageError(
                f"hook {where} returned jump_to={jump!r}; use JumpTo.MODEL, JumpTo.TOOL or "
                "JumpTo.END"
            ) from None
        if target not in hook.can_jump_to:
            allowed = [t.value for t in hook.can_jump_to] or "nothing"
            raise GraphUsageError(
                f"hook {where} jumped to {target.value!r} but its can_jump_to allows {allowed}; "
                f"declare can_jump_to = (JumpTo.{target.name},) on the hook"
            )
        update[JUMP_TO] = target.value
    return update


def hook_node(hook: Hook, position: HookPosition) -> Logic:
    """A hook node: call the hook's method for ``position``; its dict is the update."""
    method = getattr(hook, position.value)
    where = f"'{hook.hook_name}'.{position.value}"

    def logic(state: OverAllState, config: RunnableConfig) -> Generator[Effect, Any, Any]:
        result = yield _CallHook(method, where, state, config)
        return _hook_update(hook, where, result)

    return logic

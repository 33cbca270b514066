"""How an agent's node logic becomes graph nodes: a node's logic is a generator of effects
(``checkpoint.effects``, the one protocol); ``agent_nodes`` hands it to the sync and to the
async driver, and keeps the one rule every agent node shares (a jump happens once).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from checkpoint.effects import Effect, aperform, perform

from .._runtime.workers import NodeCut
from ..graph import OverAllState, RunnableConfig, Updates
from ..messages import Message
from ._keys import JUMP_TO, MESSAGES

Node = Callable[[OverAllState, RunnableConfig], Any]
Logic = Callable[[OverAllState, RunnableConfig], Generator[Effect, Any, Any]]


def both(logic: Logic) -> tuple[Node, Node]:
    """The sync and the async node of one piece of logic (``add_node(name, *both(...))``),
    which perform its effects with plain calls or await them."""

    def node(state: OverAllState, config: RunnableConfig) -> Any:
        return perform(logic(state, config))

    async def anode(state: OverAllState, config: RunnableConfig) -> Any:
        return await aperform(logic(state, config))

    return node, anode


def agent_nodes(logic: Logic) -> tuple[Node, Node]:
    """``both``, for a node of the agent's own graph: a ``jump_to`` that brought the run
    here is cleared by the node's update, unless the update sets one itself (a jump happens
    once). The logic returns a dict (or ``Updates``) of its own, which this completes."""

    def node(state: OverAllState, config: RunnableConfig) -> Any:
        try:
            result = perform(logic(state, config))
        except NodeCut as cut:
            cut.update = jumped_once(state, cut.update)
            raise
        return result if state.get(JUMP_TO) is None else jumped_once(state, result)

    async def anode(state: OverAllState, config: RunnableConfig) -> Any:
        try:
            result = await aperform(logic(state, config))
        except NodeCut as cut:
            cut.update = jumped_once(state, cut.update)
            raise
        return result if state.get(JUMP_TO) is None else jumped_once(state, result)

    return node, anode


def jumped_once(state: OverAllState, update: Any) -> Any:
    """``update``, clearing a ``jump_to`` that brought the run here unless it sets its own;
    a ``Command`` (a handoff to the parent) is left as it is."""
    if state.get(JUMP_TO) is None:
        return update
    if type(update) is dict:
        if JUMP_TO not in update:
            update[JUMP_TO] = None
    elif isinstance(update, Updates) and not any(part and JUMP_TO in part for part in update.parts):
        last = update.parts[-1]
        if isinstance(last, dict):
            last[JUMP_TO] = None
    return update


def last_message(state: OverAllState) -> Message | None:
    """The conversation's last message, ``None`` when it is empty."""
    messages = state.get(MESSAGES) or ()
    return messages[-1] if messages else None

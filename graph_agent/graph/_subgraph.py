"""A graph used as a node of another graph.

The child runs inside its node's task, with the parent's saver: its checkpoints live in the
parent's thread under a namespace (``"<node>:<task id>"``, stored as the thread
``"<parent thread>|<namespace>"``). It sees the parent's state (or ``input_keys`` of it);
what it wrote comes back as the node's update, merged by the parent's strategies (or
``output_keys`` of it). An ``interrupt()`` in the child pauses the parent; resuming the
parent continues the child where it stopped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._context import EventBus, RunScope, TaskScope, current_task
from ..errors import GraphUsageError
from ._core import GraphRun
from ._drivers import adrive, drive
from ._effects import ParentCommand, SubgraphEntry
from ._spec import GraphSpec
from .config import RunnableConfig
from .interrupt import NodeInterrupt
from .state import KeyStrategy, OverAllState, Overwrite
from .types import NodeOutput

NS_SEP = "|"  # joins a thread id and the namespace parts of its subgraphs


class SubgraphNode:
    """The node function of a subgraph: sync ``__call__`` and async ``acall``."""

    def __init__(
        self,
        name: str,
        spec: GraphSpec,
        input_keys: tuple[str, ...] | None,
        output_keys: tuple[str, ...] | None,
        listeners: tuple[Any, ...] = (),
    ) -> None:
        self.name = name
        self.spec = spec
        self.input_keys = input_keys
        self.output_keys = output_keys
        self.listeners = listeners  # the child graph's own (compile(listeners=...))

    def __repr__(self) -> str:
        return f"SubgraphNode({self.name!r}, nodes={list(self.spec.nodes)})"

    def _bus(self, outer: EventBus | None) -> EventBus | None:
        """The child's events go to its own listeners, then on to the parent's bus."""
        if not self.listeners:
            return outer
        if outer is None:
            return EventBus(self.listeners)
        return EventBus((*self.listeners, outer), streaming=outer.streaming, parent=outer)

    def _start(
        self, state: OverAllState, config: RunnableConfig
    ) -> tuple[GraphRun, RunScope, dict[str, Any]]:
        task = current_task.get()
        if task is None:
            raise GraphUsageError(f"subgraph node '{self.name}' ran outside a graph run")
        parent = task.run
        part = f"{self.name}:{task.task_id}"
        values = state.data() if self.input_keys is None else _pick(state, self.input_keys)
        scope = RunScope(
            run_id=parent.run_id,
            thread_id=parent.thread_id,
            namespace=(*parent.namespace, part),
            bus=self._bus(parent.bus),
            saver=parent.saver,
        )
        child_config = RunnableConfig(
            thread_id=f"{config.thread_id}{NS_SEP}{part}", metadata=config.metadata
        )
        run = GraphRun(
            self.spec,
            child_config,
            parent.saver is not None,
            SubgraphEntry(values, task.resume, task.resuming),
            stream=parent.outputs is not None,
            scope=scope,
        )
        scope.outputs = run.collect_child_outputs()
        return run, scope, values

    def _finish(self, run: GraphRun, handed: Mapping[str, Any]) -> dict[str, Any]:
        last = run.last_written
        if last is not None and last.interrupts and (last.next_nodes or last.pending_writes):
            raise NodeInterrupt([dict(r) for r in last.interrupts])
        update = written(handed, run.values, self.spec.strategies)
        if self.output_keys is not None:
            update = {k: v for k, v in update.items() if k in self.output_keys}
        return update

    def __call__(self, state: OverAllState, config: RunnableConfig) -> Any:
        run, scope, handed = self._start(state, config)
        forward = _forwarder(current_task.get())
        try:
            for output in drive(run.effects(), scope.saver, scope):
                forward(output)
        except ParentCommand as command:
            return command.command
        return self._finish(run, handed)

    async def acall(self, state: OverAllState, config: RunnableConfig) -> Any:
        run, scope, handed = self._start(state, config)
        forward = _forwarder(current_task.get())
        try:
            async for output in adrive(run.effects(), scope.saver, scope):
                forward(output)
        except ParentCommand as command:
            return command.command
        return self._finish(run, handed)


def _forwarder(task: TaskScope | None) -> Any:
    outputs = task.run.outputs if task is not None else None
    return outputs if outputs is not None else _drop


def _drop(output: NodeOutput) -> None:
    return None


def _pick(state: OverAllState, keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: state[k] for k in keys if k in state}


def written(
    before: Mapping[str, Any], after: Mapping[str, Any], strategies: Mapping[str, Any]
) -> dict[str, Any]:
    """What a child run wrote: the keys whose values changed from ``before`` to ``after``.

    An APPEND key the child extended gives only its new items; a key merged any other way
    than REPLACE gives its whole value as an ``Overwrite`` (merging it again in the parent
    would count the child's own merge twice)."""
    update: dict[str, Any] = {}
    missing = object()
    for key, value in after.items():
        old = before.get(key, missing)
        if old is value:
            continue
        strategy = strategies.get(key, KeyStrategy.REPLACE)
        if strategy is KeyStrategy.REPLACE:
            if old is missing or old != value:
                update[key] = value
            continue
        if strategy is KeyStrategy.APPEND and isinstance(old, list) and isinstance(value, list):
            n = len(old)
            if len(value) >= n and all(a is b or a == b for a, b in zip(old, value)):
                if len(value) > n:
                    update[key] = value[n:]
                continue
        if old is missing and strategy is KeyStrategy.APPEND:
            update[key] = value
        elif old is missing or old != value:
            update[key] = Overwrite(value)
    return update


__all__ = ["NS_SEP", "SubgraphNode", "written"]

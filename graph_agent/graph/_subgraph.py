"""A graph used as a node of another graph.

The child runs inside its node's task, with the parent's saver: its checkpoints live in the
parent's thread under a namespace (``"<node>:<task id>"``, stored as the thread
``"<parent thread>|<namespace>"``). It sees the parent's state (or ``input_keys`` of it);
what it wrote comes back as the node's update, merged by the parent's strategies (or
``output_keys`` of it). An ``interrupt()`` in the child pauses the parent; resuming the
parent continues the child where it stopped.

What the child wrote is its own writes only: when it stops (pauses or fails), its node keeps
(``TaskScope.keep``, stored with the parent's checkpoint) what the child wrote up to there,
with the id of the child's checkpoint it stopped at. Continued from that checkpoint, the
child's update is those writes and what it wrote since; so a value written into the parent
meanwhile (``update_state``, ``Command(update=...)``) is not overwritten by the child's copy
of the parent's values from before the pause. A child continued from another checkpoint
than the kept one (a process killed before the parent's checkpoint was written) falls back
to what changed since the values it was handed now.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

from .._runtime.bus import EventBus
from .._runtime.ids import derive_id
from .._runtime.interrupts import NodeInterrupt
from .._runtime.run_scope import RunScope
from .._runtime.task_scope import TaskScope, current_task
from .._runtime.workers import NodeCut
from ..errors import GraphUsageError
from ._core import GraphRun
from ._drivers import adrive, drive
from ._effects import Effect, ParentCommand, SubgraphEntry
from ._merge import MISSING, REPLACE, UNCHANGED, KeyRule, combined
from ._spec import GraphSpec
from .config import RunnableConfig
from .state import OverAllState, Overwrite, Updates
from .types import Command, NodeOutput

NS_SEP = "|"  # joins a thread id and the namespace parts of its subgraphs
WRITES_KEY = "subgraph"  # the scope key its task keeps the child's writes under


@dataclass(slots=True, frozen=True)
class Entered:
    """Where a child's thread stood when its run continued it."""

    checkpoint_id: str
    values: Mapping[str, Any]


@dataclass(slots=True, frozen=True)
class ChildWrites:
    """What a stopped child wrote itself (``update``), up to its checkpoint ``at``: what its
    task keeps (``TaskScope.keep``) for the run that continues it."""

    at: str
    update: Mapping[str, Any]

    def stored(self) -> dict[str, Any]:
        """As kept: plain data for any saver (an ``Overwrite`` is not)."""
        update = self.update
        over = {k: v.value for k, v in update.items() if type(v) is Overwrite}
        plain = {k: v for k, v in update.items() if k not in over}
        return {"at": self.at, "writes": plain, "overwrites": over}

    @classmethod
    def read(cls, kept: Any) -> ChildWrites | None:
        """``stored()``'s inverse; ``None`` for anything else (``NOTHING_KEPT``)."""
        if not isinstance(kept, Mapping):
            return None
        over = {k: Overwrite(v) for k, v in kept["overwrites"].items()}
        return cls(kept["at"], {**kept["writes"], **over})


class ChildRun(GraphRun):
    """A subgraph's run, which remembers where its child's thread stood when it continued it
    (``entered``; ``None`` for a fresh start)."""

    __slots__ = ("entered",)

    def __init__(
        self,
        spec: GraphSpec,
        config: RunnableConfig,
        has_saver: bool,
        inputs: SubgraphEntry,
        stream: bool,
        scope: RunScope,
        call_id: str = "",
    ) -> None:
        super().__init__(spec, config, has_saver, inputs, stream, scope)
        self.entered: Entered | None = None
        self.call_id = call_id

    def _enter(self) -> Generator[Effect, Any, Command | Mapping[str, Any] | None]:
        entered = yield from super()._enter()
        if self.head_id is not None:  # loaded: it continues (or had finished) there
            self.entered = Entered(self.head_id, self.values)
        return entered


class SubgraphNode:
    """The node function of a subgraph: sync ``__call__`` and async ``acall``
    (``add_node(name, graph)`` makes one). Public for code that composes graphs (the
    agents' flows subclass it to shape what a sub-agent hands back): ``_finish`` gives what
    a finished child wrote, ``_to_parent`` what a ``Command(graph=Command.PARENT)`` from the
    child becomes, ``with_writes`` that command with the child's writes before it."""

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
    ) -> tuple[ChildRun, RunScope, dict[str, Any]]:
        task = current_task.get()
        if task is None:
            raise GraphUsageError(f"subgraph node '{self.name}' ran outside a graph run")
        parent = task.run
        # A task's own subgraph is named by the task; one run from a part of the task (a
        # tool call: ``task.key``) by that part too, so parallel calls get threads apart.
        where = derive_id(task.task_id, task.key) if task.key else task.task_id
        part = f"{self.name}:{where}"
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
        run = ChildRun(
            self.spec,
            child_config,
            parent.saver is not None,
            SubgraphEntry(values, task.resume, task.resuming),
            stream=parent.outputs is not None,
            scope=scope,
            call_id=task.key.rpartition("/")[2],  # a tool call's id, when a tool runs it
        )
        scope.outputs = run.collect_child_outputs()
        return run, scope, values

    def _finish(self, run: ChildRun, handed: Mapping[str, Any]) -> dict[str, Any]:
        last = run.last_written
        if last is not None and last.interrupts and (last.next_nodes or last.pending_writes):
            self._keep(run, handed)
            raise NodeInterrupt([dict(r) for r in last.interrupts])
        update = self._writes(run, handed, run.values)
        if self.output_keys is not None:
            update = {k: v for k, v in update.items() if k in self.output_keys}
        return update

    def _writes(
        self, run: ChildRun, handed: Mapping[str, Any], values: Mapping[str, Any]
    ) -> dict[str, Any]:
        """What the child wrote itself, from its start up to ``values``: what its task kept
        when it stopped at the checkpoint it continued from, then what changed since; or,
        without such a record, what differs from the values it was handed."""
        rules = self.spec.rules
        entered = run.entered
        if entered is not None:
            kept = ChildWrites.read(_scope().recall())
            if kept is not None and kept.at == entered.checkpoint_id:
                since = written(entered.values, values, rules)
                return dict(combined(Updates(kept.update, since), rules))
        return written(handed, values, rules)

    def _keep(self, run: ChildRun, handed: Mapping[str, Any]) -> None:
        """The child stopped (paused or failed): keep what it wrote, and where it stopped."""
        last = run.last_written
        if last is not None:
            _scope().keep(ChildWrites(last.id, self._writes(run, handed, last.values)).stored())

    def __call__(self, state: OverAllState, config: RunnableConfig) -> Any:
        run, scope, handed = self._start(state, config)
        forward = _forwarder(current_task.get())
        try:
            for output in drive(run.effects(), scope.saver, scope):
                forward(output)
        except ParentCommand as command:
            return self._to_parent(run, handed, command.command)
        except Exception:
            self._keep(run, handed)
            raise
        return self._finish(run, handed)

    def _to_parent(self, run: ChildRun, handed: Mapping[str, Any], command: Command) -> Any:
        """What the node returns when the child sent ``command`` to this graph
        (``Command(graph=Command.PARENT)``): the command, as the child gave it."""
        return command

    def with_writes(self, run: ChildRun, handed: Mapping[str, Any], command: Command) -> Command:
        """``command`` with what the child wrote up to it first in its update (merged by the
        child's key strategies): for a node that must not lose the child's work when the
        child moves the parent on (a handoff)."""
        rules = self.spec.rules
        before = written(handed, run.values, rules)
        update = dict(combined(Updates(before, dict(command.update or {})), rules))
        return Command(update=update, goto=command.goto)

    async def acall(self, state: OverAllState, config: RunnableConfig) -> Any:
        run, scope, handed = self._start(state, config)
        forward = _forwarder(current_task.get())
        try:
            async for output in adrive(run.effects(), scope.saver, scope):
                forward(output)
        except ParentCommand as command:
            return self._to_parent(run, handed, command.command)
        except asyncio.CancelledError:
            last = run.last_written
            if last is not None and not last.next_nodes and not last.pending_writes:
                # cancelled, its last step stored whole and nothing after it (an answer cut
                # short): the child ended there, and so does its node, with what it wrote
                raise NodeCut(self._finish(run, handed)) from None
            raise
        except Exception:
            self._keep(run, handed)
            raise
        return self._finish(run, handed)


def _scope() -> TaskScope:
    """Where the running subgraph task keeps its child's writes."""
    task = current_task.get()
    assert task is not None  # checked by ``SubgraphNode._start``
    return task.child(WRITES_KEY)


def _forwarder(task: TaskScope | None) -> Any:
    outputs = task.run.outputs if task is not None else None
    return outputs if outputs is not None else _drop


def _drop(output: NodeOutput) -> None:
    return None


def _pick(state: OverAllState, keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: state[k] for k in keys if k in state}


def written(
    before: Mapping[str, Any], after: Mapping[str, Any], rules: Mapping[str, KeyRule]
) -> dict[str, Any]:
    """What a child run wrote: the keys whose values changed from ``before`` to ``after``,
    each as its key rule says (``KeyRule.written``): an APPEND key the child extended gives
    only its new items; a key merged any other way than REPLACE gives its whole value as an
    ``Overwrite`` (merging it again in the parent would count the child's own merge twice)."""
    update: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key, MISSING)
        if old is value:
            continue
        wrote = rules.get(key, REPLACE).written(old, value)
        if wrote is not UNCHANGED:
            update[key] = wrote
    return update


__all__ = ["NS_SEP", "ChildRun", "SubgraphNode", "written"]

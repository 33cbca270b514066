"""Where a thread stands while a run or an update works on it: loading, merging, writing
checkpoints and finding what runs next."""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from checkpoint import Checkpoint, CheckpointNotFoundError, created_at_of, new_checkpoint_id

from .._runtime.run_scope import RunScope
from ..errors import InvalidRouteError
from ..events import CheckpointEvent
from ._constants import END
from ._effects import Effect, Frontier, LoadEffect, PutEffect, RouteEffect
from ._merge import DeltaTracker, merge_updates
from ._pauses import waits_still
from ._spec import BranchSpec, GraphSpec
from ._tasks import BASE_KEY, TaskResult, encode_resume, pending_frame
from .config import RunnableConfig
from .state import OverAllState
from .types import Send


class Cursor(DeltaTracker):
    """Where a thread stands while a run or an update works on it, and (as the
    ``DeltaTracker`` it is) what changed since its last checkpoint. (One object rather than
    two: a run waiting on a node is one object less for the collector.)"""

    __slots__ = (
        "check_head",
        "config",
        "has_saver",
        "head",
        "head_id",
        "last_written",
        "scope",
        "spec",
        "step",
        "values",
    )

    def __init__(
        self, spec: GraphSpec, config: RunnableConfig, has_saver: bool, scope: RunScope
    ) -> None:
        self.spec = spec
        self.config = config
        self.has_saver = has_saver
        self.scope = scope
        self.values: dict[str, Any] | Mapping[str, Any] = {}
        self.head_id: str | None = None
        self.head: Checkpoint | None = None  # the checkpoint head_id names, as loaded or written
        self.step = -1
        # A run from an explicit checkpoint_id forks: its first write moves the head.
        self.check_head = config.checkpoint_id is None
        DeltaTracker.__init__(self)
        self.last_written: Checkpoint | None = None  # where the run left the thread

    def load(self) -> Generator[Effect, Any, Checkpoint | None]:
        config = self.config
        checkpoint: Checkpoint | None = yield LoadEffect(config.thread_id, config.checkpoint_id)
        if checkpoint is None:
            if config.checkpoint_id is not None:
                raise CheckpointNotFoundError(
                    f"thread '{config.thread_id}' has no checkpoint {config.checkpoint_id!r}; "
                    "list the valid ids with get_state_history(config), or drop checkpoint_id "
                    "to use the latest",
                    thread_id=config.thread_id,
                    checkpoint_id=config.checkpoint_id,
                )
            return None
        self.values = checkpoint.values
        self.head_id = checkpoint.id
        self.head = checkpoint
        self.step = checkpoint.step
        return checkpoint

    def merge(self, updates: Sequence[tuple[str, Any]]) -> None:
        """Merge the updates all or nothing: a bad update leaves values and delta as they were."""
        step = DeltaTracker()
        self.values = merge_updates(self.values, updates, self.spec.rules, step)
        self.absorb(step)

    def write(
        self,
        frontier: Frontier,
        *,
        source: str,
        nodes: Sequence[str] = (),
        interrupts: Sequence[Mapping[str, Any]] = (),
        resume: Mapping[str, Any] | None = None,
        finished: Sequence[TaskResult] = (),
        base: tuple[str | None, int] | None = None,
        updates: Sequence[tuple[str, Any]] = (),
    ) -> Generator[Effect, Any, str | None]:
        """Checkpoint the current state (a no-op without a saver); return the new id.

        ``frontier`` is what runs next; ``finished`` the writes of a stopped step's tasks
        that finished, and ``base`` where that step started (its task ids depend on it)."""
        if not self.has_saver:
            return None
        names, sends = frontier
        pending = pending_frame(finished, sends) if finished or sends else {}
        if base is not None:
            pending[BASE_KEY] = list(base)
        checkpoint_id = new_checkpoint_id()
        checkpoint = Checkpoint(
            id=checkpoint_id,
            thread_id=self.config.thread_id,
            parent_id=self.head_id,
            step=self.step + 1,
            next_nodes=tuple(names),
            values=self.values,
            created_at=created_at_of(checkpoint_id),
            metadata={"source": source, "nodes": list(nodes)},
            interrupts=tuple(interrupts),
            resume_values=encode_resume(resume) if resume else {},
            pending_writes=pending,
        )
        yield PutEffect(
            checkpoint, self.take(self.values), self.check_head, updates, self.config.lease
        )
        self.last_written = self.head = checkpoint
        self.head_id = checkpoint_id
        self.step += 1
        self.check_head = True
        scope = self.scope
        if scope.bus is not None:
            scope.event(CheckpointEvent, checkpoint_id=checkpoint_id, step=checkpoint.step)
        return checkpoint_id

    def with_writes(
        self,
        frontier: Frontier,
        *,
        resume: Mapping[str, Any],
        finished: Sequence[TaskResult],
        base: tuple[str | None, int],
    ) -> Checkpoint:
        """The checkpoint the running step started from (the head), with the step's record
        as it stands: the writes of its ``finished`` tasks and ``base`` (its task ids depend
        on it), its ``resume`` values (answers and what its tasks kept), and only the pauses
        those do not answer (the step runs past the others). What ``put_writes`` stores."""
        head = self.head
        assert head is not None, "a step starts from a stored checkpoint (the input's first)"
        pending = pending_frame(finished, frontier[1])
        pending[BASE_KEY] = list(base)
        return dataclasses.replace(
            head,
            interrupts=tuple(r for r in head.interrupts if waits_still(r, resume)),
            resume_values=encode_resume(resume) if resume else {},
            pending_writes=pending,
        )

    def successors(
        self,
        ran: Sequence[tuple[str, list[str | Send] | None]],
        state: OverAllState,
    ) -> Generator[Effect, Any, Frontier]:
        """What runs after ``ran`` ((node, goto) pairs: a node's ``goto`` replaces its edges):
        node names in node order, END dropped, and the ``Send``s in order."""
        spec = self.spec
        targets: dict[str, None] = {}
        sends: list[Send] = []
        branches: list[BranchSpec] = []
        for name, goto in ran:
            if goto is not None:
                for target in goto:
                    if isinstance(target, Send):
                        sends.append(self._checked_send(name, target))
                    elif target == END or target in spec.nodes:
                        targets[target] = None
                    else:
                        raise InvalidRouteError(
                            f"node '{name}' returned Command(goto={target!r}), which is neither "
                            f"a node nor END; use one of {[*spec.nodes, END]}",
                            node=name,
                            label=target,
                        )
                continue
            for target in spec.static_next.get(name, ()):
                targets[target] = None
            branch = spec.branches.get(name)
            if branch is not None:
                branches.append(branch)
        if branches:
            results = yield RouteEffect(branches, state, self.config)
            for branch, result in zip(branches, results):
                for target in resolve_route(spec, branch, result):
                    if isinstance(target, Send):
                        sends.append(self._checked_send(branch.source, target))
                    else:
                        targets[target] = None
        targets.pop(END, None)
        return sorted(targets, key=lambda n: spec.nodes[n].index), sends or ()

    def _checked_send(self, source: str, send: Send) -> Send:
        if send.node not in self.spec.nodes:
            raise InvalidRouteError(
                f"'{source}' sent Send({send.node!r}, ...) to a node the graph does not have; "
                f"known nodes: {list(self.spec.nodes)}",
                node=source,
                label=send.node,
            )
        return send


def resolve_route(spec: GraphSpec, branch: BranchSpec, result: Any) -> list[str | Send]:
    """The targets a router's result names; ``InvalidRouteError`` for anything unknown."""
    labels = list(result) if isinstance(result, (list, tuple, set, frozenset)) else [result]
    targets: list[str | Send] = []
    for label in labels:
        if isinstance(label, Send):
            targets.append(label)
        elif branch.path_map is not None:
            try:
                targets.append(branch.path_map[label])
            except (KeyError, TypeError):
                raise InvalidRouteError(
                    f"the router of the conditional edge from '{branch.source}' returned "
                    f"{label!r}, which is not one of its labels {list(branch.path_map)}; "
                    "return one of them or add it to the path map",
                    node=branch.source,
                    label=label,
                ) from None
        elif label == END or (isinstance(label, str) and label in spec.nodes):
            targets.append(label)
        else:
            raise InvalidRouteError(
                f"the router of the conditional edge from '{branch.source}' returned "
                f"{label!r}, which is neither a node nor END; return one of {[*spec.nodes, END]} "
                "or give add_conditional_edges a path_map",
                node=branch.source,
                label=label,
            )
    return targets

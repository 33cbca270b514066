"""``update_state``: a thread edited from outside a run."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from checkpoint import Checkpoint, created_at_of, new_checkpoint_id

from .._runtime.run_scope import RunScope
from ..errors import GraphUsageError
from ._constants import START
from ._cursor import Cursor
from ._effects import Effect, Frontier, PutEffect
from ._spec import GraphSpec
from ._tasks import BASE_KEY, decode_resume
from .config import RunnableConfig
from .state import OverAllState


class StateUpdate(Cursor):
    """``update_state``: merge values into a checkpoint as if ``as_node`` had returned them."""

    __slots__ = ("as_node", "new_checkpoint_id", "update")

    def __init__(
        self,
        spec: GraphSpec,
        config: RunnableConfig,
        update: Mapping[str, Any] | None,
        as_node: str | None,
        scope: RunScope,
    ) -> None:
        super().__init__(spec, config, True, scope)
        if as_node is not None and as_node != START and as_node not in spec.nodes:
            raise GraphUsageError(
                f"update_state(as_node={as_node!r}): no such node; known nodes: {list(spec.nodes)}"
            )
        self.update = update
        self.as_node = as_node
        self.new_checkpoint_id: str | None = None

    def effects(self) -> Generator[Effect, Any, None]:
        checkpoint = yield from self.load()
        writer = self.as_node if self.as_node not in (None, START) else "__update__"
        update = self.update
        if checkpoint is not None and update is not None and self.spec.before_input is not None:
            kept = decode_resume(checkpoint.resume_values)
            update = self.spec.before_input(self.values, update, kept)
        updates = [(writer, update)]
        self.merge(updates)
        if self.as_node is None and checkpoint is not None:  # the thread stays where it is
            self.new_checkpoint_id = yield from self._keep_place(checkpoint, writer, updates)
            return
        frontier: Frontier = ([], [])
        if self.as_node is not None:
            frontier = yield from self.successors([(self.as_node, None)], OverAllState(self.values))
        self.new_checkpoint_id = yield from self.write(
            frontier, source="update", nodes=[writer], updates=updates
        )

    def _keep_place(
        self, checkpoint: Checkpoint, writer: str, updates: list[tuple[str, Any]]
    ) -> Generator[Effect, Any, str | None]:
        """Write the merged values with the checkpoint's next nodes, pause and pending work."""
        checkpoint_id = new_checkpoint_id()
        written = Checkpoint(
            id=checkpoint_id,
            thread_id=self.config.thread_id,
            parent_id=self.head_id,
            step=self.step + 1,
            next_nodes=checkpoint.next_nodes,
            values=self.values,
            created_at=created_at_of(checkpoint_id),
            metadata={"source": "update", "nodes": [writer]},
            interrupts=checkpoint.interrupts,
            resume_values=checkpoint.resume_values,
            pending_writes=_kept_pending(checkpoint),
        )
        yield PutEffect(
            written, self.take(self.values), self.check_head, updates, self.config.lease
        )
        self.last_written = written
        return checkpoint_id


def _kept_pending(checkpoint: Checkpoint) -> dict[str, Any]:
    """A stopped step's record, kept by an update: its tasks keep their ids (the base)."""
    pending = dict(checkpoint.pending_writes)
    if BASE_KEY not in pending and checkpoint.interrupts:
        pending[BASE_KEY] = [checkpoint.id, checkpoint.step + 1]
    return pending

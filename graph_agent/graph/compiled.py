"""A compiled graph: run it, inspect and edit its threads, draw it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import networkx as nx

from checkpoint import BaseCheckpointSaver, Checkpoint, CheckpointNotFoundError

from ..errors import GraphUsageError
from ._core import GraphRun, StateUpdate
from ._drivers import adrive, drive
from ._mermaid import draw_mermaid
from ._spec import GraphSpec
from .config import RunnableConfig
from .state import OverAllState
from .types import Command, Interrupt, NodeOutput, StateSnapshot

__all__ = ["CompiledGraph"]

ConfigLike = RunnableConfig | Mapping[str, Any] | None
Input = Mapping[str, Any] | Command | None


def _snapshot(checkpoint: Checkpoint) -> StateSnapshot:
    return StateSnapshot(
        values=OverAllState(checkpoint.values),
        next=checkpoint.next_nodes,
        checkpoint_id=checkpoint.id,
        parent_id=checkpoint.parent_id,
        created_at=checkpoint.created_at,
        metadata=checkpoint.metadata,
        interrupts=tuple(
            Interrupt(id=i["id"], node=i["node"], when=i["when"], value=i.get("value"))
            for i in checkpoint.interrupts
        ),
        thread_id=checkpoint.thread_id,
        step=checkpoint.step,
    )


class RunOutcome:
    """The end of one run: the state, the nodes still to run (empty when it finished) and
    why it paused (``interrupts``; empty unless it did)."""

    __slots__ = ("interrupts", "next", "values")

    def __init__(
        self, values: OverAllState, next: tuple[str, ...], interrupts: tuple[Interrupt, ...]
    ) -> None:
        self.values = values
        self.next = next
        self.interrupts = interrupts

    @classmethod
    def of(cls, run: GraphRun) -> RunOutcome:
        last = run.last_written
        if last is None:
            return cls(OverAllState(run.values), (), ())
        snapshot = _snapshot(last)
        return cls(OverAllState(run.values), snapshot.next, snapshot.interrupts)

    def __repr__(self) -> str:
        return f"RunOutcome(next={list(self.next)}, interrupts={list(self.interrupts)})"


class CompiledGraph:
    """A validated graph, ready to run. Made by ``StateGraph.compile()``.

    ``invoke``/``stream`` and their async twins run it on a thread (``RunnableConfig``);
    with a saver every super-step is checkpointed, so a thread can be resumed, inspected
    (``get_state``, ``get_state_history``), edited (``update_state``) and forked.
    """

    def __init__(self, spec: GraphSpec, saver: BaseCheckpointSaver | None, digraph: nx.DiGraph):
        self._spec = spec
        self._digraph = digraph
        self.saver = saver

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self._spec.nodes)

    @property
    def recursion_limit(self) -> int:
        return self._spec.default_recursion_limit

    def __repr__(self) -> str:
        return f"CompiledGraph(nodes={list(self._spec.nodes)}, saver={self.saver!r})"

    # -- running ---------------------------------------------------------------------------

    def _run(self, inputs: Input, config: ConfigLike, stream: bool) -> GraphRun:
        return GraphRun(
            self._spec, RunnableConfig.coerce(config), self.saver is not None, inputs, stream
        )

    def _check_sync(self, api: str) -> None:
        if self._spec.has_async:
            raise GraphUsageError(
                f"{api}() cannot run async code without an event loop, and "
                f"{self._spec.has_async} are async; use a{api}() instead, or make them sync"
            )

    def invoke(self, inputs: Input, config: ConfigLike = None) -> OverAllState:
        """Run to END (or to an interrupt) and return the final state.

        ``inputs`` is a dict of updates merged into the thread's state (a finished thread
        starts again at START), ``None`` to resume a paused thread, or ``Command(...)``.
        """
        return OverAllState(self.run(inputs, config).values)

    def run(self, inputs: Input, config: ConfigLike = None) -> RunOutcome:
        """``invoke``, also telling where the run left the thread: ``outcome.values``,
        ``outcome.next`` (empty when it finished) and ``outcome.interrupts``."""
        self._check_sync("invoke")
        run = self._run(inputs, config, stream=False)
        for _ in drive(run.effects(), self.saver, self.saver is not None):
            pass
        return RunOutcome.of(run)

    async def arun(self, inputs: Input, config: ConfigLike = None) -> RunOutcome:
        """Async ``run``."""
        run = self._run(inputs, config, stream=False)
        async for _ in adrive(run.effects(), self.saver, self.saver is not None):
            pass
        return RunOutcome.of(run)

    def stream(self, inputs: Input, config: ConfigLike = None) -> Iterator[NodeOutput]:
        """Like ``invoke``, yielding a ``NodeOutput`` per node as each super-step finishes
        (after its checkpoint is written)."""
        self._check_sync("stream")
        run = self._run(inputs, config, stream=True)
        yield from drive(run.effects(), self.saver, self.saver is not None)

    async def ainvoke(self, inputs: Input, config: ConfigLike = None) -> OverAllState:
        """Async ``invoke``: async nodes are awaited, sync ones run in worker threads."""
        return OverAllState((await self.arun(inputs, config)).values)

    async def astream(self, inputs: Input, config: ConfigLike = None) -> AsyncIterator[NodeOutput]:
        """Async ``stream``."""
        run = self._run(inputs, config, stream=True)
        async for output in adrive(run.effects(), self.saver, self.saver is not None):
            yield output

    # -- threads ---------------------------------------------------------------------------

    def _require_saver(self, api: str) -> BaseCheckpointSaver:
        if self.saver is None:
            raise GraphUsageError(
                f"{api}() needs a saver to read threads from; compile the graph with one, "
                "e.g. compile(saver=MemorySaver())"
            )
        return self.saver

    @staticmethod
    def _found(checkpoint: Checkpoint | None, config: RunnableConfig) -> StateSnapshot | None:
        if checkpoint is None:
            if config.checkpoint_id is not None:
                raise CheckpointNotFoundError(
                    f"thread '{config.thread_id}' has no checkpoint {config.checkpoint_id!r}; "
                    "list the valid ids with get_state_history(config)",
                    thread_id=config.thread_id,
                    checkpoint_id=config.checkpoint_id,
                )
            return None
        return _snapshot(checkpoint)

    def get_state(self, config: ConfigLike) -> StateSnapshot | None:
        """The thread's latest snapshot (or the one at ``config.checkpoint_id``); ``None`` for
        a thread that has no checkpoint."""
        saver = self._require_saver("get_state")
        cfg = RunnableConfig.coerce(config)
        return self._found(saver.get(cfg.thread_id, cfg.checkpoint_id), cfg)

    async def aget_state(self, config: ConfigLike) -> StateSnapshot | None:
        saver = self._require_saver("aget_state")
        cfg = RunnableConfig.coerce(config)
        return self._found(await saver.aget(cfg.thread_id, cfg.checkpoint_id), cfg)

    def get_state_history(
        self, config: ConfigLike, *, limit: int | None = None
    ) -> Iterator[StateSnapshot]:
        """The thread's snapshots, newest first (``config.checkpoint_id``: from before it)."""
        saver = self._require_saver("get_state_history")
        cfg = RunnableConfig.coerce(config)
        for checkpoint in saver.list(cfg.thread_id, limit=limit, before=cfg.checkpoint_id):
            yield _snapshot(checkpoint)

    async def aget_state_history(
        self, config: ConfigLike, *, limit: int | None = None
    ) -> AsyncIterator[StateSnapshot]:
        saver = self._require_saver("aget_state_history")
        cfg = RunnableConfig.coerce(config)
        async for checkpoint in saver.alist(cfg.thread_id, limit=limit, before=cfg.checkpoint_id):
            yield _snapshot(checkpoint)

    def update_state(
        self, config: ConfigLike, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> RunnableConfig:
        """Merge ``values`` into the thread (by key strategy) as a new checkpoint.

        With ``as_node``, the update counts as that node's output: the thread continues with
        that node's successors and any pause is cleared. Without it, where the thread stands
        (its next nodes, its interrupts) is unchanged. From ``config.checkpoint_id`` this
        forks. Returns the config of the new checkpoint.
        """
        self._require_saver("update_state")
        update = StateUpdate(self._spec, RunnableConfig.coerce(config), values, as_node)
        for _ in drive(update.effects(), self.saver, True):
            pass
        return update.config.replace(checkpoint_id=update.new_checkpoint_id)

    async def aupdate_state(
        self, config: ConfigLike, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> RunnableConfig:
        self._require_saver("aupdate_state")
        update = StateUpdate(self._spec, RunnableConfig.coerce(config), values, as_node)
        async for _ in adrive(update.effects(), self.saver, True):
            pass
        return update.config.replace(checkpoint_id=update.new_checkpoint_id)

    # -- drawing ---------------------------------------------------------------------------

    def get_graph(self) -> nx.DiGraph:
        """A copy of the graph as a networkx ``DiGraph`` (START, END and every node; edges
        carry ``conditional`` and ``label``)."""
        return self._digraph.copy()

    def draw_mermaid(self, direction: str = "TD") -> str:
        """Mermaid ``flowchart`` text of the graph, conditional edges dotted and labelled."""
        return draw_mermaid(self._digraph, direction=direction)

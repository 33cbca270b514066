"""A compiled graph: run it, inspect and edit its threads, draw it."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Generator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from checkpoint import BaseCheckpointSaver, Checkpoint, CheckpointNotFoundError, new_run_id
from checkpoint.effects import aperform, perform

from .._runtime.bus import EventBus
from .._runtime.run_loop import RunLoopScope
from .._runtime.run_scope import RunScope
from .._runtime.task_scope import current_task
from ..errors import GraphUsageError
from ..events import RunEvent
from ..events.listeners import run_listeners
from ._core import GraphRun
from ._drivers import adrive, adrive_to_end, drive
from ._effects import LoadEffect, SaverOnly
from ._mermaid import Inside, draw_mermaid
from ._pauses import interrupt_of
from ._spec import GraphSpec
from ._streams import async_event_stream, sync_event_stream
from ._subgraph import NS_SEP, SubgraphNode
from ._tasks import SENDS_KEY
from ._update import StateUpdate
from ._validate import Shape, build_digraph
from .config import RunnableConfig
from .state import OverAllState
from .types import Command, Interrupt, NodeOutput, StateSnapshot

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["CompiledGraph"]

ConfigLike = RunnableConfig | Mapping[str, Any] | None
Input = Mapping[str, Any] | Command | None


def _next_nodes(checkpoint: Checkpoint) -> tuple[str, ...]:
    """The nodes that run when the thread resumes from ``checkpoint``: its next nodes, then
    those its stopped step still has ``Send``s for."""
    sends = checkpoint.pending_writes.get(SENDS_KEY) or ()
    next_nodes = checkpoint.next_nodes
    if sends:
        next_nodes = (*next_nodes, *dict.fromkeys(node for node, _ in sends))
    return next_nodes


def _snapshot(
    spec: GraphSpec, checkpoint: Checkpoint, namespace: tuple[str, ...] = ()
) -> StateSnapshot:
    return StateSnapshot(
        values=OverAllState(spec.public(checkpoint.values)),
        next=_next_nodes(checkpoint),
        checkpoint_id=checkpoint.id,
        parent_id=checkpoint.parent_id,
        created_at=checkpoint.created_at,
        metadata=checkpoint.metadata,
        interrupts=tuple(interrupt_of(i) for i in checkpoint.interrupts),
        thread_id=checkpoint.thread_id,
        step=checkpoint.step,
        namespace=namespace,
    )


def _with_children(
    spec: GraphSpec,
    snapshot: StateSnapshot,
    thread: str,
    namespace: tuple[str, ...],
) -> Generator[LoadEffect, Checkpoint | None, StateSnapshot]:
    """``snapshot`` with the snapshots of the subgraphs it is paused in (their checkpoints
    are read through ``LoadEffect``s)."""
    depth = len(namespace)
    parts = dict.fromkeys(
        i.namespace[depth] for i in snapshot.interrupts if len(i.namespace) > depth
    )
    children = []
    for part in parts:
        node = spec.nodes.get(part.split(":", 1)[0])
        sub = node.fn if node is not None else None
        if not isinstance(sub, SubgraphNode):
            continue
        checkpoint = yield LoadEffect(f"{thread}{NS_SEP}{part}", None)
        if checkpoint is None:
            continue
        child = _snapshot(sub.spec, checkpoint, (*namespace, part))
        children.append(
            (yield from _with_children(sub.spec, child, checkpoint.thread_id, child.namespace))
        )
    return dataclasses.replace(snapshot, subgraphs=tuple(children))


def _drawn_inside(spec: GraphSpec) -> dict[str, list[Inside]]:
    """What ``draw_mermaid`` draws inside each node: a subgraph node's graph, and the graphs
    an owner declared for a node (``GraphSpec.drawn_inside``: a supervisor's agents, called
    from its tool node)."""
    drawn: dict[str, list[Inside]] = {}
    for name, node in spec.nodes.items():
        if isinstance(node.fn, SubgraphNode):
            drawn.setdefault(name, []).append(_inside(name, node.fn.spec))
    for name, children in spec.drawn_inside.items():
        drawn.setdefault(name, []).extend(_inside(title, child) for title, child in children)
    return drawn


def _inside(title: str, spec: GraphSpec) -> Inside:
    graph = build_digraph(spec.nodes, spec.edges, spec.branches)
    return Inside(title, graph, _drawn_inside(spec))


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
        values = OverAllState(run.spec.public(run.values))
        last = run.last_written
        if last is None:
            return cls(values, (), ())
        # what a snapshot of the last checkpoint would say (without making one)
        interrupts = tuple(interrupt_of(i) for i in last.interrupts) if last.interrupts else ()
        return cls(values, _next_nodes(last), interrupts)

    def __repr__(self) -> str:
        return f"RunOutcome(next={list(self.next)}, interrupts={list(self.interrupts)})"


class CompiledGraph:
    """A validated graph, ready to run. Made by ``StateGraph.compile()``.

    ``invoke``/``stream`` and their async twins run it on a thread (``RunnableConfig``);
    with a saver every super-step is checkpointed, so a thread can be resumed, inspected
    (``get_state``, ``get_state_history``), edited (``update_state``) and forked.
    """

    def __init__(
        self,
        spec: GraphSpec,
        saver: BaseCheckpointSaver | None,
        digraph: Shape,
        listeners: Iterable[Any] = (),
    ):
        self._spec = spec
        self._digraph = digraph
        self.saver = saver
        self.listeners: tuple[Any, ...] = tuple(listeners)

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self._spec.nodes)

    @property
    def input_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of a run's new input (``StateGraph(input_schema=...)``), or
        ``None`` when the graph declares none (any dict of state keys)."""
        schema = self._spec.input_schema
        return None if schema is None else schema.json_schema

    def check_input(self, inputs: Mapping[str, Any]) -> None:
        """``GraphUsageError`` naming each field of a run's new input that does not fit the
        graph's input schema; nothing when it fits, or when the graph declares none. (Each
        run checks its new input so; a server checks it before it starts the run.)"""
        schema = self._spec.input_schema
        if schema is not None:
            schema.check(inputs, f"graph '{self._spec.name or 'graph'}'")

    def clean_input(self, inputs: Mapping[str, Any]) -> Mapping[str, Any]:
        """``inputs`` as ``compile(clean_input=...)`` cleans a run's new input (``inputs``
        itself when the graph has none); what the cleaner raises (a refusal) propagates. A
        server keeps a run's input so in the run's record, never as its client sent it."""
        clean = self._spec.clean_input
        return inputs if clean is None else clean(inputs)

    @property
    def name(self) -> str | None:
        """The name given to ``compile(name=...)`` (an agent's graph has the agent's name)."""
        return self._spec.name

    @property
    def recursion_limit(self) -> int:
        return self._spec.default_recursion_limit

    @property
    def key_strategies(self) -> Mapping[str, Any]:
        """The state keys the graph declares, with their strategies (a copy)."""
        return dict(self._spec.strategies)

    @property
    def private_keys(self) -> frozenset[str]:
        """The graph's private keys (``StateGraph(private_keys=...)``): kept in its
        checkpoints, never in the state its runs return or in its snapshots. Run as a node of
        another graph it hands them back like any key it wrote; a composition that must not
        keep them (an agent's flow) drops these."""
        return self._spec.private

    @property
    def async_only(self) -> tuple[str, ...]:
        """The nodes (by name) and routers (``"router of 'node'"``) with only an async
        implementation: a sync run (``invoke``) cannot call them."""
        return tuple(self._spec.has_async)

    def __repr__(self) -> str:
        return f"CompiledGraph(nodes={list(self._spec.nodes)}, saver={self.saver!r})"

    # -- running ---------------------------------------------------------------------------

    def _scope(self, config: RunnableConfig, bus: EventBus | None) -> RunScope:
        """The run's identity and event bus. A graph invoked from inside a node or tool of a
        run whose events somebody reads (an agent called from a tool) sends its events there
        too, under the calling task's namespace."""
        namespace: tuple[str, ...] = ()
        caller = current_task.get()
        if bus is None and caller is not None and caller.run.bus is not None:
            outer = caller.run.bus
            namespace = (*caller.run.namespace, f"{caller.node}:{caller.task_id}")
            listeners = (*self.listeners, outer) if self.listeners else ()
            bus = (
                EventBus(listeners, streaming=outer.streaming, parent=outer) if listeners else outer
            )
        elif bus is None:
            listeners = run_listeners(self.listeners)
            if listeners:
                bus = EventBus(listeners)
        return RunScope(new_run_id(), config.thread_id, namespace, bus, self.saver)

    def _start(
        self, inputs: Input, config: ConfigLike, stream: bool, bus: EventBus | None = None
    ) -> tuple[GraphRun, RunScope]:
        cfg = RunnableConfig.coerce(config)
        scope = self._scope(cfg, bus)
        run = GraphRun(self._spec, cfg, self.saver is not None, inputs, stream, scope)
        return run, scope

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
        return self.run(inputs, config).values

    def run(self, inputs: Input, config: ConfigLike = None) -> RunOutcome:
        """``invoke``, also telling where the run left the thread: ``outcome.values``,
        ``outcome.next`` (empty when it finished) and ``outcome.interrupts``."""
        return self._run_sync(inputs, config, None)

    def _run_sync(self, inputs: Input, config: ConfigLike, bus: EventBus | None) -> RunOutcome:
        self._check_sync("invoke")
        run, scope = self._start(inputs, config, False, bus)
        with RunLoopScope():
            for _ in drive(run.effects(), self.saver, scope):
                pass
        return RunOutcome.of(run)

    async def arun(self, inputs: Input, config: ConfigLike = None) -> RunOutcome:
        """Async ``run``."""
        return await self.run_coroutine(inputs, config, None)

    async def run_coroutine(
        self, inputs: Input, config: ConfigLike = None, bus: EventBus | None = None
    ) -> RunOutcome:
        """The async run itself, which ``arun`` awaits (not part of the documented API): for a
        caller that awaits it without ``arun``'s coroutine around it (the agent's ``ainvoke``:
        one frame less per waiting run), and for ``astream_events``, whose run sends its
        events to ``bus``."""
        run, scope = self._start(inputs, config, False, bus)
        del inputs  # the run holds it as long as it needs it, no longer
        bound = scope.bus is not None and scope.bus.bind_loop(asyncio.get_running_loop())
        try:
            await adrive_to_end(run.effects(), self.saver, scope)
        finally:
            if bound:
                assert scope.bus is not None
                await scope.bus.drain()
        return RunOutcome.of(run)

    def stream(
        self, inputs: Input, config: ConfigLike = None, *, subgraphs: bool = False
    ) -> Iterator[NodeOutput]:
        """Like ``invoke``, yielding a ``NodeOutput`` per node as each super-step finishes
        (after its checkpoint is written). With ``subgraphs=True`` the nodes of subgraphs
        are yielded too (``NodeOutput.namespace`` says where they ran)."""
        self._check_sync("stream")
        run, scope = self._start(inputs, config, True)
        if subgraphs:
            scope.outputs = run.collect_child_outputs()
        with RunLoopScope():
            yield from drive(run.effects(), self.saver, scope)

    async def ainvoke(self, inputs: Input, config: ConfigLike = None) -> OverAllState:
        """Async ``invoke``: async nodes are awaited, sync ones run in worker threads."""
        return (await self.run_coroutine(inputs, config, None)).values

    async def astream(
        self, inputs: Input, config: ConfigLike = None, *, subgraphs: bool = False
    ) -> AsyncIterator[NodeOutput]:
        """Async ``stream``."""
        run, scope = self._start(inputs, config, True)
        if subgraphs:
            scope.outputs = run.collect_child_outputs()
        async for output in adrive(run.effects(), self.saver, scope):
            yield output

    def stream_events(self, inputs: Input, config: ConfigLike = None) -> Iterator[RunEvent]:
        """Run the graph and yield its ``RunEvent``s in order (see ``graph_agent.events``),
        subgraphs' included. The run happens on a worker thread; its error is raised here.
        Closing the stream early stops the run at its next step boundary."""
        self._check_sync("stream_events")
        return sync_event_stream(lambda bus: self._run_sync(inputs, config, bus), self.listeners)

    def astream_events(self, inputs: Input, config: ConfigLike = None) -> AsyncIterator[RunEvent]:
        """Async ``stream_events``."""
        return async_event_stream(
            lambda bus: self.run_coroutine(inputs, config, bus), self.listeners
        )

    # -- threads ---------------------------------------------------------------------------

    def _require_saver(self, api: str) -> BaseCheckpointSaver:
        if self.saver is None:
            raise GraphUsageError(
                f"{api}() needs a saver to read threads from; compile the graph with one, "
                "e.g. compile(saver=MemorySaver())"
            )
        return self.saver

    def _found(self, checkpoint: Checkpoint | None, config: RunnableConfig) -> StateSnapshot | None:
        if checkpoint is None:
            if config.checkpoint_id is not None:
                raise CheckpointNotFoundError(
                    f"thread '{config.thread_id}' has no checkpoint {config.checkpoint_id!r}; "
                    "list the valid ids with get_state_history(config)",
                    thread_id=config.thread_id,
                    checkpoint_id=config.checkpoint_id,
                )
            return None
        return _snapshot(self._spec, checkpoint)

    def get_state(self, config: ConfigLike, *, subgraphs: bool = False) -> StateSnapshot | None:
        """The thread's latest snapshot (or the one at ``config.checkpoint_id``); ``None`` for
        a thread that has no checkpoint. With ``subgraphs=True``, ``snapshot.subgraphs``
        holds the snapshot of every subgraph the thread is paused in."""
        saver = self._require_saver("get_state")
        return perform(self._state(RunnableConfig.coerce(config), subgraphs), SaverOnly(saver))

    async def aget_state(
        self, config: ConfigLike, *, subgraphs: bool = False
    ) -> StateSnapshot | None:
        saver = self._require_saver("aget_state")
        steps = self._state(RunnableConfig.coerce(config), subgraphs)
        return await aperform(steps, SaverOnly(saver))

    def _state(
        self, cfg: RunnableConfig, subgraphs: bool
    ) -> Generator[LoadEffect, Checkpoint | None, StateSnapshot | None]:
        snapshot = self._found((yield LoadEffect(cfg.thread_id, cfg.checkpoint_id)), cfg)
        if snapshot is None or not subgraphs:
            return snapshot
        return (yield from _with_children(self._spec, snapshot, cfg.thread_id, ()))

    def get_state_history(
        self, config: ConfigLike, *, limit: int | None = None
    ) -> Iterator[StateSnapshot]:
        """The thread's snapshots, newest first (``config.checkpoint_id``: from before it)."""
        saver = self._require_saver("get_state_history")
        cfg = RunnableConfig.coerce(config)
        for checkpoint in saver.list(cfg.thread_id, limit=limit, before=cfg.checkpoint_id):
            yield _snapshot(self._spec, checkpoint)

    async def aget_state_history(
        self, config: ConfigLike, *, limit: int | None = None
    ) -> AsyncIterator[StateSnapshot]:
        saver = self._require_saver("aget_state_history")
        cfg = RunnableConfig.coerce(config)
        async for checkpoint in saver.alist(cfg.thread_id, limit=limit, before=cfg.checkpoint_id):
            yield _snapshot(self._spec, checkpoint)

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
        cfg = RunnableConfig.coerce(config)
        scope = self._scope(cfg, None)
        update = StateUpdate(self._spec, cfg, values, as_node, scope)
        for _ in drive(update.effects(), self.saver, scope):
            pass
        return update.config.replace(checkpoint_id=update.new_checkpoint_id)

    async def aupdate_state(
        self, config: ConfigLike, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> RunnableConfig:
        self._require_saver("aupdate_state")
        cfg = RunnableConfig.coerce(config)
        scope = self._scope(cfg, None)
        update = StateUpdate(self._spec, cfg, values, as_node, scope)
        await adrive_to_end(update.effects(), self.saver, scope)
        return update.config.replace(checkpoint_id=update.new_checkpoint_id)

    # -- composing -------------------------------------------------------------------------

    def subgraph_node(
        self,
        name: str,
        *,
        input_keys: tuple[str, ...] | None = None,
        output_keys: tuple[str, ...] | None = None,
    ) -> SubgraphNode:
        """This graph as the node ``name`` of another graph (``add_node(name, node)``): it
        runs inside its node's task, in the parent's thread under a namespace, with the
        parent's saver and events (this graph's own saver is not used there; its listeners
        hear its events first). It sees the parent's state (``input_keys`` of it) and hands
        back every key it wrote (``output_keys`` of them), as ``add_node(name, graph)`` does.
        A composition that shapes what the child hands back subclasses ``SubgraphNode`` from
        this node's ``spec`` and ``listeners``."""
        return SubgraphNode(name, self._spec, input_keys, output_keys, self.listeners)

    def draw_inside(self, node: str, graphs: Iterable[tuple[str, CompiledGraph]]) -> None:
        """Have ``draw_mermaid`` draw ``graphs`` (title, graph) inside ``node``: the graphs
        the node runs itself, which the picture cannot see (a supervisor's agents, called
        from its tool node). Replaces what was declared for ``node`` before; only the picture
        changes, never a run."""
        if node not in self._spec.nodes:
            raise GraphUsageError(
                f"draw_inside(): the graph has no node '{node}' (its nodes: "
                f"{', '.join(self._spec.nodes)})"
            )
        self._spec.drawn_inside[node] = [(title, graph._spec) for title, graph in graphs]

    # -- drawing ---------------------------------------------------------------------------

    def get_graph(self) -> nx.DiGraph:
        """A copy of the graph as a networkx ``DiGraph`` (START, END and every node; edges
        carry ``conditional`` and ``label``)."""
        return self._digraph.to_networkx()

    def draw_mermaid(self, direction: str = "TD", *, subgraphs: bool = True) -> str:
        """Mermaid ``flowchart`` text of the graph, conditional edges dotted and labelled;
        a subgraph node (a flow's sub-agent) is drawn as a box holding its graph, unless
        ``subgraphs=False``."""
        inside = _drawn_inside(self._spec) if subgraphs else None
        return draw_mermaid(self._digraph, direction=direction, inside=inside)

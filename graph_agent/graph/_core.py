"""The engine core: plans super-steps and says what to do, without doing any I/O itself.

A run is a generator of *effects* (load a checkpoint, execute tasks, call routers, put a
checkpoint, emit outputs). The sync and async drivers in ``_drivers`` perform each effect
and send its result back, so both APIs share one implementation of the semantics.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from checkpoint import Checkpoint, CheckpointDelta, CheckpointNotFoundError
from checkpoint._ids import created_at_of, new_checkpoint_id

from ..errors import GraphRecursionError, GraphResumeError, GraphUsageError, InvalidRouteError
from ._constants import END, START
from ._merge import DeltaTracker, merge_updates
from ._spec import BranchSpec, GraphSpec, NodeSpec
from .config import RunnableConfig
from .interrupt import NodeInterrupt
from .state import OverAllState
from .types import Command, NodeOutput


class Task:
    """One node to run in a super-step, with the state it sees."""

    __slots__ = ("config", "node", "resume", "state")

    def __init__(
        self, node: NodeSpec, state: OverAllState, config: RunnableConfig, resume: Sequence[Any]
    ) -> None:
        self.node = node
        self.state = state
        self.config = config
        self.resume = resume


class TaskResult:
    __slots__ = ("interrupt", "node", "update")

    def __init__(self, node: str, update: Any, interrupt: NodeInterrupt | None) -> None:
        self.node = node
        self.update = update
        self.interrupt = interrupt


class LoadEffect:
    """Send back ``saver.get(thread_id, checkpoint_id)``."""

    __slots__ = ("checkpoint_id", "thread_id")

    def __init__(self, thread_id: str, checkpoint_id: str | None) -> None:
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id


class ExecuteEffect:
    """Run the tasks (in parallel when several); send back their ``TaskResult``s in order."""

    __slots__ = ("tasks",)

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks = tasks


class RouteEffect:
    """Call each router on ``state``; send back what each returned, in order."""

    __slots__ = ("branches", "config", "state")

    def __init__(
        self, branches: list[BranchSpec], state: OverAllState, config: RunnableConfig
    ) -> None:
        self.branches = branches
        self.state = state
        self.config = config


class PutEffect:
    """Store the checkpoint; send back ``None``."""

    __slots__ = ("check_head", "checkpoint", "delta", "updates")

    def __init__(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta,
        check_head: bool,
        updates: Sequence[tuple[str, Any]],
    ) -> None:
        self.checkpoint = checkpoint
        self.delta = delta
        self.check_head = check_head
        self.updates = updates  # (node, update) of the step, to name writers in errors

    def writers_of(self, key: str) -> list[str]:
        """The nodes whose updates in this step wrote ``key``."""
        return [n for n, u in self.updates if isinstance(u, Mapping) and key in u]


class EmitEffect:
    """Hand these outputs to a streaming caller."""

    __slots__ = ("outputs",)

    def __init__(self, outputs: list[NodeOutput]) -> None:
        self.outputs = outputs


Effect = LoadEffect | ExecuteEffect | RouteEffect | PutEffect | EmitEffect


def interrupt_record(node: str, when: str, value: Any = None, index: int = 0) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex[:16], "node": node, "when": when, "value": value, "index": index}


class _Cursor:
    """Where a thread stands while a run or an update works on it."""

    __slots__ = (
        "check_head",
        "config",
        "has_saver",
        "head_id",
        "last_written",
        "spec",
        "step",
        "tracker",
        "values",
    )

    def __init__(self, spec: GraphSpec, config: RunnableConfig, has_saver: bool) -> None:
        self.spec = spec
        self.config = config
        self.has_saver = has_saver
        self.values: dict[str, Any] | Mapping[str, Any] = {}
        self.head_id: str | None = None
        self.step = -1
        # A run from an explicit checkpoint_id forks: its first write moves the head.
        self.check_head = config.checkpoint_id is None
        self.tracker = DeltaTracker()
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
        self.step = checkpoint.step
        return checkpoint

    def merge(self, updates: Sequence[tuple[str, Any]]) -> None:
        """Merge the updates all or nothing: a bad update leaves values and delta as they were."""
        step = DeltaTracker()
        self.values = merge_updates(self.values, updates, self.spec.strategies, step)
        self.tracker.absorb(step)

    def write(
        self,
        next_nodes: Sequence[str],
        *,
        source: str,
        nodes: Sequence[str] = (),
        interrupts: Sequence[Mapping[str, Any]] = (),
        resume_values: Mapping[str, Sequence[Any]] | None = None,
        pending_writes: Mapping[str, Any] | None = None,
        updates: Sequence[tuple[str, Any]] = (),
    ) -> Generator[Effect, Any, str | None]:
        """Checkpoint the current state (a no-op without a saver); return the new id."""
        if not self.has_saver:
            return None
        checkpoint_id = new_checkpoint_id()
        checkpoint = Checkpoint(
            id=checkpoint_id,
            thread_id=self.config.thread_id,
            parent_id=self.head_id,
            step=self.step + 1,
            next_nodes=tuple(next_nodes),
            values=self.values,
            created_at=created_at_of(checkpoint_id),
            metadata={"source": source, "nodes": list(nodes)},
            interrupts=tuple(interrupts),
            resume_values=dict(resume_values or {}),
            pending_writes=dict(pending_writes or {}),
        )
        yield PutEffect(checkpoint, self.tracker.take(self.values), self.check_head, updates)
        self.last_written = checkpoint
        self.head_id = checkpoint_id
        self.step += 1
        self.check_head = True
        return checkpoint_id

    def successors(
        self, ran: Sequence[str], state: OverAllState
    ) -> Generator[Effect, Any, list[str]]:
        """The nodes triggered after ``ran`` (static edges, then routers), END dropped."""
        spec = self.spec
        targets: dict[str, None] = {}
        branches: list[BranchSpec] = []
        for name in ran:
            for target in spec.static_next.get(name, ()):
                targets[target] = None
            branch = spec.branches.get(name)
            if branch is not None:
                branches.append(branch)
        if branches:
            results = yield RouteEffect(branches, state, self.config)
            for branch, result in zip(branches, results):
                for target in resolve_route(spec, branch, result):
                    targets[target] = None
        targets.pop(END, None)
        return sorted(targets, key=lambda n: spec.nodes[n].index)


def resolve_route(spec: GraphSpec, branch: BranchSpec, result: Any) -> list[str]:
    """The targets a router's result names; ``InvalidRouteError`` for anything unknown."""
    labels = list(result) if isinstance(result, (list, tuple, set, frozenset)) else [result]
    targets = []
    for label in labels:
        if branch.path_map is not None:
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


class GraphRun(_Cursor):
    """One ``invoke``/``stream``: from the input (or a resume) to END, an interrupt or an error.

    After the effects generator finishes, ``values`` holds the final state.
    """

    __slots__ = ("inputs", "stream")

    def __init__(
        self,
        spec: GraphSpec,
        config: RunnableConfig,
        has_saver: bool,
        inputs: Mapping[str, Any] | Command | None,
        stream: bool,
    ) -> None:
        super().__init__(spec, config, has_saver)
        self.inputs = inputs
        self.stream = stream

    def effects(self) -> Generator[Effect, Any, None]:
        spec = self.spec
        inputs = self.inputs
        checkpoint = (yield from self.load()) if self.has_saver else None
        resume_values: dict[str, list[Any]] = {}
        done: Mapping[str, Any] = {}  # updates of nodes that finished before a pause
        skip_before = False
        if inputs is None or isinstance(inputs, Command):
            frontier, resume_values, skip_before = self._resume(checkpoint, inputs)
            assert checkpoint is not None
            done = checkpoint.pending_writes
        elif isinstance(inputs, Mapping):
            if checkpoint is not None and checkpoint.interrupts:
                waiting = any(i["when"] == "during" for i in checkpoint.interrupts)
                how = "invoke(Command(resume=value), config)" if waiting else "invoke(None, config)"
                raise GraphResumeError(
                    f"thread '{self.config.thread_id}' is paused ({_describe_interrupts(checkpoint)}); "
                    f"resume it with {how} before sending new input"
                )
            self.merge([("__input__", inputs)])
            frontier = yield from self.successors([START], OverAllState(self.values))
        else:
            raise GraphUsageError(
                f"invoke() input must be a dict of state updates, None (resume) or "
                f"Command(...), got {type(inputs).__name__}"
            )

        if not skip_before:
            hits = self._before_hits(frontier)
            if hits:
                yield from self.write(frontier, source="input", interrupts=hits)
                return
        if not frontier:  # the entry routed straight to END: keep the input all the same
            yield from self.write(frontier, source="input")
            return
        limit = self.config.recursion_limit or spec.default_recursion_limit
        steps = 0
        unsaved_input = self.has_saver and bool(self.tracker.appended or self.tracker.replaced)
        while frontier:
            runnable, deferred = self._split_joins(frontier)
            if steps >= limit:
                raise GraphRecursionError(
                    f"thread '{self.config.thread_id}' ran {steps} super-steps without reaching "
                    f"END (recursion_limit={limit}); next were {list(runnable)}. Raise the limit "
                    "(compile(recursion_limit=N) or RunnableConfig(recursion_limit=N)) or check "
                    "the routers for a loop that never ends; the thread can be resumed from "
                    "its last step with invoke(None, config)"
                )
            steps += 1
            state = OverAllState(self.values)
            config = self.config
            tasks = [
                Task(spec.nodes[n], state, config, resume_values.get(n, ()))
                for n in runnable
                if n not in done
            ]
            try:  # run, merge and route; nothing of the step is kept if any of it fails
                results: list[TaskResult] = (yield ExecuteEffect(tasks)) if tasks else []
                if done:  # nodes that finished before the pause keep their updates
                    ran = {r.node: r for r in results}
                    results = [ran.get(n) or TaskResult(n, done[n], None) for n in runnable]
                    done = {}
                paused = [r for r in results if r.interrupt is not None]
                if not paused:
                    updates = [(r.node, r.update) for r in results]
                    step = DeltaTracker()
                    merged = merge_updates(self.values, updates, spec.strategies, step)
                    new_state = OverAllState(merged)
                    triggered = yield from self.successors(runnable, new_state)
            except Exception:
                if unsaved_input:  # keep the input all the same: the thread can retry the step
                    yield from self.write(frontier, source="input")
                raise
            unsaved_input = False
            if paused:
                records = [
                    interrupt_record(r.node, "during", r.interrupt.value, r.interrupt.index)
                    for r in paused
                    if r.interrupt is not None
                ]
                finished = [(r.node, r.update) for r in results if r.interrupt is None]
                yield from self.write(
                    frontier,
                    source="interrupt",
                    nodes=runnable,
                    interrupts=records,
                    resume_values=resume_values,
                    pending_writes=dict(finished),
                    updates=finished,
                )
                return
            self.values = merged
            self.tracker.absorb(step)
            for name in runnable:
                resume_values.pop(name, None)
            frontier = _union_in_order(spec, deferred, triggered)
            pauses: list[dict[str, Any]] = []
            if frontier:
                pauses = [
                    interrupt_record(n, "after") for n in runnable if n in spec.interrupt_after
                ]
                pauses += self._before_hits(frontier)
            yield from self.write(
                frontier, source="loop", nodes=runnable, updates=updates, interrupts=pauses
            )
            if self.stream:
                yield EmitEffect([NodeOutput(r.node, r.update, new_state) for r in results])
            if pauses:
                return

    def _before_hits(self, frontier: list[str]) -> list[dict[str, Any]]:
        """Interrupt records for the nodes of ``frontier`` that would run now and pause before."""
        before = self.spec.interrupt_before
        if not before or not frontier:
            return []
        runnable, _ = self._split_joins(frontier)
        return [interrupt_record(n, "before") for n in runnable if n in before]

    def _resume(
        self, checkpoint: Checkpoint | None, command: Command | None
    ) -> tuple[list[str], dict[str, list[Any]], bool]:
        thread = self.config.thread_id
        if checkpoint is None:
            raise GraphResumeError(
                f"thread '{thread}' has nothing to resume: it has no checkpoint"
                + ("" if self.has_saver else " (the graph has no saver)")
                + "; pass a dict of input to start it"
            )
        if not checkpoint.next_nodes:
            raise GraphResumeError(
                f"thread '{thread}' is not paused: its last run finished; pass a dict of input "
                "to start a new run on it"
            )
        pending = [i for i in checkpoint.interrupts if i["when"] == "during"]
        resume_values = {k: list(v) for k, v in checkpoint.resume_values.items()}
        if command is not None and command.has_resume:
            if not pending:
                raise GraphResumeError(
                    f"thread '{thread}' is not waiting for a resume value "
                    f"({_describe_interrupts(checkpoint)}); resume it with invoke(None, config)"
                )
            for record, value in _assign_resume(thread, pending, command.resume):
                resume_values.setdefault(record["node"], []).append(value)
        elif pending:
            raise GraphResumeError(
                f"thread '{thread}' is waiting for a resume value "
                f"({_describe_interrupts(checkpoint)}); resume it with "
                "invoke(Command(resume=value), config)"
            )
        if command is not None and command.update is not None:
            self.merge([("__resume__", command.update)])
        skip_before = any(i["when"] in ("before", "during") for i in checkpoint.interrupts)
        return list(checkpoint.next_nodes), resume_values, skip_before

    def _split_joins(self, frontier: list[str]) -> tuple[list[str], list[str]]:
        """Nodes that run now, and nodes that wait: a join runs once, after all its branches.

        A node waits while another scheduled node can still reach it, unless it can reach
        that node too and no later than it would be reached (in a cycle the nearer upstream
        node goes first). If every node would wait, all of them run.
        """
        if len(frontier) < 2:
            return frontier, []
        reach = self.spec.reach

        def waits(node: str, other: str) -> bool:
            to_node = reach[other].get(node)
            if to_node is None:
                return False
            back = reach[node].get(other)
            return back is None or to_node < back

        runnable = [n for n in frontier if not any(waits(n, m) for m in frontier if m != n)]
        if not runnable:
            return frontier, []
        return runnable, [n for n in frontier if n not in runnable]


class StateUpdate(_Cursor):
    """``update_state``: merge values into a checkpoint as if ``as_node`` had returned them."""

    __slots__ = ("as_node", "new_checkpoint_id", "update")

    def __init__(
        self,
        spec: GraphSpec,
        config: RunnableConfig,
        update: Mapping[str, Any] | None,
        as_node: str | None,
    ) -> None:
        super().__init__(spec, config, True)
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
        updates = [(writer, self.update)]
        self.merge(updates)
        if self.as_node is None and checkpoint is not None:  # the thread stays where it is
            next_nodes = list(checkpoint.next_nodes)
            interrupts = checkpoint.interrupts
            resume_values = checkpoint.resume_values
            pending_writes = checkpoint.pending_writes
        else:
            next_nodes = []
            if self.as_node is not None:
                next_nodes = yield from self.successors([self.as_node], OverAllState(self.values))
            interrupts, resume_values, pending_writes = (), {}, {}
        self.new_checkpoint_id = yield from self.write(
            next_nodes,
            source="update",
            nodes=[writer],
            interrupts=interrupts,
            resume_values=resume_values,
            pending_writes=pending_writes,
            updates=updates,
        )


def _union_in_order(spec: GraphSpec, first: Sequence[str], second: Sequence[str]) -> list[str]:
    if not first:
        return list(second)
    names = dict.fromkeys([*first, *second])
    return sorted(names, key=lambda n: spec.nodes[n].index)


def _describe_interrupts(checkpoint: Checkpoint) -> str:
    if not checkpoint.interrupts:
        return f"next: {list(checkpoint.next_nodes)}"
    parts = [f"{i['when']} node '{i['node']}'" for i in checkpoint.interrupts]
    return "interrupted " + ", ".join(parts)


def _assign_resume(
    thread: str, pending: list[Mapping[str, Any]], resume: Any
) -> list[tuple[Mapping[str, Any], Any]]:
    ids = {record["id"]: record for record in pending}
    if isinstance(resume, Mapping) and resume and all(k in ids for k in resume):
        return [(ids[k], v) for k, v in resume.items()]
    if len(pending) == 1:
        return [(pending[0], resume)]
    listing = ", ".join(f"{r['id']} in node {r['node']!r}" for r in pending)
    raise GraphResumeError(
        f"thread '{thread}' has {len(pending)} pending interrupts ({listing}); resume with "
        "Command(resume={interrupt_id: value, ...})"
    )

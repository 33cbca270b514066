"""The engine core: plans super-steps and says what to do, without doing any I/O itself.

A run is a generator of *effects* (load a checkpoint, execute tasks, call routers, put a
checkpoint, emit outputs). The sync and async drivers in ``_drivers`` perform each effect
and send its result back, so both APIs share one implementation of the semantics.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any

from checkpoint import Checkpoint, CheckpointDelta, CheckpointNotFoundError
from checkpoint._ids import created_at_of, new_checkpoint_id

from .._context import RunScope, derive_id
from ..errors import GraphRecursionError, GraphResumeError, GraphUsageError, InvalidRouteError
from ..events import CheckpointEvent, InterruptEvent, RunEnd, RunError, RunStart
from ._constants import END, START
from ._merge import DeltaTracker, merge_updates
from ._spec import BranchSpec, GraphSpec
from ._tasks import (
    PULL,
    PUSH,
    Task,
    TaskResult,
    decode_resume,
    encode_resume,
    pending_frame,
    read_frame,
)
from .config import RunnableConfig
from .state import OverAllState
from .types import Command, Interrupt, NodeOutput, Send

BASE_KEY = "__base__"  # in pending_writes: [checkpoint id, step] the stopped step started from


class RunStopped(BaseException):
    """The run was asked to stop (its event stream was closed); it stops between steps."""


class ParentCommand(BaseException):
    """A node of a subgraph returned ``Command(graph=Command.PARENT)``: the subgraph stops and
    its node in the parent graph applies ``command``."""

    def __init__(self, command: Command) -> None:
        super().__init__(command)
        self.command = command


class SubgraphEntry:
    """The input of a subgraph's run: the state it is handed, and whether its task ran
    before (then the child's thread may hold a paused or finished run to continue)."""

    __slots__ = ("resume", "resuming", "values")

    def __init__(self, values: Mapping[str, Any], resume: Mapping[str, Any], resuming: bool):
        self.values = values
        self.resume = resume
        self.resuming = resuming


class LoadEffect:
    """Send back ``saver.get(thread_id, checkpoint_id)``."""

    __slots__ = ("checkpoint_id", "thread_id")

    def __init__(self, thread_id: str, checkpoint_id: str | None) -> None:
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id


class ExecuteEffect:
    """Run the tasks (in parallel when several); send back a ``TaskResult`` per task run
    (a task cancelled because a sibling failed gives none). Resume values by interrupt id."""

    __slots__ = ("resume", "tasks")

    def __init__(self, tasks: list[Task], resume: Mapping[str, Any]) -> None:
        self.tasks = tasks
        self.resume = resume


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
Frontier = tuple[list[str], list[Send]]


def static_record(namespace: tuple[str, ...], base: Any, node: str, when: str) -> dict[str, Any]:
    """The record of an ``interrupt_before``/``interrupt_after`` pause."""
    return {
        "id": derive_id(*namespace, base, node, when),
        "node": node,
        "when": when,
        "value": None,
        "ns": list(namespace),
    }


def interrupt_of(record: Mapping[str, Any]) -> Interrupt:
    return Interrupt(
        id=record["id"],
        node=record["node"],
        when=record["when"],
        value=record.get("value"),
        namespace=tuple(record.get("ns") or ()),
    )


class _Cursor:
    """Where a thread stands while a run or an update works on it."""

    __slots__ = (
        "check_head",
        "config",
        "has_saver",
        "head_id",
        "last_written",
        "scope",
        "spec",
        "step",
        "tracker",
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
        pending = pending_frame(finished, sends)
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
            resume_values=encode_resume(resume or {}),
            pending_writes=pending,
        )
        yield PutEffect(checkpoint, self.tracker.take(self.values), self.check_head, updates)
        self.last_written = checkpoint
        self.head_id = checkpoint_id
        self.step += 1
        self.check_head = True
        scope = self.scope
        if scope.bus is not None:
            scope.event(CheckpointEvent, checkpoint_id=checkpoint_id, step=checkpoint.step)
        return checkpoint_id

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
        return sorted(targets, key=lambda n: spec.nodes[n].index), sends

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


class GraphRun(_Cursor):
    """One ``invoke``/``stream``: from the input (or a resume) to END, a pause or an error.

    After the effects generator finishes, ``values`` holds the final state.
    """

    __slots__ = ("child_outputs", "inputs", "stream")

    def __init__(
        self,
        spec: GraphSpec,
        config: RunnableConfig,
        has_saver: bool,
        inputs: Mapping[str, Any] | Command | SubgraphEntry | None,
        stream: bool,
        scope: RunScope,
    ) -> None:
        super().__init__(spec, config, has_saver, scope)
        self.inputs = inputs
        self.stream = stream
        self.child_outputs: list[NodeOutput] = []

    def effects(self) -> Generator[Effect, Any, None]:
        scope = self.scope
        if scope.bus is None:
            yield from self._run()
            return
        scope.event(RunStart, input=self.inputs)
        try:
            yield from self._run()
        except (GeneratorExit, ParentCommand):
            raise
        except BaseException as error:
            scope.event(RunError, error=error)
            raise
        last = self.last_written
        records = last.interrupts if last is not None and last.next_nodes else ()
        scope.event(
            RunEnd,
            interrupts=tuple(interrupt_of(r) for r in records),
            values=self.spec.public(self.values),
        )

    def _start(self, checkpoint: Checkpoint | None) -> Generator[Effect, Any, Frontier | None]:
        """Merge new input; checkpoint it (always, before any node runs). ``None``: done."""
        inputs = self.inputs
        if not isinstance(inputs, Mapping):
            raise GraphUsageError(
                f"invoke() input must be a dict of state updates, None (resume) or "
                f"Command(...), got {type(inputs).__name__}"
            )
        if checkpoint is not None and checkpoint.interrupts:
            waiting = any(i["when"] == "during" for i in checkpoint.interrupts)
            how = "invoke(Command(resume=value), config)" if waiting else "invoke(None, config)"
            raise GraphResumeError(
                f"thread '{self.config.thread_id}' is paused ({_describe(checkpoint)}); "
                f"resume it with {how} before sending new input"
            )
        self.merge([("__input__", inputs)])
        frontier = yield from self.successors([(START, None)], OverAllState(self.values))
        hits = self._before_hits(frontier[0], (self.head_id, self.step + 1))
        yield from self.write(frontier, source="input", interrupts=hits)
        self._announce(hits)
        return None if hits or not (frontier[0] or frontier[1]) else frontier

    def _enter(self) -> Generator[Effect, Any, Command | Mapping[str, Any] | None]:
        """A subgraph's input: its task's first run starts it afresh; a re-run continues the
        child's thread (``None``: the child had finished or stays paused, nothing to run)."""
        entry = self.inputs
        assert isinstance(entry, SubgraphEntry)
        if not (entry.resuming and self.has_saver):
            return entry.values
        checkpoint = yield from self.load()
        if checkpoint is None:
            return entry.values
        _, sends = read_frame({k: v for k, v in checkpoint.pending_writes.items() if k != BASE_KEY})
        if not checkpoint.next_nodes and not sends:
            return None  # it finished before the parent's step stopped: its values stand
        self.last_written = checkpoint
        pending = [i["id"] for i in checkpoint.interrupts if i["when"] == "during"]
        if not pending:
            return Command()
        answers = {i: entry.resume[i] for i in pending if i in entry.resume}
        return Command(resume=answers) if answers else None

    def _run(self) -> Generator[Effect, Any, None]:
        spec = self.spec
        if isinstance(self.inputs, SubgraphEntry):
            entered = yield from self._enter()
            if entered is None:
                return
            self.inputs = entered
            checkpoint = self.last_written if isinstance(entered, Command) else None
        else:
            checkpoint = (yield from self.load()) if self.has_saver else None
        resume: dict[str, Any] = {}
        done: dict[str, tuple[str, Any, list[str | Send] | None]] = {}
        base: tuple[str | None, int] | None = None
        if self.inputs is None or isinstance(self.inputs, Command):
            names, sends, resume, done, base = self._resume(checkpoint, self.inputs)
        else:
            started = yield from self._start(checkpoint)
            if started is None:
                return
            names, sends = started
        limit = self.config.recursion_limit or spec.default_recursion_limit
        steps = 0
        bus = self.scope.bus
        while names or sends:
            runnable, deferred = self._split_joins(names)
            if steps >= limit:
                raise GraphRecursionError(
                    f"thread '{self.config.thread_id}' ran {steps} super-steps without reaching "
                    f"END (recursion_limit={limit}); next were {[*runnable, *(s.node for s in sends)]}. "
                    "Raise the limit (compile(recursion_limit=N) or RunnableConfig(recursion_limit=N)) "
                    "or check the routers for a loop that never ends; the thread can be resumed "
                    "from its last step with invoke(None, config)"
                )
            if bus is not None and bus.stop_requested:
                raise RunStopped()
            steps += 1
            step_base = base or (self.head_id, self.step + 1)
            # A step that starts from a checkpoint this run did not write may have run
            # before (and failed or paused): a subgraph of it may have a thread to continue.
            resuming = base is not None or self.last_written is None
            tasks = self._tasks(runnable, sends, step_base, resuming)
            if done or self.child_outputs:
                results = yield from self._execute(tasks, done, resume)
            else:
                results = yield ExecuteEffect(tasks, resume)
                if self.child_outputs:
                    outputs, self.child_outputs = self.child_outputs, []
                    yield EmitEffect(outputs)
            updates: list[tuple[str, Any]] = []
            ran: list[tuple[str, list[str | Send] | None]] = []
            stopped = False
            for result in results:
                update = result.update
                if result.error is not None or result.interrupt is not None:
                    stopped = True
                    continue
                name = result.task.node.name
                if type(update) is Command:
                    if update.graph is not None:
                        self._to_parent(result)
                    goto = update.goto_targets() if update.goto is not None else None
                    update = update.update
                else:
                    goto = None
                updates.append((name, update))
                ran.append((name, goto))
            if stopped:
                yield from self._stop(results, (names, sends), runnable, resume, step_base)
                return
            step = DeltaTracker()
            merged = merge_updates(self.values, updates, spec.strategies, step)
            new_state = OverAllState(merged)
            if len(ran) == 1 and ran[0][1] is None and ran[0][0] not in spec.branches:
                triggered = spec.static_after.get(ran[0][0]) or []
                sends = []
            else:
                triggered, sends = yield from self.successors(ran, new_state)
            self.values = merged
            self.tracker.absorb(step)
            if base is not None:
                resume, done, base = {}, {}, None
            names = _union_in_order(spec, deferred, triggered) if deferred else triggered
            pauses: list[dict[str, Any]] = []
            if names and (spec.interrupt_after or spec.interrupt_before):
                after = spec.interrupt_after
                pauses = [
                    static_record(self.scope.namespace, self.head_id, n, "after")
                    for n in runnable
                    if n in after
                ]
                pauses += self._before_hits(names, (self.head_id, self.step + 1))
            if self.has_saver:
                yield from self.write(
                    (names, sends), source="loop", nodes=runnable, updates=updates,
                    interrupts=pauses,
                )  # fmt: skip
            if self.stream:
                public = OverAllState(spec.public(merged))
                ns = self.scope.namespace
                yield EmitEffect([NodeOutput(n, u, public, ns) for n, u in updates])
            if pauses:
                self._announce(pauses)
                return

    def _stop(
        self,
        results: list[TaskResult],
        frontier: Frontier,
        runnable: list[str],
        resume: Mapping[str, Any],
        base: tuple[str | None, int],
    ) -> Generator[Effect, Any, None]:
        """A step with a failed or paused task: keep what finished (a retry or resume runs
        only the rest), then raise the first failure, or pause."""
        finished = [r for r in results if r.finished]
        failed = [r for r in results if r.error is not None]
        if failed:
            if finished:
                yield from self.write(
                    frontier, source="error", nodes=runnable, resume=resume,
                    finished=finished, base=base,
                )  # fmt: skip
            raise failed[0].error  # type: ignore[misc]
        records = [record for r in results for record in r.interrupt or ()]
        yield from self.write(
            frontier, source="interrupt", nodes=runnable, interrupts=records,
            resume=resume, finished=finished, base=base,
        )  # fmt: skip
        self._announce(records)

    def _tasks(
        self,
        runnable: list[str],
        sends: list[Send],
        base: tuple[str | None, int],
        resuming: bool,
    ) -> list[Task]:
        spec, config = self.spec, self.config
        state = OverAllState(self.values)
        parts = (*self.scope.namespace, *base)
        tasks = [
            Task(spec.nodes[n], state, config, PULL, spec.nodes[n].index, parts, resuming)
            for n in runnable
        ]
        for index, send in enumerate(sends):
            arg = OverAllState(send.arg)
            tasks.append(Task(spec.nodes[send.node], arg, config, PUSH, index, parts, resuming))
        return tasks

    def _execute(
        self,
        tasks: list[Task],
        done: Mapping[str, tuple[str, Any, list[str | Send] | None]],
        resume: Mapping[str, Any],
    ) -> Generator[Effect, Any, list[TaskResult]]:
        """Run the tasks that have no stored write yet; every task's result, in merge order."""
        todo = [t for t in tasks if t.id not in done] if done else tasks
        results: list[TaskResult] = (yield ExecuteEffect(todo, resume)) if todo else []
        if self.child_outputs:  # what subgraphs streamed during the step
            outputs, self.child_outputs = self.child_outputs, []
            yield EmitEffect(outputs)
        if done:
            for task in tasks:
                if task.id in done:
                    _, update, goto = done[task.id]
                    stored = Command(update=update, goto=goto) if goto is not None else update
                    results.append(TaskResult(task, stored))
            if len(tasks) > 1:
                results.sort(key=lambda r: r.task.order)
        return results

    def _to_parent(self, result: TaskResult) -> None:
        command = result.update
        assert isinstance(command, Command)
        if not self.scope.namespace:
            raise GraphUsageError(
                f"node '{result.task.node.name}' returned Command(graph=Command.PARENT), but "
                "this graph is not running as a subgraph; drop graph= to route in this graph"
            )
        raise ParentCommand(Command(update=command.update, goto=command.goto))

    def _announce(self, records: Sequence[Mapping[str, Any]]) -> None:
        if self.scope.bus is not None:
            for record in records:
                self.scope.event(InterruptEvent, interrupt=interrupt_of(record))

    def _before_hits(self, names: list[str], base: tuple[str | None, int]) -> list[dict[str, Any]]:
        """Records for the nodes of ``names`` that would run now and pause before."""
        before = self.spec.interrupt_before
        if not before or not names:
            return []
        runnable, _ = self._split_joins(names)
        return [
            static_record(self.scope.namespace, base, n, "before") for n in runnable if n in before
        ]

    def _resume(
        self, checkpoint: Checkpoint | None, command: Command | None
    ) -> tuple[
        list[str],
        list[Send],
        dict[str, Any],
        dict[str, tuple[str, Any, list[str | Send] | None]],
        tuple[str | None, int] | None,
    ]:
        thread = self.config.thread_id
        if command is not None and command.goto is not None:
            raise GraphUsageError(
                "Command(goto=...) is what a node returns to steer its run; as input, "
                "Command takes resume= and update="
            )
        if checkpoint is None:
            raise GraphResumeError(
                f"thread '{thread}' has nothing to resume: it has no checkpoint"
                + ("" if self.has_saver else " (the graph has no saver)")
                + "; pass a dict of input to start it"
            )
        done, sends = read_frame(
            {k: v for k, v in checkpoint.pending_writes.items() if k != BASE_KEY}
        )
        if not checkpoint.next_nodes and not sends:
            raise GraphResumeError(
                f"thread '{thread}' is not paused: its last run finished; pass a dict of input "
                "to start a new run on it"
            )
        stored_base = checkpoint.pending_writes.get(BASE_KEY)
        base = (stored_base[0], stored_base[1]) if stored_base else None
        pending = [i for i in checkpoint.interrupts if i["when"] == "during"]
        resume = decode_resume(checkpoint.resume_values)
        if command is not None and command.has_resume:
            if not pending:
                raise GraphResumeError(
                    f"thread '{thread}' is not waiting for a resume value "
                    f"({_describe(checkpoint)}); resume it with invoke(None, config)"
                )
            for record, value in _assign_resume(thread, pending, command.resume):
                resume[record["id"]] = value
        elif pending:
            raise GraphResumeError(
                f"thread '{thread}' is waiting for a resume value "
                f"({_describe(checkpoint)}); resume it with "
                "invoke(Command(resume=value), config)"
            )
        if command is not None and command.update is not None:
            self.merge([("__resume__", command.update)])
        return list(checkpoint.next_nodes), sends, resume, done, base

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
        updates = [(writer, self.update)]
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
        yield PutEffect(written, self.tracker.take(self.values), self.check_head, updates)
        self.last_written = written
        return checkpoint_id


def _kept_pending(checkpoint: Checkpoint) -> dict[str, Any]:
    """A stopped step's record, kept by an update: its tasks keep their ids (the base)."""
    pending = dict(checkpoint.pending_writes)
    if BASE_KEY not in pending and checkpoint.interrupts:
        pending[BASE_KEY] = [checkpoint.id, checkpoint.step + 1]
    return pending


def _union_in_order(spec: GraphSpec, first: Sequence[str], second: Sequence[str]) -> list[str]:
    if not first:
        return list(second)
    names = dict.fromkeys([*first, *second])
    return sorted(names, key=lambda n: spec.nodes[n].index)


def _describe(checkpoint: Checkpoint) -> str:
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

"""The engine core: plans super-steps and says what to do, without doing any I/O itself.

A run is a generator of *effects* (load a checkpoint, execute tasks, call routers, put a
checkpoint, emit outputs). The sync and async drivers in ``_drivers`` perform each effect
and send its result back, so both APIs share one implementation of the semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from checkpoint import Checkpoint

from .._runtime.run_scope import RunScope
from .._runtime.workers import StepCancelled
from ..errors import GraphRecursionError, GraphResumeError, GraphUsageError, RunStopped
from ..events import InterruptEvent, RunEnd, RunError, RunStart
from ._clean import cleaned
from ._constants import START
from ._cursor import Cursor
from ._effects import (
    Effect,
    EmitEffect,
    ExecuteEffect,
    Frontier,
    ParentCommand,
    SubgraphEntry,
)
from ._merge import DeltaTracker, combined, merge_updates
from ._pauses import awaiting, interrupt_of, static_record
from ._spec import GraphSpec
from ._tasks import (
    BASE_KEY,
    PULL,
    PUSH,
    StoredWrite,
    Task,
    TaskResult,
    decode_resume,
    read_frame,
    step_results,
)
from .config import RunnableConfig
from .state import OverAllState
from .types import Command, Interrupt, NodeOutput, Send


class GraphRun(Cursor):
    """One ``invoke``/``stream``: from the input (or a resume) to END, a pause or an error.

    After the effects generator finishes, ``values`` holds the final state.
    """

    __slots__ = ("call_id", "child_outputs", "inputs", "stream")

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
        self.call_id = ""  # a subgraph run by a tool call: that call's id
        # made when someone collects them (stream(subgraphs=True), a parent's stream)
        self.child_outputs: list[NodeOutput] | None = None

    def effects(self) -> Generator[Effect, Any, None]:
        """The run's effects, for a driver to perform; with the run's events when someone
        listens (without, the run itself: no generator around it while it waits)."""
        return self._run() if self.scope.bus is None else self._announced()

    def _clean_input(self) -> BaseException | None:
        """The new input through ``compile(clean_input=...)`` (see ``cleaned``), once, before
        anything sees it; what that raises, to fail the run with."""
        clean = self.spec.clean_input
        if clean is None or self.inputs is None:
            return None
        try:
            self.inputs = cleaned(clean, self.inputs)
        except Exception as error:
            self.inputs = None  # the rejected input is neither announced nor stored
            return error
        return None

    def _announced(self) -> Generator[Effect, Any, None]:
        scope = self.scope
        refused = self._clean_input()
        scope.event(
            RunStart,
            input=self.inputs,
            graph=self.graph_name(),
            agent=self.spec.is_agent,
            call_id=self.call_id,
        )
        try:
            if refused is not None:
                raise refused
            yield from self._run(cleaned=True)
        except GeneratorExit:  # its stream was closed early: a normal stop, reported as one
            scope.event(RunError, error=RunStopped())
            raise
        except ParentCommand:
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

    def collect_child_outputs(self) -> Callable[[NodeOutput], None]:
        """Where subgraphs run by this run's tasks put their node outputs (emitted after
        each step)."""
        collected: list[NodeOutput] = []
        self.child_outputs = collected
        return collected.append

    def _take_child_outputs(self) -> list[NodeOutput]:
        """What subgraphs streamed since the last call; the list is emptied in place, since
        ``collect_child_outputs`` handed out its ``append``."""
        outputs = self.child_outputs or []
        taken = outputs.copy()
        outputs.clear()
        return taken

    def graph_name(self) -> str:
        """The graph's name; a subgraph compiled without one goes by its node's name."""
        if self.spec.name:
            return self.spec.name
        namespace = self.scope.namespace
        return namespace[-1].partition(":")[0] if namespace else "graph"

    def _start(self, checkpoint: Checkpoint | None) -> Generator[Effect, Any, Frontier | None]:
        """Merge new input; checkpoint it (always, before any node runs). ``None``: done."""
        inputs = self.inputs
        if not isinstance(inputs, Mapping):
            raise GraphUsageError(
                f"invoke() input must be a dict of state updates, None (resume) or "
                f"Command(...), got {type(inputs).__name__}"
            )
        if self.spec.input_schema is not None:
            self.spec.input_schema.check(inputs, f"graph '{self.graph_name()}'")
        if checkpoint is not None and checkpoint.interrupts:
            waiting = bool(awaiting(checkpoint.interrupts))
            how = "invoke(Command(resume=value), config)" if waiting else "invoke(None, config)"
            raise GraphResumeError(
                f"thread '{self.config.thread_id}' is paused ({_describe(checkpoint)}); "
                f"resume it with {how} before sending new input"
            )
        if checkpoint is not None and self.spec.before_input is not None:
            kept = decode_resume(checkpoint.resume_values)
            inputs = self.spec.before_input(self.values, inputs, kept)
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
        pending = [pause.id for pause in awaiting(checkpoint.interrupts)]
        if not pending:
            return Command()
        answers = {i: entry.resume[i] for i in pending if i in entry.resume}
        return Command(resume=answers) if answers else None

    def _run(self, cleaned: bool = False) -> Generator[Effect, Any, None]:
        spec = self.spec
        if not cleaned and (refused := self._clean_input()) is not None:
            raise refused
        if isinstance(self.inputs, SubgraphEntry):
            entered = yield from self._enter()
            if entered is None:
                return
            self.inputs = entered
            checkpoint = self.last_written if isinstance(entered, Command) else None
        else:
            checkpoint = (yield from self.load()) if self.has_saver else None
        resume: dict[str, Any] = {}
        done: dict[str, StoredWrite] = {}
        base: tuple[str | None, int] | None = None
        if self.inputs is None or isinstance(self.inputs, Command):
            names, sends, resume, done, base = self._resume(checkpoint, self.inputs)
        else:
            started = yield from self._start(checkpoint)
            if started is None:
                return
            names, sends = started
        # what the loop below no longer needs is let go: a run may wait long on a node
        checkpoint = started = self.inputs = None
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
            frontier = yield from self._step(
                names, sends, runnable, deferred, done, resume, base, step_base
            )
            if frontier is None:
                return
            names, sends = frontier
            frontier = None
            if base is not None:
                resume, done, base = {}, {}, None

    def _step(
        self,
        names: list[str],
        sends: Sequence[Send],
        runnable: list[str],
        deferred: Sequence[str],
        done: Mapping[str, StoredWrite],
        resume: Mapping[str, Any],
        base: tuple[str | None, int] | None,
        step_base: tuple[str | None, int],
    ) -> Generator[Effect, Any, Frontier | None]:
        """One super-step: run its tasks, merge their updates, checkpoint. What runs next, or
        ``None`` when the run ends here (paused; a failure is raised). A method of its own so
        that what a step made (results, updates, trackers) is gone while the next one runs."""
        spec = self.spec
        # A step that starts from a checkpoint this run did not write may have run
        # before (and failed or paused): a subgraph of it may have a thread to continue.
        resuming = base is not None or self.last_written is None
        if done or self.child_outputs:
            tasks = self._tasks(runnable, sends, step_base, resuming)
            results = yield from self._execute(
                tasks, done, resume, (names, sends), runnable, step_base
            )
        else:  # only the driver holds the tasks while they run
            # the driver may store what finishes while others still run (a durable saver)
            sent = yield (
                ExecuteEffect(
                    self._tasks(runnable, sends, step_base, resuming),
                    resume,
                    self,
                    (names, sends),
                    step_base,
                )
                if self.has_saver
                else ExecuteEffect(self._tasks(runnable, sends, step_base, resuming), resume)
            )
            results = step_results(sent) if type(sent) is TaskResult else sent
            if self.child_outputs:
                yield EmitEffect(self._take_child_outputs())
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
        if stopped and not _ended_on_cancel(results, len(ran), len(runnable) + len(sends)):
            yield from self._stop(results, (names, sends), runnable, resume, step_base)
            return None
        step = DeltaTracker()
        merged = merge_updates(self.values, updates, spec.rules, step)
        new_state = OverAllState(merged)
        if len(ran) == 1 and ran[0][1] is None and ran[0][0] not in spec.branches:
            triggered = spec.static_after.get(ran[0][0]) or []
            sends = ()
        else:
            triggered, sends = yield from self.successors(ran, new_state)
        self.values = merged
        self.absorb(step)
        names = _union_in_order(spec, deferred, triggered) if deferred else triggered
        pauses: Sequence[dict[str, Any]] = ()
        if names and (spec.interrupt_after or spec.interrupt_before):
            pauses = [
                *_after_hits(self.scope.namespace, self.head_id, runnable, spec.interrupt_after),
                *self._before_hits(names, (self.head_id, self.step + 1)),
            ]
        if self.has_saver:
            yield from self.write(
                (names, sends), source="loop", nodes=runnable, updates=updates,
                interrupts=pauses,
            )  # fmt: skip
        if stopped:  # the run was cancelled and every task ended all the same: stored, stop
            raise StepCancelled()
        if self.stream:
            public = OverAllState(spec.public(merged))
            yield EmitEffect(_outputs(updates, spec, public, self.scope.namespace))
        if pauses:
            self._announce(pauses)
            return None
        return names, sends

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
        kept = {k: v for r in results if r.kept for k, v in r.kept.items()}
        if kept:  # stored with the resume values: a re-run of the task gets them back
            resume = {**resume, **kept}
        if failed:
            if finished or kept:
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
        sends: Sequence[Send],
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
        done: Mapping[str, StoredWrite],
        resume: Mapping[str, Any],
        frontier: Frontier,
        runnable: list[str],
        base: tuple[str | None, int],
    ) -> Generator[Effect, Any, list[TaskResult]]:
        """Run the tasks that have no stored write yet; every task's result, in merge order."""
        todo = [t for t in tasks if t.id not in done] if done else tasks
        earlier = _stored_results(tasks, done) if done else []
        results: list[TaskResult] = []
        if todo:
            if self.has_saver:
                effect = ExecuteEffect(todo, resume, self, frontier, base, earlier)
            else:
                effect = ExecuteEffect(todo, resume)
            sent = yield effect
            results = step_results(sent) if type(sent) is TaskResult else sent
        if self.child_outputs:  # what subgraphs streamed during the step
            yield EmitEffect(self._take_child_outputs())
        if earlier:
            results.extend(earlier)
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
        Sequence[Send],
        dict[str, Any],
        dict[str, StoredWrite],
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
        pending = awaiting(checkpoint.interrupts)
        resume = decode_resume(checkpoint.resume_values)
        if command is not None and command.has_resume:
            if not pending:
                raise GraphResumeError(
                    f"thread '{thread}' is not waiting for a resume value "
                    f"({_describe(checkpoint)}); resume it with invoke(None, config)"
                )
            for pause, value in _assign_resume(thread, pending, command.resume):
                resume[pause.id] = value
        elif pending:
            raise GraphResumeError(
                f"thread '{thread}' is waiting for a resume value "
                f"({_describe(checkpoint)}); resume it with "
                "invoke(Command(resume=value), config)"
            )
        if command is not None and command.update is not None:
            self.merge([("__resume__", command.update)])
        return list(checkpoint.next_nodes), sends, resume, done, base

    def _split_joins(self, frontier: list[str]) -> tuple[list[str], Sequence[str]]:
        """Nodes that run now, and nodes that wait: a join runs once, after all its branches.

        A node waits while another scheduled node can still reach it, unless it can reach
        that node too and no later than it would be reached (in a cycle the nearer upstream
        node goes first). If every node would wait, all of them run.
        """
        if len(frontier) < 2:
            return frontier, ()
        blockers = self.spec.reach.blockers
        scheduled = set(frontier)
        runnable: list[str] = []
        waiting: list[str] = []
        for node in frontier:
            # sets: isdisjoint walks the smaller one, so a wide fan-out costs O(width)
            (runnable if blockers(node).isdisjoint(scheduled) else waiting).append(node)
        if not runnable:
            return frontier, ()
        return runnable, waiting


# Comprehensions live in functions of their own: one inside ``_run`` would turn the locals it
# reads into cells, objects the garbage collector tracks for as long as the run lasts.


def _after_hits(
    namespace: tuple[str, ...], head_id: str | None, runnable: list[str], after: frozenset[str]
) -> list[dict[str, Any]]:
    return [static_record(namespace, head_id, n, "after") for n in runnable if n in after]


def _outputs(
    updates: list[tuple[str, Any]], spec: GraphSpec, public: OverAllState, ns: tuple[str, ...]
) -> list[NodeOutput]:
    return [NodeOutput(n, combined(u, spec.rules), public, ns) for n, u in updates]


def _ended_on_cancel(results: list[TaskResult], ended: int, tasks: int) -> bool:
    """Whether a stopped step is whole: its run was cancelled (a ``StepCancelled`` result)
    and each of its ``tasks`` ended all the same (a sync node's thread that returned, a node
    that ended on what it had), so it is stored as a step, not as a stopped one."""
    if ended != tasks:
        return False
    for result in results:
        if result.interrupt is not None:
            return False
        error = result.error  # only the cancel's marker (a task that kept some work failed)
        if error is not None and (type(error) is not StepCancelled or result.kept):
            return False
    return True


def _stored_results(tasks: list[Task], done: Mapping[str, StoredWrite]) -> list[TaskResult]:
    """The results of the step's tasks that finished in an earlier run (stored writes)."""
    results: list[TaskResult] = []
    for task in tasks:
        if task.id in done:
            results.append(done[task.id].result(task))
    return results


def _union_in_order(spec: GraphSpec, first: Sequence[str], second: Sequence[str]) -> list[str]:
    if not first:
        return list(second)
    names = dict.fromkeys([*first, *second])
    return sorted(names, key=lambda n: spec.nodes[n].index)


def _describe(checkpoint: Checkpoint) -> str:
    if not checkpoint.interrupts:
        return f"next: {list(checkpoint.next_nodes)}"
    parts = [f"{i.when} node '{i.node}'" for i in map(interrupt_of, checkpoint.interrupts)]
    return "interrupted " + ", ".join(parts)


def _assign_resume(
    thread: str, pending: list[Interrupt], resume: Any
) -> list[tuple[Interrupt, Any]]:
    """Which pending interrupt gets which value. A dict with a key shaped like an interrupt
    id is keyed by ids: each key must be pending (a stale or re-sent id is refused, never
    taken as the answer to another question). Anything else answers the only one pending."""
    ids = {pause.id: pause for pause in pending}
    if isinstance(resume, Mapping) and any(_looks_like_id(k) for k in resume):
        unknown = [k for k in resume if k not in ids]
        if unknown:
            raise GraphResumeError(
                f"thread '{thread}' has no pending interrupt {', '.join(map(repr, unknown))} "
                f"(answered already, or from another pause); pending: {_listing(pending)}. "
                "Resume with Command(resume={interrupt_id: value, ...}) naming pending ids; a "
                "dict keyed by other ids is one interrupt's value when put under its id"
            )
        return [(ids[k], v) for k, v in resume.items()]
    if len(pending) == 1:
        return [(pending[0], resume)]
    raise GraphResumeError(
        f"thread '{thread}' has {len(pending)} pending interrupts ({_listing(pending)}); "
        "resume with Command(resume={interrupt_id: value, ...})"
    )


def _listing(pending: Sequence[Interrupt]) -> str:
    return ", ".join(f"{p.id} in node {p.node!r}" for p in pending)


_HEX = frozenset("0123456789abcdefABCDEF")


def _looks_like_id(key: object) -> bool:
    """Whether ``key`` is shaped like an interrupt id (UUID-shaped, see ``derive_id``)."""
    if not isinstance(key, str) or len(key) != 36:
        return False
    parts = key.split("-")
    return [len(p) for p in parts] == [8, 4, 4, 4, 12] and all(c in _HEX for p in parts for c in p)

"""What the app's routes share: the served objects, the threads and the runs (the wire shapes
are in ``_wire_*``; the life of runs, their records and logs in ``graph_agent.runs``)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Coroutine, Mapping
from datetime import datetime, timezone
from typing import Any, TypeVar, cast
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from checkpoint.errors import CheckpointNotFoundError

from ..events import CheckpointEvent, RunEnd
from ..graph import Command, CompiledGraph, RunnableConfig, StateSnapshot
from ..runs import (
    ATTEMPT,
    BEFORE,
    EVENT,
    MULTITASK_STRATEGIES,
    STATE,
    Execute,
    Run,
    RunDrained,
    RunService,
    RunStatus,
    RunStore,
    ThreadBusyError,
    ThreadOps,
    ThreadRecord,
    now,
)
from ._http import HEARTBEAT_SECONDS, HTTPProblem, sse_response
from ._input_record import recorded_kwargs
from ._mistakes import client_mistake
from ._request import Fields, json_body, refuse_unsupported, run_config_fields
from ._resume_check import check_resume
from ._wire_encoder import snapshots_needed
from ._wire_messages import error_to_wire
from ._wire_read import WireEntry, check_last_event_id, reader_modes, wire_batches
from ._wire_state import (
    assistant_id_for,
    command_from_wire,
    input_from_wire,
    run_config_from_wire,
    run_to_wire,
    state_to_wire,
    thread_interrupts,
    thread_status,
    thread_to_wire,
    values_to_wire,
)
from ._wire_stream import parse_stream_modes

__all__ = ["Served", "Server", "ThreadRecord", "now", "read_body", "server_of", "wire_status"]

T = TypeVar("T")


@dataclasses.dataclass
class Served:
    """One object the server serves: its graph id (the name clients use), the object (an
    agent or a compiled graph) and its compiled graph."""

    graph_id: str
    target: Any
    graph: CompiledGraph
    description: str | None = None
    created_at: datetime = dataclasses.field(default_factory=now)

    @classmethod
    def of(cls, graph_id: str, target: Any) -> Served:
        graph = getattr(target, "graph", target)
        if not isinstance(graph, CompiledGraph):
            raise TypeError(
                f"cannot serve {graph_id!r}: {type(target).__name__} is neither an agent nor a "
                "compiled graph (StateGraph(...).compile(saver=...))"
            )
        if graph.saver is None:
            raise TypeError(
                f"cannot serve {graph_id!r}: its graph has no saver; threads need one "
                "(compile(saver=SqliteSaver(...)), or an agent's .saver(...))"
            )
        return cls(graph_id, target, graph, getattr(target, "description", None))

    def events(self, value: Any, config: RunnableConfig) -> AsyncGenerator[Any, None]:
        """The run's events: an agent takes its input as ``call`` does, a graph as it is."""
        stream = getattr(self.target, "astream_events", None)
        if stream is not None and self.target is not self.graph:
            return cast("AsyncGenerator[Any, None]", stream(value, config))
        return cast("AsyncGenerator[Any, None]", self.graph.astream_events(value, config))


@dataclasses.dataclass(frozen=True)
class _Plan:
    """A run request, checked: what to run, on which thread, how to stream it."""

    served: Served
    thread_id: str
    value: Any
    config: RunnableConfig
    modes: list[str]
    subgraphs: bool
    strategy: str
    metadata: dict[str, Any]
    stateless: bool = False
    keep: bool = False
    create: bool = False


class Server:
    """What the app's routes share: the served objects, the threads and the runs."""

    def __init__(
        self,
        served: Mapping[str, Any],
        max_body: int,
        heartbeat: float = HEARTBEAT_SECONDS,
        runs: RunStore | RunService | None = None,
    ) -> None:
        if not served:
            raise ValueError("serve at least one agent, flow or graph")
        self.served = {name: Served.of(name, target) for name, target in served.items()}
        self.by_assistant = {assistant_id_for(n): s for n, s in self.served.items()}
        # the thread records read or written by this process (the store keeps them all)
        self.threads: dict[str, ThreadRecord] = {}
        if isinstance(runs, RunService):
            self.runs = runs
        else:
            self.runs = RunService(runs, **self.run_options())
        if self.runs.saver_of is None:  # where a follower of another server's run reads its lease
            self.runs.saver_of = self.saver_of
        self.max_body = max_body
        self.heartbeat = heartbeat
        self._cleanups: set[asyncio.Task[None]] = set()

    @staticmethod
    def run_options() -> dict[str, Any]:
        """How a runs service reports this server's runs: a client's mistakes told from
        faults, on the server's logger."""
        return {
            "client_mistake": client_mistake,
            "logger": logging.getLogger("graph_agent.server"),
        }

    # -- lookups -----------------------------------------------------------------------------

    def assistant(self, assistant_id: Any) -> Served:
        if isinstance(assistant_id, str):
            found = self.by_assistant.get(assistant_id) or self.served.get(assistant_id)
            if found is not None:
                return found
        raise HTTPProblem(
            404,
            f"assistant {assistant_id!r} not found; served: {', '.join(sorted(self.served))}",
        )

    async def find_thread(self, thread_id: str) -> ThreadRecord:
        """The thread, also one this process has not seen: its record is kept in the runs
        store (by this process before a restart, or by another server on the same store),
        with the assistant that runs it and its metadata. A thread with checkpoints but no
        record (written by a graph outside the server) is found in a served object's saver
        when exactly one of them holds it."""
        record = self.threads.get(thread_id)
        if record is not None:
            return record
        record = await self.runs.store.get_thread(thread_id)
        if record is None:
            holders = []
            for served in self.served.values():
                snapshot = await served.graph.aget_state(RunnableConfig(thread_id=thread_id))
                if snapshot is not None:
                    holders.append((served, snapshot))
            if not holders:
                raise HTTPProblem(404, f"thread {thread_id!r} not found")
            served, snapshot = holders[0]
            owner = served.graph_id if len(holders) == 1 else None
            record = ThreadRecord(thread_id, snapshot.created_at, snapshot.created_at, {}, owner)
            await self.runs.keep_thread(record)
        return self.threads.setdefault(thread_id, record)

    async def create_thread(
        self, thread_id: str, metadata: Mapping[str, Any], graph_id: str | None = None
    ) -> ThreadRecord:
        created = now()
        record = ThreadRecord(thread_id, created, created, dict(metadata), graph_id)
        self.threads[thread_id] = record
        await self.runs.keep_thread(record)
        return record

    async def save_thread(self, record: ThreadRecord) -> None:
        """Keep ``record``'s changes (its metadata, its times, its assistant)."""
        await self.runs.keep_thread(record)

    async def all_threads(self) -> list[ThreadRecord]:
        """Every thread the store keeps, this process's records first."""
        kept = {r.thread_id: r for r in await self.runs.store.list_threads()}
        kept.update(self.threads)
        return list(kept.values())

    async def delete_thread(self, record: ThreadRecord) -> None:
        """Stop the thread's runs, then forget it: its checkpoints (and those of its
        subgraphs this process saw written), its runs and its record."""
        for run in await self.runs.thread_runs(record.thread_id):
            await self.runs.cancel(run)
        self.threads.pop(record.thread_id, None)
        await self.runs.forget_thread(record.thread_id)
        served = self.graph_of(record)
        if served is not None and served.graph.saver is not None:
            for saver_thread in (record.thread_id, *sorted(record.children)):
                await served.graph.saver.adelete_thread(saver_thread)

    def graph_of(self, record: ThreadRecord) -> Served | None:
        if record.graph_id is not None:
            return self.served.get(record.graph_id)
        return next(iter(self.served.values())) if len(self.served) == 1 else None

    async def snapshot(
        self, record: ThreadRecord, checkpoint_id: str | None = None, *, subgraphs: bool = False
    ) -> StateSnapshot | None:
        """The thread's state (at ``checkpoint_id``; ``None`` if it has none there)."""
        served = self.graph_of(record)
        if served is None:
            return None
        config = RunnableConfig(thread_id=record.thread_id, checkpoint_id=checkpoint_id)
        try:
            return await served.graph.aget_state(config, subgraphs=subgraphs)
        except CheckpointNotFoundError:
            return None

    async def thread_wire(self, record: ThreadRecord) -> dict[str, Any]:
        snapshot = await self.snapshot(record)
        runs = await self.runs.thread_runs(record.thread_id)
        # a run refused on a paused thread (new input, not an answer) leaves the pause as it
        # was: the thread still waits for its answer
        paused = snapshot is not None and bool(snapshot.interrupts)
        failed = bool(runs) and runs[0].status == "error" and not paused
        state = state_to_wire(snapshot, thread_id=record.thread_id) if snapshot else None
        return thread_to_wire(
            record.thread_id,
            created_at=record.created_at,
            updated_at=record.updated_at,
            metadata=record.metadata,
            status=thread_status(
                snapshot, busy=await self.runs.busy(record.thread_id), failed=failed
            ),
            values=state["values"] if state else None,
            interrupts=thread_interrupts(state) if state else None,
        )

    def run_wire(self, run: Run) -> dict[str, Any]:
        return run_to_wire(
            run.run_id,
            thread_id=run.thread_id,
            assistant_id=run.assistant_id,
            created_at=datetime.fromtimestamp(run.created_at, timezone.utc),
            updated_at=datetime.fromtimestamp(run.updated_at, timezone.utc),
            status=wire_status(run.status),
            metadata=run.metadata,
            kwargs=run.kwargs,
            multitask_strategy=run.multitask_strategy,
        )

    async def run_of(self, thread_id: str | None, run_id: str) -> Run:
        """The run ``run_id`` (of ``thread_id``, unless ``None``); 404 if there is none."""
        run = await self.runs.get(run_id)
        if run is None and thread_id is None:
            raise HTTPProblem(404, f"run {run_id!r} not found")
        if run is None or thread_id not in (None, run.thread_id):
            raise HTTPProblem(404, f"run {run_id!r} not found on thread {thread_id!r}")
        return run

    # -- runs --------------------------------------------------------------------------------

    def _plan(self, thread_id: str | None, body: dict[str, Any], waited: bool) -> _Plan:
        """What ``body`` asks a run to do, checked (422 for what does not fit), with no
        side effect: a refused request leaves nothing behind."""
        fields = Fields(body)
        served = self.assistant(fields.text("assistant_id"))
        refuse_unsupported(body)
        command = fields.obj("command") if "command" in body else None
        keep = fields.choice("on_completion", ("delete", "keep"), "delete") == "keep"
        if thread_id is None and command is not None and "resume" in command:
            raise HTTPProblem(400, "You must provide a thread_id when resuming.")
        if_not_exists = fields.choice("if_not_exists", ("reject", "create"), "reject")
        strategy = fields.choice("multitask_strategy", MULTITASK_STRATEGIES, "enqueue")
        metadata = fields.obj("metadata")
        subgraphs = fields.flag("stream_subgraphs")
        fields.choice("on_disconnect", ("cancel", "continue"), "continue")
        fields.flag("stream_resumable")
        run_config_fields(fields)
        tid = thread_id if thread_id is not None else str(uuid.uuid4())
        try:
            modes = parse_stream_modes(
                body.get("stream_mode"), default=() if waited else ("values",)
            )
            config = run_config_from_wire(tid, body)
            raw, fits = body.get("input"), served.graph.check_input
            value: Any = command_from_wire(command) if command else input_from_wire(raw, fits=fits)
        except ValueError as error:
            raise HTTPProblem(422, str(error)) from None
        if isinstance(value, Command) and not value.has_resume and value.update is None:
            value = None  # ``Command(resume=None)`` arrives as {}: no resume, as LangGraph
        return _Plan(
            served, tid, value, config, modes, subgraphs, strategy, dict(metadata),
            stateless=thread_id is None, keep=keep, create=if_not_exists == "create",
        )  # fmt: skip

    async def start_run(
        self, thread_id: str | None, body: dict[str, Any], *, waited: bool = False
    ) -> Run:
        """Start the run ``body`` asks for on ``thread_id`` (``None``: a stateless run, on a
        thread of its own, deleted once the run ends unless ``on_completion`` is ``"keep"``);
        answered once it is recorded and its input is stored (or it is queued). A ``waited``
        run (``wait``: its answer is the final values) streams only the modes it names (none
        by default: the values of each step are not converted for nobody)."""
        plan = self._plan(thread_id, body, waited)
        served = plan.served
        kwargs = recorded_kwargs(served.graph, plan.value, body, plan.thread_id)
        # the thread last, so that a refused request leaves none behind
        if plan.stateless:
            record = await self.create_thread(plan.thread_id, {}, served.graph_id)
        else:
            try:
                record = await self.find_thread(plan.thread_id)
            except HTTPProblem:
                if not plan.create:
                    raise
                record = await self.create_thread(plan.thread_id, {}, served.graph_id)
        if record.graph_id not in (None, served.graph_id):
            raise HTTPProblem(
                409,
                f"thread {plan.thread_id!r} belongs to {record.graph_id!r}, not "
                f"{served.graph_id!r}",
            )
        answer = plan.value if isinstance(plan.value, Command) and plan.value.has_resume else None
        # a busy thread may be at another pause by the time this run starts: the run checks
        if answer is not None and not await self.runs.busy(plan.thread_id):
            await check_resume(served.graph, plan.thread_id, answer.resume)
        record.graph_id = served.graph_id
        record.updated_at = now()
        # as LangGraph's server does: thread lists filter on these (threads.search)
        record.metadata.setdefault("graph_id", served.graph_id)
        record.metadata.setdefault("assistant_id", assistant_id_for(served.graph_id))
        await self.save_thread(record)
        if not kwargs.get("stream_mode"):  # the modes it runs in: none for a waited run
            kwargs["stream_mode"] = list(plan.modes)
        try:
            run = await self.runs.start(
                plan.thread_id,
                assistant_id_for(served.graph_id),
                kwargs,
                plan.metadata,
                plan.strategy,
                self._executor(plan),
                self._thread_ops(served, plan.thread_id),
                stateless=plan.stateless,
            )
        except ThreadBusyError as error:
            raise HTTPProblem(409, str(error)) from None
        if plan.stateless and not plan.keep:
            self._spawn(self._delete_when_done(run, record))
        return run

    def _executor(self, plan: _Plan) -> Execute:
        async def execute(run: Run) -> RunStatus:
            value = plan.value
            if run.resumed:  # taken up again: from where the thread stands, if it moved
                at = RunnableConfig(thread_id=run.thread_id)
                snapshot = await plan.served.graph.aget_state(at)
                head = snapshot.checkpoint_id if snapshot is not None else None
                if snapshot is not None and head != run.started_at_checkpoint:
                    if not snapshot.next or snapshot.interrupts:  # it had ended (or paused)
                        run.output = snapshot
                        return "success"
                    value = None
            config = plan.config if run.lease is None else plan.config.replace(lease=run.lease)
            return await self._execute(run, plan.served, value, config, plan.modes, plan.subgraphs)

        return execute

    def _thread_ops(self, served: Served, thread_id: str) -> ThreadOps:
        graph = served.graph

        async def head() -> str | None:
            snapshot = await graph.aget_state(RunnableConfig(thread_id=thread_id))
            return snapshot.checkpoint_id if snapshot is not None else None

        async def restore(checkpoint_id: str | None) -> None:
            if checkpoint_id is None:  # the thread's first run: it had nothing before
                assert graph.saver is not None
                await graph.saver.adelete_thread(thread_id)
            else:
                at = RunnableConfig(thread_id=thread_id, checkpoint_id=checkpoint_id)
                await graph.aupdate_state(at, None)

        return ThreadOps(head, restore, graph.saver)

    def driver_of(self, run: Run, lease: str | None = None) -> tuple[Execute, ThreadOps] | None:
        """How to drive a recorded ``run`` again (a restart, a worker): from what its client
        asked, with every checkpoint write fenced by ``lease``; ``None`` if it cannot be (its
        assistant is not served here, or what it asked no longer fits)."""
        body = {**run.kwargs, "assistant_id": run.assistant_id}
        try:
            planned = self._plan(None if run.stateless else run.thread_id, body, False)
        except HTTPProblem:
            return None
        config = planned.config.replace(thread_id=run.thread_id, lease=lease)
        planned = dataclasses.replace(planned, thread_id=run.thread_id, config=config)
        return self._executor(planned), self._thread_ops(planned.served, run.thread_id)

    def saver_of(self, run: Run) -> Any:
        """The saver that keeps ``run``'s thread (``None``: its assistant is not served)."""
        served = self.by_assistant.get(run.assistant_id) or self.served.get(run.assistant_id)
        return served.graph.saver if served is not None else None

    async def recover(self) -> list[Run]:
        """Take up the runs a stopped process had accepted but not ended (at startup)."""
        return await self.runs.recover(self.driver_of)

    async def _delete_when_done(self, run: Run, record: ThreadRecord) -> None:
        await self.runs.join(run)
        await self.delete_thread(record)

    async def _execute(
        self,
        run: Run,
        served: Served,
        value: Any,
        config: RunnableConfig,
        modes: list[str],
        subgraphs: bool,
    ) -> RunStatus:
        """Drive ``run`` and write its log (no protocol in it: a reader encodes it, see
        ``_wire_read``): its events, and the thread's state before it and at each stored step
        when the modes it streams show the state."""
        log = run.log
        with_states = snapshots_needed(modes)
        record = await self.find_thread(run.thread_id)
        children = len(record.children)
        await log.append(ATTEMPT, run.attempt)
        if value is None or isinstance(value, Command):
            snapshot = await served.graph.aget_state(config)
            if snapshot is not None:
                await log.append(BEFORE, snapshot)
            run.started.set()  # nothing new to store: the thread has it
        stored: str | None = None  # the last checkpoint of the root graph the log shows
        try:
            # closed here, not by the garbage collector: closing it stops the run
            events = served.events(value, config)
            try:
                async for event in events:
                    await log.append(EVENT, event)
                    if isinstance(event, CheckpointEvent) and event.namespace:
                        record.children.add("|".join((run.thread_id, *event.namespace)))
                    if isinstance(event, CheckpointEvent) and not event.namespace:
                        run.started.set()  # the input (then each step) is stored
                        stored = event.checkpoint_id
                        if with_states:
                            at = RunnableConfig(thread_id=run.thread_id, checkpoint_id=stored)
                            snapshot = await served.graph.aget_state(at)
                            if snapshot is not None:
                                await log.append(STATE, snapshot)
                        await log.flush()  # kept with the step: a restart reads them
                    if isinstance(event, RunEnd) and not event.namespace:
                        record.updated_at = now()
                    if run.draining:  # its worker stops: at this step's end (aclose)
                        raise RunDrained(run.run_id)
                    if run.stopping:  # cancelled, the cancel swallowed on the way (wait_for)
                        raise asyncio.CancelledError
            except asyncio.CancelledError:
                # cancelled between two events (keeping them, reading a state): stopped at
                # once, as when cancelled waiting for one (closed, it would end its step)
                with contextlib.suppress(BaseException):
                    await events.athrow(asyncio.CancelledError())
                raise
            finally:
                await events.aclose()
                if len(record.children) != children:
                    await self.save_thread(record)
        except asyncio.CancelledError:
            # a cancelled run ends its step and stores it (nothing it streamed is lost):
            # the stream ends on what was stored
            if with_states:
                snapshot = await served.graph.aget_state(RunnableConfig(thread_id=run.thread_id))
                if snapshot is not None and snapshot.checkpoint_id != stored:
                    await log.append(STATE, snapshot)
            raise
        run.output = await self.snapshot(record)  # kept: a stateless run's thread goes
        return "success"

    async def final_values(self, run: Run) -> dict[str, Any]:
        """What ``runs.wait`` and ``join`` answer: the thread's values after the run (with
        ``__interrupt__`` when it paused), or ``__error__`` when it failed."""
        output = run.output
        if isinstance(output, BaseException):
            return {"__error__": error_to_wire(output)}
        if output is None:
            record = self.threads.get(run.thread_id) or await self.runs.store.get_thread(
                run.thread_id
            )
            output = await self.snapshot(record) if record is not None else None
        if not isinstance(output, StateSnapshot):
            return {}
        waiting = [i for i in output.interrupts if i.when == "during"]
        return values_to_wire(output.values, thread_id=run.thread_id, interrupts=waiting)

    def stream(
        self,
        run: Run,
        last_event_id: str | None,
        *,
        cancel_on_disconnect: bool = False,
        modes: list[str] | None = None,
        subgraphs: bool | None = None,
    ) -> Response:
        """The run's events as SSE, from after ``last_event_id`` (none: from the start), in
        ``modes`` and with its subgraphs' parts when ``subgraphs`` (``None``: as the run was
        asked for), with heartbeats while it is quiet;
        with ``cancel_on_disconnect``, a client that goes away before the run ends cancels
        it."""
        try:
            modes = reader_modes(run, modes)
        except ValueError as error:
            raise HTTPProblem(422, str(error)) from None
        try:
            seen = check_last_event_id(run, last_event_id, modes, subgraphs)
        except ValueError as error:
            raise HTTPProblem(400, str(error)) from None

        async def batches() -> AsyncIterator[list[WireEntry]]:
            finished = False
            try:
                async for batch in wire_batches(
                    run, seen, idle=self.heartbeat, modes=modes, subgraphs=subgraphs
                ):
                    yield batch
                finished = True
            finally:
                if not finished and cancel_on_disconnect:
                    self._spawn(self.runs.cancel(run, wait=False))

        return sse_response(batches(), headers=self.run_headers(run, "/stream"))

    def run_headers(self, run: Run, suffix: str) -> dict[str, str]:
        """``Location`` (where to follow the run: ``suffix`` is ``/stream`` or ``/join``) and
        ``Content-Location`` (the run), as clients read them to reconnect. The ids are
        percent-encoded: a thread id may be any text, a header only Latin-1."""
        thread, run_id = quote(run.thread_id, safe=""), quote(run.run_id, safe="")
        where = f"/runs/{run_id}" if run.stateless else f"/threads/{thread}/runs/{run_id}"
        location = f"/threads/{thread}/runs/{run_id}{suffix}"
        if run.stateless and suffix == "/stream":
            location = f"/runs/{run_id}/stream"
        return {"Location": location, "Content-Location": where}

    async def cancel_unless_answered(self, run: Run, answer: Awaitable[T]) -> T:
        """``answer``'s value; if the one waiting for it goes away first (the request is
        cancelled), ``run`` is cancelled too (``on_disconnect="cancel"``)."""
        try:
            return await answer
        except asyncio.CancelledError:
            self._spawn(self.runs.cancel(run, wait=False))
            raise

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)


def wire_status(status: str) -> str:
    """A run's status in the Agent Protocol's words: it has no ``cancelled``; LangGraph's
    server says ``interrupted`` (a record of an earlier version says it already)."""
    return "interrupted" if status == "cancelled" else status


def server_of(request: Request) -> Server:
    """The ``Server`` of the app that answers ``request``."""
    server: Server = request.app.state.server
    return server


async def read_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, within the server's body limit."""
    return await json_body(request, server_of(request).max_body)

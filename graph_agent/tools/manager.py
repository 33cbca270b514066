"""Running the tool calls a model asked for, and deciding whether to run them at all."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._runtime.pool import Countdown, run_all
from .._runtime.task_scope import NOTHING_KEPT, TaskScope, current_task
from .._runtime.workers import FinishedAfterCancel
from ..errors import (
    ToolExecutionException,
    ToolResolutionError,
    UnknownToolError,
)
from ..events import ToolEnd, ToolStart
from ..messages import AssistantMessage, Message, ToolCall, ToolResponse, ToolResponseMessage
from ..models.types import ChatResponse, Prompt, ToolCallingChatOptions
from ._batch import (
    as_tool_exception,
    calls_of,
    finished_outcomes,
    log_tool_error,
    paced_all,
    stored_calls_of,
    stores_progress,
)
from ._execute import AExecute, Execute
from .callback import ToolCallback
from .context import ToolContext
from .definition import ToolDefinition
from .execution import (
    DefaultToolExecutionExceptionProcessor,
    ToolExecutionExceptionProcessor,
    UnknownToolStrategy,
)

if TYPE_CHECKING:
    from .resolution import ToolCallbackResolver

_log = logging.getLogger("graph_agent.tools")

__all__ = [
    "DefaultToolExecutionEligibilityPredicate",
    "ToolCallInterceptor",
    "ToolCallRequest",
    "ToolCallingManager",
    "ToolExecutionEligibilityPredicate",
    "ToolExecutionRecord",
    "ToolExecutionResult",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ToolExecutionRecord:
    """One executed tool call: what was asked, what the model got back, how long it took.

    ``error`` is the failure (invalid arguments, the tool raised, unknown tool) even when it
    was turned into a response for the model; ``result`` is that response text.
    """

    tool_call_id: str
    name: str
    arguments: str
    result: str
    error: BaseException | None
    duration: float
    return_direct: bool


@dataclasses.dataclass(frozen=True, slots=True)
class ToolExecutionResult:
    """The conversation after the tool calls (prompt, the assistant's message, one
    ``ToolResponseMessage`` with a response per call, in call order), whether the results go
    straight to the caller, a record per call, and what each call wrote to ``extra_state``."""

    conversation_history: list[Message]
    return_direct: bool = False
    records: tuple[ToolExecutionRecord, ...] = ()
    extra_states: tuple[dict[str, Any], ...] = ()

    @property
    def tool_response(self) -> ToolResponseMessage:
        """The message with the tools' responses (the last one of the history)."""
        message = self.conversation_history[-1]
        assert isinstance(message, ToolResponseMessage)
        return message


class ToolExecutionEligibilityPredicate(Protocol):
    """Decides whether the framework runs a response's tool calls itself."""

    def __call__(self, options: Any, response: ChatResponse) -> bool: ...


class DefaultToolExecutionEligibilityPredicate:
    """Run them when the response has tool calls and the options do not say
    ``internal_tool_execution_enabled=False``."""

    def __call__(self, options: Any, response: ChatResponse) -> bool:
        enabled = getattr(options, "internal_tool_execution_enabled", True)
        return bool(enabled) and response.has_tool_calls()


@dataclasses.dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """One tool call about to run: the model's call, the tool it names (``None`` when there is
    no such tool) and the call's context (``state`` and ``config`` inside an agent)."""

    tool_call: ToolCall
    tool: ToolCallback | None
    tool_context: ToolContext

    @property
    def state(self) -> Any:
        return self.tool_context.state

    @property
    def config(self) -> Any:
        return self.tool_context.config

    def replace(self, **changes: Any) -> ToolCallRequest:
        """A copy with fields changed, e.g. ``request.replace(tool_call=edited_call)``."""
        return dataclasses.replace(self, **changes)


class ToolCallInterceptor(Protocol):
    """Wraps tool calls: ``intercept_tool_call(request, handler)`` returns the tool's text
    (usually ``handler(request)``) and ``aintercept_tool_call`` is its async twin, usually an
    ``async def`` that awaits ``handler(request)``; any method returning an awaitable of the
    text will do (one that passes on ``handler(request)`` as it is adds no coroutine)."""

    def intercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], str]
    ) -> str: ...

    def aintercept_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[str]],
    ) -> Awaitable[str]: ...


class _Intercepted:
    """``handler`` wrapped by ``interceptor``: called with a request, it calls the
    interceptor's ``intercept_tool_call`` (``aintercept_tool_call`` when ``is_async``) and
    returns what that returns, so an async chain is the interceptors' own coroutines."""

    __slots__ = ("handler", "interceptor", "is_async")

    def __init__(self, interceptor: ToolCallInterceptor, handler: Any, is_async: bool) -> None:
        self.interceptor = interceptor
        self.handler = handler
        self.is_async = is_async

    def __call__(self, request: ToolCallRequest) -> Any:
        if self.is_async:
            return self.interceptor.aintercept_tool_call(request, self.handler)
        return self.interceptor.intercept_tool_call(request, self.handler)


@dataclasses.dataclass(slots=True)
class _Outcome:
    response: ToolResponse
    record: ToolExecutionRecord
    extra_state: dict[str, Any]


class ToolCallingManager:
    """Resolves the tools of a request and executes the tool calls of a response.

    Several calls in one response run concurrently (``parallel=False``: one after another);
    results keep the order of the calls and every call gets a response. A failing tool's
    exception goes through ``exception_processor`` (by default its message reaches the
    model); a call of an unknown tool is answered by ``unknown_tool_strategy``
    (``"respond"``: the list of available tools; ``"throw"``: ``UnknownToolError``; or a
    callable ``(name, available) -> str``). ``interceptors`` wrap each call (the first is
    outermost): they may rewrite the ``ToolCallRequest``, retry, or answer without calling.
    """

    def __init__(
        self,
        tool_callback_resolver: ToolCallbackResolver | None = None,
        exception_processor: ToolExecutionExceptionProcessor | None = None,
        unknown_tool_strategy: UnknownToolStrategy = "respond",
        parallel: bool = True,
        interceptors: Sequence[ToolCallInterceptor] = (),
    ) -> None:
        if unknown_tool_strategy not in ("respond", "throw") and not callable(
            unknown_tool_strategy
        ):
            raise ValueError(
                "unknown_tool_strategy must be 'respond', 'throw' or a callable "
                f"(name, available) -> str, got {unknown_tool_strategy!r}"
            )
        self.resolver = tool_callback_resolver
        self.exception_processor = exception_processor or DefaultToolExecutionExceptionProcessor()
        self.unknown_tool_strategy = unknown_tool_strategy
        self.parallel = parallel
        self.interceptors = tuple(interceptors)

    # -- resolving --------------------------------------------------------------------------

    def resolve_tool_callbacks(self, options: ToolCallingChatOptions | None) -> list[ToolCallback]:
        """The callbacks of ``options``: its ``tool_callbacks``, then its ``tool_names``
        resolved by the resolver. Raises ``ValueError`` for a name nobody can resolve and
        for two tools with one name."""
        if options is None:
            return []
        callbacks = list(options.tool_callbacks)
        for name in options.tool_names:
            callback = self.resolver.resolve(name) if self.resolver is not None else None
            if callback is None:
                where = (
                    "no resolver is configured"
                    if self.resolver is None
                    else (f"{self.resolver!r} does not know it")
                )
                raise ToolResolutionError(
                    f"tool name '{name}' cannot be resolved: {where}. Pass the tool itself, "
                    "or give the ToolCallingManager a resolver that knows it"
                )
            callbacks.append(callback)
        seen: dict[str, ToolCallback] = {}
        for callback in callbacks:
            name = callback.tool_definition.name
            if name in seen and seen[name] is not callback:
                raise ToolResolutionError(
                    f"two tools are named '{name}'; tool names must be unique: rename one "
                    "with @tool(name=...)"
                )
            seen[name] = callback
        return list(seen.values())

    def resolve_tool_definitions(
        self, options: ToolCallingChatOptions | None
    ) -> list[ToolDefinition]:
        """What the model is told about the tools of ``options``."""
        return [c.tool_definition for c in self.resolve_tool_callbacks(options)]

    # -- executing --------------------------------------------------------------------------

    def _plan(
        self,
        options: ToolCallingChatOptions | None,
        tool_context: ToolContext | Mapping[str, Any] | None,
        callbacks: Sequence[ToolCallback] | None,
    ) -> tuple[dict[str, ToolCallback], ToolContext]:
        found = list(callbacks) if callbacks is not None else self.resolve_tool_callbacks(options)
        by_name = {c.tool_definition.name: c for c in found}
        if isinstance(tool_context, ToolContext) and (options is None or not options.tool_context):
            return by_name, tool_context  # each call gets its own copy
        entries: dict[str, Any] = dict(options.tool_context) if options is not None else {}
        if isinstance(tool_context, ToolContext):
            entries.update(tool_context.context)
        elif tool_context is not None:
            entries.update(tool_context)
        return by_name, ToolContext(entries)

    def _chain(self, execute: Execute) -> Callable[[ToolCallRequest], str]:
        """The call of one tool, wrapped by the interceptors (the first is outermost);
        ``execute.reached`` is the request as it finally reached the tool."""
        handler: Callable[[ToolCallRequest], str] = execute
        for interceptor in reversed(self.interceptors):
            handler = _Intercepted(interceptor, handler, False)
        return handler

    def _achain(self, execute: AExecute) -> Callable[[ToolCallRequest], Awaitable[str]]:
        handler: Callable[[ToolCallRequest], Awaitable[str]] = execute
        for interceptor in reversed(self.interceptors):
            handler = _Intercepted(interceptor, handler, True)
        return handler

    def _call_steps(
        self,
        call: ToolCall,
        by_name: Mapping[str, ToolCallback],
        context: ToolContext,
        execute: Execute,
    ) -> Generator[ToolCallRequest, str, _Outcome]:
        """One tool call, written once: it yields the request for the interceptor chain to
        run (sync or async, see ``_run_one``/``_arun_one``) and gets the text back, or the
        chain's exception thrown in. ``execute.reached`` is the request as it finally reached
        the tool (an interceptor may rewrite it)."""
        request = ToolCallRequest(call, by_name.get(call.name), context.with_call(call.id))
        # Inside a graph task the call has a scope of its own (its interrupts are numbered apart
        # from its siblings', so each parallel call is resumed with its own value); outside,
        # none. Set and restored here, not by a context manager: one object less per waiting call.
        task = current_task.get()
        scope = task.child(call.id) if task is not None else None
        if scope is not None:
            current_task.set(scope)  # restored below by value: no Token kept while it runs
        try:
            earlier = _recalled(scope, request)
            if earlier is not None:
                return earlier
            _started(scope, call)
            started = time.perf_counter()
            error: BaseException | None = None
            try:
                text = yield request
                if request.tool is None:
                    error = LookupError(f"unknown tool '{call.name}'")
            except UnknownToolError:
                raise
            except FinishedAfterCancel as stop:  # the run is cancelled, the tool had finished
                error = stop.error
                text = stop.text if stop.text is not None else f"{type(error).__name__}: {error}"
                _ended(scope, self._outcome(execute.reached or request, text, error, started))
                raise
            except Exception as exc:
                error = exc
                text = self.exception_processor.process(as_tool_exception(exc, call.name))
                # only when the error goes back to the model: a raised one reaches the caller
                log_tool_error(call, exc)
            return _ended(scope, self._outcome(execute.reached or request, text, error, started))
        finally:
            if scope is not None:
                current_task.set(task)

    def _run_one(
        self,
        call: ToolCall,
        by_name: Mapping[str, ToolCallback],
        context: ToolContext,
    ) -> _Outcome:
        execute = Execute(self, by_name)
        steps = self._call_steps(call, by_name, context, execute)
        try:
            request = next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            text = self._chain(execute)(request)
        except BaseException as exc:  # the steps decide what becomes of it
            return _last(steps, error=exc)
        return _last(steps, text=text)

    async def _arun_one(
        self,
        call: ToolCall,
        by_name: Mapping[str, ToolCallback],
        context: ToolContext,
    ) -> _Outcome:
        execute = AExecute(self, by_name)
        steps = self._call_steps(call, by_name, context, execute)
        try:
            request = next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            text = await self._achain(execute)(request)
        except BaseException as exc:
            return _last(steps, error=exc)
        return _last(steps, text=text)

    @staticmethod
    def _outcome(
        request: ToolCallRequest, text: str, error: BaseException | None, started: float
    ) -> _Outcome:
        call, tool = request.tool_call, request.tool
        return_direct = tool is not None and tool.tool_metadata.return_direct
        record = ToolExecutionRecord(
            tool_call_id=call.id,
            name=call.name,
            arguments=call.arguments,
            result=text,
            error=error,
            duration=time.perf_counter() - started,
            return_direct=return_direct and error is None,
        )
        response = ToolResponse(id=call.id, name=call.name, response_data=text)
        return _Outcome(response, record, request.tool_context.extra_state)

    @staticmethod
    def _result(
        earlier: Sequence[Message], message: AssistantMessage, outcomes: list[_Outcome]
    ) -> ToolExecutionResult:
        history: list[Message] = [
            *earlier,
            message,
            ToolResponseMessage(responses=tuple(o.response for o in outcomes)),
        ]
        records = tuple(o.record for o in outcomes)
        return ToolExecutionResult(
            conversation_history=history,
            return_direct=bool(records) and all(r.return_direct for r in records),
            records=records,
            extra_states=tuple(o.extra_state for o in outcomes),
        )

    def execute_tool_calls(
        self,
        prompt: Prompt,
        response: ChatResponse,
        *,
        tool_context: ToolContext | Mapping[str, Any] | None = None,
        tool_callbacks: Sequence[ToolCallback] | None = None,
    ) -> ToolExecutionResult:
        """Run the tool calls of ``response`` (the tools of ``prompt``'s options, or
        ``tool_callbacks``); ``tool_context`` entries are added to the options' ones."""
        return self._execute_message(
            _calling(response), prompt.tool_options, tool_context, tool_callbacks, prompt.messages
        )

    async def aexecute_tool_calls(
        self,
        prompt: Prompt,
        response: ChatResponse,
        *,
        tool_context: ToolContext | Mapping[str, Any] | None = None,
        tool_callbacks: Sequence[ToolCallback] | None = None,
    ) -> ToolExecutionResult:
        """Async ``execute_tool_calls``: calls run as concurrent tasks; sync tools run in
        worker threads."""
        return await self._aexecute_message(
            _calling(response), prompt.tool_options, tool_context, tool_callbacks, prompt.messages
        )

    def _execute_message(
        self,
        message: AssistantMessage,
        options: ToolCallingChatOptions | None,
        tool_context: ToolContext | Mapping[str, Any] | None,
        tool_callbacks: Sequence[ToolCallback] | None,
        earlier: Sequence[Message] = (),
    ) -> ToolExecutionResult:
        """The tool calls of ``message``; the result's history is ``earlier``, ``message``
        and the responses (the agent's tool node passes no ``earlier``: it keeps only the
        responses, and copying a long conversation for each tool step would be waste)."""
        by_name, context = self._plan(options, tool_context, tool_callbacks)
        parallel = self.parallel and len(message.tool_calls) > 1
        if parallel and stores_progress():
            running = Countdown(len(message.tool_calls))
            calls = [
                functools.partial(self._run_stored, c, by_name, context, running)
                for c in message.tool_calls
            ]
        else:
            calls = [
                functools.partial(self._run_one, c, by_name, context) for c in message.tool_calls
            ]
        results: list[_Outcome | BaseException] = (
            run_all(calls) if parallel else [call() for call in calls]
        )
        return self._result(earlier, message, finished_outcomes(results))

    def _run_stored(
        self,
        call: ToolCall,
        by_name: Mapping[str, ToolCallback],
        context: ToolContext,
        running: Countdown,
    ) -> _Outcome:
        """``_run_one`` in a parallel batch on a durable saver: a call that finished while
        its siblings still run is stored at once (a killed process must not lose it)."""
        try:
            outcome = self._run_one(call, by_name, context)
        except BaseException:
            running.one_finished()
            raise
        task = current_task.get()
        if running.one_finished() and task is not None:
            task.child(call.id).store_kept(running.running)
        return outcome

    async def _arun_stored(
        self,
        call: ToolCall,
        by_name: Mapping[str, ToolCallback],
        context: ToolContext,
        running: Countdown,
    ) -> _Outcome:
        """``_run_stored`` in async runs."""
        try:
            outcome = await self._arun_one(call, by_name, context)
        except BaseException:
            running.one_finished()
            raise
        task = current_task.get()
        if running.one_finished() and task is not None:
            await task.child(call.id).astore_kept(running.running)
        return outcome

    async def _aexecute_message(
        self,
        message: AssistantMessage,
        options: ToolCallingChatOptions | None,
        tool_context: ToolContext | Mapping[str, Any] | None,
        tool_callbacks: Sequence[ToolCallback] | None,
        earlier: Sequence[Message] = (),
    ) -> ToolExecutionResult:
        by_name, context = self._plan(options, tool_context, tool_callbacks)
        del options, tool_context, tool_callbacks  # not kept while the tools run
        if len(message.tool_calls) == 1:  # the common case, with nothing more to keep meanwhile
            outcome = await self._arun_one(message.tool_calls[0], by_name, context)
            return self._result(earlier, message, finished_outcomes([outcome]))
        if self.parallel and stores_progress():
            coroutines = stored_calls_of(self, message.tool_calls, by_name, context)
        else:
            coroutines = calls_of(self, message.tool_calls, by_name, context)
        if self.parallel:  # each call a task: held back like its run by a slow event reader
            results = await asyncio.gather(*paced_all(coroutines), return_exceptions=True)
        else:
            results = []
            try:  # one after another; a failure that raises stops the rest
                for coroutine in coroutines:
                    results.append(await coroutine)
            finally:
                for rest in coroutines[len(results) + 1 :]:
                    rest.close()
        return self._result(earlier, message, finished_outcomes(results))


def _calling(response: ChatResponse) -> AssistantMessage:
    """The message of the first generation that calls tools."""
    for generation in response.results:
        if generation.output.tool_calls:
            return generation.output
    raise ValueError(
        "the response has no tool calls to execute; check response.has_tool_calls() first"
    )


def _started(scope: TaskScope | None, call: ToolCall) -> None:
    if scope is not None and scope.run.bus is not None:
        scope.run.event(ToolStart, scope, call_id=call.id, name=call.name, arguments=call.arguments)


def _last(
    steps: Generator[ToolCallRequest, str, _Outcome],
    *,
    text: str = "",
    error: BaseException | None = None,
) -> _Outcome:
    """Finish a call's steps with the chain's text, or its exception."""
    try:
        if error is not None:
            steps.throw(error)
        else:
            steps.send(text)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    raise RuntimeError("a tool call's steps did not finish")  # pragma: no cover


def _recalled(scope: TaskScope | None, request: ToolCallRequest) -> _Outcome | None:
    """The outcome this call had in an earlier run of the task (which stopped because a
    sibling call failed or paused): a finished call never runs twice."""
    if scope is None:
        return None
    kept = scope.recall()
    if kept is NOTHING_KEPT:
        return None
    text, error, return_direct, extra_state = kept
    call = request.tool_call
    record = ToolExecutionRecord(
        tool_call_id=call.id,
        name=call.name,
        arguments=call.arguments,
        result=text,
        error=None if error is None else ToolExecutionException(error, tool_name=call.name),
        duration=0.0,
        return_direct=return_direct,
    )
    response = ToolResponse(id=call.id, name=call.name, response_data=text)
    return _Outcome(response, record, dict(extra_state))


def _ended(scope: TaskScope | None, outcome: _Outcome) -> _Outcome:
    """Keep the call's outcome for a re-run of its task, and announce it (``tool_end``)."""
    if scope is not None:
        record = outcome.record
        error = None if record.error is None else f"{type(record.error).__name__}: {record.error}"
        scope.keep([record.result, error, record.return_direct, outcome.extra_state])
        if scope.run.bus is None:
            return outcome
        scope.run.event(
            ToolEnd,
            scope,
            call_id=record.tool_call_id,
            name=record.name,
            result=record.result,
            error=record.error,
            duration=record.duration,
            return_direct=record.return_direct,
        )
    return outcome

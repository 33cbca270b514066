"""One tool call, run: its request through the interceptor chain to the tool's own call
(``CallTool.execute``/``aexecute`` innermost), its failure logged and turned into the model's
response, its outcome kept for a re-run of the task and announced (``tool_start``,
``tool_end``). Written once as steps (``call_steps``, yielding one ``CallTool`` effect) that
``run_one`` drives with ``checkpoint.effects.perform`` and ``arun_one`` with ``aperform``.

What a call reads of its ``ToolCallingManager`` is ``CallSettings``: the manager passes
itself, and this module does not import it (``manager`` and ``_batch`` are built on this one).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from checkpoint.effects import Effect, Steps, aperform, perform

from .._runtime.task_scope import NOTHING_KEPT, TaskScope, current_task
from .._runtime.workers import FinishedAfterCancel
from ..errors import ToolArgumentsError, ToolExecutionException, UnknownToolError
from ..events import ToolEnd, ToolStart
from ..messages import ToolCall, ToolResponse, tool_response
from .callback import ToolCallback
from .execution import ToolExecutionExceptionProcessor, UnknownToolStrategy, unknown_tool_response
from .request import ToolCallInterceptor, ToolCallRequest, ToolExecutionRecord, answered

if TYPE_CHECKING:
    from .._runtime.pool import Countdown
    from .context import ToolContext

__all__ = [
    "CallSettings",
    "CallTool",
    "Outcome",
    "StoreKept",
    "arun_one",
    "arun_stored",
    "as_tool_exception",
    "call_steps",
    "log_tool_error",
    "run_one",
    "run_stored",
    "stored_steps",
]

_log = logging.getLogger("graph_agent.tools")


class CallSettings(Protocol):
    """What running one call reads of its ``ToolCallingManager`` (read at each call, so a
    setting changed on the manager holds from its next call on)."""

    @property
    def exception_processor(self) -> ToolExecutionExceptionProcessor: ...

    @property
    def unknown_tool_strategy(self) -> UnknownToolStrategy: ...

    @property
    def interceptors(self) -> Sequence[ToolCallInterceptor]: ...


@dataclasses.dataclass(slots=True)
class Outcome:
    """What one call ended with: the model's response, the record, the call's ``extra_state``."""

    response: ToolResponse
    record: ToolExecutionRecord
    extra_state: dict[str, Any]


class CallTool(Effect):
    """The effect of one tool call: its request through the interceptor chain to the
    tool's own call, the tool's text its result. ``run`` takes the sync path
    (``intercept_tool_call``, ``tool.call``), ``arun`` the async one
    (``aintercept_tool_call``, ``tool.acall``). ``reached`` is the request as it finally
    reached the tool (an interceptor may have rewritten it); ``None`` until it does.

    The effect is also the chain's innermost handler (``execute``/``aexecute``): one object
    per call for both, and without interceptors no handler object at all."""

    __slots__ = ("by_name", "reached", "request", "settings")

    def __init__(
        self, settings: CallSettings, by_name: Mapping[str, ToolCallback], request: ToolCallRequest
    ) -> None:
        self.settings = settings
        self.by_name = by_name
        self.request = request
        self.reached: ToolCallRequest | None = None

    def run(self, context: Any) -> str:
        interceptors = self.settings.interceptors
        if not interceptors:
            return self.execute(self.request)
        if len(interceptors) == 1:  # (an agent's: it answers rejected calls) no chain to make
            return interceptors[0].intercept_tool_call(self.request, self.execute)
        return _chain(interceptors, self.execute, False)(self.request)  # type: ignore[no-any-return]

    def arun(self, context: Any) -> Awaitable[str]:
        interceptors = self.settings.interceptors
        if not interceptors:
            return self.aexecute(self.request)
        if len(interceptors) == 1:
            return interceptors[0].aintercept_tool_call(self.request, self.aexecute)
        return _chain(interceptors, self.aexecute, True)(self.request)  # type: ignore[no-any-return]

    def execute(self, request: ToolCallRequest) -> str:
        """The innermost handler of a sync chain: the tool's own call."""
        self.reached = request
        if request.tool is None:
            return self._unknown(request)
        return request.tool.call(request.tool_call.arguments, request.tool_context)

    def aexecute(self, request: ToolCallRequest) -> Awaitable[str]:
        """The innermost handler of an async chain: the tool's own coroutine (not one
        awaiting it: one object less while a tool runs)."""
        self.reached = request
        if request.tool is None:
            return answered(self._unknown(request))
        return request.tool.acall(request.tool_call.arguments, request.tool_context)

    def _unknown(self, request: ToolCallRequest) -> str:
        return unknown_tool_response(
            self.settings.unknown_tool_strategy, request.tool_call.name, sorted(self.by_name)
        )

    def __repr__(self) -> str:
        return f"CallTool({self.request.tool_call.name!r}, id={self.request.tool_call.id!r})"


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


def _chain(
    interceptors: Sequence[ToolCallInterceptor],
    innermost: Callable[[ToolCallRequest], Any],
    is_async: bool,
) -> Callable[[ToolCallRequest], Any]:
    """``innermost`` wrapped by the interceptors (the first is outermost)."""
    handler = innermost
    for interceptor in reversed(interceptors):
        handler = _Intercepted(interceptor, handler, is_async)
    return handler


def call_steps(
    settings: CallSettings,
    call: ToolCall,
    by_name: Mapping[str, ToolCallback],
    context: ToolContext,
) -> Steps[Outcome]:
    """One tool call, written once: it yields a ``CallTool`` effect (performed sync or
    async, see ``run_one``/``arun_one``) and gets the tool's text back, or the chain's
    exception thrown in."""
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
        effect = CallTool(settings, by_name, request)
        try:
            text = yield effect
            if request.tool is None:
                error = LookupError(f"unknown tool '{call.name}'")
        except UnknownToolError:
            raise
        except FinishedAfterCancel as stop:  # the run is cancelled, the tool had finished
            error = stop.error
            text = stop.text if stop.text is not None else f"{type(error).__name__}: {error}"
            _ended(scope, _outcome(effect.reached or request, text, error, started))
            raise
        except Exception as exc:
            error = exc
            text = settings.exception_processor.process(as_tool_exception(exc, call.name))
            # only when the error goes back to the model: a raised one reaches the caller
            log_tool_error(call, exc)
        return _ended(scope, _outcome(effect.reached or request, text, error, started))
    finally:
        if scope is not None:
            current_task.set(task)


def run_one(
    settings: CallSettings,
    call: ToolCall,
    by_name: Mapping[str, ToolCallback],
    context: ToolContext,
) -> Outcome:
    """One tool call in a sync run."""
    return perform(call_steps(settings, call, by_name, context))


def arun_one(
    settings: CallSettings,
    call: ToolCall,
    by_name: Mapping[str, ToolCallback],
    context: ToolContext,
) -> Coroutine[Any, Any, Outcome]:
    """One tool call in an async run (the driver's own coroutine: no other awaits it)."""
    return aperform(call_steps(settings, call, by_name, context))


class StoreKept(Effect):
    """Store what ``scope`` kept at once (``TaskScope.store_kept``/``astore_kept``)."""

    __slots__ = ("running", "scope")

    def __init__(self, scope: TaskScope, running: Callable[[], int]) -> None:
        self.scope = scope
        self.running = running

    def run(self, context: Any) -> None:
        self.scope.store_kept(self.running)

    def arun(self, context: Any) -> Awaitable[None]:
        return self.scope.astore_kept(self.running)


def stored_steps(
    settings: CallSettings,
    call: ToolCall,
    by_name: Mapping[str, ToolCallback],
    context: ToolContext,
    running: Countdown,
) -> Steps[Outcome]:
    """``call_steps`` in a parallel batch on a durable saver: a call that finished while
    its siblings still run is stored at once (a killed process must not lose it)."""
    try:
        outcome = yield from call_steps(settings, call, by_name, context)
    except BaseException:
        running.one_finished()
        raise
    task = current_task.get()
    if running.one_finished() and task is not None:
        yield StoreKept(task.child(call.id), running.running)
    return outcome


def run_stored(
    settings: CallSettings,
    call: ToolCall,
    by_name: Mapping[str, ToolCallback],
    context: ToolContext,
    running: Countdown,
) -> Outcome:
    """``stored_steps`` in a sync run."""
    return perform(stored_steps(settings, call, by_name, context, running))


def arun_stored(
    settings: CallSettings,
    call: ToolCall,
    by_name: Mapping[str, ToolCallback],
    context: ToolContext,
    running: Countdown,
) -> Coroutine[Any, Any, Outcome]:
    """``stored_steps`` in an async run."""
    return aperform(stored_steps(settings, call, by_name, context, running))


def log_tool_error(call: ToolCall, exc: Exception) -> None:
    """A WARNING for a tool error that goes back to the model: with the traceback when the
    tool raised, one line when the model's arguments were invalid (the tool never ran)."""
    if isinstance(exc, ToolArgumentsError):
        _log.warning(
            "the model's arguments for tool '%s' (call %s) are invalid; the errors go back to it",
            call.name,
            call.id,
        )
        return
    _log.warning(
        "tool '%s' (call %s) raised %s; its error goes back to the model",
        call.name,
        call.id,
        type(exc.__cause__ or exc).__name__,
        exc_info=exc,
    )


def as_tool_exception(exc: Exception, tool_name: str) -> ToolExecutionException:
    if isinstance(exc, ToolExecutionException):
        return exc
    wrapped = ToolExecutionException(
        f"tool '{tool_name}' failed: {type(exc).__name__}: {exc}", tool_name=tool_name
    )
    wrapped.__cause__ = exc
    return wrapped


def _outcome(
    request: ToolCallRequest, text: str, error: BaseException | None, started: float
) -> Outcome:
    call, tool = request.tool_call, request.tool
    return_direct = tool is not None and tool.tool_metadata.return_direct
    record = ToolExecutionRecord(  # its fields in order, not by keyword
        call.id,
        call.name,
        call.arguments,
        text,
        error,
        time.perf_counter() - started,
        return_direct and error is None,
    )
    response = tool_response(call.id, call.name, text)
    return Outcome(response, record, request.tool_context.extra_state)


def _started(scope: TaskScope | None, call: ToolCall) -> None:
    if scope is not None and scope.run.bus is not None:
        scope.run.event(ToolStart, scope, call_id=call.id, name=call.name, arguments=call.arguments)


def _recalled(scope: TaskScope | None, request: ToolCallRequest) -> Outcome | None:
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
    response = tool_response(call.id, call.name, text)
    return Outcome(response, record, dict(extra_state))


def _ended(scope: TaskScope | None, outcome: Outcome) -> Outcome:
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

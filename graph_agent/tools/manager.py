"""Running the tool calls a model asked for, and deciding whether to run them at all."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from checkpoint.slots import slot_setters

from .._runtime.pool import Countdown, run_all
from ..errors import ToolResolutionError
from ..messages import AssistantMessage, Message, ToolResponseMessage, tool_response_message
from ..models.types import ChatResponse, Prompt, ToolCallingChatOptions
from ._batch import calls_of, finished_outcomes, paced_all, stored_calls_of, stores_progress
from ._execute import Outcome, arun_one, run_one, run_stored
from .callback import ToolCallback
from .context import ToolContext
from .definition import ToolDefinition
from .execution import (
    DefaultToolExecutionExceptionProcessor,
    ToolExecutionExceptionProcessor,
    UnknownToolStrategy,
)
from .request import ToolCallInterceptor, ToolCallRequest, ToolExecutionRecord

if TYPE_CHECKING:
    from .resolution import ToolCallbackResolver

__all__ = [
    "DefaultToolExecutionEligibilityPredicate",
    "ToolCallInterceptor",
    "ToolCallRequest",
    "ToolCallingManager",
    "ToolExecutionEligibilityPredicate",
    "ToolExecutionRecord",
    "ToolExecutionResult",
]


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class ToolExecutionResult:
    """The conversation after the tool calls (prompt, the assistant's message, one
    ``ToolResponseMessage`` with a response per call, in call order), whether the results go
    straight to the caller, a record per call, and what each call wrote to ``extra_state``."""

    conversation_history: list[Message]
    return_direct: bool = False
    records: tuple[ToolExecutionRecord, ...] = ()
    extra_states: tuple[dict[str, Any], ...] = ()

    def __init__(
        self,
        conversation_history: list[Message],
        return_direct: bool = False,
        records: tuple[ToolExecutionRecord, ...] = (),
        extra_states: tuple[dict[str, Any], ...] = (),
    ) -> None:
        s_history, s_direct, s_records, s_extra = _RESULT_SETTERS
        s_history(self, conversation_history)
        s_direct(self, return_direct)
        s_records(self, records)
        s_extra(self, extra_states)

    @property
    def tool_response(self) -> ToolResponseMessage:
        """The message with the tools' responses (the last one of the history)."""
        message = self.conversation_history[-1]
        assert isinstance(message, ToolResponseMessage)
        return message


_RESULT_SETTERS = slot_setters(ToolExecutionResult)


class ToolExecutionEligibilityPredicate(Protocol):
    """Decides whether the framework runs a response's tool calls itself."""

    def __call__(self, options: Any, response: ChatResponse) -> bool: ...


class DefaultToolExecutionEligibilityPredicate:
    """Run them when the response has tool calls and the options do not say
    ``internal_tool_execution_enabled=False``."""

    def __call__(self, options: Any, response: ChatResponse) -> bool:
        enabled = getattr(options, "internal_tool_execution_enabled", True)
        return bool(enabled) and response.has_tool_calls()


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
        found = callbacks if callbacks is not None else self.resolve_tool_callbacks(options)
        by_name: dict[str, ToolCallback] = {}
        for callback in found:
            by_name[callback.tool_definition.name] = callback
        if isinstance(tool_context, ToolContext) and (options is None or not options.tool_context):
            return by_name, tool_context  # each call gets its own copy
        entries: dict[str, Any] = dict(options.tool_context) if options is not None else {}
        if isinstance(tool_context, ToolContext):
            entries.update(tool_context.context)
        elif tool_context is not None:
            entries.update(tool_context)
        return by_name, ToolContext(entries)

    @staticmethod
    def _one_result(
        earlier: Sequence[Message], message: AssistantMessage, outcome: Outcome
    ) -> ToolExecutionResult:
        """``_result`` of one call's outcome (the common case: no lists to gather in)."""
        record = outcome.record
        history: list[Message] = [*earlier, message, tool_response_message((outcome.response,))]
        return ToolExecutionResult(history, record.return_direct, (record,), (outcome.extra_state,))

    @staticmethod
    def _result(
        earlier: Sequence[Message], message: AssistantMessage, outcomes: list[Outcome]
    ) -> ToolExecutionResult:
        responses, records, extra_states = [], [], []
        return_direct = bool(outcomes)  # when every call's tool returns directly
        for outcome in outcomes:
            responses.append(outcome.response)
            records.append(outcome.record)
            extra_states.append(outcome.extra_state)
            return_direct = return_direct and outcome.record.return_direct
        history: list[Message] = [*earlier, message, tool_response_message(tuple(responses))]
        return ToolExecutionResult(
            conversation_history=history,
            return_direct=return_direct,
            records=tuple(records),
            extra_states=tuple(extra_states),
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
        return self.execute_message(
            _calling(response),
            prompt.tool_options,
            tool_context=tool_context,
            tool_callbacks=tool_callbacks,
            earlier=prompt.messages,
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
        return await self.aexecute_message(
            _calling(response),
            prompt.tool_options,
            tool_context=tool_context,
            tool_callbacks=tool_callbacks,
            earlier=prompt.messages,
        )

    def execute_message(
        self,
        message: AssistantMessage,
        options: ToolCallingChatOptions | None = None,
        *,
        tool_context: ToolContext | Mapping[str, Any] | None = None,
        tool_callbacks: Sequence[ToolCallback] | None = None,
        earlier: Sequence[Message] = (),
    ) -> ToolExecutionResult:
        """``execute_tool_calls`` for the tool calls of an assistant ``message`` itself, with
        the tools of ``options`` (or ``tool_callbacks``), no ``Prompt`` and no response around
        it. The result's history is ``earlier``, ``message`` and the responses: the agent's
        tool node runs its calls this way and passes no ``earlier`` (it keeps only the
        responses; copying a long conversation for each tool step would be waste)."""
        by_name, context = self._plan(options, tool_context, tool_callbacks)
        if len(message.tool_calls) == 1:  # the common case: no partials, no list of them
            outcome = run_one(self, message.tool_calls[0], by_name, context)  # or it raised
            return self._one_result(earlier, message, outcome)
        parallel = self.parallel and len(message.tool_calls) > 1
        if parallel and stores_progress():
            running = Countdown(len(message.tool_calls))
            calls = [
                functools.partial(run_stored, self, c, by_name, context, running)
                for c in message.tool_calls
            ]
        else:
            calls = [
                functools.partial(run_one, self, c, by_name, context) for c in message.tool_calls
            ]
        results: list[Outcome | BaseException] = (
            run_all(calls) if parallel else [call() for call in calls]
        )
        return self._result(earlier, message, finished_outcomes(results))

    async def aexecute_message(
        self,
        message: AssistantMessage,
        options: ToolCallingChatOptions | None = None,
        *,
        tool_context: ToolContext | Mapping[str, Any] | None = None,
        tool_callbacks: Sequence[ToolCallback] | None = None,
        earlier: Sequence[Message] = (),
    ) -> ToolExecutionResult:
        """Async ``execute_message`` (see ``aexecute_tool_calls``)."""
        by_name, context = self._plan(options, tool_context, tool_callbacks)
        del options, tool_context, tool_callbacks  # not kept while the tools run
        if len(message.tool_calls) == 1:  # the common case, with nothing more to keep meanwhile
            outcome = await arun_one(self, message.tool_calls[0], by_name, context)  # or it raised
            return self._one_result(earlier, message, outcome)
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

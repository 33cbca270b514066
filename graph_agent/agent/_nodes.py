"""The agent's graph nodes, each in a sync and an async version, and its routers."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import GraphUsageError
from ..graph import OverAllState, RunnableConfig
from ..messages import AssistantMessage
from ..models import ChatResponse
from ..tools import ToolCallRequest
from ._parts import (
    JUMP_TO,
    MESSAGES,
    REJECTED,
    AgentParts,
    OfferedTools,
    cleared,
    last_message,
    offered_sink,
    text_sink,
)

if TYPE_CHECKING:
    from hooks import Hook, HookPosition, ModelRequest

Node = Callable[[OverAllState, RunnableConfig], Any]


# -- the model node ----------------------------------------------------------------------------


def _request(parts: AgentParts, state: OverAllState, config: RunnableConfig) -> ModelRequest:
    from hooks import ModelRequest

    messages = parts.prompt_messages(state)
    tools = parts.tools_for(list(state.get(MESSAGES) or ()), state, config)
    return ModelRequest(messages, parts.options(tools), state, config)


def model_node(parts: AgentParts) -> Node:
    def call_model(request: ModelRequest) -> ChatResponse:
        parts.note_offered(request.options.tool_callbacks)
        sink = text_sink.get()
        if sink is None or sink.owner is not parts:
            return parts.model.call(request.prompt)
        chunks = []
        sink.streamed = ""
        for chunk in parts.model.stream(request.prompt):
            chunks.append(chunk)
            if chunk.text:
                sink.streamed += chunk.text
                sink.put(chunk.text)
        return ChatResponse.merge(chunks)

    handler: Callable[[ModelRequest], ChatResponse] = call_model
    for interceptor in reversed(parts.model_interceptors):
        handler = _wrap_model(interceptor, handler)

    def model(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        request = _request(parts, state, config)
        sink = OfferedTools()
        token = offered_sink.set(sink)
        try:
            response = handler(request)
        finally:
            offered_sink.reset(token)
        offered = sink.tools if sink.tools is not None else list(request.options.tool_callbacks)
        return parts.answer_update(state, response.result.output, offered)

    return model


def amodel_node(parts: AgentParts) -> Node:
    async def call_model(request: ModelRequest) -> ChatResponse:
        parts.note_offered(request.options.tool_callbacks)
        sink = text_sink.get()
        if sink is None or sink.owner is not parts:
            return await parts.model.acall(request.prompt)
        chunks = []
        sink.streamed = ""
        async for chunk in parts.model.astream(request.prompt):
            chunks.append(chunk)
            if chunk.text:
                sink.streamed += chunk.text
                sink.put(chunk.text)
        return ChatResponse.merge(chunks)

    handler: Callable[[ModelRequest], Awaitable[ChatResponse]] = call_model
    for interceptor in reversed(parts.model_interceptors):
        handler = _awrap_model(interceptor, handler)

    async def model(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        request = _request(parts, state, config)
        sink = OfferedTools()
        token = offered_sink.set(sink)
        try:
            response = await handler(request)
        finally:
            offered_sink.reset(token)
        offered = sink.tools if sink.tools is not None else list(request.options.tool_callbacks)
        return parts.answer_update(state, response.result.output, offered)

    return model


def _wrap_model(
    interceptor: Any, handler: Callable[[Any], ChatResponse]
) -> Callable[[Any], ChatResponse]:
    return lambda request: interceptor.intercept_model(request, handler)


def _awrap_model(
    interceptor: Any, handler: Callable[[Any], Awaitable[ChatResponse]]
) -> Callable[[Any], Awaitable[ChatResponse]]:
    return lambda request: interceptor.aintercept_model(request, handler)


# -- the tool node -----------------------------------------------------------------------------


class RejectedToolCalls:
    """Answers the calls a human rejected (``state["rejected_tool_calls"]``: call id ->
    reason) with the reason, instead of running them. The agent's innermost interceptor."""

    def intercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], str]
    ) -> str:
        reason = self._reason(request)
        return handler(request) if reason is None else reason

    async def aintercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[str]]
    ) -> str:
        reason = self._reason(request)
        return await handler(request) if reason is None else reason

    @staticmethod
    def _reason(request: ToolCallRequest) -> str | None:
        state = request.state
        rejected: Mapping[str, str] | None = state.get(REJECTED) if state is not None else None
        if not rejected or request.tool_call.id not in rejected:
            return None
        return f"The user rejected this tool call: {rejected[request.tool_call.id]}"


def _tool_batch(parts: AgentParts, state: OverAllState, config: RunnableConfig) -> Any:
    from ..models import Prompt

    messages = list(state.get(MESSAGES) or ())
    last = messages[-1] if messages else None
    if not isinstance(last, AssistantMessage) or not last.tool_calls:
        return None
    earlier = messages[:-1]
    tools = parts.tools_offered_for(earlier, state, config)
    prompt = Prompt(earlier, parts.options(tools))
    return prompt, ChatResponse.of(last), parts.tool_context_for(state, config), tools


def _tool_update(parts: AgentParts, state: OverAllState, result: Any) -> dict[str, Any]:
    update: dict[str, Any] = parts.fold_extra_states(result.extra_states)
    new_messages: list[Any] = [result.tool_response]
    if result.return_direct:
        direct = AssistantMessage(result.tool_response.text, metadata={"return_direct": True})
        new_messages.append(direct)
        if parts.output_key:
            update[parts.output_key] = direct.text
    update[MESSAGES] = (
        [*update.get(MESSAGES, ()), *new_messages] if MESSAGES in update else new_messages
    )
    if state.get(REJECTED):
        update[REJECTED] = None
    return cleared(state, update)


def tool_node(parts: AgentParts) -> Node:
    def tools(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        batch = _tool_batch(parts, state, config)
        if batch is None:
            return cleared(state, {})
        prompt, response, context, callbacks = batch
        result = parts.manager.execute_tool_calls(
            prompt, response, tool_context=context, tool_callbacks=callbacks
        )
        return _tool_update(parts, state, result)

    return tools


def atool_node(parts: AgentParts) -> Node:
    async def tools(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        batch = _tool_batch(parts, state, config)
        if batch is None:
            return cleared(state, {})
        prompt, response, context, callbacks = batch
        result = await parts.manager.aexecute_tool_calls(
            prompt, response, tool_context=context, tool_callbacks=callbacks
        )
        return _tool_update(parts, state, result)

    return tools


# -- hook nodes --------------------------------------------------------------------------------


def _hook_update(hook: Hook, where: str, state: OverAllState, result: Any) -> dict[str, Any]:
    if result is None:
        return cleared(state, {})
    if not isinstance(result, Mapping):
        raise GraphUsageError(
            f"hook {where} returned {type(result).__name__}; a hook returns a dict of state "
            "updates or None"
        )
    update = dict(result)
    jump = update.get(JUMP_TO)
    if jump is not None:
        from hooks import JumpTo

        try:
            target = JumpTo(jump)
        except ValueError:
            raise GraphUsageError(
                f"hook {where} returned jump_to={jump!r}; use JumpTo.MODEL, JumpTo.TOOL or "
                "JumpTo.END"
            ) from None
        if target not in hook.can_jump_to:
            allowed = [t.value for t in hook.can_jump_to] or "nothing"
            raise GraphUsageError(
                f"hook {where} jumped to {target.value!r} but its can_jump_to allows {allowed}; "
                f"declare can_jump_to = (JumpTo.{target.name},) on the hook"
            )
        update[JUMP_TO] = target.value
    return cleared(state, update)


def hook_node(hook: Hook, position: HookPosition) -> Node:
    method = getattr(hook, position.value)
    where = f"'{hook.hook_name}'.{position.value}"

    def run(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        result = method(state, config)
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise GraphUsageError(
                f"hook {where} is async; run the agent with acall/ainvoke/astream, or make it sync"
            )
        return _hook_update(hook, where, state, result)

    return run


def ahook_node(hook: Hook, position: HookPosition) -> Node:
    method = getattr(hook, position.value)
    where = f"'{hook.hook_name}'.{position.value}"
    is_async = inspect.iscoroutinefunction(method)

    async def run(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        if is_async:
            result = await method(state, config)
        else:  # a sync hook may block (a summarizing model call): keep it off the loop
            result = await asyncio.to_thread(method, state, config)
            if inspect.isawaitable(result):
                result = await result
        return _hook_update(hook, where, state, result)

    return run


# -- routers -----------------------------------------------------------------------------------


def after_model_route(state: OverAllState) -> str:
    """Tool calls go to the tool node; an answer ends the run."""
    message = last_message(state)
    if isinstance(message, AssistantMessage) and message.tool_calls:
        return "tools"
    return "end"


def after_tools_route(state: OverAllState) -> str:
    """Back to the model, or to the end when the batch was return-direct."""
    message = last_message(state)
    if isinstance(message, AssistantMessage) and message.metadata.get("return_direct"):
        return "end"
    return "model"

"""The agent's graph nodes and routers, each node written once.

A node's logic is a generator of effects (``checkpoint.effects``, the one protocol): it
yields what it needs done (call the model through the interceptors, run a batch of tools,
call a hook) and gets the result back. ``sync_node`` and ``async_node`` hand it to the sync
or the async driver; the engine runs whichever the run needs.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import operator
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from checkpoint.effects import Effect, Steps, aperform, perform

from .._runtime.streams import END
from .._runtime.task_scope import TaskScope, current_task
from .._runtime.workers import NodeCut, run_cancelled, to_worker
from ..errors import GraphUsageError
from ..events import ModelDelta, ModelEnd, ModelStart
from ..graph import OverAllState, RunnableConfig, Updates
from ..messages import AssistantMessage, Message, SystemMessage
from ..models import ChatModel, ChatResponse, Prompt, ToolCallingChatOptions
from ..models.base import acall_model, call_model
from ..models.effects import Answer, chunks
from ..tools import ToolCallback, ToolCallingManager, ToolContext
from ._handoff import handoff_command, to_parent
from ._keys import JUMP_TO, MESSAGES, OFFERED, REJECTED, STRUCTURED
from ._prompt import PromptTemplate
from ._toolset import AgentTools
from ._unanswered import cancelled_responses
from ._usage import moved_to_response, usage_dict

if TYPE_CHECKING:
    from hooks import Hook, HookPosition, ModelInterceptor, ModelRequest

    from ._output import OutputSpec

Node = Callable[[OverAllState, RunnableConfig], Any]


Logic = Callable[[OverAllState, RunnableConfig], Generator[Effect, Any, Any]]


def sync_node(logic: Logic) -> Node:
    """The node that runs ``logic``, performing its effects with plain calls."""

    def node(state: OverAllState, config: RunnableConfig) -> Any:
        return perform(logic(state, config))

    return node


def async_node(logic: Logic) -> Node:
    """The node that runs ``logic``, awaiting its effects."""

    async def node(state: OverAllState, config: RunnableConfig) -> Any:
        return await aperform(logic(state, config))

    return node


def both(logic: Logic) -> tuple[Node, Node]:
    """The sync and the async node of one piece of logic (``add_node(name, *both(...))``)."""
    return sync_node(logic), async_node(logic)


def cleared(state: OverAllState, update: dict[str, Any]) -> dict[str, Any]:
    """``update``, clearing a ``jump_to`` that brought the run here (a jump happens once)."""
    if JUMP_TO not in update and state.get(JUMP_TO) is not None:
        update[JUMP_TO] = None
    return update


def last_message(state: OverAllState) -> Message | None:
    messages = state.get(MESSAGES) or ()
    return messages[-1] if messages else None


def options(
    tools: Sequence[ToolCallback],
    tool_context: Mapping[str, Any],
    response_format: Mapping[str, Any] | None = None,
) -> ToolCallingChatOptions:
    return ToolCallingChatOptions(
        tool_callbacks=tuple(tools),
        tool_context=dict(tool_context),
        response_format=response_format,
    )


class RequestOptions:
    """The options of a model node's requests: the last one's again while the tools offered
    are the same objects and its ``tool_context`` still holds the agent's entries. (Options are
    frozen; making one, 17 fields checked, costs more than the rest of a request.)
    ``response_format``: the structured-output format of every request (``native``)."""

    __slots__ = ("last", "response_format", "tool_context")

    def __init__(
        self, tool_context: Mapping[str, Any], response_format: Mapping[str, Any] | None = None
    ) -> None:
        self.tool_context = tool_context
        self.response_format = response_format
        self.last: ToolCallingChatOptions | None = None

    def offering(self, tools: Sequence[ToolCallback]) -> ToolCallingChatOptions:
        last = self.last
        if (
            last is not None
            and len(last.tool_callbacks) == len(tools)
            and all(map(operator.is_, last.tool_callbacks, tools))
            and last.tool_context == self.tool_context
        ):
            return last
        self.last = made = options(tools, self.tool_context, self.response_format)
        return made


# -- the model node ----------------------------------------------------------------------------


def _model_name(model: Any) -> str:
    for attribute in ("model", "model_name"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


class OfferedTools:
    """The tools of the request that reached the model, after every interceptor; ``tools``
    stays ``None`` when an interceptor answered without calling the model."""

    __slots__ = ("tools",)

    def __init__(self) -> None:
        self.tools: list[ToolCallback] | None = None


offered_sink: contextvars.ContextVar[OfferedTools | None] = contextvars.ContextVar(
    "graph_agent_offered_tools", default=None
)


class _ModelCall:
    """The innermost handler of the interceptor chain: the model itself, announced with
    ``model_start``/``model_end`` events. It streams (a ``model_delta`` per chunk) only
    when somebody reads the run's events; otherwise it makes one plain call."""

    def __init__(self, model: ChatModel, intercepted: bool) -> None:
        self.model = model
        self.name = _model_name(model)
        provider = getattr(model, "provider_name", "")
        self.provider = provider if isinstance(provider, str) else ""
        # Only interceptors change the request: without, the node knows what reaches the
        # model (and a sink set around this call, by an agent whose interceptor runs this
        # one, is not this agent's to fill).
        self.intercepted = intercepted

    def _start(self, request: ModelRequest) -> tuple[TaskScope | None, bool]:
        sink = offered_sink.get() if self.intercepted else None
        if sink is not None:  # the tools of the request that reached the model
            sink.tools = list(request.options.tool_callbacks)
        task = current_task.get()
        if task is None or task.run.bus is None:
            return None, False
        task.run.event(
            ModelStart,
            task,
            model=self.name,
            messages=tuple(request.messages),
            provider=self.provider,
        )
        return task, task.run.bus.streaming

    def _delta(self, task: TaskScope, chunk: ChatResponse) -> ChatResponse:
        """One ``model_delta`` for the chunk's text, one per tool-call fragment."""
        output = chunk.results[0].output if chunk.results else None
        if output is None:
            return chunk
        if output.text:
            task.run.event(ModelDelta, task, model=self.name, text=output.text)
        for fragment in output.tool_calls:
            task.run.event(ModelDelta, task, model=self.name, tool_call_delta=fragment)
        return chunk

    def _end(self, task: TaskScope, response: ChatResponse, started: float) -> ChatResponse:
        task.run.event(
            ModelEnd,
            task,
            model=self.name,
            message=response.result.output if response.results else None,
            usage=response.metadata.usage,
            duration=time.perf_counter() - started,
        )
        return response

    def _failed(self, task: TaskScope, error: BaseException, started: float) -> None:
        duration = time.perf_counter() - started
        task.run.event(ModelEnd, task, model=self.name, error=error, duration=duration)

    def _announced(self, task: TaskScope, streaming: bool, prompt: Prompt) -> Steps[ChatResponse]:
        """The call somebody listens to, once (``__call__`` performs it, ``acall`` awaits it):
        streamed when its deltas are read, then ``model_end`` (after a failure too)."""
        started = time.perf_counter()
        try:
            if streaming:
                response = yield from self._streamed(task, prompt)
            else:
                response = yield Answer(self.model, prompt)
        except BaseException as error:
            self._failed(task, error, started)
            raise
        return self._end(task, response, started)

    def _streamed(self, task: TaskScope, prompt: Prompt) -> Steps[ChatResponse]:
        """The answer pulled chunk by chunk, a ``model_delta`` each (see ``_ModelCut``)."""
        read = chunks(self.model, prompt)
        seen: list[ChatResponse] = []
        try:
            while (chunk := (yield read)) is not END:
                seen.append(self._delta(task, chunk))
        except asyncio.CancelledError as stop:
            if seen and run_cancelled(stop):  # part of the answer was seen
                raise _ModelCut(ChatResponse.merge(seen)) from None
            raise
        return ChatResponse.merge(seen)

    def __call__(self, request: ModelRequest) -> ChatResponse:
        task, streaming = self._start(request)
        if task is None:  # nobody listens: the answer and nothing else, no generator around it
            return call_model(self.model, request.prompt)
        return perform(self._announced(task, streaming, request.prompt))

    async def acall(self, request: ModelRequest) -> ChatResponse:
        task, streaming = self._start(request)
        if task is None:
            return await acall_model(self.model, request.prompt)
        return await aperform(self._announced(task, streaming, request.prompt))


class _ModelCut(asyncio.CancelledError):
    """The run was cancelled while the model streamed its answer: ``response``, what it had
    streamed (passed through the interceptors as a cancellation, never retried)."""

    def __init__(self, response: ChatResponse) -> None:
        super().__init__("the run was cancelled while the model streamed its answer")
        self.response = response


def cut_message(response: ChatResponse) -> AssistantMessage | None:
    """The assistant message of an answer cut short, marked ``metadata["cut"]``: its text
    (and refusal) so far, without the tool calls it had begun (none ran, and a call cut
    mid-arguments cannot be answered); ``None`` when no text had come yet."""
    streamed = response.result.output if response.results else None
    if streamed is None or not (streamed.text or streamed.refusal):
        return None
    return AssistantMessage(
        streamed.text, refusal=streamed.refusal, metadata={**streamed.metadata, "cut": True}
    )


class _CallModel(Effect):
    __slots__ = ("chain", "request")

    def __init__(self, chain: ModelChain, request: ModelRequest) -> None:
        self.chain = chain
        self.request = request

    def run(self, context: Any) -> ChatResponse:
        return self.chain.handler(self.request)

    def arun(self, context: Any) -> Awaitable[ChatResponse]:
        return self.chain.ahandler(self.request)


class ModelChain:
    """The model wrapped by the agent's model interceptors (the first is outermost)."""

    def __init__(self, model: ChatModel, interceptors: Sequence[ModelInterceptor]) -> None:
        self.intercepted = bool(interceptors)
        call = _ModelCall(model, self.intercepted)
        handler: Callable[[ModelRequest], ChatResponse] = call
        ahandler: Callable[[ModelRequest], Awaitable[ChatResponse]] = call.acall
        for interceptor in reversed(interceptors):
            handler = _wrap(interceptor.intercept_model, handler)
            ahandler = _wrap(interceptor.aintercept_model, ahandler)
        self.handler = handler
        self.ahandler = ahandler


def _wrap(method: Callable[[Any, Any], Any], handler: Any) -> Any:
    return lambda request: method(request, handler)


def model_logic(
    chain: ModelChain,
    tools: AgentTools,
    system_prompt: str | PromptTemplate | None,
    tool_context: Mapping[str, Any],
    output_key: str | None,
    output: OutputSpec | None = None,
) -> Logic:
    """The model node: build the request, call the model through the interceptors, and
    keep its answer (and, when it asks for tools, the names of the tools it was offered).
    With an ``output`` spec, an answer is judged by it (``OutputSpec.decide``)."""

    # The system prompt (never stored) is a frozen message: made once, in every request;
    # a prompt with placeholders is filled from the state at each call instead.
    template = system_prompt if isinstance(system_prompt, PromptTemplate) else None
    system = [SystemMessage(system_prompt)] if isinstance(system_prompt, str) else []
    request_options = RequestOptions(tool_context, output.response_format if output else None)
    final_tools = output.final_tools if output is not None else ()

    def request_for(state: OverAllState, config: RunnableConfig) -> ModelRequest:
        from hooks import ModelRequest

        # What the model sees: the system prompt, then the conversation.
        conversation = state.get(MESSAGES) or []  # a list of our own (``get`` copies lists)
        if type(conversation) is not list:
            conversation = list(conversation)
        head = system if template is None else template.render(state)
        messages = [*head, *conversation] if head else conversation
        # (the agent's tool providers, if any, get a list of their own)
        seen = list(conversation) if tools.providers else conversation
        offered = tools.for_messages(seen, state, config)
        if final_tools:  # beside the agent's own tools, never instead of them
            offered.extend(final_tools)
        return ModelRequest(messages, request_options.offering(offered), state, config)

    def answer_update(
        state: OverAllState, message: AssistantMessage, offered: Sequence[ToolCallback]
    ) -> dict[str, Any]:
        update: dict[str, Any] = {MESSAGES: [message]}
        if message.tool_calls:  # the tool node runs only what the model was offered
            # A tuple: it cannot change, so the saver and every state share it (and the
            # garbage collector does not track it). The same names again are not written.
            names = tuple(t.tool_definition.name for t in offered)
            held = state.get(OFFERED)
            if held is None or tuple(held) != names:
                update[OFFERED] = names
        if output_key and not message.tool_calls:
            update[output_key] = message.answer
        return cleared(state, update)

    def logic(state: OverAllState, config: RunnableConfig) -> Generator[Effect, Any, Any]:
        request = request_for(state, config)
        response: ChatResponse
        try:
            if chain.intercepted:  # what reached the model is known once it is called
                sink = OfferedTools()
                token = offered_sink.set(sink)
                try:
                    response = yield _CallModel(chain, request)
                finally:
                    offered_sink.reset(token)
                reached = sink.tools
            else:
                response = yield _CallModel(chain, request)
                reached = None
        except _ModelCut as cut:  # the run was cancelled mid-answer: keep what was seen
            message = cut_message(cut.response)
            if message is None:
                raise asyncio.CancelledError from None
            raise NodeCut(cleared(state, {MESSAGES: [message]})) from None
        offered = reached if reached is not None else list(request.options.tool_callbacks)
        message = response.result.output
        usage = response.metadata.usage
        if usage is not None and "usage" not in message.metadata:
            counted = {**message.metadata, "usage": usage_dict(usage)}
            message = message.model_copy(update={"metadata": counted})
        if output is not None:
            decided = yield from output.decide(state, message)
            if decided is not None:
                if output_key and STRUCTURED in decided:
                    decided[output_key] = decided[STRUCTURED]
                return cleared(state, decided)
        if message.tool_calls:
            tools.remember(config.thread_id, offered)
        return answer_update(state, message, offered)

    return logic


# -- the tool node -----------------------------------------------------------------------------


class _RunTools(Effect):
    """Run the tool calls of ``message`` with ``tools``, those the model was offered, in
    ``context`` (which holds the agent's ``tool_context`` entries: no options are needed)."""

    __slots__ = ("context", "manager", "message", "tools")

    def __init__(
        self,
        manager: ToolCallingManager,
        message: AssistantMessage,
        tools: Sequence[ToolCallback],
        context: ToolContext,
    ) -> None:
        self.manager = manager
        self.message = message
        self.tools = tools
        self.context = context

    def run(self, context: Any) -> Any:
        return self.manager.execute_message(
            self.message, tool_context=self.context, tool_callbacks=self.tools
        )

    def arun(self, context: Any) -> Awaitable[Any]:
        return self.manager.aexecute_message(
            self.message, tool_context=self.context, tool_callbacks=self.tools
        )


def tool_logic(
    manager: ToolCallingManager,
    tools: AgentTools,
    tool_context: Mapping[str, Any],
    store: Any,
    output_key: str | None,
    output: OutputSpec | None = None,
    handoffs: Mapping[str, str] | None = None,
) -> Logic:
    """The tool node: run the last message's tool calls (only tools the model was offered)
    and keep their responses; what the tools wrote to ``extra_state`` is merged in call
    order by each key's strategy, as if each call had been a node of its own. With an
    ``output`` spec, a final-answer call beside other calls is not run but answered (call
    it again alone), and a return-direct batch goes back to the model, which answers in the
    schema. A batch with a handoff (``handoffs``: tool name -> agent) ends with the
    conversation moving to that agent (``_handoff``)."""

    def run_tools(state: OverAllState, config: RunnableConfig, last: AssistantMessage) -> _RunTools:
        # Built here, not in the logic: its locals (the state's copy of the messages, the
        # options) would stay alive in the logic's frame while the tools run. No Prompt and
        # no response around the message: the node keeps only the tools' answers, so a long
        # conversation is not copied for each tool step.
        earlier = (state.get(MESSAGES) or [])[:-1] if tools.providers else ()
        offered = tools.for_tool_calls(earlier, state, config)
        context = ToolContext({**tool_context, "state": state, "config": config, "store": store})
        return _RunTools(manager, last, offered, context)

    def logic(state: OverAllState, config: RunnableConfig) -> Generator[Effect, Any, Any]:
        last = last_message(state)
        if not isinstance(last, AssistantMessage) or not last.tool_calls:
            return cleared(state, {})
        calls = last
        if output is not None:
            calls, finals = output.split(last)
            if finals and not calls.tool_calls:  # only final-answer calls: the model node's
                return cleared(state, {MESSAGES: [output.answered(last, None, finals)]})
        try:
            result = yield run_tools(state, config, calls)
        except asyncio.CancelledError as stop:
            if not run_cancelled(stop):
                raise
            # every call answered: what finished (a sync tool's thread, which ran on to its
            # end, too) with its result, the rest as cancelled
            cut = cancelled_responses(last.tool_calls)
            if cut is None:
                raise
            raise NodeCut(cleared(state, {MESSAGES: [cut]})) from None
        # what the tools wrote to ``extra_state``, in call order
        written = [extra for extra in result.extra_states if extra]
        responses = result.tool_response
        if written:
            responses, written = moved_to_response(responses, written)
        if output is not None and calls is not last:
            responses = output.answered(last, responses, finals)
        if handoffs:
            moved = handoff_command(last.tool_calls, responses, handoffs)
            if moved is not None:
                return to_parent({**_joined(written), MESSAGES: [moved[0]]}, moved[1])
        update: dict[str, Any] = {MESSAGES: [responses]}
        if result.return_direct and output is None:
            direct = AssistantMessage(responses.text, metadata={"return_direct": True})
            update[MESSAGES].append(direct)
            if output_key:
                update[output_key] = direct.text
        if state.get(REJECTED):
            update[REJECTED] = None
        if not written:
            return cleared(state, update)
        if not any(JUMP_TO in extra for extra in written):  # a tool may set the jump itself
            update = cleared(state, update)
        return Updates(*written, update)

    return logic


def _joined(extras: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the tools of a batch that handed off wrote to ``extra_state``, later calls'
    values replacing earlier ones (the conversation moves on; no merge node runs)."""
    joined: dict[str, Any] = {}
    for extra in extras:
        joined.update(extra)
    return joined


# -- hook nodes --------------------------------------------------------------------------------


class _CallHook(Effect):
    __slots__ = ("config", "method", "state", "where")

    def __init__(
        self, method: Any, where: str, state: OverAllState, config: RunnableConfig
    ) -> None:
        self.method = method
        self.where = where
        self.state = state
        self.config = config

    def run(self, context: Any) -> Any:
        result = self.method(self.state, self.config)
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise GraphUsageError(
                f"hook {self.where} is async; run the agent with acall/ainvoke/astream, or "
                "make it sync"
            )
        return result

    async def arun(self, context: Any) -> Any:
        if inspect.iscoroutinefunction(self.method):
            return await self.method(self.state, self.config)
        # a sync hook may block (a summarizing model call): keep it off the loop
        result = await to_worker(self.method, self.state, self.config)
        return (await result) if inspect.isawaitable(result) else result


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


def hook_logic(hook: Hook, position: HookPosition) -> Logic:
    """A hook node: call the hook's method for ``position``; its dict is the update."""
    method = getattr(hook, position.value)
    where = f"'{hook.hook_name}'.{position.value}"

    def logic(state: OverAllState, config: RunnableConfig) -> Generator[Effect, Any, Any]:
        result = yield _CallHook(method, where, state, config)
        return _hook_update(hook, where, state, result)

    return logic


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

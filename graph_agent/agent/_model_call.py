"""The model as an agent's node calls it: the innermost handler of the model interceptor
chain (``ModelChain``), announced with ``model_*`` events and streamed only when somebody
reads them, and the effect that calls the chain (``CallModel``). The model node and the
routing flow's router both call their model through it.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from checkpoint.effects import Effect, Steps, aperform, perform

from .._runtime.streams import END
from .._runtime.task_scope import TaskScope, current_task
from .._runtime.workers import run_cancelled
from ..events import ModelDelta, ModelEnd, ModelStart
from ..messages import AssistantMessage
from ..models import ChatModel, ChatResponse, Prompt
from ..models.base import acall_model, call_model
from ..models.effects import Answer, chunks
from ..tools import ToolCallback

if TYPE_CHECKING:
    from hooks import ModelInterceptor, ModelRequest


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
        """The answer pulled chunk by chunk, a ``model_delta`` each (see ``ModelCut``)."""
        read = chunks(self.model, prompt)
        seen: list[ChatResponse] = []
        try:
            while (chunk := (yield read)) is not END:
                seen.append(self._delta(task, chunk))
        except asyncio.CancelledError as stop:
            if seen and run_cancelled(stop):  # part of the answer was seen
                raise ModelCut(ChatResponse.merge(seen)) from None
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


class ModelCut(asyncio.CancelledError):
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


class CallModel(Effect):
    """Call the model through ``chain`` (its interceptors, then the model) with ``request``."""

    __slots__ = ("chain", "request")

    def __init__(self, chain: ModelChain, request: ModelRequest) -> None:
        self.chain = chain
        self.request = request

    def run(self, context: Any) -> ChatResponse:
        return self.chain.handler(self.request)

    def arun(self, context: Any) -> Awaitable[ChatResponse]:
        return self.chain.ahandler(self.request)


class ModelChain:
    """The model wrapped by the agent's model interceptors (the first is outermost). An
    interceptor with ``wrap_model(model) -> model`` also wraps the model itself, inside the
    ``model_*`` events: what it changes in the answer, no event, stream or checkpoint sees."""

    def __init__(self, model: ChatModel, interceptors: Sequence[ModelInterceptor]) -> None:
        self.intercepted = bool(interceptors)
        call = _ModelCall(model, self.intercepted)
        for interceptor in interceptors:  # a guard (PIIHook) that checks what the model says
            wrap = getattr(interceptor, "wrap_model", None)  # before any event announces it
            if wrap is not None:
                call.model = wrap(call.model)
        handler: Callable[[ModelRequest], ChatResponse] = call
        ahandler: Callable[[ModelRequest], Awaitable[ChatResponse]] = call.acall
        for interceptor in reversed(interceptors):
            handler = _wrap(interceptor.intercept_model, handler)
            ahandler = _wrap(interceptor.aintercept_model, ahandler)
        self.handler = handler
        self.ahandler = ahandler


def _wrap(method: Callable[[Any, Any], Any], handler: Any) -> Any:
    return lambda request: method(request, handler)

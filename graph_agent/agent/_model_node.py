"""The agent's model node: build the request, call the model through the interceptors, and
keep its answer (and, when it asks for tools, the names of the tools it was offered).

``model_node`` reads what the node needs from the agent's parts once, when the graph is
built; at each step the node asks the agent's tools for the request's options (``_toolset``)
and, with an ``output_type``, the output spec whether the answer stands (``_output``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any

from checkpoint.effects import Effect

from .._runtime.workers import NodeCut
from ..graph import OverAllState, RunnableConfig
from ..messages import AssistantMessage, SystemMessage
from ..models import ChatResponse
from ..tools import ToolCallback
from ._keys import MESSAGES, OFFERED, STRUCTURED
from ._model_call import CallModel, ModelChain, ModelCut, OfferedTools, cut_message, offered_sink
from ._node_kit import Logic
from ._prompt import PromptTemplate
from ._usage import usage_dict

if TYPE_CHECKING:
    from hooks import ModelRequest

    from ._parts import AgentParts
    from ._toolset import AgentTools


def model_node(parts: AgentParts, tools: AgentTools) -> Logic:
    """The model node of the agent made of ``parts``, offering ``tools`` (shared with the
    tool node). With an ``output_type``, an answer is judged by its spec
    (``OutputSpec.decide``)."""
    chain = ModelChain(parts.model, parts.model_interceptors)
    output = parts.output
    output_key = parts.output_key
    # The system prompt (never stored) is a frozen message: made once, in every request;
    # a prompt with placeholders is filled from the state at each call instead.
    system_prompt = parts.system
    template = system_prompt if isinstance(system_prompt, PromptTemplate) else None
    system = [SystemMessage(system_prompt)] if isinstance(system_prompt, str) else []

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
        return ModelRequest(messages, tools.options_for(seen, state, config), state, config)

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
        return update

    def logic(state: OverAllState, config: RunnableConfig) -> Generator[Effect, Any, Any]:
        request = request_for(state, config)
        response: ChatResponse
        try:
            if chain.intercepted:  # what reached the model is known once it is called
                sink = OfferedTools()
                token = offered_sink.set(sink)
                try:
                    response = yield CallModel(chain, request)
                finally:
                    offered_sink.reset(token)
                reached = sink.tools
            else:
                response = yield CallModel(chain, request)
                reached = None
        except ModelCut as cut:  # the run was cancelled mid-answer: keep what was seen
            message = cut_message(cut.response)
            if message is None:
                raise asyncio.CancelledError from None
            raise NodeCut({MESSAGES: [message]}) from None
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
                return decided
        if message.tool_calls:
            tools.remember(config.thread_id, offered)
        return answer_update(state, message, offered)

    return logic

"""``ChatClient``: one call to a model, with the tool loop run for you; and chat memory."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from checkpoint.effects import Effect, Steps, aperform, perform

from ._runtime import streams
from ._runtime.run_loop import RunLoopScope
from ._runtime.streams import END, Streamed
from .errors import ToolCallLoopError
from .messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)
from .models.base import ChatModel
from .models.effects import Answer, chunks
from .models.types import ChatOptions, ChatResponse, Prompt, ToolCallingChatOptions
from .tools.manager import (
    DefaultToolExecutionEligibilityPredicate,
    ToolCallingManager,
    ToolExecutionEligibilityPredicate,
    ToolExecutionRecord,
    ToolExecutionResult,
)

if TYPE_CHECKING:
    from .tools.callback import ToolCallback
    from .tools.resolution import ToolProvider

__all__ = [
    "ChatClient",
    "ChatClientRequest",
    "ChatClientResponse",
    "ChatMemory",
    "MessageWindowChatMemory",
]

DEFAULT_CONVERSATION_ID = "default"


@runtime_checkable
class ChatMemory(Protocol):
    """Conversation history, kept per conversation id."""

    def add(self, conversation_id: str, messages: Sequence[Message]) -> None: ...

    def get(self, conversation_id: str) -> list[Message]: ...

    def clear(self, conversation_id: str) -> None: ...


class MessageWindowChatMemory:
    """Keeps the last ``max_messages`` messages of each conversation.

    The system message is always kept (a new one replaces the old) and counts toward the
    window. Trimming never leaves a tool response without the assistant message that asked
    for it: a response whose call fell out of the window goes too. Thread-safe.
    """

    def __init__(self, max_messages: int = 20) -> None:
        if not isinstance(max_messages, int) or max_messages < 1:
            raise ValueError(f"max_messages must be a positive int, got {max_messages!r}")
        self.max_messages = max_messages
        self._conversations: dict[str, list[Message]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MessageWindowChatMemory(max_messages={self.max_messages})"

    def add(self, conversation_id: str, messages: Sequence[Message]) -> None:
        with self._lock:
            history = self._conversations.setdefault(conversation_id, [])
            for message in messages:
                if isinstance(message, SystemMessage):
                    history[:] = [m for m in history if not isinstance(m, SystemMessage)]
                history.append(message)
            self._conversations[conversation_id] = _window(history, self.max_messages)

    def get(self, conversation_id: str) -> list[Message]:
        with self._lock:
            return list(self._conversations.get(conversation_id, ()))

    def clear(self, conversation_id: str) -> None:
        with self._lock:
            self._conversations.pop(conversation_id, None)

    def conversation_ids(self) -> list[str]:
        with self._lock:
            return list(self._conversations)


def _window(history: list[Message], limit: int) -> list[Message]:
    system = [m for m in history if isinstance(m, SystemMessage)][-1:]
    rest = [m for m in history if not isinstance(m, SystemMessage)]
    keep = rest[max(0, len(rest) - (limit - len(system))) :]
    while keep and isinstance(keep[0], ToolResponseMessage):
        keep.pop(0)  # its assistant tool call fell out of the window
    return [*system, *keep]


class ChatClientResponse:
    """The outcome of ``ChatClientRequest.call()``: the final response, the messages of this
    exchange (new user messages, assistant and tool messages), and a record per tool call."""

    def __init__(
        self,
        chat_response: ChatResponse,
        messages: list[Message],
        tool_records: list[ToolExecutionRecord],
    ) -> None:
        self.chat_response = chat_response
        self.messages = messages
        self.tool_records = tool_records

    def content(self) -> str:
        """The final answer's text."""
        return self.chat_response.text

    def __repr__(self) -> str:
        return (
            f"ChatClientResponse(content={self.content()!r}, tool_calls={len(self.tool_records)})"
        )


class ChatClient:
    """A fluent client over a ``ChatModel``: ``ChatClient.create(model).prompt("hi").call()
    .content()``.

    With tools, the client runs the tool loop: the model's tool calls are executed and their
    results sent back, until the model answers without tools (at most ``max_tool_rounds``
    rounds, then ``ToolCallLoopError``). With ``internal_tool_execution_enabled=False`` in
    the options, ``call()`` returns the response with its tool calls and the caller runs
    them with a ``ToolCallingManager``. With a ``memory``, each conversation id keeps its
    history across calls.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        tool_calling_manager: ToolCallingManager | None = None,
        memory: ChatMemory | None = None,
        default_system: str | None = None,
        default_tools: Iterable[Any] = (),
        default_options: ChatOptions | None = None,
        max_tool_rounds: int = 10,
        eligibility: ToolExecutionEligibilityPredicate | None = None,
    ) -> None:
        if not isinstance(model, ChatModel):
            raise TypeError(
                f"ChatClient needs a ChatModel (call, stream, acall, astream), got {model!r}"
            )
        self.model = model
        self.tool_calling_manager = tool_calling_manager or ToolCallingManager()
        self.memory = memory
        self.default_system = default_system
        self.default_tools = list(default_tools)
        self.default_options = default_options
        if not isinstance(max_tool_rounds, int) or max_tool_rounds < 1:
            raise ValueError(f"max_tool_rounds must be a positive int, got {max_tool_rounds!r}")
        self.max_tool_rounds = max_tool_rounds
        self.eligibility = eligibility or DefaultToolExecutionEligibilityPredicate()

    @classmethod
    def create(cls, model: ChatModel, **settings: Any) -> ChatClient:
        """A client for ``model``; ``settings`` are the constructor's keywords."""
        return cls(model, **settings)

    def prompt(self, prompt: str | Prompt | None = None) -> ChatClientRequest:
        """Start a request; a string is the user's message."""
        request = ChatClientRequest(self)
        if self.default_system:
            request.system(self.default_system)
        if self.default_tools:
            request.tools(*self.default_tools)
        if self.default_options is not None:
            request.options(self.default_options)
        if isinstance(prompt, Prompt):
            request.messages(*prompt.messages)
            if prompt.options is not None:
                request.options(prompt.options)
        elif prompt is not None:
            request.user(prompt)
        return request


class ChatClientRequest:
    """One request being built; every method returns the request, so calls chain."""

    def __init__(self, client: ChatClient) -> None:
        self._client = client
        self._system: str | None = None
        self._messages: list[Message] = []
        self._tools: list[Any] = []
        self._tool_names: list[str] = []
        self._tool_providers: list[ToolProvider] = []
        self._tool_context: dict[str, Any] = {}
        self._base_options: ToolCallingChatOptions | None = None
        self._options: ChatOptions | None = None
        self._conversation_id: str | None = None

    def system(self, text: str) -> ChatClientRequest:
        self._system = text
        return self

    def user(self, text: str) -> ChatClientRequest:
        self._messages.append(UserMessage(text))
        return self

    def messages(self, *messages: Message) -> ChatClientRequest:
        self._messages.extend(messages)
        return self

    def tools(self, *tools: Any) -> ChatClientRequest:
        """Tools for this request: ``@tool`` functions, other ``ToolCallback``s, objects with
        ``@tool`` methods, or ``ToolCallbackProvider``s."""
        self._tools.extend(tools)
        return self

    def tool_names(self, *names: str) -> ChatClientRequest:
        """Tools by name, resolved by the client's ``ToolCallingManager`` resolver."""
        self._tool_names.extend(names)
        return self

    def tool_providers(self, *providers: ToolProvider) -> ChatClientRequest:
        """Dynamic tools: before every model call each provider is asked, with the messages so
        far, which tools to offer (e.g. a booking tool only when the user mentions one)."""
        self._tool_providers.extend(providers)
        return self

    def tool_context(self, context: Mapping[str, Any]) -> ChatClientRequest:
        """Entries every tool of this request finds in its ``ToolContext``."""
        self._tool_context.update(context)
        return self

    def options(self, options: ChatOptions) -> ChatClientRequest:
        self._options = options
        return self

    def conversation_id(self, conversation_id: str) -> ChatClientRequest:
        """Use (and extend) this conversation's history in the client's memory."""
        self._conversation_id = conversation_id
        return self

    # -- building the prompt ----------------------------------------------------------------

    def _tool_options(self) -> ToolCallingChatOptions:
        from .tools import as_tool_callbacks

        base = self._options or ChatOptions()
        callbacks: list[ToolCallback] = []
        names: list[str] = list(self._tool_names)
        context: dict[str, Any] = {}
        enabled = True
        if isinstance(base, ToolCallingChatOptions):
            callbacks.extend(base.tool_callbacks)
            names = [*base.tool_names, *names]
            context.update(base.tool_context)
            enabled = base.internal_tool_execution_enabled
        callbacks.extend(as_tool_callbacks(self._tools))
        context.update(self._tool_context)
        shared = {
            field.name: getattr(base, field.name) for field in dataclasses.fields(ChatOptions)
        }
        return ToolCallingChatOptions(
            **shared,
            tool_callbacks=tuple(callbacks),
            tool_names=tuple(names),
            tool_context=context,
            internal_tool_execution_enabled=enabled,
        )

    def _start(self) -> tuple[Prompt, list[Message], ToolCallingChatOptions]:
        client = self._client
        history: list[Message] = []
        if client.memory is not None:
            history = client.memory.get(self._conversation_id or DEFAULT_CONVERSATION_ID)
        system = self._system
        if system is None:
            memory_system = [m for m in history if isinstance(m, SystemMessage)]
            system = memory_system[-1].text if memory_system else None
        history = [m for m in history if not isinstance(m, SystemMessage)]
        if not self._messages and not history:
            raise ValueError("the request has no message: give prompt('...') or user('...')")
        messages: list[Message] = [SystemMessage(system)] if system else []
        messages += [*history, *self._messages]
        self._base_options = self._tool_options()
        prompt = self._prompt(messages)
        return prompt, list(self._messages), prompt.tool_options or self._base_options

    def _prompt(self, messages: list[Message]) -> Prompt:
        """The prompt for one model call. Its options carry every tool the model is offered:
        the request's tools, its tool names resolved by the manager's resolver, and what its
        providers offer for these messages. An unknown name or two tools with one name raise
        ``ValueError`` here, before the model is called."""
        options = self._base_options
        assert options is not None
        offered: list[ToolCallback] = []
        if self._tool_providers:
            from .tools import as_tool_callbacks
            from .tools.resolution import ToolProviderRequest

            request = ToolProviderRequest(messages=messages)
            offered = [tool for p in self._tool_providers for tool in as_tool_callbacks(p(request))]
        if options.tool_names or options.tool_callbacks or offered:
            everything = dataclasses.replace(
                options, tool_callbacks=(*options.tool_callbacks, *offered)
            )
            resolved = self._client.tool_calling_manager.resolve_tool_callbacks(everything)
            options = dataclasses.replace(options, tool_callbacks=tuple(resolved), tool_names=())
        return Prompt(messages, options)

    def _remember(self, exchange: list[Message]) -> None:
        memory = self._client.memory
        if memory is not None:
            memory.add(self._conversation_id or DEFAULT_CONVERSATION_ID, exchange)

    def _check_round(self, rounds: int) -> None:
        if rounds >= self._client.max_tool_rounds:
            raise ToolCallLoopError(
                f"the model kept calling tools for {rounds} rounds (max_tool_rounds="
                f"{self._client.max_tool_rounds}); raise ChatClient(max_tool_rounds=...) or "
                "check why the model does not answer"
            )

    @staticmethod
    def _direct(result: ToolExecutionResult) -> ChatResponse:
        text = result.tool_response.text
        return ChatResponse.of(AssistantMessage(text, metadata={"return_direct": True}), "stop")

    # -- running ----------------------------------------------------------------------------

    def _exchange(self, streamed: bool) -> Streamed[str, ChatClientResponse]:
        """The tool loop, without I/O: it yields each model call (``_answer``) and each batch
        of tool calls (``_RunTools``) as effects for a driver to perform (``perform``,
        ``aperform``; ``stream``, ``astream`` when ``streamed``) and is sent the results.
        Streamed, it yields the answer's text as it comes, and a direct tool result's."""
        client = self._client
        model, manager = client.model, client.tool_calling_manager
        prompt, exchange, options = self._start()
        records: list[ToolExecutionRecord] = []
        rounds = 0
        response = yield from _answer(model, prompt, streamed)
        while client.eligibility(options, response):
            self._check_round(rounds)
            result: ToolExecutionResult = yield _RunTools(manager, prompt, response)
            records.extend(result.records)
            exchange += result.conversation_history[-2:]
            rounds += 1
            if result.return_direct:
                response = self._direct(result)
                break
            prompt = self._prompt(result.conversation_history)
            options = prompt.tool_options or options
            response = yield from _answer(model, prompt, streamed)
        exchange.append(response.result.output)
        self._remember(exchange)
        reply = ChatClientResponse(response, exchange, records)
        if streamed and _is_direct(reply):
            yield reply.content()
        return reply

    def call(self) -> ChatClientResponse:
        """Call the model, running tool calls until it answers (unless tool execution is
        left to the caller)."""
        steps = cast("Steps[ChatClientResponse]", self._exchange(streamed=False))  # no text
        with RunLoopScope():  # async-only tools of the exchange share one event loop
            return perform(steps)

    async def acall(self) -> ChatClientResponse:
        """Async ``call``."""
        return await aperform(cast("Steps[ChatClientResponse]", self._exchange(streamed=False)))

    def stream(self) -> Iterator[str]:
        """The answer's text as the model streams it; tool rounds run in between."""
        steps = self._exchange(streamed=True)
        with RunLoopScope():
            yield from streams.stream(steps)

    def astream(self) -> AsyncIterator[str]:
        """Async ``stream``."""
        return streams.astream(self._exchange(streamed=True))


def _answer(model: ChatModel, prompt: Prompt, streamed: bool) -> Streamed[str, ChatResponse]:
    """The model's answer to ``prompt``: asked whole (``Answer``), or, ``streamed``, its
    chunks pulled one by one, their text yielded as it comes, then merged."""
    if not streamed:
        response: ChatResponse = yield Answer(model, prompt)
        return response
    read = chunks(model, prompt)
    seen: list[ChatResponse] = []
    while (chunk := (yield read)) is not END:
        seen.append(chunk)
        if chunk.text:
            yield chunk.text
    return ChatResponse.merge(seen)


class _RunTools(Effect):
    """The tool calls of ``response``, run by the manager (``execute_tool_calls`` /
    ``aexecute_tool_calls``) with the tools of ``prompt``."""

    __slots__ = ("manager", "prompt", "response")

    def __init__(self, manager: ToolCallingManager, prompt: Prompt, response: ChatResponse) -> None:
        self.manager = manager
        self.prompt = prompt
        self.response = response

    def run(self, context: Any) -> ToolExecutionResult:
        return self.manager.execute_tool_calls(self.prompt, self.response)

    def arun(self, context: Any) -> Awaitable[ToolExecutionResult]:
        return self.manager.aexecute_tool_calls(self.prompt, self.response)


def _is_direct(reply: ChatClientResponse) -> bool:
    return bool(reply.chat_response.results) and bool(
        reply.chat_response.result.output.metadata.get("return_direct")
    )

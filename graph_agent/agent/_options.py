"""The options of a ``ReactAgent``, written once: each option's type, default, one-line doc
and the form of its builder method. ``ReactAgent(...)``'s keywords match this record (a test
checks the signature against it; type checkers and editors read the signature),
``ReactAgent.builder()``'s methods are made from it, the build checks it
(``_build.assemble``), and the options table of docs/agents.md is rendered from it (a test
checks the page). Adding an option: a field here and the keyword in ``ReactAgent.__init__``;
then ``python tests/agent/test_option_methods.py`` writes the builder method's types again
(``agent/_option_methods.py``; a test fails until it does)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ._option_record import about, settle

if TYPE_CHECKING:
    from checkpoint import BaseCheckpointSaver
    from hooks import Hook, ModelInterceptor, ToolInterceptor

    from ..graph import KeyStrategyLike
    from ..models import ChatModel
    from ..tools import ToolCallbackResolver, ToolProvider
    from .base import BaseAgent

__all__ = ["AgentOptions"]


@dataclasses.dataclass(frozen=True)
class AgentOptions:
    """Every option of a ``ReactAgent``, as given; iterables are kept as tuples and mappings
    as dicts, so the record reads the same however often it is read."""

    name: str | None = field(
        default=None, metadata=about("the agent's name (in errors, in `repr`)", shown="required")
    )
    model: ChatModel | None = field(
        default=None,
        metadata=about("any `ChatModel` (`call`, `stream`, `acall`, `astream`)", shown="required"),
    )
    tools: Iterable[Any] = field(
        default=(),
        metadata=about(
            "`@tool` functions, other `ToolCallback`s, objects with `@tool` methods, providers",
            form="add",
        ),
    )
    method_tools: Iterable[Any] = field(
        default=(),
        metadata=about("objects whose `@tool` methods become tools", form="add", arg="objects"),
    )
    tool_callback_providers: Iterable[Any] = field(
        default=(),
        metadata=about(
            "`ToolCallbackProvider`s (`StaticToolCallbackProvider(...)`): their tools are taken "
            "once, at `build()`; one that is also a `ToolProvider` (`McpToolProvider`) is asked at "
            "every model call instead",
            form="add",
            arg="providers",
        ),
    )
    tool_names: Iterable[str] = field(
        default=(),
        metadata=about(
            "tools by name, resolved by `resolver` once at `build()`", form="add", arg="names"
        ),
    )
    resolver: ToolCallbackResolver | None = field(
        default=None,
        metadata=about("what turns `tool_names` into tools (`StaticToolCallbackResolver([...])`)"),
    )
    tool_providers: Iterable[ToolProvider] = field(
        default=(),
        metadata=about(
            "`ToolProvider`s asked before every model call which extra tools to offer",
            form="add",
            arg="providers",
        ),
    )
    system_prompt: str | None = field(
        default=None,
        metadata=about(
            "sent first on every model call, never stored in the thread; may name `{input}` and "
            "state keys",
            arg="text",
        ),
    )
    instruction: str | None = field(
        default=None,
        metadata=about(
            "appended to the system prompt (after a blank line); may name `{input}` and state keys",
            arg="text",
        ),
    )
    description: str | None = field(
        default=None,
        metadata=about(
            "what the agent does (`agent.description`), for people and routers", arg="text"
        ),
    )
    saver: BaseCheckpointSaver | None = field(
        default=None,
        metadata=about(
            "where threads are kept (`MemorySaver`, `SqliteSaver`, `RedisSaver`)",
            shown="a new `MemorySaver()`",
        ),
    )
    hooks: Iterable[Hook] = field(
        default=(),
        metadata=about("`AgentHook`s / `ModelHook`s, see [hooks.md](hooks.md)", form="add"),
    )
    interceptors: Iterable[ModelInterceptor | ToolInterceptor] = field(
        default=(),
        metadata=about(
            "`ModelInterceptor`s and `ToolInterceptor`s; the first is outermost", form="add"
        ),
    )
    tool_context: Mapping[str, Any] | None = field(
        default=None,
        metadata=about(
            "entries every tool finds in its `ToolContext`", form="merge", arg="context"
        ),
    )
    store: Any = field(
        default=None,
        metadata=about(
            "long-term memory across threads (`MemoryStore`, `RedisStore`), reachable from tools "
            "as `ToolContext.store`",
        ),
    )
    max_iterations: int = field(
        default=25,
        metadata=about(
            "model calls allowed in one run before `AgentMaxIterationsError`", arg="count"
        ),
    )
    parallel_tool_execution: bool = field(
        default=True,
        metadata=about("run the calls of one model answer concurrently", arg="enabled"),
    )
    output_key: str | None = field(
        default=None,
        metadata=about(
            "a state key that receives the final answer's text (with `output_type`: the "
            "validated answer)",
            arg="key",
        ),
    )
    key_strategies: Mapping[str, KeyStrategyLike] | None = field(
        default=None,
        metadata=about(
            "how state keys that tools and hooks write are merged",
            form="merge",
            arg="strategies",
            shown="`messages`: APPEND, others REPLACE",
        ),
    )
    unknown_tool_strategy: Any = field(
        default="respond",
        metadata=about(
            'a call of a tool that does not exist: `"respond"`, `"throw"` or a function',
            arg="strategy",
        ),
    )
    exception_processor: Any = field(
        default=None,
        metadata=about(
            "how a failing tool reaches the model (`DefaultToolExecutionExceptionProcessor`)",
            arg="processor",
            shown="the error text",
        ),
    )
    listeners: Iterable[Any] = field(
        default=(),
        metadata=about(
            "objects with `on_event(event)` (and optionally an async `aon_event`) that get every "
            "run event ([streaming.md](streaming.md)); one that raises is logged",
            form="add",
        ),
    )
    handoffs: Iterable[BaseAgent | str] = field(
        default=(),
        metadata=about(
            "agents (or their names) this agent may hand the conversation to, through "
            "`transfer_to_<name>` tools; its graph becomes their swarm "
            "([multi-agent.md](multi-agent.md#handoffs-agents-that-pass-the-conversation-on))",
            form="add",
            arg="agents",
        ),
    )
    output_type: Any = field(
        default=None,
        metadata=about(
            "the type the final answer must validate as: a pydantic model, dataclass, `TypedDict` "
            "or a union of them ([structured output](#structured-output)); builder: "
            '`.output_type(T, strategy="auto")`',
        ),
    )
    output_strategy: str = field(
        default="auto",
        metadata=about(
            'how the answer is asked for: `"tool"`, `"native"`, `"prompted"` or `"auto"`',
            arg="strategy",
        ),
    )
    output_retries: int = field(
        default=2,
        metadata=about(
            "invalid structured answers sent back to the model before `OutputValidationError`",
            arg="count",
        ),
    )
    output_validators: Iterable[Any] = field(
        default=(),
        metadata=about(
            "checks of your own on the validated answer (`.output_validator(fn)`, one at a time)",
            form="add",
            arg="validators",
        ),
    )

    def __post_init__(self) -> None:
        settle(self)

    @classmethod
    def of(cls, given: Mapping[str, Any]) -> AgentOptions:
        """The record of the options in ``given`` (a constructor's ``locals()``)."""
        return cls(**{f.name: given[f.name] for f in dataclasses.fields(cls)})

"""The options of a ``ReactAgent``, written once: each option's type, default, one-line doc
and the form of its builder method. ``ReactAgent(...)``'s keywords match this record (a test
checks the signature against it), ``ReactAgent.builder()``'s methods are made from it, the
build checks it (``_build.assemble``), and the options table of docs/agents.md is rendered
from it (a test checks the page)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from checkpoint import BaseCheckpointSaver
    from hooks import Hook, ModelInterceptor, ToolInterceptor

    from ..graph import KeyStrategyLike
    from ..models import ChatModel
    from ..tools import ToolCallbackResolver, ToolProvider
    from .base import BaseAgent

__all__ = ["AgentOptions", "BuilderForm", "options_table"]

BuilderForm = Literal["set", "add", "merge"]
"""How the builder's method takes the option: ``set`` one value (the last call wins),
``add`` any number of values (calls accumulate), ``merge`` a mapping (calls merge)."""


def _about(
    doc: str,
    *,
    form: BuilderForm = "set",
    arg: str | None = None,
    shown: str | None = None,
) -> dict[str, Any]:
    """What ``AgentOptions`` knows of an option besides its type and default: ``doc`` is the
    table's "what it does" and the builder method's docstring; ``arg`` names the builder
    method's parameter (the option's name when not given); ``shown`` is the table's default
    when the default's value says too little."""
    return {"doc": doc, "form": form, "arg": arg, "shown": shown}


@dataclasses.dataclass(frozen=True)
class AgentOptions:
    """Every option of a ``ReactAgent``, as given; iterables are kept as tuples and mappings
    as dicts, so the record reads the same however often it is read."""

    name: str | None = field(
        default=None, metadata=_about("the agent's name (in errors, in `repr`)", shown="required")
    )
    model: ChatModel | None = field(
        default=None,
        metadata=_about("any `ChatModel` (`call`, `stream`, `acall`, `astream`)", shown="required"),
    )
    tools: Iterable[Any] = field(
        default=(),
        metadata=_about(
            "`@tool` functions, other `ToolCallback`s, objects with `@tool` methods, providers",
            form="add",
        ),
    )
    method_tools: Iterable[Any] = field(
        default=(),
        metadata=_about("objects whose `@tool` methods become tools", form="add", arg="objects"),
    )
    tool_callback_providers: Iterable[Any] = field(
        default=(),
        metadata=_about(
            "`ToolCallbackProvider`s (`StaticToolCallbackProvider(...)`): their tools are taken "
            "once, at `build()`; one that is also a `ToolProvider` (`McpToolProvider`) is asked at "
            "every model call instead",
            form="add",
            arg="providers",
        ),
    )
    tool_names: Iterable[str] = field(
        default=(),
        metadata=_about(
            "tools by name, resolved by `resolver` once at `build()`", form="add", arg="names"
        ),
    )
    resolver: ToolCallbackResolver | None = field(
        default=None,
        metadata=_about("what turns `tool_names` into tools (`StaticToolCallbackResolver([...])`)"),
    )
    tool_providers: Iterable[ToolProvider] = field(
        default=(),
        metadata=_about(
            "`ToolProvider`s asked before every model call which extra tools to offer",
            form="add",
            arg="providers",
        ),
    )
    system_prompt: str | None = field(
        default=None,
        metadata=_about(
            "sent first on every model call, never stored in the thread; may name `{input}` and "
            "state keys",
            arg="text",
        ),
    )
    instruction: str | None = field(
        default=None,
        metadata=_about(
            "appended to the system prompt (after a blank line); may name `{input}` and state keys",
            arg="text",
        ),
    )
    description: str | None = field(
        default=None,
        metadata=_about(
            "what the agent does (`agent.description`), for people and routers", arg="text"
        ),
    )
    saver: BaseCheckpointSaver | None = field(
        default=None,
        metadata=_about(
            "where threads are kept (`MemorySaver`, `SqliteSaver`, `RedisSaver`)",
            shown="a new `MemorySaver()`",
        ),
    )
    hooks: Iterable[Hook] = field(
        default=(),
        metadata=_about("`AgentHook`s / `ModelHook`s, see [hooks.md](hooks.md)", form="add"),
    )
    interceptors: Iterable[ModelInterceptor | ToolInterceptor] = field(
        default=(),
        metadata=_about(
            "`ModelInterceptor`s and `ToolInterceptor`s; the first is outermost", form="add"
        ),
    )
    tool_context: Mapping[str, Any] | None = field(
        default=None,
        metadata=_about(
            "entries every tool finds in its `ToolContext`", form="merge", arg="context"
        ),
    )
    store: Any = field(
        default=None,
        metadata=_about(
            "long-term memory across threads (`MemoryStore`, `RedisStore`), reachable from tools "
            "as `ToolContext.store`",
        ),
    )
    max_iterations: int = field(
        default=25,
        metadata=_about(
            "model calls allowed in one run before `AgentMaxIterationsError`", arg="count"
        ),
    )
    parallel_tool_execution: bool = field(
        default=True,
        metadata=_about("run the calls of one model answer concurrently", arg="enabled"),
    )
    output_key: str | None = field(
        default=None,
        metadata=_about(
            "a state key that receives the final answer's text (with `output_type`: the "
            "validated answer)",
            arg="key",
        ),
    )
    key_strategies: Mapping[str, KeyStrategyLike] | None = field(
        default=None,
        metadata=_about(
            "how state keys that tools and hooks write are merged",
            form="merge",
            arg="strategies",
            shown="`messages`: APPEND, others REPLACE",
        ),
    )
    unknown_tool_strategy: Any = field(
        default="respond",
        metadata=_about(
            'a call of a tool that does not exist: `"respond"`, `"throw"` or a function',
            arg="strategy",
        ),
    )
    exception_processor: Any = field(
        default=None,
        metadata=_about(
            "how a failing tool reaches the model (`DefaultToolExecutionExceptionProcessor`)",
            arg="processor",
            shown="the error text",
        ),
    )
    listeners: Iterable[Any] = field(
        default=(),
        metadata=_about(
            "objects with `on_event(event)` (and optionally an async `aon_event`) that get every "
            "run event ([streaming.md](streaming.md)); one that raises is logged",
            form="add",
        ),
    )
    handoffs: Iterable[BaseAgent | str] = field(
        default=(),
        metadata=_about(
            "agents (or their names) this agent may hand the conversation to, through "
            "`transfer_to_<name>` tools; its graph becomes their swarm "
            "([multi-agent.md](multi-agent.md#handoffs-agents-that-pass-the-conversation-on))",
            form="add",
            arg="agents",
        ),
    )
    output_type: Any = field(
        default=None,
        metadata=_about(
            "the type the final answer must validate as: a pydantic model, dataclass, `TypedDict` "
            "or a union of them ([structured output](#structured-output)); builder: "
            '`.output_type(T, strategy="auto")`',
        ),
    )
    output_strategy: str = field(
        default="auto",
        metadata=_about(
            'how the answer is asked for: `"tool"`, `"native"`, `"prompted"` or `"auto"`',
            arg="strategy",
        ),
    )
    output_retries: int = field(
        default=2,
        metadata=_about(
            "invalid structured answers sent back to the model before `OutputValidationError`",
            arg="count",
        ),
    )
    output_validators: Iterable[Any] = field(
        default=(),
        metadata=_about(
            "checks of your own on the validated answer (`.output_validator(fn)`, one at a time)",
            form="add",
            arg="validators",
        ),
    )

    def __post_init__(self) -> None:
        for option in dataclasses.fields(self):
            value = getattr(self, option.name)
            if option.metadata["form"] == "add":
                object.__setattr__(self, option.name, tuple(value))
            elif option.metadata["form"] == "merge":
                object.__setattr__(self, option.name, dict(value or {}))

    @classmethod
    def of(cls, given: Mapping[str, Any]) -> AgentOptions:
        """The record of the options in ``given`` (a constructor's ``locals()``)."""
        return cls(**{f.name: given[f.name] for f in dataclasses.fields(cls)})


def options_table() -> str:
    """The Markdown table of every option, as docs/agents.md shows it."""
    rows = ["| option | what it does | default |", "|---|---|---|"]
    for option in dataclasses.fields(AgentOptions):
        shown = option.metadata["shown"] or _shown(option.default)
        rows.append(f"| `{option.name}` | {option.metadata['doc']} | {shown} |")
    return "\n".join(rows)


def _shown(default: Any) -> str:
    if default is None or default == ():
        return "none"
    if isinstance(default, str):
        return f'`"{default}"`'
    return f"`{default!r}`"

"""Checking an agent's options and assembling its parts; every problem is reported at once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import AgentBuildError
from ..graph import KeyStrategy, KeyStrategyLike
from ..models import ChatModel
from ..tools import (
    ToolCallback,
    ToolCallingManager,
    ToolProvider,
    as_tool_callbacks,
)
from ._handoff import HandoffTool, check_handoffs, handoff_targets, tool_name_for
from ._keys import (
    JUMP_TO,
    MESSAGES,
    OFFERED,
    OUTPUT_ATTEMPTS,
    OUTPUT_FAILURE,
    REJECTED,
    STRUCTURED,
)
from ._options import AgentOptions
from ._output import output_spec
from ._parts import AgentParts
from ._prompt import system_prompt as make_system_prompt
from ._toolset import RejectedToolCalls

if TYPE_CHECKING:
    from hooks import Hook

RESERVED_KEYS = (JUMP_TO, REJECTED, OFFERED, OUTPUT_ATTEMPTS, OUTPUT_FAILURE)


def _tools(s: AgentOptions, problems: list[str]) -> list[ToolCallback]:
    found: list[ToolCallback] = []
    for group, items in (("tools", s.tools), ("method_tools", s.method_tools)):
        for item in items:
            try:
                found.extend(as_tool_callbacks([item]))
            except (TypeError, ValueError) as error:
                problems.append(f"{group}: {error}")
    for provider in s.tool_callback_providers:
        get = getattr(provider, "get_tool_callbacks", None)
        if callable(get) and _is_live(provider):
            continue  # asked per model call (_providers)
        if callable(get):
            found.extend(get())
        else:
            problems.append(
                f"tool_callback_providers: {provider!r} has no get_tool_callbacks(); pass "
                "ToolCallbackProviders (e.g. StaticToolCallbackProvider(...))"
            )
    if s.tool_names and s.resolver is None:
        problems.append(
            f"tool_names {list(s.tool_names)} need a resolver to turn them into tools: add "
            ".resolver(StaticToolCallbackResolver([...]))"
        )
    elif s.resolver is not None:
        for name in s.tool_names:
            tool = s.resolver.resolve(name)
            if tool is None:
                problems.append(f"tool name '{name}' cannot be resolved by {s.resolver!r}")
            else:
                found.append(tool)
    for name, target in handoff_targets(s.handoffs):
        found.append(HandoffTool(name, getattr(target, "description", None)))
    unique: dict[str, ToolCallback] = {}
    for tool in found:
        name = tool.tool_definition.name
        if name in unique and unique[name] is not tool:
            problems.append(
                f"two tools are named '{name}'; tool names must be unique: rename one with "
                "@tool(name=...)"
            )
        unique[name] = tool
    return list(unique.values())


def _is_live(provider: Any) -> bool:
    """A ToolCallbackProvider that is also a ToolProvider (McpToolProvider): its list may
    change, so it is asked at every model call instead of once at build."""
    return callable(provider) and callable(getattr(provider, "get_tool_callbacks", None))


def _providers(s: AgentOptions) -> list[ToolProvider]:
    """What the agent asks for tools at every model call."""
    return [*s.tool_providers, *(p for p in s.tool_callback_providers if _is_live(p))]


def _interceptor_tools(
    interceptors: list[Any], tools: list[ToolCallback], problems: list[str]
) -> dict[str, ToolCallback]:
    """The tools model interceptors declare they may offer, by name."""
    names = {t.tool_definition.name for t in tools}
    found: dict[str, ToolCallback] = {}
    for interceptor in interceptors:
        try:
            declared = as_tool_callbacks(list(interceptor.tools))
        except (TypeError, ValueError) as error:
            problems.append(f"interceptors: {interceptor!r}.tools: {error}")
            continue
        for tool in declared:
            name = tool.tool_definition.name
            if name in names or (name in found and found[name] is not tool):
                problems.append(
                    f"interceptors: {interceptor!r} declares a tool named '{name}', a name "
                    "another tool of the agent already has; tool names must be unique"
                )
            found[name] = tool
    return found


def _check_hook_tools(
    s: AgentOptions, hooks: list[Hook], tools: list[ToolCallback], problems: list[str]
) -> None:
    """Every tool a hook names is one the agent has (HumanInTheLoopHook(["refnud"]) would
    otherwise ask about nothing, and refund would run unapproved). Tools that only exist at
    call time (``tool_providers``, a resolver, a model interceptor's) cannot be checked: then
    nothing is."""
    if _providers(s) or s.resolver is not None:
        return
    known = {t.tool_definition.name for t in tools} | set(s.tool_names)
    for hook in hooks:
        for name in hook.tool_names_used():
            if name in known:
                continue
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            problems.append(
                f"hook '{hook.hook_name}' names tool '{name}', which the agent does not have "
                f"(its tools: {', '.join(sorted(known)) or 'none'}){hint}"
            )


def _hooks(hooks: Iterable[Any], problems: list[str]) -> list[Hook]:
    from hooks import Hook

    valid: list[Hook] = []
    nodes: dict[str, Hook] = {}
    for hook in hooks:
        if not isinstance(hook, Hook):
            problems.append(
                f"hooks: {hook!r} is not a Hook (subclass hooks.ModelHook or AgentHook)"
            )
            continue
        implemented = hook.implemented_positions()
        declared = hook.hook_positions()
        missing = [p.value for p in declared if p not in implemented]
        if missing:
            problems.append(
                f"hook '{hook.hook_name}' runs at {missing} but does not implement "
                f"{', '.join(m + '()' for m in missing)}; implement it or drop it from positions"
            )
            continue
        if not declared:
            problems.append(
                f"hook '{hook.hook_name}' implements none of before_agent, after_agent, "
                "before_model, after_model"
            )
            continue
        for position in declared:
            name = f"{hook.hook_name}.{position.value}"
            if name in nodes:
                problems.append(f"two hooks are named '{hook.hook_name}'; give one another name")
            nodes[name] = hook
        valid.append(hook)
    return valid


def _strategies(
    s: AgentOptions, hooks: list[Hook], problems: list[str]
) -> dict[str, KeyStrategyLike]:
    strategies: dict[str, KeyStrategyLike] = {MESSAGES: KeyStrategy.APPEND}
    sources: dict[str, str] = {MESSAGES: "the agent"}
    if s.output_type is not None:  # one value per run, written by the model node only
        strategies[STRUCTURED] = KeyStrategy.REPLACE
        sources[STRUCTURED] = "the agent's output_type"
    declared: list[tuple[str, Mapping[str, KeyStrategyLike]]] = [
        *((f"hook '{h.hook_name}'", h.key_strategies) for h in hooks),
        ("key_strategies", s.key_strategies or {}),
    ]
    for who, mapping in declared:
        for key, strategy in mapping.items():
            if key in RESERVED_KEYS:
                problems.append(f"{who} declares a strategy for '{key}', a key the agent reserves")
            elif key in strategies and strategies[key] is not strategy:
                problems.append(
                    f"{who} declares {_strategy_name(strategy)} for '{key}', but {sources[key]} "
                    f"declares {_strategy_name(strategies[key])}"
                )
            else:
                strategies[key] = strategy
                sources[key] = who
    return strategies


def _strategy_name(strategy: KeyStrategyLike) -> str:
    if isinstance(strategy, KeyStrategy):
        return f"KeyStrategy.{strategy.name}"
    return getattr(strategy, "__qualname__", None) or repr(strategy)


def assemble(s: AgentOptions) -> tuple[AgentParts, list[Hook], dict[str, KeyStrategyLike]]:
    """The agent's parts, hooks and key strategies; ``AgentBuildError`` lists every problem."""
    from hooks import ModelInterceptor, ToolInterceptor

    problems: list[str] = []
    if not s.name or not isinstance(s.name, str):
        problems.append("no name: give the agent one, e.g. .name('assistant')")
    if s.model is None:
        problems.append(
            "no model: give it one, e.g. .model(OpenAIChatModel()) or ScriptedChatModel([...])"
        )
    elif not isinstance(s.model, ChatModel):
        problems.append(f"model {s.model!r} is not a ChatModel (call, stream, acall, astream)")
    tools = _tools(s, problems)
    hooks = _hooks(s.hooks, problems)
    for hook in hooks:  # a hook that writes to the store takes the agent's (MemoryWriterHook)
        use_store = getattr(hook, "use_store", None)
        if callable(use_store) and (problem := use_store(s.store)) is not None:
            problems.append(problem)
    strategies = _strategies(s, hooks, problems)
    model_interceptors = [i for i in s.interceptors if isinstance(i, ModelInterceptor)]
    tool_interceptors = [i for i in s.interceptors if isinstance(i, ToolInterceptor)]
    for interceptor in s.interceptors:
        if not isinstance(interceptor, (ModelInterceptor, ToolInterceptor)):
            problems.append(
                f"interceptors: {interceptor!r} is neither a ModelInterceptor nor a ToolInterceptor"
            )
    if not isinstance(s.max_iterations, int) or s.max_iterations < 1:
        problems.append(f"max_iterations must be a positive int, got {s.max_iterations!r}")
    if s.output_key in (MESSAGES, *RESERVED_KEYS):
        problems.append(f"output_key '{s.output_key}' is a key the agent already uses")
    for provider in s.tool_providers:
        if not callable(provider):
            problems.append(f"tool_providers: {provider!r} is not callable (request) -> tools")
    manager: ToolCallingManager | None = None
    try:
        manager = ToolCallingManager(
            tool_callback_resolver=s.resolver,
            exception_processor=s.exception_processor,
            unknown_tool_strategy=s.unknown_tool_strategy,
            parallel=s.parallel_tool_execution,
            interceptors=[*tool_interceptors, RejectedToolCalls()],
        )
    except ValueError as error:
        problems.append(str(error))
    interceptor_tools = _interceptor_tools(model_interceptors, tools, problems)
    if not model_interceptors:  # an interceptor may offer tools of its own per request
        _check_hook_tools(s, hooks, tools, problems)
    check_handoffs(tuple(s.handoffs), s.name, problems)
    for listener in s.listeners:
        if not callable(getattr(listener, "on_event", None)):
            problems.append(f"listeners: {listener!r} has no on_event(event) method")
    serializer = getattr(s.saver, "serializer", None)
    output = output_spec(
        s.name if isinstance(s.name, str) and s.name else None,
        s.output_type,
        s.output_strategy,
        s.output_retries,
        tuple(s.output_validators),
        s.model,
        [t.tool_definition.name for t in tools],
        getattr(serializer, "registry", None),
        problems,
    )
    if problems:
        raise AgentBuildError(s.name, problems)
    assert s.name is not None and s.model is not None and manager is not None
    system_text = "\n\n".join(t for t in (s.system_prompt, s.instruction) if t) or None
    parts = AgentParts(
        name=s.name,
        model=s.model,
        system=make_system_prompt(s.name, system_text, output.instructions if output else None),
        tools=tuple(tools),
        tool_providers=tuple(_providers(s)),
        manager=manager,
        model_interceptors=tuple(model_interceptors),
        tool_context=dict(s.tool_context or {}),
        store=s.store,
        output_key=s.output_key,
        strategies=strategies,
        interceptor_tools=interceptor_tools,
        handoffs={tool_name_for(name): name for name, _ in handoff_targets(s.handoffs)},
        output=output,
    )
    return parts, hooks, strategies

"""How an agent becomes a graph: hook chains around the model node, then the tool node."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from checkpoint import BaseCheckpointSaver

from ..graph import (
    END,
    START,
    CompiledGraph,
    KeyStrategyLike,
    OverAllState,
    StateGraph,
)
from ..messages import AssistantMessage
from ._hook_node import hook_node
from ._keys import JUMP_TO, OUTPUT_ATTEMPTS, OUTPUT_FAILURE, PRIVATE_KEYS
from ._model_node import model_node
from ._node_kit import agent_nodes, last_message
from ._parts import AgentParts
from ._tool_node import tool_node
from ._toolset import AgentTools
from ._unanswered import answer_unfinished_calls

if TYPE_CHECKING:
    from hooks import Hook, HookPosition


MODEL = "model"
TOOLS = "tools"
OUTPUT_FAILED = "output_failed"  # raises OutputValidationError (an agent with output_type)


def hook_chains(hooks: Sequence[Hook]) -> dict[HookPosition, list[Hook]]:
    """The hooks of each position in running order: by ``order`` (then as given); the
    after-positions in reverse."""
    from hooks import HookPosition

    ordered = sorted(hooks, key=lambda h: h.order)
    chains = {p: [h for h in ordered if p in h.hook_positions()] for p in HookPosition}
    chains[HookPosition.AFTER_MODEL].reverse()
    chains[HookPosition.AFTER_AGENT].reverse()
    return chains


def node_name(hook: Hook, position: HookPosition) -> str:
    return f"{hook.hook_name}.{position.value}"


def build_graph(
    parts: AgentParts,
    hooks: Sequence[Hook],
    strategies: dict[str, KeyStrategyLike],
    saver: BaseCheckpointSaver,
    recursion_limit: int,
    listeners: Sequence[Any] = (),
) -> CompiledGraph:
    """The agent's one graph: every node has a sync and an async implementation of the same
    logic, so ``invoke`` and ``ainvoke`` run it alike and share its threads. The agent's
    bookkeeping keys are private: checkpointed with the thread, never shown to callers."""
    from hooks import HookPosition, JumpTo

    chains = hook_chains(hooks)
    graph = StateGraph(key_strategies=strategies, private_keys=PRIVATE_KEYS)

    def chain_names(position: HookPosition) -> list[str]:
        return [node_name(h, position) for h in chains[position]]

    before_agent = chain_names(HookPosition.BEFORE_AGENT)
    before_model = chain_names(HookPosition.BEFORE_MODEL)
    after_model = chain_names(HookPosition.AFTER_MODEL)
    after_agent = chain_names(HookPosition.AFTER_AGENT)
    model_entry = before_model[0] if before_model else MODEL
    end_entry = after_agent[0] if after_agent else END
    targets = {
        JumpTo.MODEL.value: model_entry,
        JumpTo.TOOL.value: TOOLS,
        JumpTo.END.value: end_entry,
    }

    # Each node reads what it needs from the parts once; the tools are shared by the two.
    tools = AgentTools(parts)
    nodes = {node_name(h, p): hook_node(h, p) for p in HookPosition for h in chains[p]}
    nodes[MODEL] = model_node(parts, tools)
    nodes[TOOLS] = tool_node(parts, tools)
    output = parts.output

    # Each hop is either a fixed next node or a route (a router and its labels -> nodes).
    Route = tuple[Callable[[OverAllState], str], dict[str, str]]
    after_model_route: Route = (_after_model_route, {"tools": TOOLS, "end": end_entry})
    before_input: Callable[..., Any] = answer_unfinished_calls
    if output is not None:  # a rejected answer goes back to the model; spent retries fail
        nodes[OUTPUT_FAILED] = output.failed
        graph.add_edge(OUTPUT_FAILED, END)
        after_model_route = (
            _output_route,
            {"tools": TOOLS, "end": end_entry, "retry": model_entry, "failed": OUTPUT_FAILED},
        )
        before_input = _new_run
    after_tools_route: Route = (_after_tools_route, {"model": model_entry, "end": end_entry})
    for name, logic in nodes.items():
        graph.add_node(name, *agent_nodes(logic))

    def link(source: str, hook: Hook | None, then: str | Route) -> None:
        """``source`` -> ``then``; a hook that may jump gets a router that honours ``jump_to``."""
        jumps = [j.value for j in hook.can_jump_to] if hook is not None else []
        if not jumps:
            if isinstance(then, str):
                graph.add_edge(source, then)
            else:
                graph.add_conditional_edges(source, then[0], then[1])
            return
        path_map = {f"jump to {j}": targets[j] for j in jumps}
        if isinstance(then, str):
            path_map["next"] = then
        else:
            path_map.update(then[1])

        def route(state: OverAllState) -> str:
            jump = state.get(JUMP_TO)
            if jump in jumps:
                return f"jump to {jump}"
            return "next" if isinstance(then, str) else then[0](state)

        graph.add_conditional_edges(source, route, path_map)

    sequence = [*before_agent, *before_model]
    graph.add_edge(START, sequence[0] if sequence else MODEL)
    all_hooks = {node_name(h, p): h for p in HookPosition for h in chains[p]}
    for index, name in enumerate(sequence):
        link(name, all_hooks[name], sequence[index + 1] if index + 1 < len(sequence) else MODEL)
    if after_model:
        graph.add_edge(MODEL, after_model[0])
        for index, name in enumerate(after_model):
            nxt = after_model[index + 1] if index + 1 < len(after_model) else after_model_route
            link(name, all_hooks[name], nxt)
    else:
        link(MODEL, None, after_model_route)
    link(TOOLS, None, after_tools_route)
    for index, name in enumerate(after_agent):
        link(name, all_hooks[name], after_agent[index + 1] if index + 1 < len(after_agent) else END)
    return graph.compile(
        saver=saver,
        recursion_limit=recursion_limit,
        listeners=listeners,
        name=parts.name,
        before_input=before_input,
        clean_input=_input_cleaner(hooks),
        agent=True,
    )


def _input_cleaner(
    hooks: Sequence[Hook],
) -> Callable[[Mapping[str, Any]], Mapping[str, Any]] | None:
    """The hooks' ``clean_input(input) -> input`` (a ``PIIHook``'s), in their order: each
    run's new input goes through them before it is announced or stored."""
    ordered = sorted(hooks, key=lambda h: h.order)
    cleaners = [c for h in ordered if callable(c := getattr(h, "clean_input", None))]
    if not cleaners:
        return None

    def clean(inputs: Mapping[str, Any]) -> Mapping[str, Any]:
        for cleaner in cleaners:
            inputs = cleaner(inputs)
        return inputs

    return clean


def _after_model_route(state: OverAllState) -> str:
    """Tool calls go to the tool node; an answer ends the run."""
    message = last_message(state)
    if isinstance(message, AssistantMessage) and message.tool_calls:
        return "tools"
    return "end"


def _after_tools_route(state: OverAllState) -> str:
    """Back to the model, or to the end when the batch was return-direct."""
    message = last_message(state)
    if isinstance(message, AssistantMessage) and message.metadata.get("return_direct"):
        return "end"
    return "model"


def _output_route(state: OverAllState) -> str:
    """After the model of an agent with an ``output_type``: ``_after_model_route``, or
    back to the model when the model node sent the answer back (its update ends with the
    feedback), or to ``output_failed`` when the retries are spent."""
    if state.get(OUTPUT_FAILURE) is not None:
        return "failed"
    message = last_message(state)
    if isinstance(message, AssistantMessage):
        return "tools" if message.tool_calls else "end"
    return "retry"


def _new_run(
    values: Mapping[str, Any], update: Mapping[str, Any], kept: Mapping[str, Any] | None = None
) -> Mapping[str, Any]:
    """New input to a thread of an agent with an ``output_type``: unanswered calls answered
    (``answer_unfinished_calls``), and the count of rejected answers starts again."""
    update = answer_unfinished_calls(values, update, kept)
    if values.get(OUTPUT_ATTEMPTS) is not None or values.get(OUTPUT_FAILURE) is not None:
        update = {**update, OUTPUT_ATTEMPTS: None, OUTPUT_FAILURE: None}
    return update


def iteration_steps(hooks: Sequence[Hook]) -> tuple[int, int]:
    """Super-steps of one model+tool round, and of the fixed part of a run (the agent hooks).

    ``fixed + per_round * n`` steps hold ``n`` model calls, the last one answering or followed
    by a return-direct tool batch; an ``n + 1``-th model call does not fit unless there are
    more after-agent hooks than before-model hooks (a step budget cannot tell them apart)."""
    from hooks import HookPosition

    chains = hook_chains(hooks)
    per_round = len(chains[HookPosition.BEFORE_MODEL]) + len(chains[HookPosition.AFTER_MODEL]) + 2
    fixed = len(chains[HookPosition.BEFORE_AGENT]) + len(chains[HookPosition.AFTER_AGENT])
    return per_round, fixed


def describe(value: Any) -> str:
    return type(value).__name__

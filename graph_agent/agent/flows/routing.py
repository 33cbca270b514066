"""``LlmRoutingAgent``: a model picks the sub-agent(s) for the request, each with its query."""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Mapping
from typing import Any

from checkpoint.effects import Effect

from ...errors import AgentRoutingError
from ...graph import END, START, OverAllState, RunnableConfig, Send, StateGraph
from ...messages import AssistantMessage, Message, SystemMessage, UserMessage
from ...models import ToolCallingChatOptions
from .._keys import MESSAGES
from .._model_call import CallModel, ModelChain
from .._node_kit import both
from .._subagent import RESULTS, Shape, conversation, with_task
from .._usage import add_usage, usage_dict
from ..base import BaseAgent
from ._base import FlowAgent, FlowAgentBuilder
from ._options import FlowOptions

__all__ = ["LlmRoutingAgent"]

ROUTE = "route"  # private: the sub-agents chosen for this turn, with their queries
RETRIES = 2  # times an answer naming no valid agent goes back to the model

PROMPT = """You route the user's request to the agent(s) best able to answer it.

Agents:
{agents}

Answer with JSON only, no other text: {{"agents": [{{"agent": "<name>", "query": "<what to \
ask that agent>"}}]}}. Choose one agent unless the request needs several; give each the \
part of the request it should answer."""

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def _read_choice(text: str, names: list[str]) -> tuple[list[tuple[str, str]], str | None]:
    """The (agent, query) pairs the model chose, and what was wrong with its answer (None
    when it is fine)."""
    try:
        data = json.loads(_FENCE.sub("", text.strip()))
    except ValueError as error:
        return [], f"your answer is not JSON ({error})"
    items = data.get("agents") if isinstance(data, Mapping) else data
    if isinstance(items, Mapping):
        items = [items]
    if not isinstance(items, list) or not items:
        return [], 'it has no "agents" list with at least one agent'
    chosen: list[tuple[str, str]] = []
    unknown: list[str] = []
    for item in items:
        if isinstance(item, str):
            name, query = item, ""
        elif isinstance(item, Mapping):
            name, query = str(item.get("agent", "")), str(item.get("query") or "")
        else:
            return [], f"an entry is {json.dumps(item)}, not an object with agent and query"
        if name not in names:
            unknown.append(name)
        elif name not in (n for n, _ in chosen):
            chosen.append((name, query))
    if unknown:
        return [], f"it names {', '.join(map(repr, unknown))}, which is no agent here"
    return chosen, None


class LlmRoutingAgent(FlowAgent):
    """A model reads the conversation and the sub-agents' names and descriptions, and picks
    one or more of them, each with its own query. The chosen ones run (several at once),
    each seeing the conversation (without tool traffic) and its query as the latest request.
    One agent's answer is the flow's answer as it is (no second model call repeats it);
    several answers join in one message, in the model's order, and the flow's
    ``output_key`` gets their results by name.

    An answer that names no valid agent goes back to the model with the valid names, up to
    2 times; then ``fallback_agent`` answers the request, or ``AgentRoutingError`` says why.
    """

    kind = "routing"
    _own_nodes = (*FlowAgent._own_nodes, "router", "merge")

    @staticmethod
    def builder() -> FlowAgentBuilder[LlmRoutingAgent]:
        """``.name().model(m).sub_agents(...).fallback_agent(a).instruction(...)``."""
        return FlowAgentBuilder(LlmRoutingAgent)

    def _configure(self, options: FlowOptions, problems: list[str]) -> None:
        self.model = self._model_option(options, problems, "router")
        self.instruction: str | None = options.instruction
        fallback = options.fallback_agent
        if fallback is not None and not isinstance(fallback, BaseAgent):
            problems.append(f"fallback_agent {fallback!r} is not an agent")
            fallback = None
        elif fallback is not None:
            same = [a for a in self.sub_agents if getattr(a, "name", None) == fallback.name]
            if same and same[0] is not fallback:
                problems.append(
                    f"fallback_agent '{fallback.name}' is another agent than the sub-agent "
                    f"named '{fallback.name}'; give it its own name, or pass that sub-agent"
                )
            elif fallback.name in self._own_nodes:
                problems.append(
                    f"fallback_agent name '{fallback.name}' names a node of the "
                    "LlmRoutingAgent itself; rename the agent"
                )
        self.fallback_agent: BaseAgent | None = fallback
        self._check_descriptions(problems, "the router's model")

    def _agents(self) -> Mapping[str, BaseAgent]:
        return {a.name: a for a in self._routable()}

    def _private_keys(self) -> tuple[str, ...]:
        return (*super()._private_keys(), ROUTE)

    def _routable(self) -> list[BaseAgent]:
        agents = list(self.sub_agents)
        if self.fallback_agent is not None and all(
            a.name != self.fallback_agent.name for a in agents
        ):
            agents.append(self.fallback_agent)
        return agents

    def _build(self, graph: StateGraph) -> int:
        agents = self._routable()
        names = [a.name for a in self.sub_agents]
        graph.add_node("router", *both(self._route_logic(names)))
        for agent in agents:
            graph.add_node(agent.name, self._node(agent, Shape.RESULT))
            graph.add_edge(agent.name, "merge")
        graph.add_node("merge", self._merge_node(agents, usage_of=_route_usage, order=_chosen))
        graph.add_edge(START, "router")
        graph.add_conditional_edges("router", _sends, [a.name for a in agents])
        graph.add_edge("merge", END)
        return 4

    def _route_logic(self, names: list[str]) -> Any:
        assert self.model is not None
        chain = ModelChain(self.model, ())
        listing = "\n".join(f"- {a.name}: {a.description}" for a in self.sub_agents)
        system = PROMPT.format(agents=listing)
        if self.instruction:
            system = f"{system}\n\n{self.instruction}"
        options = ToolCallingChatOptions()
        flow, fallback = self.name, self.fallback_agent

        def logic(state: OverAllState, config: RunnableConfig) -> Generator[Effect, Any, Any]:
            from hooks import ModelRequest

            history = conversation(state.get(MESSAGES))
            asked: list[Message] = [SystemMessage(system), *history]
            problem: str | None = ""
            text = ""
            usage: dict[str, int] = {}
            for _ in range(RETRIES + 1):
                response = yield CallModel(chain, ModelRequest(asked, options, state, config))
                if response.metadata.usage is not None:
                    usage = add_usage(usage, usage_dict(response.metadata.usage))
                text = response.result.output.text
                chosen, problem = _read_choice(text, names)
                if problem is None:
                    picked = [{"agent": n, "query": q} for n, q in chosen]
                    return {ROUTE: {"agents": picked, "usage": usage}}
                asked = [
                    *asked,
                    AssistantMessage(text),
                    UserMessage(
                        f"That answer cannot be used: {problem}. The agents are: "
                        f"{', '.join(names)}. Answer again with JSON only."
                    ),
                ]
            if fallback is not None:
                return {ROUTE: {"agents": [{"agent": fallback.name, "query": ""}], "usage": usage}}
            raise AgentRoutingError(
                f"router '{flow}': the model named no valid agent in {RETRIES + 1} answers "
                f"(last problem: {problem}); valid agents: {', '.join(names)}. Add "
                ".fallback_agent(agent) to answer such requests anyway, or make the agents' "
                "descriptions clearer",
                agent=flow,
                answer=text,
            )

        return logic


def _chosen(state: OverAllState) -> list[str]:
    """The chosen agents' names, in the model's order."""
    return [choice["agent"] for choice in (state.get(ROUTE) or {}).get("agents", ())]


def _sends(state: OverAllState) -> list[Send]:
    """One ``Send`` per chosen agent: the state with its query as the latest request."""
    values = {k: v for k, v in state.data().items() if k not in (ROUTE, RESULTS)}
    messages = state.get(MESSAGES)
    return [
        Send(choice["agent"], {**values, MESSAGES: with_task(messages, choice["query"])})
        for choice in (state.get(ROUTE) or {}).get("agents", ())
    ]


def _route_usage(state: OverAllState) -> Any:
    """The tokens of the router's own model calls (they leave no message)."""
    return (state.get(ROUTE) or {}).get("usage")

"""LlmRoutingAgent (the full tests follow)."""

from __future__ import annotations

import json
from typing import Any

from graph_agent import LlmRoutingAgent, ScriptedChatModel

from .conftest import Runner
from .flow_kit import scripted


def route(*choices: tuple[str, str]) -> str:
    """The router model's JSON answer choosing ``(agent, query)`` pairs."""
    return json.dumps({"agents": [{"agent": a, "query": q} for a, q in choices]})


def desk(
    router: ScriptedChatModel, *, fallback: Any = None, **options: Any
) -> tuple[LlmRoutingAgent, ScriptedChatModel, ScriptedChatModel]:
    """A router over ``billing`` and ``tech``; and their models."""
    billing, billed = scripted("billing", "Refund issued.", description="Money and refunds.")
    tech, teched = scripted("tech", "Restart it.", description="Computers and devices.")
    flow = LlmRoutingAgent(
        name="desk",
        model=router,
        sub_agents=[billing, tech],
        fallback_agent=fallback,
        **options,
    )
    return flow, billed, teched


def test_several_answers_join_in_the_order_the_model_chose(run: Runner) -> None:
    router = ScriptedChatModel([route(("tech", "Fix it."), ("billing", "Refund it."))])
    flow, _, _ = desk(router, output_key="answers")

    state = run.invoke(flow, "Fix it, then refund it.")

    assert state["messages"][-1].text == "tech:\nRestart it.\n\nbilling:\nRefund issued."
    assert list(state["answers"]) == ["tech", "billing"]

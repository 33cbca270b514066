"""PIIHook on the model's output beyond its text: the arguments of the tool calls it makes
(inside their JSON), its refusal; and a sub-agent's input, as its parent hands it over."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import (
    AssistantMessage,
    ReactAgent,
    ScriptedChatModel,
    ToolCall,
    UserMessage,
    tool,
)
from graph_agent.events import ModelDelta, RunEvent
from graph_agent.graph import END, START, StateGraph
from graph_agent.models import ChatResponse, Prompt
from hooks import PIIDetectionError, PIIHook

EMAIL = "ada@example.com"
CARD = "4111 1111 1111 1111"


class Events:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    def on_event(self, event: RunEvent) -> None:
        self.events.append(event)


sent: list[dict[str, Any]] = []


@tool
def send_mail(to: str, body: str, copies: int = 0) -> str:
    """Send a mail."""
    sent.append({"to": to, "body": body, "copies": copies})
    return "sent"


def mail_call(arguments: dict[str, Any]) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=(ToolCall(id="m1", name="send_mail", arguments=json.dumps(arguments)),)
    )


def agent_with(model: Any, *hooks: PIIHook) -> tuple[ReactAgent, Events]:
    listener = Events()
    agent = ReactAgent(
        name="mailer",
        model=model,
        tools=[send_mail],
        hooks=list(hooks),
        interceptors=list(hooks),
        saver=MemorySaver(),
        listeners=[listener],
    )
    return agent, listener


def leaked(value: Any, *secrets: str) -> list[str]:
    text = repr(value)
    return [s for s in (secrets or (EMAIL, CARD)) if s in text]


def values(agent: ReactAgent, thread: str) -> dict[str, Any]:
    snapshot = agent.get_state({"thread_id": thread})
    assert snapshot is not None
    return dict(snapshot.values)


def stored_calls(agent: ReactAgent, thread: str) -> list[ToolCall]:
    messages = values(agent, thread)["messages"]
    return [c for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]


@pytest.mark.parametrize(
    ("strategy", "to"),
    [
        ("redact", re.escape("[REDACTED_EMAIL]")),
        ("mask", re.escape("a***@example.com")),
        ("hash", r"<email_hash:[0-9a-f]{8}>"),
    ],
)
def test_tool_call_arguments_are_changed_inside_their_json(strategy: str, to: str) -> None:
    sent.clear()
    pii = PIIHook("email", strategy, apply_to_output=True)  # type: ignore[arg-type]
    call = mail_call({"to": EMAIL, "body": f"Hi, this is {EMAIL} \u00e9"})
    agent, listener = agent_with(ScriptedChatModel([call, "Sent."]), pii)
    assert agent.call("mail Ada", {"thread_id": strategy}).text == "Sent."
    (stored,) = stored_calls(agent, strategy)
    arguments = json.loads(stored.arguments)  # JSON still
    assert re.fullmatch(to, arguments["to"]) and arguments["body"].endswith(" \u00e9")
    assert sent == [arguments | {"copies": 0}]  # the tool ran with the changed arguments
    assert not leaked(listener.events)
    assert not leaked(list(agent.get_state_history({"thread_id": strategy})))


def test_a_card_number_given_as_a_json_number_is_changed_too() -> None:
    sent.clear()
    pii = PIIHook("credit_card", "mask", apply_to_output=True)
    call = AssistantMessage(
        "",
        tool_calls=(
            ToolCall(
                id="m1",
                name="send_mail",
                arguments='{"to": "x", "body": "pay", "copies": 4111111111111111}',
            ),
        ),
    )
    agent, _ = agent_with(ScriptedChatModel([call, "Sent."]), pii)
    agent.call("pay", {"thread_id": "n1"})
    (stored,) = stored_calls(agent, "n1")
    assert json.loads(stored.arguments)["copies"] == "************1111"
    assert "4111111111111111" not in repr(values(agent, "n1"))


def test_arguments_without_personal_data_are_kept_word_for_word() -> None:
    pii = PIIHook("email", apply_to_output=True)
    arguments = '{ "to":"bob", "body":"hi" }'  # not as json.dumps would write it
    call = AssistantMessage(
        "", tool_calls=(ToolCall(id="m1", name="send_mail", arguments=arguments),)
    )
    agent, _ = agent_with(ScriptedChatModel([call, "Sent."]), pii)
    agent.call("mail Bob", {"thread_id": "k1"})
    assert [c.arguments for c in stored_calls(agent, "k1")] == [arguments]


def test_a_block_blocks_a_tool_call_that_carries_it() -> None:
    sent.clear()
    pii = PIIHook("email", "block", apply_to_input=False, apply_to_output=True)
    call = mail_call({"to": EMAIL, "body": "hi"})
    agent, listener = agent_with(ScriptedChatModel([call, "Sent."]), pii)
    with pytest.raises(PIIDetectionError, match=r"1 email value\(s\) found in the output"):
        agent.call("mail Ada", {"thread_id": "b1"})
    assert sent == []  # the tool never ran
    assert not leaked(listener.events)
    assert not leaked(values(agent, "b1"))


def test_a_refusal_is_checked() -> None:
    pii = PIIHook("email", apply_to_output=True)
    refusal = AssistantMessage("", refusal=f"I won't write to {EMAIL}.")
    for thread in ("r-call", "r-stream"):
        agent, listener = agent_with(ScriptedChatModel([refusal]), pii)
        config = {"thread_id": thread}
        if thread == "r-call":
            answer = agent.call("mail Ada", config)
        else:
            list(agent.stream_events("mail Ada", config))
            answer = values(agent, thread)["messages"][-1]
        assert answer.refusal == "I won't write to [REDACTED_EMAIL]."
        assert not leaked(listener.events)


class FragmentModel:
    """Streams one tool call in fragments that cut the email and the card in two, as a
    provider streams a call's arguments; then answers."""

    def __init__(self) -> None:
        self.calls = 0

    def _answer(self) -> ChatResponse:
        self.calls += 1
        if self.calls > 1:
            return ChatResponse.of(AssistantMessage("Sent."))
        arguments = json.dumps({"to": EMAIL, "body": f"card {CARD}"})
        return ChatResponse.of(mail_call(json.loads(arguments)), "tool_calls")

    def call(self, prompt: Prompt) -> ChatResponse:
        return self._answer()

    async def acall(self, prompt: Prompt) -> ChatResponse:
        return self._answer()

    def _pieces(self) -> Iterator[ChatResponse]:
        answer = self._answer()
        message = answer.result.output
        if not message.tool_calls:
            yield answer
            return
        arguments = message.tool_calls[0].arguments
        cuts = [0, 12, 21, 40, 52, len(arguments)]  # inside the email, inside the card
        for n, (a, b) in enumerate(itertools.pairwise(cuts)):
            fragment = ToolCall(
                id="m1" if n == 0 else "",
                name="send_mail" if n == 0 else "",
                arguments=arguments[a:b],
                index=0,
            )
            yield ChatResponse.of(AssistantMessage("", tool_calls=(fragment,)))
        yield ChatResponse.of(AssistantMessage(""), "tool_calls")

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        yield from self._pieces()

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        for piece in self._pieces():
            yield piece


def test_streamed_tool_call_fragments_never_carry_it() -> None:
    sent.clear()
    both = {"apply_to_output": True}
    pii = [PIIHook("email", **both), PIIHook("credit_card", "mask", **both)]  # type: ignore[arg-type]
    agent, listener = agent_with(FragmentModel(), *pii)
    events = list(agent.stream_events("mail Ada", {"thread_id": "f1"}))
    deltas = [e.tool_call_delta for e in events if isinstance(e, ModelDelta) and e.tool_call_delta]
    assert deltas  # the call was streamed (once whole)
    pieces = "".join(d.arguments for d in deltas)
    assert not leaked(pieces, EMAIL, "ada@", "4111", CARD)
    assert json.loads(pieces) == {"to": "[REDACTED_EMAIL]", "body": "card **** **** **** 1111"}
    assert sent == [{"to": "[REDACTED_EMAIL]", "body": "card **** **** **** 1111", "copies": 0}]
    assert not leaked(listener.events)


# -- a sub-agent's input --------------------------------------------------------------------


def child_checkpoints(saver: MemorySaver) -> list[Any]:
    return [c for t in saver.thread_ids() if "|" in t for c in saver.list(t)]


def test_a_sub_agent_cleans_what_its_parent_hands_it_before_storing_it() -> None:
    pii = PIIHook("email")
    child = ReactAgent(name="child", model=ScriptedChatModel(["ok"]), hooks=[pii])
    graph = StateGraph(child.graph.key_strategies)
    graph.add_node("child", child.graph.subgraph_node("child"))
    graph.add_edge(START, "child").add_edge("child", END)
    saver = MemorySaver()
    listener = Events()
    parent = graph.compile(saver=saver, listeners=[listener])
    parent.invoke({"messages": [UserMessage(f"mail {EMAIL}")]}, {"thread_id": "p1"})
    stored = child_checkpoints(saver)
    assert stored and not leaked(stored)
    assert "[REDACTED_EMAIL]" in repr(stored)
    child_events = [e for e in listener.events if e.namespace]
    assert child_events and not leaked(child_events)


def test_an_agent_called_as_a_tool_gets_its_request_cleaned() -> None:
    child_pii = PIIHook("email")
    child_model = ScriptedChatModel(["done"])
    helper = ReactAgent(name="helper", model=child_model, hooks=[child_pii])
    ask = AssistantMessage(
        "",
        tool_calls=(
            ToolCall(id="h1", name="helper", arguments=json.dumps({"input": f"write {EMAIL}"})),
        ),
    )
    saver = MemorySaver()
    parent = ReactAgent(
        name="boss", model=ScriptedChatModel([ask, "All done."]), tools=[helper.as_tool()],
        saver=saver,
    )  # fmt: skip
    assert parent.call("go", {"thread_id": "t1"}).text == "All done."
    assert child_model.prompts[0].messages[-1].text == "write [REDACTED_EMAIL]"
    stored = child_checkpoints(saver)
    assert stored and not leaked(stored)

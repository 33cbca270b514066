"""Structured output: ``output_type`` with each strategy, alone or with ordinary tools; invalid
answers sent back and retried in the graph, then ``OutputValidationError``; validators of the
user's own; the answer in the state, in ``output_key`` and from ``call_structured``, stored
with the thread. The bugs peers' users reported each have a test here (named after them)."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
import logging
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from checkpoint import MemorySaver, SqliteSaver, default_registry, register_type
from graph_agent import (
    AgentBuildError,
    AssistantMessage,
    Command,
    GraphUsageError,
    KeyStrategy,
    NodeOutput,
    OpenAIChatModel,
    OutputRetry,
    OutputValidationError,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    ToolResponseMessage,
    UserMessage,
    interrupt,
    tool,
)
from graph_agent.agent import WITHDRAWN
from graph_agent.agent._unanswered import unanswered_calls
from hooks import JumpTo, ModelHook

from .conftest import Runner, tool_calls


class Invoice(BaseModel):
    """An invoice for one order."""

    number: str
    total: float
    note: str | None = None


class Refund(BaseModel):
    """A refund of an order."""

    order: str
    amount: float


@dataclasses.dataclass
class Shipment:
    carrier: str
    days: int


class Contact(TypedDict):
    name: str
    email: str


class Priced(BaseModel):
    """A price whose currency defaults to euros: OpenAI's strict mode cannot keep that."""

    amount: float
    currency: str = "EUR"
    tags: dict[str, str] = Field(default_factory=dict)


class Status(enum.Enum):
    OPEN = "open"
    PAID = "paid"


class Line(BaseModel):
    sku: str
    quantity: int


@dataclasses.dataclass
class Ledger:
    """A dataclass holding models and an enum: every class of it is stored."""

    status: Status
    lines: list[Line]


@register_type(name="tests.ledger-entry")
class Entry(BaseModel):
    """Registered by its author under a name of their own, which the agent keeps."""

    text: str


ORDERS = {"A-1": 12.5, "B-2": 30.0}


@tool
def lookup(order: str) -> str:
    """The total of an order."""
    return f"order {order}: {ORDERS[order]} EUR"


def final(arguments: dict[str, Any], name: str = "final_answer_invoice", text: str = "") -> Any:
    return tool_calls((name, arguments), text=text)


def offered(model: ScriptedChatModel, index: int = 0) -> list[str]:
    options = model.prompts[index].tool_options
    assert options is not None
    return [t.tool_definition.name for t in options.tool_callbacks]


def assert_thread_valid(messages: list[Any]) -> None:
    """Every assistant tool call is answered before the next user or assistant message."""
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            answered: set[str] = set()
            for later in messages[index + 1 :]:
                if not isinstance(later, ToolResponseMessage):
                    break
                answered.update(r.id for r in later.responses)
            assert {c.id for c in message.tool_calls} <= answered, message
    assert unanswered_calls(messages) == []


def call_structured(run: Runner, agent: ReactAgent, value: Any, config: Any = None) -> Any:
    if run.is_async:
        return asyncio.run(agent.acall_structured(value, config))
    return agent.call_structured(value, config)


# -- tools first, then the answer in the schema --------------------------------------------------


def test_tool_strategy_runs_tools_for_several_rounds_then_answers(run: Runner) -> None:
    model = ScriptedChatModel(
        [
            tool_calls(("lookup", {"order": "A-1"})),
            tool_calls(("lookup", {"order": "B-2"})),
            final({"number": "A-1+B-2", "total": 42.5}),
        ]
    )
    agent = ReactAgent(name="billing", model=model, tools=[lookup], output_type=Invoice)
    config = RunnableConfig(thread_id="rounds")
    reply = run.call(agent, "Bill A-1 and B-2 together", config)
    state = agent.get_state(config).values
    assert state["structured_response"] == Invoice(number="A-1+B-2", total=42.5)
    # call() still returns an AssistantMessage: the validated value as JSON
    assert json.loads(reply.text) == {"number": "A-1+B-2", "total": 42.5, "note": None}
    assert reply.metadata["structured_output"] == "Invoice"
    messages = state["messages"]
    assert [type(m).__name__ for m in messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",  # the final-answer call ...
        "ToolResponseMessage",  # ... answered ...
        "AssistantMessage",  # ... and the answer
    ]
    assert messages[-2].responses[0].response_data == "Final answer accepted."
    assert_thread_valid(messages)
    assert len(model.prompts) == 3


@pytest.mark.parametrize("strategy", ["tool", "native", "prompted"])
def test_peers_output_type_never_makes_the_model_skip_tools(run: Runner, strategy: str) -> None:
    """openai-agents-python #1012 / #1263, langchain #33863, langgraph #6343: with an output
    type the model jumped to the answer and never ran the tools. Here every request of every
    strategy still offers the ordinary tools, never forces ``tool_choice``, and a model that
    calls tools for two rounds gets their results before it answers in the schema."""
    answer: Any = (
        final({"number": "A-1", "total": 12.5})
        if strategy == "tool"
        else '{"number": "A-1", "total": 12.5, "note": null}'
    )
    model = ScriptedChatModel(
        [
            tool_calls(("lookup", {"order": "A-1"})),
            tool_calls(("lookup", {"order": "B-2"})),
            answer,
        ],
        supports_native_output=True,
    )
    agent = ReactAgent(
        name="billing", model=model, tools=[lookup], output_type=Invoice, output_strategy=strategy
    )
    assert call_structured(run, agent, "Bill A-1") == Invoice(number="A-1", total=12.5)
    for index, prompt in enumerate(model.prompts):
        assert "lookup" in offered(model, index)
        assert prompt.options is not None and prompt.options.tool_choice is None
    assert model.prompts[1].messages[-1].responses[0].response_data == "order A-1: 12.5 EUR"
    assert model.prompts[2].messages[-1].responses[0].response_data == "order B-2: 30.0 EUR"
    if strategy == "tool":
        assert offered(model) == ["lookup", "final_answer_invoice"]
    if strategy == "native":  # the format and the tools go together, in every request
        assert all(p.options and p.options.response_format for p in model.prompts)


def test_peers_a_model_that_forgets_the_final_answer_tool_is_told_so(run: Runner) -> None:
    """langchain #36349: a model that answered in text instead of calling the final-answer
    tool ended the run silently, without a structured response. Here the text goes back with
    what to do, and the run ends only with a valid answer (or an error, see below)."""
    model = ScriptedChatModel(
        ["The invoice is A-1, 12.5 EUR.", final({"number": "A-1", "total": 12.5})]
    )
    agent = ReactAgent(name="billing", model=model, output_type=Invoice)
    config = RunnableConfig(thread_id="forgot")
    assert call_structured(run, agent, "Bill A-1", config) == Invoice(number="A-1", total=12.5)
    feedback = model.prompts[1].messages[-1]
    assert isinstance(feedback, UserMessage) and feedback.metadata == {"output_feedback": True}
    assert "final_answer_invoice" in feedback.text and "not written as text" in feedback.text
    assert_thread_valid(agent.get_state(config).values["messages"])


def test_json_text_that_validates_is_taken_under_the_tool_strategy(run: Runner) -> None:
    model = ScriptedChatModel(['```json\n{"number": "A-1", "total": 12.5}\n```'])
    agent = ReactAgent(name="billing", model=model, output_type=Invoice)
    assert call_structured(run, agent, "Bill A-1") == Invoice(number="A-1", total=12.5)
    assert len(model.prompts) == 1


# -- retries ----------------------------------------------------------------------------------------


def test_invalid_arguments_are_sent_back_then_accepted(run: Runner) -> None:
    model = ScriptedChatModel(
        [final({"number": "A-1", "total": "twelve"}), final({"number": "A-1", "total": 12.5})]
    )
    agent = ReactAgent(name="billing", model=model, output_type=Invoice, output_key="invoice")
    config = RunnableConfig(thread_id="retry")
    run.call(agent, "Bill A-1", config)
    rejected = model.prompts[1].messages[-1]
    assert isinstance(rejected, ToolResponseMessage) and rejected.metadata["output_feedback"]
    assert "- total: Input should be a valid number" in rejected.responses[0].response_data
    assert "Call final_answer_invoice again" in rejected.responses[0].response_data
    state = agent.get_state(config).values
    assert state["invoice"] == state["structured_response"] == Invoice(number="A-1", total=12.5)
    assert_thread_valid(state["messages"])
    # each attempt is a model node run of its own, checkpointed
    nodes = [s.metadata.get("nodes") for s in agent.get_state_history(config)]
    assert [list(n) for n in reversed(nodes) if n] == [["model"], ["model"]]


def test_spent_retries_raise_with_the_last_raw_output_and_keep_the_thread_valid(
    run: Runner,
) -> None:
    bad = [final({"number": "A-1", "total": f"x{i}"}) for i in range(3)]
    model = ScriptedChatModel([*bad, final({"number": "A-1", "total": 1.0})])
    agent = ReactAgent(name="billing", model=model, output_type=Invoice)
    config = RunnableConfig(thread_id="spent")
    with pytest.raises(OutputValidationError) as caught:
        run.call(agent, "Bill A-1", config)
    error = caught.value
    assert len(model.prompts) == 3  # one attempt and output_retries=2 more
    assert error.raw_output == '{"number": "A-1", "total": "x2"}'
    assert error.errors[0]["loc"] == ["total"] and error.agent == "billing"
    assert "agent 'billing': no valid Invoice after 3 attempt(s)" in str(error)
    snapshot = agent.get_state(config)
    assert snapshot.next == ("output_failed",)
    assert "output_attempts" not in snapshot.values and "output_failure" not in snapshot.values
    assert_thread_valid(snapshot.values["messages"])  # the last call is answered too
    # the next turn starts afresh, on a thread the provider accepts
    assert run.call(agent, "Try again", config).metadata["structured_output"] == "Invoice"
    assert_thread_valid(model.prompts[3].messages)


def test_retries_are_counted_per_run(run: Runner) -> None:
    bad, good = final({"number": "A"}), final({"number": "A", "total": 1})
    model = ScriptedChatModel([bad, good, bad, good])
    agent = ReactAgent(name="a", model=model, output_type=Invoice, output_retries=1)
    config = RunnableConfig(thread_id="per-run")
    assert call_structured(run, agent, "first", config) == Invoice(number="A", total=1)
    assert call_structured(run, agent, "second", config) == Invoice(number="A", total=1)
    assert len(model.prompts) == 4


def test_output_retries_zero_fails_at_the_first_invalid_answer(run: Runner) -> None:
    model = ScriptedChatModel(["no JSON here"], supports_native_output=True)
    agent = ReactAgent(name="a", model=model, output_type=Invoice, output_retries=0)
    assert agent.output_spec is not None and agent.output_spec.strategy == "native"
    with pytest.raises(OutputValidationError) as caught:
        run.call(agent, "Bill A-1")
    assert caught.value.raw_output == "no JSON here"
    assert caught.value.errors[0]["type"] == "json_invalid"


def test_a_validator_sends_its_error_back_and_may_change_the_value(run: Runner) -> None:
    seen: list[Invoice] = []

    def positive(invoice: Invoice) -> Invoice:
        seen.append(invoice)
        if invoice.total <= 0:
            raise OutputRetry("total must be positive: recompute it from the orders")
        return invoice.model_copy(update={"note": "checked"})

    model = ScriptedChatModel(
        [final({"number": "A-1", "total": -1}), final({"number": "A-1", "total": 12.5})]
    )
    agent = (
        ReactAgent.builder()
        .name("billing")
        .model(model)
        .output_type(Invoice, strategy="tool")
        .output_validator(positive)
        .build()
    )
    config = RunnableConfig(thread_id="validated")
    result = call_structured(run, agent, "Bill A-1", config)
    assert result == Invoice(number="A-1", total=12.5, note="checked")
    sent_back = model.prompts[1].messages[-1].responses[0].response_data
    assert "total must be positive: recompute it from the orders" in sent_back
    assert [i.total for i in seen] == [-1, 12.5]


def test_an_async_validator_runs_in_async_runs_and_is_refused_in_sync_ones() -> None:
    async def check(value: Invoice) -> None:
        await asyncio.sleep(0)
        if value.total > 100:
            raise OutputRetry("too much")

    def agent() -> ReactAgent:
        model = ScriptedChatModel(
            [final({"number": "A", "total": 500}), final({"number": "A", "total": 5})]
        )
        return ReactAgent(name="a", model=model, output_type=Invoice, output_validators=[check])

    assert asyncio.run(agent().acall_structured("bill")) == Invoice(number="A", total=5)
    with pytest.raises(GraphUsageError, match="output validator check is async"):
        agent().call_structured("bill")


def test_any_other_validator_error_propagates(run: Runner) -> None:
    def broken(value: Invoice) -> Invoice:
        raise KeyError("database down")

    model = ScriptedChatModel([final({"number": "A", "total": 1})])
    agent = ReactAgent(name="a", model=model, output_type=Invoice, output_validators=[broken])
    with pytest.raises(KeyError, match="database down"):
        run.call(agent, "bill")


# -- types and unions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output_type", "arguments", "expected"),
    [
        (Invoice, {"number": "A", "total": 2}, Invoice(number="A", total=2.0)),
        (Shipment, {"carrier": "DHL", "days": "3"}, Shipment("DHL", 3)),
        (
            Contact,
            {"name": "Ada", "email": "ada@example.com"},
            {"name": "Ada", "email": "ada@example.com"},
        ),
    ],
    ids=["pydantic", "dataclass", "TypedDict"],
)
def test_pydantic_models_dataclasses_and_typeddicts(
    run: Runner, output_type: Any, arguments: dict[str, Any], expected: Any
) -> None:
    name = f"final_answer_{output_type.__name__.lower()}"
    model = ScriptedChatModel([final(arguments, name=name)])
    agent = ReactAgent(name="a", model=model, output_type=output_type)
    value = call_structured(run, agent, "go")
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    "union",
    [Invoice | Refund, typing.Union[Invoice, Refund]],  # noqa: UP007 (both spellings)
    ids=["|", "Union"],
)
def test_a_union_offers_one_tool_per_variant(run: Runner, union: Any) -> None:
    model = ScriptedChatModel([final({"order": "A-1", "amount": 3}, name="final_answer_refund")])
    agent = ReactAgent(name="desk", model=model, tools=[lookup], output_type=union)
    assert call_structured(run, agent, "Refund 3 EUR on A-1") == Refund(order="A-1", amount=3)
    assert offered(model) == ["lookup", "final_answer_invoice", "final_answer_refund"]
    options = model.prompts[0].tool_options
    assert options is not None
    schemas = {t.tool_definition.name: t.tool_definition.schema for t in options.tool_callbacks}
    assert schemas["final_answer_refund"]["required"] == ["order", "amount"]


def test_a_union_under_native_is_a_result_wrapper(run: Runner) -> None:
    model = ScriptedChatModel(
        ['{"result": {"order": "A-1", "amount": 3}}'], supports_native_output=True
    )
    agent = ReactAgent(name="desk", model=model, output_type=Invoice | Refund)
    assert call_structured(run, agent, "Refund A-1") == Refund(order="A-1", amount=3)
    options = model.prompts[0].options
    assert options is not None and options.response_format is not None
    schema = options.response_format["json_schema"]["schema"]
    assert schema["required"] == ["result"] and len(schema["properties"]["result"]["anyOf"]) == 2
    assert options.response_format["json_schema"]["name"] == "Invoice_or_Refund"


def test_first_valid_of_several_final_answer_calls_wins(run: Runner) -> None:
    both = tool_calls(
        ("final_answer_invoice", {"number": "A"}),  # no total: invalid
        ("final_answer_refund", {"order": "A", "amount": 1}),
    )
    agent = ReactAgent(name="desk", model=ScriptedChatModel([both]), output_type=Invoice | Refund)
    config = RunnableConfig(thread_id="two")
    assert call_structured(run, agent, "?", config) == Refund(order="A", amount=1)
    answers = agent.get_state(config).values["messages"][-2].responses
    assert "- total: Field required" in answers[0].response_data
    assert answers[1].response_data == "Final answer accepted."


# -- the other strategies -----------------------------------------------------------------------


def test_native_sends_a_strict_schema_and_sends_invalid_text_back(run: Runner) -> None:
    model = ScriptedChatModel(
        ['{"number": "A-1"}', '{"number": "A-1", "total": 12.5, "note": null}'],
        supports_native_output=True,
    )
    agent = ReactAgent(name="billing", model=model, output_type=Invoice, output_key="invoice")
    spec = agent.output_spec
    assert spec is not None and (spec.strategy, spec.strict, spec.strict_reason) == (
        "native",
        True,
        None,
    )
    config = RunnableConfig(thread_id="native")
    reply = run.call(agent, "Bill A-1", config)
    assert reply.text == '{"number": "A-1", "total": 12.5, "note": null}'  # the model's own
    assert reply.metadata["structured_output"] == "Invoice"
    feedback = model.prompts[1].messages[-1]
    assert isinstance(feedback, UserMessage) and "- total: Field required" in feedback.text
    options = model.prompts[0].options
    assert options is not None and options.response_format is not None
    sent = options.response_format["json_schema"]
    assert sent["strict"] is True and sent["name"] == "Invoice"
    assert sent["schema"]["required"] == ["number", "total", "note"]  # note: nullable, None
    assert sent["schema"]["additionalProperties"] is False
    assert agent.get_state(config).values["invoice"] == Invoice(number="A-1", total=12.5)


def test_native_says_why_a_schema_is_not_strict(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="graph_agent.agent"):
        agent = ReactAgent(
            name="pricing",
            model=ScriptedChatModel([], supports_native_output=True),
            output_type=Priced,
        )
    spec = agent.output_spec
    assert spec is not None and spec.strict is False and spec.strict_reason is not None
    assert "Priced.currency is optional (default 'EUR')" in spec.strict_reason
    assert "Priced.tags" in spec.strict_reason
    assert spec.response_format is not None
    assert spec.response_format["json_schema"]["strict"] is False
    assert "agent 'pricing': output schema sent with strict: false" in caplog.text


def test_a_refusal_under_native_fails_at_once(run: Runner) -> None:
    refusal = AssistantMessage("", refusal="I can't help with that.")
    model = ScriptedChatModel([refusal, '{"number": "A", "total": 1}'], supports_native_output=True)
    agent = ReactAgent(name="billing", model=model, output_type=Invoice)
    config = RunnableConfig(thread_id="refused")
    with pytest.raises(OutputValidationError, match="the model refused") as caught:
        run.call(agent, "Bill the secret order", config)
    assert caught.value.refusal == caught.value.raw_output == "I can't help with that."
    assert len(model.prompts) == 1  # not retried
    assert agent.get_state(config).values["messages"][-1].refusal == "I can't help with that."


def test_prompted_adds_format_instructions_and_parses_the_text(run: Runner) -> None:
    model = ScriptedChatModel(['Sure:\n```json\n{"number": "A-1", "total": 12.5}\n```'])
    agent = ReactAgent(
        name="billing",
        model=model,
        output_type=Invoice,
        output_strategy="prompted",
        system_prompt="You bill orders.",
    )
    assert call_structured(run, agent, "Bill A-1") == Invoice(number="A-1", total=12.5)
    system = model.prompts[0].messages[0].text
    assert system.startswith("You bill orders.\n\nGive your final answer as one JSON object")
    assert '"title": "Invoice"' in system
    options = model.prompts[0].options
    assert options is not None and options.response_format is None


def test_auto_is_native_when_the_model_declares_it_else_tool() -> None:
    def strategy(model: Any) -> str:
        spec = ReactAgent(name="a", model=model, output_type=Invoice).output_spec
        assert spec is not None and spec.requested == "auto"
        return spec.strategy

    assert strategy(ScriptedChatModel([])) == "tool"
    assert strategy(ScriptedChatModel([], supports_native_output=True)) == "native"
    assert strategy(OpenAIChatModel("gpt-4o-mini", api_key="k")) == "native"
    assert strategy(OpenAIChatModel("m", api_key="k", supports_native_output=False)) == "tool"


# -- mixed calls, return_direct, streams ----------------------------------------------------------


def test_a_final_answer_beside_other_calls_is_asked_again_alone(run: Runner) -> None:
    model = ScriptedChatModel(
        [
            tool_calls(
                ("lookup", {"order": "A-1"}), ("final_answer_invoice", {"number": "A", "total": 0})
            ),
            final({"number": "A-1", "total": 12.5}),
        ]
    )
    agent = ReactAgent(name="billing", model=model, tools=[lookup], output_type=Invoice)
    config = RunnableConfig(thread_id="mixed")
    assert call_structured(run, agent, "Bill A-1", config) == Invoice(number="A-1", total=12.5)
    answers = model.prompts[1].messages[-1]
    assert isinstance(answers, ToolResponseMessage)
    assert [r.id for r in answers.responses] == ["c1", "c2"]  # in the calls' order
    assert answers.responses[0].response_data == "order A-1: 12.5 EUR"
    assert "call final_answer_invoice again, by itself" in answers.responses[1].response_data
    assert_thread_valid(agent.get_state(config).values["messages"])


def test_a_return_direct_tool_goes_back_to_the_model_for_the_schema(run: Runner) -> None:
    @tool(return_direct=True)
    def status(order: str) -> str:
        """The status of an order."""
        return f"{order} shipped"

    model = ScriptedChatModel(
        [tool_calls(("status", {"order": "A-1"})), final({"number": "A-1", "total": 1})]
    )
    agent = ReactAgent(name="a", model=model, tools=[status], output_type=Invoice)
    assert call_structured(run, agent, "Status of A-1?") == Invoice(number="A-1", total=1)
    assert len(model.prompts) == 2


def test_stream_messages_yields_the_json_answer_never_the_tool_arguments(run: Runner) -> None:
    model = ScriptedChatModel(
        [tool_calls(("lookup", {"order": "A-1"})), final({"number": "A-1", "total": 12.5})]
    )
    agent = ReactAgent(name="billing", model=model, tools=[lookup], output_type=Invoice)
    pieces = run.stream_messages(agent, "Bill A-1")
    assert pieces == ['{"number":"A-1","total":12.5,"note":null}']


def test_stream_messages_withdraws_a_rejected_native_answer(run: Runner) -> None:
    model = ScriptedChatModel(
        ["It is A-1.", '{"number": "A-1", "total": 12.5}'], supports_native_output=True
    )
    agent = ReactAgent(name="billing", model=model, output_type=Invoice)
    text = "".join(run.stream_messages(agent, "Bill A-1"))
    assert text == f'It is A-1.{WITHDRAWN}{{"number": "A-1", "total": 12.5}}'


# -- the state, the thread, call_structured ------------------------------------------------------


def test_peers_structured_response_is_one_replace_write_per_run(run: Runner) -> None:
    """langchain-ai/deepagents #527: parallel sub-agents each wrote ``structured_response``
    and the parent's merge failed. Here it is a plain REPLACE key that only the model node
    writes, once per run (not on rejected attempts), and structured agents run side by side
    from one parent's parallel tool calls."""
    model = ScriptedChatModel(
        [
            tool_calls(("lookup", {"order": "A-1"})),
            "plain text",
            final({"number": "A-1", "total": 12.5}),
        ]
    )
    agent = ReactAgent(name="billing", model=model, tools=[lookup], output_type=Invoice)
    outputs: list[NodeOutput] = run.stream(agent, "Bill A-1")
    writes = [
        o.node for o in outputs if isinstance(o.update, dict) and "structured_response" in o.update
    ]
    assert writes == ["model"]
    assert agent.graph.key_strategies["structured_response"] is KeyStrategy.REPLACE

    def billing_agent(order: str) -> ReactAgent:
        script = [final({"number": order, "total": ORDERS[order]})]
        return ReactAgent(
            name=f"bill-{order}", model=ScriptedChatModel(script), output_type=Invoice
        )

    agents = {order: billing_agent(order) for order in ORDERS}

    @tool
    def bill(order: str) -> str:
        """Bill one order (a sub-agent with its own output type)."""
        invoice: Invoice = agents[order].call_structured(f"Bill {order}")
        return invoice.model_dump_json()

    parent_model = ScriptedChatModel(
        [
            tool_calls(("bill", {"order": "A-1"}), ("bill", {"order": "B-2"})),
            final({"number": "A-1,B-2", "total": 42.5}),
        ]
    )
    parent = ReactAgent(name="desk", model=parent_model, tools=[bill], output_type=Invoice)
    assert call_structured(run, parent, "Bill both") == Invoice(number="A-1,B-2", total=42.5)
    results = parent_model.prompts[1].messages[-1].responses
    assert [json.loads(r.response_data)["total"] for r in results] == [12.5, 30.0]


def test_call_structured_needs_an_output_type_and_a_finished_run(run: Runner) -> None:
    plain = ReactAgent(name="plain", model=ScriptedChatModel(["hi"]))
    with pytest.raises(GraphUsageError, match="agent 'plain' has no output_type"):
        call_structured(run, plain, "hi")

    class Ask(ModelHook):
        def before_model(self, state: Any, config: Any) -> None:
            interrupt("may I?")

    model = ScriptedChatModel([final({"number": "A", "total": 1})])
    agent = ReactAgent(name="asks", model=model, output_type=Invoice, hooks=[Ask()])
    config = RunnableConfig(thread_id="paused")
    with pytest.raises(GraphUsageError, match="paused on thread 'paused' before answering"):
        call_structured(run, agent, "bill", config)
    assert call_structured(run, agent, Command(resume="yes"), config) == Invoice(
        number="A", total=1
    )


def test_call_structured_refuses_a_run_a_hook_ended_without_the_answer(run: Runner) -> None:
    class Closed(ModelHook):
        can_jump_to = (JumpTo.END,)

        def before_model(self, state: Any, config: Any) -> dict[str, Any]:
            return {"messages": [AssistantMessage("We are closed.")], "jump_to": JumpTo.END}

    agent = ReactAgent(
        name="shop", model=ScriptedChatModel([]), output_type=Invoice, hooks=[Closed()]
    )
    with pytest.raises(GraphUsageError, match="ended without a structured answer"):
        call_structured(run, agent, "bill", {"thread_id": "closed"})


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
@pytest.mark.parametrize(
    ("output_type", "arguments"),
    [
        (Invoice, {"number": "A", "total": 2.5, "note": "paid"}),
        (Shipment, {"carrier": "DHL", "days": 3}),
        (Contact, {"name": "Ada", "email": "ada@example.com"}),
        (Ledger, {"status": "paid", "lines": [{"sku": "s", "quantity": 2}]}),
        (Entry, {"text": "kept"}),
    ],
    ids=["pydantic", "dataclass", "TypedDict", "nested", "registered"],
)
def test_the_answer_round_trips_with_the_thread(
    tmp_path: Path, saver_kind: str, output_type: Any, arguments: dict[str, Any]
) -> None:
    name = f"final_answer_{output_type.__name__.lower()}"
    path = tmp_path / "threads.sqlite"
    assert default_registry.name_of(Entry) == "tests.ledger-entry"
    saver = MemorySaver() if saver_kind == "memory" else SqliteSaver(path)
    try:
        agent = ReactAgent(
            name="a",
            model=ScriptedChatModel([final(arguments, name=name)]),
            output_type=output_type,
            saver=saver,
        )
        value = agent.call_structured("go", {"thread_id": "kept"})
        if saver_kind == "sqlite":  # another saver on the same file: read back from disk
            saver.close()
            saver = SqliteSaver(path)
            agent = ReactAgent(
                name="a", model=ScriptedChatModel([]), output_type=output_type, saver=saver
            )
        snapshot = agent.get_state({"thread_id": "kept"})
        assert snapshot is not None
        stored = snapshot.values["structured_response"]
        assert stored == value and type(stored) is type(value)
        assert default_registry.name_of(Entry) == "tests.ledger-entry"  # not registered again
    finally:
        if isinstance(saver, SqliteSaver):
            saver.close()


# -- build errors --------------------------------------------------------------------------------


def test_bad_options_fail_at_build_listing_every_problem() -> None:
    @tool(name="final_answer_invoice")
    def clash() -> str:
        """A tool with the final-answer tool's name."""
        return ""

    def problems(**options: Any) -> list[str]:
        with pytest.raises(AgentBuildError) as caught:
            ReactAgent(name="a", model=ScriptedChatModel([]), **options)
        return caught.value.problems

    assert problems(output_type=int, output_strategy="xml", output_retries=-1) == [
        "output_type int is not supported: give a pydantic model, a dataclass, a TypedDict, "
        "or a union of them (Invoice | Refund)",
        "output_strategy 'xml' is not one of 'auto', 'tool', 'native', 'prompted'",
        "output_retries must be an int of 0 or more, got -1",
    ]
    assert "output_type list is not supported" in problems(output_type=list[Invoice])[0]
    assert "output_type NoneType is not supported" in problems(output_type=Invoice | None)[0]
    native = problems(output_type=Invoice, output_strategy="native")
    assert native == [
        "output_strategy 'native' needs a model that declares supports_native_output "
        "(ScriptedChatModel does not); use 'tool' or 'prompted', or 'auto' to pick "
        "(OpenAIChatModel declares it unless supports_native_output=False)"
    ]
    assert problems(output_validators=[print]) == [
        "output_validators need an output_type: add .output_type(T)"
    ]
    assert problems(output_type=Invoice, output_validators=["no"]) == [
        "output_validators: 'no' is not callable (value) -> value"
    ]
    assert (
        "final-answer tool final_answer_invoice has the name"
        in problems(output_type=Invoice, tools=[clash])[0]
    )

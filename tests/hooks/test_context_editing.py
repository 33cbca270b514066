"""ContextEditingInterceptor: the model is sent a prompt within the token budget, the oldest
tool results cleared to placeholders; the thread keeps every result."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from graph_agent import (
    AssistantMessage,
    ReactAgent,
    ScriptedChatModel,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.messages import Message
from graph_agent.models import ChatResponse, Usage
from graph_agent.models._openai_wire import message_to_wire
from hooks import ContextEditingInterceptor
from hooks.builtin.context_editing import CONTEXT_EDITING, prompt_tokens

BIG = "x" * 400  # about 100 tokens by the estimate


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"{key}:{BIG}"


@tool
def pinned(key: str) -> str:
    """A result that must stay."""
    return f"pinned {key}:{BIG}"


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def call(agent: ReactAgent, text: str, thread: str, mode: str) -> AssistantMessage:
    config = {"thread_id": thread}
    if mode == "sync":
        return agent.call(text, config)
    return asyncio.run(agent.acall(text, config))


def asks(call_id: str, name: str = "lookup", key: str | None = None) -> AssistantMessage:
    arguments = json.dumps({"key": key or call_id})
    return AssistantMessage("", tool_calls=(ToolCall(id=call_id, name=name, arguments=arguments),))


def results(messages: list[Message] | tuple[Message, ...]) -> dict[str, str]:
    """Every tool result by call id."""
    return {
        r.id: r.response_data
        for m in messages
        if isinstance(m, ToolResponseMessage)
        for r in m.responses
    }


def openai_pairs_ok(messages: list[Message]) -> None:
    """OpenAI's rule on the wire: every tool message answers a call of the assistant message
    before it, and every call is answered before the next non-tool message."""
    wire = [item for m in messages for item in message_to_wire(m)]
    open_calls: set[str] = set()
    for item in wire:
        if item["role"] == "tool":
            assert item["tool_call_id"] in open_calls, f"tool message without its call: {item}"
            open_calls.discard(item["tool_call_id"])
            continue
        assert not open_calls, f"calls not answered before a {item['role']} message"
        open_calls = {c["id"] for c in item.get("tool_calls") or ()}
    assert not open_calls


def run_rounds(
    interceptor: ContextEditingInterceptor, mode: str, calls: list[AssistantMessage]
) -> tuple[ScriptedChatModel, ReactAgent]:
    model = ScriptedChatModel([*calls, "done"])
    agent = ReactAgent(
        name="edited", model=model, tools=[lookup, pinned], interceptors=[interceptor]
    )
    assert call(agent, "Look things up.", "t1", mode).text == "done"
    return model, agent


def test_the_model_is_sent_the_oldest_results_cleared_and_the_thread_keeps_them(
    mode: str,
) -> None:
    interceptor = ContextEditingInterceptor(trigger_tokens=250, keep_last=1)
    model, agent = run_rounds(interceptor, mode, [asks(f"c{n}") for n in range(1, 5)])

    sent = list(model.prompts[-1].messages)
    seen = results(sent)
    assert seen["c4"] == f"c4:{BIG}"  # the last one is kept
    cleared = [i for i, text in seen.items() if text != f"{i}:{BIG}"]
    assert cleared and "c1" in cleared and "c4" not in cleared
    assert seen["c1"] == (
        "[cleared to save context: the result of lookup (403 characters); "
        "call the tool again if it is needed]"
    )
    assert prompt_tokens(sent)[0] <= 250
    openai_pairs_ok(sent)
    # every call is still sent, with its arguments
    sent_calls = [c.id for m in sent if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert sent_calls == ["c1", "c2", "c3", "c4"]

    stored = agent.get_state({"thread_id": "t1"}).values["messages"]
    assert results(stored) == {f"c{n}": f"c{n}:{BIG}" for n in range(1, 5)}
    answer = stored[-1]
    assert answer.metadata[CONTEXT_EDITING]["cleared"] == len(cleared)
    assert answer.metadata[CONTEXT_EDITING]["cleared_tokens"] > 0


def test_under_the_budget_nothing_changes(mode: str) -> None:
    interceptor = ContextEditingInterceptor(trigger_tokens=10_000, keep_last=0)
    model, agent = run_rounds(interceptor, mode, [asks("c1"), asks("c2")])
    assert results(model.prompts[-1].messages) == {"c1": f"c1:{BIG}", "c2": f"c2:{BIG}"}
    answer = agent.get_state({"thread_id": "t1"}).values["messages"][-1]
    assert CONTEXT_EDITING not in answer.metadata


def test_the_last_n_and_excluded_tools_are_never_cleared(mode: str) -> None:
    interceptor = ContextEditingInterceptor(trigger_tokens=1, keep_last=2, exclude_tools=["pinned"])
    calls = [asks("p1", "pinned"), asks("c1"), asks("c2"), asks("c3"), asks("c4")]
    model, _ = run_rounds(interceptor, mode, calls)
    seen = results(model.prompts[-1].messages)
    assert seen["p1"] == f"pinned p1:{BIG}"
    assert seen["c3"] == f"c3:{BIG}" and seen["c4"] == f"c4:{BIG}"
    assert seen["c1"].startswith("[cleared") and seen["c2"].startswith("[cleared")


def test_clear_at_least_clears_more_than_the_budget_needs() -> None:
    messages: list[Message] = [UserMessage("go")]
    for n in range(1, 5):
        messages += [asks(f"c{n}"), tool_batch(f"c{n}")]
    total, reported = prompt_tokens(messages)
    assert not reported
    just = ContextEditingInterceptor(trigger_tokens=total - 10, keep_last=0).edit(messages)
    more = ContextEditingInterceptor(
        trigger_tokens=total - 10, keep_last=0, clear_at_least=200
    ).edit(messages)
    assert just is not None and more is not None
    assert just.cleared == 1 and more.cleared == 3
    assert more.cleared_tokens >= 200


def tool_batch(*ids: str, name: str = "lookup") -> ToolResponseMessage:
    return ToolResponseMessage(
        responses=tuple(ToolResponse(id=i, name=name, response_data=f"{i}:{BIG}") for i in ids)
    )


def test_a_batch_of_calls_keeps_every_answer_with_its_call() -> None:
    two = AssistantMessage(
        "",
        tool_calls=(
            ToolCall(id="a", name="lookup", arguments='{"key": "a"}'),
            ToolCall(id="b", name="lookup", arguments='{"key": "b"}'),
        ),
    )
    messages: list[Message] = [
        UserMessage("go"),
        two,
        tool_batch("a", "b"),
        asks("c"),
        tool_batch("c"),
    ]
    done = ContextEditingInterceptor(trigger_tokens=1, keep_last=1).edit(messages)
    assert done is not None and done.cleared == 2
    openai_pairs_ok(done.messages)
    batch = done.messages[2]
    assert isinstance(batch, ToolResponseMessage)
    assert [(r.id, r.name) for r in batch.responses] == [("a", "lookup"), ("b", "lookup")]
    assert messages[2] == tool_batch("a", "b")  # the input is not changed


def test_clear_tool_inputs_sends_the_cleared_calls_without_arguments() -> None:
    messages: list[Message] = [UserMessage("go"), asks("c1", key="k" * 200), tool_batch("c1")]
    messages += [asks("c2"), tool_batch("c2")]
    done = ContextEditingInterceptor(trigger_tokens=1, keep_last=1, clear_tool_inputs=True).edit(
        messages
    )
    assert done is not None
    first, last = done.messages[1], done.messages[3]
    assert isinstance(first, AssistantMessage) and isinstance(last, AssistantMessage)
    assert first.tool_calls[0].arguments == "{}" and first.tool_calls[0].id == "c1"
    assert last.tool_calls[0].arguments == '{"key": "c2"}'
    plain = ContextEditingInterceptor(trigger_tokens=1, keep_last=1).edit(messages)
    assert plain is not None and done.cleared_tokens >= plain.cleared_tokens + 50


def test_a_placeholder_template_or_function_says_what_was_there() -> None:
    messages: list[Message] = [UserMessage("go"), asks("c1"), tool_batch("c1")]
    done = ContextEditingInterceptor(
        trigger_tokens=1, keep_last=0, placeholder="<{name} #{id}: {chars} chars gone>"
    ).edit(messages)
    assert done is not None and results(done.messages) == {"c1": "<lookup #c1: 403 chars gone>"}
    done = ContextEditingInterceptor(
        trigger_tokens=1, keep_last=0, placeholder=lambda r: f"ask {r.name} again"
    ).edit(messages)
    assert done is not None and results(done.messages) == {"c1": "ask lookup again"}


def answer(message: AssistantMessage | str, prompt: int, completion: int = 5) -> ChatResponse:
    if isinstance(message, str):
        message = AssistantMessage(message)
    return ChatResponse.of(message, usage=Usage(prompt, completion, prompt + completion))


def test_the_budget_uses_the_usage_the_provider_reported(mode: str) -> None:
    # The messages are small by the estimate (~100 tokens each); the provider says the
    # prompt (tool schemas, system prompt...) is far bigger: the reported size decides.
    interceptor = ContextEditingInterceptor(trigger_tokens=2_000, keep_last=1)
    model, _ = run_rounds(
        interceptor,
        mode,
        [answer(asks("c1"), 1_000), answer(asks("c2"), 2_500)],  # type: ignore[list-item]
    )
    assert results(model.prompts[1].messages)["c1"] == f"c1:{BIG}"  # 1_000 + c1: within
    assert results(model.prompts[2].messages)["c1"].startswith("[cleared")  # 2_500: over

    # a small reported size keeps everything, though the estimate alone is over the budget
    small = ContextEditingInterceptor(trigger_tokens=150, keep_last=0)
    model, _ = run_rounds(small, mode, [answer(asks("c1"), 10), answer(asks("c2"), 20)])  # type: ignore[list-item]
    assert results(model.prompts[2].messages) == {"c1": f"c1:{BIG}", "c2": f"c2:{BIG}"}


def test_the_count_adds_back_what_the_last_edit_cleared() -> None:
    edited = AssistantMessage(
        "",
        metadata={
            "usage": {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320},
            CONTEXT_EDITING: {"cleared": 4, "cleared_tokens": 400},
        },
    )
    assert prompt_tokens([UserMessage("go"), edited]) == (720, True)
    no_usage = AssistantMessage("hello")
    assert prompt_tokens([UserMessage("go"), no_usage]) == (2, False)  # 7 characters


def test_a_thread_goes_on_after_an_edited_run(mode: str) -> None:
    interceptor = ContextEditingInterceptor(trigger_tokens=150, keep_last=0)
    model = ScriptedChatModel([asks("c1"), asks("c2"), "first", "second"])
    agent = ReactAgent(name="edited", model=model, tools=[lookup], interceptors=[interceptor])
    call(agent, "one", "t2", mode)
    assert call(agent, "two", "t2", mode).text == "second"
    stored = agent.get_state({"thread_id": "t2"}).values["messages"]
    assert results(stored) == {"c1": f"c1:{BIG}", "c2": f"c2:{BIG}"}
    sent = model.prompts[-1].messages
    assert results(sent)["c1"].startswith("[cleared")
    assert sent[-1] == UserMessage("two")


@pytest.mark.parametrize(
    ("options", "error", "says"),
    [
        ({"trigger_tokens": 0}, ValueError, "trigger_tokens must be a positive int"),
        ({"trigger_tokens": True}, ValueError, "trigger_tokens must be a positive int"),
        ({"keep_last": -1}, ValueError, "keep_last must be an int >= 0"),
        ({"clear_at_least": "5"}, ValueError, "clear_at_least must be an int >= 0"),
        ({"exclude_tools": "pinned"}, TypeError, r"exclude_tools=\['read_file'\]"),
        ({"exclude_tools": [pinned]}, TypeError, r"exclude_tools=\[my_tool.name\]"),
        ({"placeholder": "{tool}"}, ValueError, r"uses \{tool\}; it may use \{name\}, \{id\}"),
        ({"placeholder": "{name"}, ValueError, "not a valid str.format template"),
        ({"placeholder": 3}, TypeError, "placeholder must be a str template"),
        ({"clear_tool_inputs": "yes"}, TypeError, "clear_tool_inputs must be True or False"),
        ({"read_back": 1}, TypeError, "read_back must be True or False"),
        ({"token_counter": 4}, TypeError, "token_counter must be a function"),
    ],
)
def test_bad_options_say_what_to_fix(options: dict[str, Any], error: type, says: str) -> None:
    with pytest.raises(error, match=says):
        ContextEditingInterceptor(**options)


def test_a_streamed_run_is_edited_and_recorded_alike() -> None:
    interceptor = ContextEditingInterceptor(trigger_tokens=150, keep_last=1)
    model = ScriptedChatModel([asks("c1"), asks("c2"), asks("c3"), "done"])
    agent = ReactAgent(name="streamed", model=model, tools=[lookup], interceptors=[interceptor])
    assert "".join(agent.stream_messages("go", {"thread_id": "s1"})) == "done"
    assert results(model.prompts[-1].messages)["c1"].startswith("[cleared")
    stored = agent.get_state({"thread_id": "s1"}).values["messages"]
    assert len(results(stored)) == 3 and stored[-1].metadata[CONTEXT_EDITING]["cleared"] >= 1


def test_with_read_back_the_model_reads_a_cleared_result_back(mode: str) -> None:
    interceptor = ContextEditingInterceptor(trigger_tokens=150, keep_last=1, read_back=True)
    read = AssistantMessage(
        "",
        tool_calls=(ToolCall(id="r1", name="read_cleared_result", arguments='{"call_id": "c1"}'),),
    )
    model = ScriptedChatModel([asks("c1"), asks("c2"), read, "done"])
    agent = ReactAgent(name="reader", model=model, tools=[lookup], interceptors=[interceptor])
    assert call(agent, "go", "rb1", mode).text == "done"
    offered = [t.tool_definition.name for t in model.prompts[0].tool_options.tool_callbacks]
    assert offered == ["lookup", "read_cleared_result"]  # offered from the first call on
    placeholder = results(model.prompts[2].messages)["c1"]
    assert placeholder == (
        "[cleared to save context: the result of lookup (403 characters); "
        'read it back with read_cleared_result(call_id="c1") if it is needed]'
    )
    assert results(model.prompts[3].messages)["r1"] == f"c1:{BIG}"  # read back from the thread
    openai_pairs_ok(list(model.prompts[3].messages))


def test_read_back_of_an_unknown_call_says_so() -> None:
    interceptor = ContextEditingInterceptor(trigger_tokens=1, read_back=True)
    read = AssistantMessage(
        "",
        tool_calls=(ToolCall(id="r1", name="read_cleared_result", arguments='{"call_id": "x"}'),),
    )
    model = ScriptedChatModel([read, "done"])
    agent = ReactAgent(name="reader", model=model, tools=[lookup], interceptors=[interceptor])
    agent.call("go", {"thread_id": "rb2"})
    assert results(model.prompts[1].messages)["r1"] == (
        "No tool result with call id 'x' in this conversation."
    )

"""PIIHook: what it finds, what it does with it, in each direction; and that what it removes
never reaches the model, a checkpoint, a run event or a streamed delta."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from checkpoint import MemorySaver
from checkpoint.sqlite import SqliteSaver
from graph_agent import (
    AssistantMessage,
    GraphUsageError,
    ModelError,
    ReactAgent,
    ScriptedChatModel,
    ToolCall,
    UserMessage,
    tool,
)
from graph_agent.events import RunEvent
from graph_agent.graph import Command
from hooks import ModelFallbackInterceptor, PIIDetectionError, PIIHook, PIIMatch
from hooks.builtin._pii_detect import StreamGuard, luhn_ok

CARD = "4111 1111 1111 1111"  # a test Visa number: passes Luhn
BAD_CARD = "4111 1111 1111 1112"  # one digit off: fails Luhn


def found(pii_type: str, text: str) -> list[str]:
    return [m.text for m in PIIHook(pii_type).detect(text)]


# -- detectors ------------------------------------------------------------------------------


def test_email_detector() -> None:
    assert found("email", "write to ada.l+x@math.example.org, or not") == [
        "ada.l+x@math.example.org"
    ]
    assert found("email", "an @ sign, user@localhost and a.b@c") == []


def test_credit_card_detector_checks_luhn() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert found("credit_card", f"card {CARD}.") == [CARD]
    assert found("credit_card", "card 4111-1111-1111-1111") == ["4111-1111-1111-1111"]
    assert found("credit_card", "amex 378282246310005 ok") == ["378282246310005"]
    assert found("credit_card", f"card {BAD_CARD}") == []
    assert found("credit_card", "order 12345 of 2024") == []


def test_ip_detector_validates_addresses() -> None:
    assert found("ip", "from 192.168.1.20 and 2001:db8::8a2e:370:7334.") == [
        "192.168.1.20",
        "2001:db8::8a2e:370:7334",
    ]
    assert found("ip", "version 1.2.3 and 999.1.1.1 and 10:30") == []


def test_phone_detector() -> None:
    assert found("phone", "call +44 20 7946 0958 today") == ["+44 20 7946 0958"]
    assert found("phone", "or (555) 123-4567.") == ["(555) 123-4567"]
    assert found("phone", "in 2024, 3 of 15, at 192.168.1.20") == []
    assert found("phone", f"card {CARD}") == []


def test_url_detector() -> None:
    assert found("url", "see https://example.com/a?b=1, and www.example.org.") == [
        "https://example.com/a?b=1",
        "www.example.org",
    ]
    assert found("url", "example dot com, file.txt") == []


def test_custom_detectors_regex_and_function() -> None:
    assert [m.text for m in PIIHook("id", detector=r"ID-\d{4}").detect("ID-1234 x")] == ["ID-1234"]
    assert [m.text for m in PIIHook("id", detector=re.compile(r"ID-\d+")).detect("a ID-9")] == [
        "ID-9"
    ]

    def secret(text: str) -> list[tuple[int, int]]:
        at = text.find("hunter2")
        return [] if at < 0 else [(at, at + 7)]

    hook = PIIHook("password", detector=secret)
    assert hook.detect("pw hunter2") == [PIIMatch(3, 10, "hunter2")]
    assert hook.apply("pw hunter2") == "pw [REDACTED_PASSWORD]"


def test_bad_settings_say_what_to_fix() -> None:
    with pytest.raises(ValueError, match="no built-in detector for 'ssn'"):
        PIIHook("ssn")
    with pytest.raises(ValueError, match="strategy must be one of"):
        PIIHook("email", "erase")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="is no regex"):
        PIIHook("x", detector="(")
    with pytest.raises(ValueError, match="applies nowhere"):
        PIIHook("email", apply_to_input=False)
    with pytest.raises(ValueError, match="on_block='interrupt' pauses a run on the user's input"):
        PIIHook("email", "block", on_block="interrupt", apply_to_output=True)


# -- strategies -----------------------------------------------------------------------------


def test_strategies() -> None:
    text = f"mail ada@example.com, card {CARD}"
    assert PIIHook("email").apply(text) == f"mail [REDACTED_EMAIL], card {CARD}"
    assert PIIHook("email", "mask").apply(text) == f"mail a***@example.com, card {CARD}"
    assert PIIHook("credit_card", "mask").apply(text) == (
        "mail ada@example.com, card **** **** **** 1111"
    )
    assert PIIHook("ip", "mask").apply("from 192.168.1.20") == "from 192.168.*.*"
    hashed = PIIHook("email", "hash").apply(text)
    assert re.fullmatch(r"mail <email_hash:[0-9a-f]{8}>, card .*", hashed)
    assert PIIHook("email", "hash").apply(text) == hashed  # stable
    assert PIIHook("email", "hash").apply("bob@example.com") != hashed[5:26]
    with pytest.raises(PIIDetectionError) as caught:
        PIIHook("email", "block").apply(text)
    assert "1 email value(s) found in the input" in str(caught.value)
    assert "ada@example.com" not in str(caught.value)


# -- in an agent: input, output, tool results -----------------------------------------------


@tool
def customer(name: str) -> str:
    """The customer's record."""
    return f"{name}: ada@example.com, card {CARD}"


def asks_customer() -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id="c1", name="customer", arguments='{"name": "Ada"}')]
    )


class Events:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    def on_event(self, event: RunEvent) -> None:
        self.events.append(event)


SECRETS = ("ada@example.com", "4111 1111 1111 1111", "4111-1111-1111-1111", "1111 1111 1111")


def leaks(value: Any) -> list[str]:
    text = repr(value)
    return [s for s in SECRETS if s in text]


def agent_with(saver: Any, model: ScriptedChatModel, *hooks: PIIHook) -> tuple[ReactAgent, Events]:
    listener = Events()
    agent = ReactAgent(
        name="support",
        model=model,
        tools=[customer],
        hooks=list(hooks),
        interceptors=list(hooks),
        saver=saver,
        listeners=[listener],
    )
    return agent, listener


def guards() -> tuple[PIIHook, PIIHook]:
    both = {"apply_to_output": True, "apply_to_tool_results": True}
    return PIIHook("email", **both), PIIHook("credit_card", "mask", **both)  # type: ignore[arg-type]


def script() -> ScriptedChatModel:
    return ScriptedChatModel(
        [asks_customer(), f"Ada's mail is ada@example.com and her card {CARD}."]
    )


def test_model_output_and_tool_results_are_changed_before_anything_sees_them(
    tmp_path: Path,
) -> None:
    with SqliteSaver(tmp_path / "threads.db") as saver:
        model = script()
        agent, listener = agent_with(saver, model, *guards())
        reply = agent.call("Tell me about Ada.", {"thread_id": "t1"})
        assert reply.text == "Ada's mail is [REDACTED_EMAIL] and her card **** **** **** 1111."
        # the model saw the tool result already changed
        tool_text = model.prompts[1].messages[-1].text
        assert tool_text == "Ada: [REDACTED_EMAIL], card **** **** **** 1111"
        history = list(agent.get_state_history({"thread_id": "t1"}))
        assert history and not leaks([h.values for h in history])
        assert not leaks(listener.events)
    stored = (tmp_path / "threads.db").read_bytes()
    assert b"[REDACTED_EMAIL]" in stored  # the values are stored as readable text...
    assert not [s for s in SECRETS if s.encode() in stored]  # ... never the data


def test_streamed_answer_never_emits_half_a_card() -> None:
    model = ScriptedChatModel([f"Card {CARD} on file for ada@example.com today."])
    agent, _ = agent_with(MemorySaver(), model, *guards())
    deltas = [
        e.text for e in agent.stream_events("card?", {"thread_id": "s1"}) if e.kind == "model_delta"
    ]
    assert len(deltas) > 2  # it did stream, word by word
    for delta in deltas:
        assert not re.search(r"4111|ada@", delta), delta
    assert "".join(deltas) == "Card **** **** **** 1111 on file for [REDACTED_EMAIL] today."
    state = agent.get_state({"thread_id": "s1"}).values
    assert state["messages"][-1].text == "".join(deltas)


def test_async_run_streams_and_checks_the_same() -> None:
    model = ScriptedChatModel([asks_customer(), f"Card {CARD}, mail ada@example.com."])
    agent, listener = agent_with(MemorySaver(), model, *guards())

    async def run() -> list[str]:
        return [
            e.text
            async for e in agent.astream_events("Ada?", {"thread_id": "a1"})
            if e.kind == "model_delta"
        ]

    deltas = asyncio.run(run())
    assert "".join(deltas) == "Card **** **** **** 1111, mail [REDACTED_EMAIL]."
    assert not leaks(listener.events)
    assert not leaks(agent.get_state({"thread_id": "a1"}).values)


def test_input_is_changed_before_it_is_announced_or_stored(tmp_path: Path) -> None:
    with SqliteSaver(tmp_path / "threads.db") as saver:
        model = ScriptedChatModel(["Noted."])
        hooks = (PIIHook("email"), PIIHook("credit_card", "hash"))
        agent, listener = agent_with(saver, model, *hooks)
        agent.call(f"I am ada@example.com, card {CARD}", {"thread_id": "i1"})
        sent = model.prompts[0].messages[-1].text
        assert re.fullmatch(r"I am \[REDACTED_EMAIL\], card <credit_card_hash:[0-9a-f]{8}>", sent)
        history = list(agent.get_state_history({"thread_id": "i1"}))
        assert [h.values["messages"][0].text for h in history] == [sent] * len(history)
        assert listener.events[0].kind == "run_start"
        assert not leaks(listener.events)
    stored = (tmp_path / "threads.db").read_bytes()
    assert b"[REDACTED_EMAIL]" in stored
    assert not [s for s in SECRETS if s.encode() in stored]


def test_input_block_fails_the_run_before_anything_is_stored() -> None:
    model = ScriptedChatModel(["Noted."])
    agent, listener = agent_with(MemorySaver(), model, PIIHook("email", "block"))
    with pytest.raises(PIIDetectionError, match=r"1 email value\(s\) found in the input"):
        agent.call("I am ada@example.com", {"thread_id": "ib"})
    assert not model.prompts
    assert agent.get_state({"thread_id": "ib"}) is None  # no checkpoint was written
    assert [e.kind for e in listener.events] == ["run_start", "run_error"]
    assert not leaks(listener.events)


def test_input_given_through_update_state_is_checked_when_the_run_starts() -> None:
    model = ScriptedChatModel(["Noted."])
    agent, _ = agent_with(MemorySaver(), model, PIIHook("email"))
    config = {"thread_id": "u1"}
    agent.graph.update_state(config, {"messages": [UserMessage("mail ada@example.com")]})
    agent.call("hello", config)
    assert [m.text for m in model.prompts[0].messages[-2:]] == ["mail [REDACTED_EMAIL]", "hello"]


def test_messages_given_with_a_resume_are_checked_before_they_are_stored() -> None:
    model = ScriptedChatModel(["Charged."])
    ask = PIIHook("credit_card", "block", on_block="interrupt")
    agent, listener = agent_with(MemorySaver(), model, PIIHook("email"), ask)
    config = {"thread_id": "r1"}
    agent.invoke(f"charge {CARD}", config)
    update = {"messages": [UserMessage("receipt to ada@example.com")]}
    agent.invoke(Command(resume=True, update=update), config)
    assert model.prompts[0].messages[-1].text == "receipt to [REDACTED_EMAIL]"
    history = list(agent.get_state_history(config))
    assert not [h for h in history if "ada@" in repr(h.values)]
    assert not [e for e in listener.events if "ada@" in repr(e)]


def test_output_block_raises_and_stores_no_answer() -> None:
    model = ScriptedChatModel([f"Her card is {CARD}."])
    block = PIIHook("credit_card", "block", apply_to_input=False, apply_to_output=True)
    agent, listener = agent_with(MemorySaver(), model, block)
    with pytest.raises(PIIDetectionError, match=r"credit_card value.* in the output"):
        agent.call("card?", {"thread_id": "b1"})
    assert not leaks(agent.get_state({"thread_id": "b1"}).values)
    assert not leaks(listener.events)


def test_input_block_can_pause_for_a_person() -> None:
    model = ScriptedChatModel(["Thanks.", "Fine."])
    ask = PIIHook("credit_card", "block", on_block="interrupt")
    agent, _ = agent_with(MemorySaver(), model, ask)
    config = {"thread_id": "h1"}
    state = agent.invoke(f"my card {CARD}", config)
    pause = agent.get_state(config).interrupts[0].value
    assert pause == {
        "type": "pii_detected",
        "pii_type": "credit_card",
        "direction": "input",
        "count": 1,
    }
    assert not model.prompts  # the model has not seen it
    assert agent.call(Command(resume=True), config).text == "Thanks."  # let through
    agent.invoke(f"again {CARD}", {"thread_id": "h2"})
    refused = agent.call(Command(resume=False), {"thread_id": "h2"})
    assert refused.text.startswith("I can't take this message")
    assert len(model.prompts) == 1
    assert state is not None
    with pytest.raises(GraphUsageError):
        agent.call(f"card {CARD}", {"thread_id": "h3"})  # paused: call() says so


# -- the stream's hold-back -----------------------------------------------------------------


@pytest.mark.parametrize("cut", range(1, 40))
def test_stream_guard_never_lets_a_prefix_of_a_match_out(cut: int) -> None:
    hook = PIIHook("credit_card", "redact", apply_to_output=True)
    text = f"pay {CARD} now, ok"
    guard = StreamGuard(lambda t: hook.apply(t, "output"), hook.find)
    out = [guard.feed(text[:cut]), guard.feed(text[cut:]), guard.flush()]
    assert "".join(out) == "pay [REDACTED_CREDIT_CARD] now, ok"
    assert not any("4111" in piece or "1111" in piece for piece in out)


def test_tool_result_block_fails_the_tool_call_and_the_model_is_told() -> None:
    model = ScriptedChatModel([asks_customer(), "I could not read it."])
    block = PIIHook("credit_card", "block", apply_to_input=False, apply_to_tool_results=True)
    agent, listener = agent_with(MemorySaver(), model, block)
    assert agent.call("Ada?", {"thread_id": "tb"}).text == "I could not read it."
    told = model.prompts[1].messages[-1].text  # the tool failed, the model is told why
    assert "PII blocked: 1 credit_card value(s) found in the tool results" in told
    assert not leaks(model.prompts)
    assert not leaks(agent.get_state({"thread_id": "tb"}).values)
    assert not leaks(listener.events)


def test_trace_spans_and_log_lines_never_carry_it(caplog: pytest.LogCaptureFixture) -> None:
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    from graph_agent.observability import OpenTelemetryListener

    exporter = memory.InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    spans = OpenTelemetryListener(provider, capture_content=True)
    pii = list(guards())
    agent = ReactAgent(
        name="support",
        model=script(),
        tools=[customer],
        hooks=pii,
        interceptors=pii,
        listeners=[spans],
    )
    with caplog.at_level(logging.DEBUG):
        list(agent.stream_events(f"Ada? ada@example.com {CARD}", {"thread_id": "o1"}))
    finished = exporter.get_finished_spans()
    assert any(s.name.startswith("chat") for s in finished)
    attributes = [dict(s.attributes or {}) for s in finished]
    assert "[REDACTED_EMAIL]" in repr(attributes)  # content is recorded...
    assert not leaks(attributes)  # ... never the data
    assert not leaks([r.getMessage() for r in caplog.records])
    provider.shutdown()


def test_an_answer_a_fallback_model_gives_is_checked_too() -> None:
    backup = ScriptedChatModel(["Mail ada@example.com."])
    pii = PIIHook("email", apply_to_output=True)
    failing = ScriptedChatModel([ModelError("down")])
    agent = ReactAgent(
        name="fallback",
        model=failing,
        hooks=[pii],
        interceptors=[pii, ModelFallbackInterceptor(backup)],
    )
    assert agent.call("mail?", {"thread_id": "f1"}).text == "Mail [REDACTED_EMAIL]."


def test_stream_hold_covers_a_detector_whose_matches_span_spaces() -> None:
    def full_name(text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"Ada Lovelace", text)]

    for hold, leaked in ((0, True), (12, False)):
        pii = PIIHook("name", detector=full_name, apply_to_output=True, stream_hold=hold)
        model = ScriptedChatModel(["Dear Ada Lovelace, welcome back."])
        agent = ReactAgent(name="names", model=model, hooks=[pii], interceptors=[pii])
        deltas = [
            e.text
            for e in agent.stream_events("hi", {"thread_id": f"n{hold}"})
            if e.kind == "model_delta"
        ]
        assert ("".join(deltas) == "Dear [REDACTED_NAME], welcome back.") is not leaked
        assert any("Ada" in d for d in deltas) is leaked
        stored = agent.get_state({"thread_id": f"n{hold}"}).values["messages"][-1].text
        assert stored == "Dear [REDACTED_NAME], welcome back."  # checked whole as well

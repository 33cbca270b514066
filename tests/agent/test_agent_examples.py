"""The agent examples run offline, end to end, and show what they promise."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .._examples import example_process, run_example

ROOT = Path(__file__).resolve().parents[2]


def run(name: str, *args: str) -> str:
    return run_example(name, *args)


def test_financial_assistant_reads_the_user_id_from_the_config() -> None:
    out = run("financial_assistant.py")
    assert "[u-ada]   model calls list_accounts({})" in out
    assert "[u-ada] assistant: You have 2 account(s): checking CHK-1001: 1250.00 EUR" in out
    assert "[u-bob] assistant: You have 1 account(s): checking CHK-2001: 310.75 EUR." in out
    # Bob cannot read Ada's account even when the model asks for it by id.
    assert "[u-bob]   tool account_balance -> account SAV-1002 is not one of this user's" in out
    assert "[u-ada]   tool account_balance -> 8400.00 EUR" in out
    assert "CHK-1001" not in "".join(line for line in out.splitlines() if "[u-bob]" in line)


def test_conversation_summary_reads_the_state_messages_over_turns() -> None:
    out = run("conversation_summary.py")
    summary = out.split("--- turn 3", 1)[1].split("--- a new thread", 1)[0]
    assert "4 messages so far:" in summary
    assert "- the user said: I'm going to Lisbon in May. What's the weather like?" in summary
    assert "- the assistant said: Lisbon in May is sunny" in summary
    assert "- the user said: Which tram should I take?" in summary
    assert "- the assistant said: Take tram 28" in summary
    assert "summarize our conversation" not in summary.split("assistant:", 1)[1]
    other = out.split("--- a new thread", 1)[1]
    assert "Nothing has been said yet." in other
    assert "thread 'trip' holds 8 messages" in out


def test_state_hook_updates_the_state_after_the_model() -> None:
    out = run("state_hook.py")
    stamp = r"last_updated=\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00"
    states = re.findall(rf"state: user_name=(\S+) model_calls=(\d+) {stamp}", out)
    assert states == [("None", "1"), ("'Ada'", "2"), ("'Ada'", "3")]
    assert "assistant: Your name is Ada." in out
    assert 'UpdateStateHook_after_model["UpdateStateHook.after_model"]' in out
    assert "model --> UpdateStateHook_after_model" in out


def test_return_direct_answers_with_the_tool_result_and_one_model_call() -> None:
    out = run("return_direct.py")
    assert out.splitlines() == [
        "user: Where is my order A-1001?",
        "assistant: Order A-1001: shipped, expected delivery 2026-05-14.",
        "nodes run: model -> tools",
        "return_direct: True",
        "model calls: 1",
    ]


def test_structured_output_answers_with_a_validated_invoice_after_a_tool_call() -> None:
    assert run("structured_output.py").splitlines() == [
        "strategy: tool (final_answer_invoice beside order_details)",
        "user: Make the invoice for order A-1001.",
        '  tool order_details -> {"customer": "Ada Lovelace", "items": [{"sku": "NB-01", '
        '"name": "Notebook", "quantity": 2, "unit_price": 4.5}, {"sku": "PN-07", "name": "Pen", '
        '"quantity": 1, "unit_price": 2.0}]}',
        "Invoice A-1001 for Ada Lovelace:",
        "  2 x Notebook @ 4.50 = 9.00",
        "  1 x Pen @ 2.00 = 2.00",
        "  total: 11.00 EUR",
    ]


INVOICE = {
    "order_id": "A-1001",
    "customer": "Ada Lovelace",
    "lines": [{"sku": "NB-01", "description": "Notebook", "quantity": 2, "unit_price": 4.5}],
    "total": 10.0,  # wrong: the example's validator sends it back
}


class _OpenAIStandIn(BaseHTTPRequestHandler):
    """An OpenAI-compatible server: a tool call, a wrong total, then the right one."""

    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.bodies.append(body)
        turn = len(self.bodies)
        if turn == 1:
            call = {"name": "order_details", "arguments": '{"order_id": "A-1001"}'}
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
            }
        else:
            invoice = {**INVOICE, "total": 10.0 if turn == 2 else 9.0}
            message = {"role": "assistant", "content": json.dumps(invoice)}
        reply = json.dumps(
            {
                "id": f"chatcmpl-{turn}",
                "object": "chat.completion",
                "created": 1,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def openai_stand_in() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    bodies: list[dict[str, Any]] = []
    handler = type("Handler", (_OpenAIStandIn,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", bodies
    finally:
        server.shutdown()
        server.server_close()


def test_structured_output_live_uses_the_json_schema_format(
    openai_stand_in: tuple[str, list[dict[str, Any]]],
) -> None:
    url, bodies = openai_stand_in
    done = example_process("structured_output.py", "--live", OPENAI_BASE_URL=url)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "strategy: native (json_schema response_format, strict: True)"
    assert lines[-1] == "  total: 9.00 EUR"  # the wrong total went back and was fixed
    assert len(bodies) == 3
    for body in bodies:
        assert body["response_format"]["json_schema"]["name"] == "Invoice"
        assert [t["function"]["name"] for t in body["tools"]] == ["order_details"]
    assert "the lines add up to 9.0" in bodies[2]["messages"][-1]["content"]


def test_examples_take_live_flag_help() -> None:
    for name in (
        "financial_assistant.py",
        "conversation_summary.py",
        "state_hook.py",
        "return_direct.py",
        "structured_output.py",
    ):
        assert "--live" in run(name, "--help")

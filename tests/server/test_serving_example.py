"""examples/serving.py: two agents served over HTTP, talked to with plain HTTP and SSE."""

from __future__ import annotations

from .._examples import run_example


def test_the_serving_example_streams_a_run_and_approves_a_payment_over_http() -> None:
    assert run_example("serving.py").splitlines() == [
        "weather: a streamed run",
        '  model asked get_weather({"city": "Paris"})',
        "  tools answered sunny in Paris",
        "  model said It is sunny in Paris.",
        "payments: a run that pauses for approval",
        '  waits for: send_payment({"to": "Alice", "amount": 120.0})',
        "  thread status: interrupted",
        "payments: approved over HTTP",
        "  assistant: Sent 120.00 EUR to Alice.",
        "  thread status: idle",
    ]

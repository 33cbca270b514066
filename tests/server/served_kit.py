"""The tools the served test agents use (tests/server/test_sdk_client.py, test_page.py)."""

from __future__ import annotations

from graph_agent import tool


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@tool
def refund(amount: int) -> str:
    """Refund an amount."""
    return f"refunded {amount}"

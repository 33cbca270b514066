"""examples/mcp_tools.py runs offline against the MCP server it starts."""

from __future__ import annotations

from tests._examples import run_example


def test_the_mcp_example_lists_the_servers_tools_and_calls_one() -> None:
    out = run_example("mcp_tools.py").splitlines()
    assert out[0].startswith("tool get_weather: Current weather for a city. {")
    assert '"required": ["city"]' in out[0]
    assert out[1].startswith("tool get_alerts: Weather alerts for a region.")
    assert out[2:] == [
        'model calls get_weather({"city": "Paris"})',
        "server answers: sunny, 18°C in Paris",
        "assistant: It is sunny and 18°C in Paris.",
    ]

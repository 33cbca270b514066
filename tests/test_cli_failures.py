"""The one line ``graph-agent chat`` prints for a failed model call names what to check."""

from __future__ import annotations

from graph_agent.cli._failures import Masker, describe_failure
from graph_agent.errors import ModelError

NOT_FOUND = ModelError("POST http://h/v1/chat/completions: HTTP 404", status=404)


def test_a_404_names_the_model_in_use() -> None:
    line = describe_failure(NOT_FOUND, model="gpt-x", saver="memory", mask=Masker())
    assert "check GRAPH_AGENT_MODEL (now 'gpt-x') and OPENAI_BASE_URL" in line


def test_a_404_of_a_model_with_no_name_shows_no_empty_name() -> None:
    """A graph chatted with through ``graph-agent chat TARGET`` has no model label."""
    line = describe_failure(NOT_FOUND, model="", saver="memory", mask=Masker())
    assert "check GRAPH_AGENT_MODEL and OPENAI_BASE_URL" in line
    assert "''" not in line

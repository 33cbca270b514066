from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

# Without the mcp extra there is nothing to test here (tests/test_extras.py checks the error).
collect_ignore_glob = ["test_*.py"] if importlib.util.find_spec("mcp") is None else []


@pytest.fixture(scope="session")
def http_url() -> Iterator[str]:
    """The URL of the test server over streamable HTTP (one process for the session)."""
    from tests.mcp._support import http_server

    with http_server() as (url, _):
        yield url

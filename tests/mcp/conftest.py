from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests._needs import Suite

# Without the mcp extra these modules are not imported, and one item says why (a failure on
# CI); tests/test_extras.py checks the error graph_agent.mcp gives without it.
NEEDS = Suite(__file__, ("mcp",), "the mcp extra: pip install 'graph-agent[mcp]' (make test)")
collect_ignore_glob = NEEDS.ignored
pytest_collect_file = NEEDS.collect_file


@pytest.fixture(scope="session")
def http_url() -> Iterator[str]:
    """The URL of the test server over streamable HTTP (one process for the session)."""
    from tests.mcp._support import http_server

    with http_server() as (url, _):
        yield url

"""The A2A client's tests run against a real A2A agent (a2a-sdk's server side under uvicorn on
a loopback port, tests/a2a/_remote_server.py). Without the a2a and server extras they are one
"skipped" line (a failure on CI: tests/_needs.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests._needs import Suite

NEEDS = Suite(
    __file__,
    ("a2a.client", "a2a.server.routes", "starlette", "uvicorn"),
    "the a2a and server extras: pip install -e '.[a2a,server]' (make test)",
)
collect_ignore_glob = NEEDS.ignored
pytest_collect_file = NEEDS.collect_file


@pytest.fixture(scope="module")
def remote_url() -> Iterator[str]:
    """The URL of a streaming remote agent (one per test module)."""
    from tests.a2a._remote_server import remote_agent

    with remote_agent() as url:
        yield url

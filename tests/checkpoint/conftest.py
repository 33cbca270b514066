"""Savers under test. The contract suite runs on every factory listed in ``SAVERS``;
durable savers join the list as they arrive."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from checkpoint import BaseCheckpointSaver, MemorySaver

SAVERS: dict[str, Callable[[], BaseCheckpointSaver]] = {
    "memory": MemorySaver,
    "memory-copy": lambda: MemorySaver(copy=True),
}


@pytest.fixture(params=sorted(SAVERS))
def any_saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    return SAVERS[request.param]()

"""Savers under test. The contract suite runs on every factory listed in ``SAVERS``;
durable savers join the list as they arrive."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from checkpoint import BaseCheckpointSaver, MemorySaver, SqliteSaver

SAVERS: dict[str, Callable[[pytest.TempPathFactory], BaseCheckpointSaver]] = {
    "memory": lambda tmp: MemorySaver(),
    "memory-copy": lambda tmp: MemorySaver(copy=True),
    "sqlite": lambda tmp: SqliteSaver(tmp.mktemp("sqlite") / "checkpoints.sqlite"),
}


@pytest.fixture(params=sorted(SAVERS))
def any_saver(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> BaseCheckpointSaver:
    return SAVERS[request.param](tmp_path_factory)

"""What a test needs that may be missing (a package, a browser, a cached bundle, a server
binary): skipped locally, saying what is missing and how to get it; a failure on CI (``CI``
set), where ``.ci/run`` and ``make test`` install everything, so a missing piece is a broken
setup and not a suite to leave out in silence. Every such check in the suite goes through here:
``unavailable`` for a test, a fixture or a module, ``need_module`` for an import, and
``Suite`` for a folder whose modules cannot even be imported without a package."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

ON_CI = "CI installs everything the suite needs"


def unavailable(reason: str, on_ci: str = ON_CI) -> NoReturn:
    """Skip the calling test (or fixture, or module) with ``reason``; on CI fail with
    ``"{reason}: {on_ci}"`` instead."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: {on_ci}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need_module(name: str, install: str, on_ci: str = ON_CI) -> ModuleType:
    """``import name``; where it cannot be imported, ``unavailable`` saying so and how to get
    it (``install``)."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        unavailable(f"{name} cannot be imported ({error}): {install}", on_ci)


def missing(names: tuple[str, ...], install: str) -> str | None:
    """Why one of the modules ``names`` cannot be imported and how to get it, or None."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            return f"{name} cannot be imported ({error}): {install}"
    return None


class Suite:
    """A folder of tests whose modules (or conftest) import a package that may be missing.

    In the folder's conftest.py::

        NEEDS = Suite(__file__, ("mcp",), "pip install 'graph-agent[mcp]'")
        collect_ignore_glob = NEEDS.ignored
        pytest_collect_file = NEEDS.collect_file

    Without the package no module of the folder is imported, and one item collected from the
    conftest stands for them all: ``unavailable`` with the reason (one "skipped" line, or a
    failure on CI), instead of a suite that vanishes or an import error.
    """

    def __init__(self, conftest: str, names: tuple[str, ...], install: str) -> None:
        self.conftest = Path(conftest)
        self.reason = missing(names, install)
        self.ignored = ["test_*.py"] if self.reason else []

    def collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        """The ``pytest_collect_file`` hook of the folder's conftest."""
        if self.reason is None or file_path != self.conftest:
            return None
        return _Folder.from_parent(parent, path=file_path, reason=self.reason)


class _Folder(pytest.File):
    def __init__(self, *, reason: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.reason = reason

    def collect(self) -> Iterator[pytest.Item]:
        yield _Unavailable.from_parent(self, name=f"the tests in {self.path.parent.name}/")


class _Unavailable(pytest.Item):
    def runtest(self) -> None:
        assert isinstance(self.parent, _Folder)
        unavailable(self.parent.reason)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name

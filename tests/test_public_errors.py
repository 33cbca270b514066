"""Every error class a user can meet lives in a public module: a traceback names it by the
module to import it from (``graph_agent.mcp.McpServerError``, not a private
``graph_agent.mcp._connection.McpServerError``), and ``except`` needs no private import."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

PACKAGES = ("graph_agent", "checkpoint", "hooks")
OPTIONAL = ("graph_agent.mcp", "graph_agent.observability")


def public_modules() -> list[str]:
    names: list[str] = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        for found in pkgutil.walk_packages(root.__path__, f"{package}."):
            if not any(part.startswith("_") for part in found.name.split(".")):
                names.append(found.name)
    return names


def exported_errors() -> list[tuple[str, str, type[BaseException]]]:
    found = []
    for name in public_modules():
        module = importlib.import_module(name)
        for attribute in getattr(module, "__all__", ()):
            value = getattr(module, attribute)
            if inspect.isclass(value) and issubclass(value, BaseException):
                found.append((name, attribute, value))
    return found


def test_the_walk_finds_the_errors_users_catch() -> None:
    names = {error.__name__ for _, _, error in exported_errors()}
    assert {"GraphAgentError", "CheckpointError", "McpServerError", "CliError"} <= names
    assert {"ModelCallLimitExceededError", "RunStopped", "CheckpointConflictError"} <= names


@pytest.mark.parametrize(
    ("module", "name", "error"),
    exported_errors(),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_an_exported_error_is_named_by_a_public_module(
    module: str, name: str, error: type[BaseException]
) -> None:
    home = error.__module__
    assert not any(part.startswith("_") for part in home.split(".")), (
        f"{module}.{name} is defined in the private module {home}: a traceback would name it "
        f"{home}.{error.__qualname__}; define it in a public module"
    )
    assert getattr(importlib.import_module(home), error.__qualname__) is error

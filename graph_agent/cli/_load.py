"""Loading a ``TARGET`` of ``graph-agent graph`` and ``graph-agent chat``.

``FILE.py:OBJECT`` or ``package.module:OBJECT``; OBJECT (a dotted path is allowed) is a
``CompiledGraph``, a ``StateGraph`` (compiled here), an object whose ``.graph`` is a
``CompiledGraph`` (an agent), or a zero-argument callable returning one of these. Every
problem is a ``CliError`` with one message for the user, never a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import GraphValidationError
from ..graph import CompiledGraph, StateGraph
from ._errors import CliError
from ._failures import mask_url

__all__ = ["TARGET_HELP", "Target", "load_graph", "load_target"]

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_NOT_GRAPHS = frozenset({"None", "int", "str", "bool", "float", "bytes"})
TARGET_HELP = (
    "FILE.py:OBJECT or package.module:OBJECT. OBJECT (a dotted path is allowed) is a "
    "CompiledGraph, a StateGraph (compiled here), an object whose .graph is a CompiledGraph "
    "(an agent), or a zero-argument callable returning one of these."
)


@dataclass(frozen=True)
class Target:
    """What a ``TARGET`` named: its compiled ``graph``, and ``owner``, the object whose
    ``.graph`` that is (an agent), or ``None`` for a graph given as such."""

    graph: CompiledGraph
    owner: Any = None


def _where(exc: BaseException) -> str:
    """`` (at file:line)`` for the innermost frame of ``exc``'s traceback, or ``""``."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}{_where(exc)}"


def _import_file(path_text: str) -> ModuleType:
    path = Path(path_text).expanduser()
    if not path.exists():
        hint = f"; did you mean {path_text}.py?" if Path(f"{path_text}.py").is_file() else ""
        raise CliError(f"file not found: {path_text} (relative to {Path.cwd()}){hint}")
    if not path.is_file():
        raise CliError(f"not a file: {path_text}")
    path = path.resolve()
    name = "_graph_agent_target_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {path_text}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Like `python FILE`: the file's own directory is importable while it loads.
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        sys.modules.pop(name, None)
        raise CliError(f"{path_text} called sys.exit({exc.code!r}) while being imported") from None
    except Exception as exc:
        sys.modules.pop(name, None)
        raise CliError(f"importing {path_text} failed: {_describe(exc)}") from None
    finally:
        with contextlib.suppress(ValueError):  # unless the file took it off itself
            sys.path.remove(str(path.parent))
    return module


def _import_module(name: str) -> ModuleType:
    # A console script does not put the working directory on sys.path; `python -m` does.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(f"{exc.name}.")):
            raise CliError(
                f"no module named {name!r}: install its package, run from the directory that "
                "contains it, or give a file path (path/to/file.py:OBJECT)"
            ) from None
        raise CliError(f"importing module {name!r} failed: {_describe(exc)}") from None
    except SystemExit as exc:
        raise CliError(
            f"module {name!r} called sys.exit({exc.code!r}) while being imported"
        ) from None
    except Exception as exc:
        raise CliError(f"importing module {name!r} failed: {_describe(exc)}") from None


def _graph_attr(value: Any) -> Any:
    """``value.graph`` (what an agent exposes), or ``None``; modules are not agents."""
    if isinstance(value, ModuleType):
        return None
    try:
        return getattr(value, "graph", None)
    except Exception:  # a property that fails: not a graph we can use
        return None


def _returns(fn: Callable[..., Any]) -> str:
    """The name of ``fn``'s return annotation, or ``""`` when it has none we can read."""
    try:
        returns = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):
        return ""
    return returns if isinstance(returns, str) else str(getattr(returns, "__name__", ""))


def _graph_names(module: ModuleType) -> list[str]:
    """The module's public names that are graphs, or functions annotated to return one."""
    names = []
    for name, value in sorted(vars(module).items()):
        if name.startswith("_"):
            continue
        if isinstance(value, (CompiledGraph, StateGraph)) or isinstance(
            _graph_attr(value), CompiledGraph
        ):
            names.append(name)
        elif (
            inspect.isfunction(value)
            and value.__module__ == module.__name__
            and ("CompiledGraph" in _returns(value) or "StateGraph" in _returns(value))
        ):
            names.append(f"{name}()")
    return names


def _resolve(value: Any, label: str, *, may_call: bool = True) -> Target:
    if isinstance(value, CompiledGraph):
        return Target(value)
    if isinstance(value, StateGraph):
        try:
            return Target(value.compile())
        except GraphValidationError as exc:
            raise CliError(f"{label} is a StateGraph that does not compile: {exc}") from None
        except Exception as exc:
            raise CliError(f"compiling {label} failed: {_describe(exc)}") from None
    inner = _graph_attr(value)
    if isinstance(inner, (CompiledGraph, StateGraph)):
        return Target(_resolve(inner, f"{label}.graph", may_call=False).graph, value)
    if may_call and callable(value):
        try:
            inspect.signature(value).bind()
        except TypeError:
            raise CliError(
                f"{label} is a callable that needs arguments; point at a graph object or at a "
                "function that takes none"
            ) from None
        except ValueError:  # no signature (some builtins): just try calling it
            pass
        if _returns(value) in _NOT_GRAPHS:  # e.g. `main() -> int`: do not run it to find out
            raise CliError(
                f"{label}() returns {_returns(value)}, not a graph; point at a graph object"
            )
        try:
            result = value()
        except SystemExit as exc:
            raise CliError(f"calling {label}() exited with sys.exit({exc.code!r})") from None
        except Exception as exc:
            raise CliError(f"calling {label}() failed: {_describe(exc)}") from None
        return _resolve(result, f"{label}()", may_call=False)
    raise CliError(
        f"{label} is a {type(value).__name__}, not a graph; expected a CompiledGraph, a "
        "StateGraph, an object whose .graph is a CompiledGraph, or a zero-argument callable "
        "returning one"
    )


def load_graph(target: str) -> CompiledGraph:
    """The ``CompiledGraph`` that ``TARGET`` (``FILE.py:OBJECT`` or ``module:OBJECT``) names.

    Raises ``CliError`` with a message for the user when the target cannot be found, imported,
    or turned into a compiled graph.
    """
    return load_target(target).graph


def load_target(target: str) -> Target:
    """``load_graph``, also telling which object (an agent) the graph came from."""
    if _URL.match(target):  # e.g. a --saver URL given without --saver
        raise CliError(
            f"TARGET must look like path/to/file.py:OBJECT or package.module:OBJECT, got the "
            f"URL {mask_url(target)!r} (a conversation store goes after --saver)"
        )
    source, sep, attr_path = target.rpartition(":")
    if not sep or not source or not attr_path:
        raise CliError(
            f"TARGET must look like path/to/file.py:OBJECT or package.module:OBJECT, got "
            f"{target!r} (missing ':OBJECT'?)"
        )
    is_file = source.endswith(".py") or "/" in source or os.sep in source
    module = _import_file(source) if is_file else _import_module(source)
    value: Any = module
    parts = attr_path.split(".")
    for i, part in enumerate(parts):
        where = f"{source}:{'.'.join(parts[:i])}" if i else source
        try:
            value = getattr(value, part)
        except AttributeError:
            message = f"{where} has no attribute {part!r}"
            if i == 0:
                found = _graph_names(module)
                message += (
                    f"; graphs it defines: {', '.join(found)}" if found else "; it defines no graph"
                )
            raise CliError(message) from None
        except Exception as exc:
            raise CliError(f"reading {where}.{part} failed: {_describe(exc)}") from None
    return _resolve(value, f"{source}:{attr_path}")

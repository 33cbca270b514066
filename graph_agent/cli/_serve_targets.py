"""What ``graph-agent serve`` is told to serve: ``TARGET``s, ``NAME=TARGET``s (a target under a
name the user gives), and a LangGraph project's ``langgraph.json``.

``langgraph.json``: ``graphs`` (name -> ``"./path/file.py:object"``, ``"package.module:object"``
or ``{"path": ..., "description": ...}``) is what is served, each under its name; file paths
are relative to the config's folder, which is also importable (as ``dependencies: ["."]``
makes it for LangGraph). ``env`` (a ``.env`` file's path, relative to the config's folder,
or a map of variables) is set before any graph loads; a variable already in the environment
keeps its value. ``auth`` and ``encryption`` are refused: serving without them would drop a
protection the project counts on (``--token`` is this server's auth). Every other key is
about building, installing or the LangGraph platform (``dependencies``, ``python_version``,
``dockerfile_lines``, ``http``, ``store``, ``checkpointer``, ...): not used here, and named
in one line.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import CliError

__all__ = [
    "NamedTarget",
    "Project",
    "gather",
    "parse_named",
    "read_env_file",
    "read_langgraph_json",
]

NAME = re.compile(r"[A-Za-z0-9_.-]+")
"""What a name given to a target may hold (it is the assistant's id in URLs)."""
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
USED_KEYS = frozenset({"graphs", "env"})
REFUSED_KEYS = {
    "auth": "its custom auth would not run here, and the agents would be open; drop 'auth' and "
    "serve with --token (or GRAPH_AGENT_TOKEN)",
    "encryption": "its encryption of what is stored would not run here; drop 'encryption' to "
    "serve the graphs without it",
}


@dataclass(frozen=True)
class NamedTarget:
    """A ``TARGET`` to serve, under ``name`` (``None``: the object's own name), with where the
    user wrote it (``origin``: ``"langgraph.json graphs.agent"``, or ``""`` for the command
    line), for messages."""

    target: str
    name: str | None = None
    origin: str = ""

    @property
    def shown(self) -> str:
        """How a message names it: as the user wrote it."""
        return self.origin or (f"{self.name}={self.target}" if self.name else self.target)


@dataclass(frozen=True)
class Project:
    """What a ``langgraph.json`` says: the graphs, the environment they need, and the keys
    not used here (to name in one line; ``gather`` keeps one ``"config: key, key"`` entry
    per config)."""

    graphs: list[NamedTarget]
    env: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)


def parse_named(text: str) -> NamedTarget:
    """``NAME=TARGET`` (served under ``NAME``), or a plain ``TARGET``; a ``=`` after a ``/`` or
    ``:`` is part of a path, not a name."""
    name, sep, target = text.partition("=")
    if not sep or any(c in name for c in "/\\:"):
        return NamedTarget(text)
    if not NAME.fullmatch(name):
        raise CliError(
            f"{text!r}: NAME=TARGET serves TARGET under NAME, which takes letters, digits, "
            "'_', '-' and '.'"
        )
    if not target:
        raise CliError(f"{text!r}: no TARGET after '='; NAME=TARGET serves TARGET under NAME")
    return NamedTarget(target, name)


def _read_json(path: Path, shown: str) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"file not found: {shown} (relative to {Path.cwd()})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(f"cannot read {shown}: {error}") from None
    try:
        config = json.loads(text)
    except ValueError as error:
        raise CliError(f"{shown} is not JSON: {error}") from None
    if not isinstance(config, dict):
        raise CliError(
            f"{shown} must hold a JSON object with 'graphs', got {type(config).__name__}"
        )
    return config


def _graph_target(value: Any, folder: Path, where: str) -> str:
    """A ``graphs`` entry as a ``TARGET``: a file path made absolute from ``folder``."""
    if isinstance(value, dict):
        value = value.get("path")
    if not isinstance(value, str) or ":" not in value:
        raise CliError(
            f"{where} must be 'path/to/file.py:object' or 'package.module:object' (or "
            f'{{"path": ...}}), got {value!r}'
        )
    source, _, attr = value.rpartition(":")
    if source.endswith(".py") or "/" in source or "\\" in source:
        return f"{(folder / source).resolve()}:{attr}"
    return value


def read_langgraph_json(config_path: str) -> Project:
    """The graphs and environment of a LangGraph project's ``langgraph.json``; ``CliError``
    for what cannot work, naming the key."""
    path = Path(config_path).expanduser()
    config = _read_json(path, config_path)
    folder = path.resolve().parent
    for key, why in REFUSED_KEYS.items():
        if key in config:
            raise CliError(f"{config_path}: '{key}' is not supported by graph-agent serve: {why}")
    graphs = config.get("graphs")
    if not isinstance(graphs, dict) or not graphs:
        raise CliError(
            f'{config_path} names no graphs: add "graphs": {{"agent": "./my_app.py:agent"}}'
        )
    named: list[NamedTarget] = []
    for name, value in graphs.items():
        where = f"{config_path} graphs.{name}"
        if not NAME.fullmatch(name):
            raise CliError(f"{where}: a graph's name takes letters, digits, '_', '-' and '.'")
        named.append(NamedTarget(_graph_target(value, folder, where), name, where))
    env = config.get("env")
    variables: dict[str, str] = {}
    if isinstance(env, str):
        variables = read_env_file(folder / env, f"{config_path} env ({env})")
    elif isinstance(env, dict):
        for key, value in env.items():
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise CliError(f"{config_path} env.{key} must be a string, got {value!r}")
            variables[key] = str(value)
    elif env is not None:
        raise CliError(f"{config_path} env must be a .env file's path or a map, got {env!r}")
    if any(":" in n.target and "/" not in n.target for n in named) and str(folder) not in sys.path:
        sys.path.insert(0, str(folder))  # 'package.module:object' graphs import from there
    ignored = sorted(k for k in config if k not in USED_KEYS and k != "$schema")
    return Project(named, variables, ignored)


def _env_value(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        inner = raw[1:-1]
        return re.sub(r"\\([\\\"nt])", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), inner)
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip()


def read_env_file(path: Path, shown: str) -> dict[str, str]:
    """A ``.env`` file's variables: ``KEY=VALUE`` lines (``export`` before is allowed), values
    bare (a `` #`` starts a comment), in single quotes (as they are) or double quotes
    (``\\n``, ``\\t``, ``\\"`` and ``\\\\`` escapes); blank lines and ``#`` comments skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise CliError(f"{shown}: file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(f"{shown}: cannot read {path}: {error}") from None
    variables: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        key, sep, value = text.removeprefix("export ").partition("=")
        key = key.strip()
        if not sep or not _ENV_KEY.fullmatch(key):
            raise CliError(f"{shown}: line {number} is not KEY=VALUE: {line!r}")
        variables[key] = _env_value(value)
    return variables


def gather(targets: Sequence[str], config: str | None) -> Project:
    """Everything to serve: each ``TARGET`` or ``NAME=TARGET``, and the graphs of each
    ``langgraph.json`` (given as a TARGET, or with ``--config``), in that order; the
    environment and ignored keys of the configs, merged."""
    project = Project([])
    sources = [*targets, *([config] if config else [])]
    for text in sources:
        if text.endswith(".json") and "=" not in text:
            read = read_langgraph_json(text)
            project.graphs.extend(read.graphs)
            project.env.update({k: v for k, v in read.env.items() if k not in project.env})
            if read.ignored:
                project.ignored.append(f"{text}: {', '.join(read.ignored)}")
        else:
            project.graphs.append(parse_named(text))
    return project

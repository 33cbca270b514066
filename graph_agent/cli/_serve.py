"""``graph-agent serve TARGET [TARGET ...]``: agents, flows and graphs over HTTP (the Agent
Protocol, ``graph_agent.server``), on uvicorn."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from checkpoint import BaseCheckpointSaver, MemorySaver

from ._errors import CliError
from ._failures import mask_url
from ._listen import listen_and_serve
from ._load import load_target
from ._queue import check_queue_url, queued_runs
from ._run_store import run_store_beside
from ._saver import check_saver, close_saver, make_saver
from ._serve_targets import NAME as _NAME
from ._serve_targets import NamedTarget, gather, parse_named

__all__ = ["DEFAULT_SERVER_SAVER", "ServeOptions", "run_serve", "served_objects"]

DEFAULT_SERVER_SAVER = "sqlite:~/.graph-agent/server.sqlite"
TOKEN_ENV = "GRAPH_AGENT_TOKEN"
ACCESS_LOGGER = "graph_agent.server.access"  # the server's access log (docs/serving.md, Logs)


@dataclass(frozen=True)
class ServeOptions:
    targets: Sequence[str]
    host: str = "127.0.0.1"
    port: int = 8123
    saver: str | None = None
    token: str | None = None
    access_log: bool = True
    config: str | None = None
    allow_origins: Sequence[str] = ()
    allow_hosts: Sequence[str] = ()
    queue: str | None = None
    run_timeout: float | None = None


def _name_of(target: str, owner: Any, graph: Any) -> str:
    name = getattr(owner, "name", None) or getattr(graph, "name", None)
    if isinstance(name, str) and name and name != "graph":
        return name
    return target.rpartition(":")[2].rstrip("()").rpartition(".")[2]


def _suggested_names(first: NamedTarget, second: NamedTarget) -> tuple[str, str]:
    """Names to offer for two targets that clash: what tells them apart, of their files' (or
    modules') names, their folders' and their objects'."""

    def parts(entry: NamedTarget) -> tuple[str, str, str]:
        source, _, attr = entry.target.rpartition(":")
        if source.endswith(".py") or "/" in source:
            stem, folder = Path(source).stem, Path(source).parent.name
        else:
            folder, _, stem = source.rpartition(".")
            folder = folder.rpartition(".")[2]
        return stem, folder, attr.rstrip("()").rpartition(".")[2]

    (stem1, folder1, attr1), (stem2, folder2, attr2) = parts(first), parts(second)
    for one, two in ((stem1, stem2), (folder1, folder2), (f"{stem1}_{attr1}", f"{stem2}_{attr2}")):
        if one != two and _NAME.fullmatch(one) and _NAME.fullmatch(two):
            return one, two
    return f"{stem1}_1", f"{stem2}_2"


def _clash(name: str, first: NamedTarget, second: NamedTarget) -> CliError:
    if first.name is not None and second.name is not None:
        return CliError(
            f"two targets are named {name!r}: {first.shown} and {second.shown}; give each a "
            "name of its own"
        )
    one, two = _suggested_names(first, second)
    return CliError(
        f"two targets are named {name!r}: {first.shown} and {second.shown}; clients pick one "
        f"by its name, so serve them under names you give, NAME=TARGET: graph-agent serve "
        f"{one}={first.target} {two}={second.target}"
    )


def served_objects(
    targets: Sequence[str | NamedTarget], saver_spec: str | None
) -> tuple[dict[str, Any], BaseCheckpointSaver | None, str]:
    """What to serve, by name (a ``NAME=TARGET``'s, else the object's), each keeping its
    threads in its own durable saver or in the one ``saver_spec`` names (default
    ``DEFAULT_SERVER_SAVER``); the saver made here (for the caller to close) and where the
    threads are kept, for the user. Two targets under one name are a ``CliError`` naming
    both."""
    if not targets:
        raise CliError(
            "name at least one TARGET to serve (path/to/file.py:OBJECT), or a LangGraph "
            "project's langgraph.json"
        )
    entries = [t if isinstance(t, NamedTarget) else parse_named(t) for t in targets]
    served: dict[str, Any] = {}
    came_from: dict[str, NamedTarget] = {}
    made: BaseCheckpointSaver | None = None
    spec = saver_spec or DEFAULT_SERVER_SAVER
    try:
        for entry in entries:
            target = entry.target
            try:
                loaded = load_target(target)
            except CliError as error:
                if not entry.origin:
                    raise
                raise CliError(f"{entry.origin}: {error}") from None
            graph, owner = loaded.graph, loaded.owner
            own = graph.saver if not isinstance(graph.saver, MemorySaver) else None
            if own is not None and saver_spec is not None:
                raise CliError(
                    f"--saver: {entry.shown} keeps its threads in its own saver "
                    f"({type(own).__name__}); drop --saver, or build it without a saver"
                )
            if own is None:
                if made is None:
                    made = make_saver(spec)
                    check_saver(made, spec)
                graph.saver = made  # the object is the server's to run, in this process
                if owner is not None and hasattr(owner, "saver"):
                    owner.saver = made
            name = entry.name or _name_of(target, owner, graph)
            if name in served:
                raise _clash(name, came_from[name], entry)
            served[name] = owner if owner is not None else graph
            came_from[name] = entry
    except BaseException:
        if made is not None:
            close_saver(made)
        raise
    return served, made, mask_url(spec) if made is not None else "their own savers"


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def answered_hosts(host: str, allowed: Sequence[str]) -> list[str] | None:
    """The ``Host`` names a server listening on ``host`` answers to: on a loopback address,
    the loopback's names and ``allowed`` (a page of another site reaching it by DNS
    rebinding names its own host); elsewhere ``allowed`` when given, else any (``None``)."""
    if not beyond_loopback(host):
        return [*LOOPBACK_NAMES, host.strip().strip("[]").lower(), *allowed]
    return list(allowed) if allowed else None


def beyond_loopback(host: str) -> bool:
    """Whether listening on ``host`` lets other machines in: anything but ``localhost`` and
    the loopback addresses (``127.0.0.0/8``, ``::1``)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return False
    try:
        return not ipaddress.ip_address(name).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return True


def _missing_server(error: ImportError) -> str:
    """What to tell a user whose ``server`` extra is missing (or broken)."""
    missing = error if isinstance(error, ModuleNotFoundError) else error.__cause__
    name = getattr(missing, "name", None) or ""
    if name.partition(".")[0] in ("uvicorn", "starlette"):
        return (
            f"serving needs the 'server' extra, and {name.partition('.')[0]} is not installed: "
            "pip install 'graph-agent[server]'"
        )
    return f"the server cannot be loaded ({error}); reinstall it: pip install 'graph-agent[server]'"


def run_serve(options: ServeOptions, out: TextIO) -> int:
    try:
        import uvicorn  # noqa: F401  (listen_and_serve's; missing, it is said here)

        from ..runs import RunService
        from ..server import Server, create_app
    except ImportError as error:
        raise CliError(_missing_server(error)) from None
    project = gather(options.targets, options.config)
    for ignored in project.ignored:
        print(f"graph-agent serve: {ignored}: not used here, ignored", file=out, flush=True)
    for key, value in project.env.items():  # before any graph loads: they may read it
        os.environ.setdefault(key, value)
    if options.queue and options.run_timeout is not None:
        raise CliError(
            "--run-timeout: with --queue, the workers run the runs: give it to 'graph-agent worker'"
        )
    if options.queue:
        check_queue_url(options.queue)  # before the saver, which defaults to it
    saver = options.saver or (options.queue if options.queue else None)
    served, made, where = served_objects(project.graphs, saver)
    token = options.token or os.environ.get(TOKEN_ENV) or None
    queue: Any = None
    if options.queue:
        runs, queue = queued_runs(options.queue)
    else:
        runs = run_store_beside(served, made, saver or DEFAULT_SERVER_SAVER)
        if options.run_timeout is not None:
            runs = RunService(runs, run_timeout=options.run_timeout, **Server.run_options())
    try:
        app = create_app(
            served,
            token=token,
            allow_origins=options.allow_origins,
            allow_hosts=answered_hosts(options.host, options.allow_hosts),
            runs=runs,
        )
    except BaseException as error:
        _close_runs(runs, queue)
        if made is not None:
            close_saver(made)
        if isinstance(error, ValueError):  # what create_app refuses: an origin that is not one
            raise CliError(f"--allow-origin: {error}") from None
        raise
    if not token and beyond_loopback(options.host):
        print(
            f"graph-agent serve: warning: --host {options.host} with no token: anyone who can "
            f"reach the server can run its agents (set --token or {TOKEN_ENV}, or keep the "
            "default --host 127.0.0.1)",
            file=out,
            flush=True,
        )
    # the server's own warnings and errors (a failed run, with its traceback) on stderr, and
    # its access log (one line per request) unless --no-access-log
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("graph-agent serve: %(levelname)s %(message)s"))
    server_log = logging.getLogger("graph_agent.server")
    server_log.addHandler(handler)
    server_log.setLevel(logging.WARNING)
    access_log = logging.getLogger(ACCESS_LOGGER)
    access_log.setLevel(logging.INFO if options.access_log else logging.WARNING)

    def announce() -> None:
        print(
            f"serving {', '.join(sorted(served))} on http://{options.host}:{options.port} "
            f"(threads kept in {where}; auth: {'bearer token' if token else 'none'})",
            file=out,
            flush=True,
        )

    try:
        listen_and_serve(app, options.host, options.port, announce)
    finally:
        server_log.removeHandler(handler)
        access_log.setLevel(logging.NOTSET)
        _close_runs(runs, queue)
        if made is not None:
            close_saver(made)
    return 0


def _close_runs(runs: Any, queue: Any) -> None:
    async def close() -> None:
        await (runs.store if hasattr(runs, "store") else runs).aclose()
        if queue is not None:
            await queue.aclose()

    asyncio.run(close())

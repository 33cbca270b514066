"""The ``graph-agent`` argument parser, its commands (``graph``, ``demo``, ``chat``,
``serve``) and ``main``, which runs them: a user error is one line on stderr and exit
code 2."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from .. import __version__
from ._errors import CliError
from ._failures import Masker, mask_url
from ._load import TARGET_HELP, load_graph
from ._options import DEFAULT_SAVER, DEFAULT_THREAD, ChatOptions, parse_port

__all__ = ["main"]

PROG = "graph-agent"
USAGE_ERROR = 2
DIRECTIONS = ("TD", "TB", "LR", "RL", "BT")


def _cmd_graph(args: argparse.Namespace) -> int:
    # What the user's code prints while it loads goes to stderr: stdout is the diagram.
    with contextlib.redirect_stdout(sys.stderr):
        graph = load_graph(args.target)
    sys.stdout.write(graph.draw_mermaid(direction=args.direction))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from ._demo import run_demo

    return run_demo(sys.stdout)


def _cmd_chat(args: argparse.Namespace) -> int:
    from ._chat import run_chat, stdin_reader

    options = ChatOptions(
        thread=args.thread,
        saver=args.saver,
        model=args.model,
        base_url=args.base_url,
        target=args.target,
    )
    return run_chat(options, stdin_reader, sys.stdout, sys.stderr)


def _cmd_serve(args: argparse.Namespace) -> int:
    from ._serve import ServeOptions, run_serve

    options = ServeOptions(
        targets=args.targets,
        host=args.host,
        port=parse_port(args.port),
        saver=args.saver,
        token=args.token,
        access_log=args.access_log,
        config=args.config,
        allow_origins=args.allow_origins,
        allow_hosts=args.allow_hosts,
        queue=args.queue,
        run_timeout=_seconds_or_none(args.run_timeout),
    )
    return run_serve(options, sys.stderr)


def _cmd_worker(args: argparse.Namespace) -> int:
    from ._worker import WorkerOptions, run_worker

    options = WorkerOptions(
        targets=args.targets,
        queue=args.queue,
        saver=args.saver,
        config=args.config,
        concurrency=_positive(args.concurrency, "--concurrency", int),
        lease_seconds=_positive(args.lease_seconds, "--lease-seconds", float),
        max_attempts=_positive(args.max_attempts, "--max-attempts", int),
        name=args.name,
        run_timeout=_seconds_or_none(args.run_timeout),
    )
    return run_worker(options, sys.stderr)


def _seconds_or_none(text: str | None) -> float | None:
    return None if text is None else float(_positive(text, "--run-timeout", float))


def _positive(text: str, option: str, kind: type[int] | type[float]) -> Any:
    try:
        value = kind(text)
    except ValueError:
        value = 0
    if not value > 0:
        raise CliError(f"{option} {text!r} is not a positive number")
    return value


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors mask URL passwords (``redis://:***@...``):
    an unrecognized argument is echoed back as given."""

    def error(self, message: str) -> NoReturn:
        super().error(Masker()(message))


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Run the demo agent, chat with a model, draw a graph, or serve agents.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    draw = commands.add_parser(
        "graph",
        help="print the Mermaid diagram of a graph",
        description="Print the Mermaid flowchart of a compiled graph on stdout.",
        epilog=f"example: {PROG} graph examples/approval_workflow.py:graph --direction LR",
    )
    draw.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    draw.add_argument(
        "--direction",
        choices=DIRECTIONS,
        default="TD",
        metavar="TD|LR",
        help="flowchart direction: TD (top-down, the default) or LR; TB, RL and BT also work",
    )
    draw.set_defaults(handler=_cmd_graph)
    demo = commands.add_parser(
        "demo",
        help="run the offline demo agent",
        description="A ReAct agent with two tools, a hook and memory, offline (scripted model).",
    )
    demo.set_defaults(handler=_cmd_demo)
    chat = commands.add_parser(
        "chat",
        help="chat with a model, or with your own agent or graph",
        description="An interactive chat on a kept thread: with the built-in agent (a model "
        "from --model/--base-url or GRAPH_AGENT_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY, "
        "and a current_time tool), or with TARGET, your own agent or graph, its tools and "
        "hooks included. Tool calls show as they run; a failure prints one line and the chat "
        "goes on; Ctrl-C cancels the answer being written; /history shows the thread, /retry "
        "runs the last message again, /help lists the commands (//text sends /text); Ctrl-D "
        "(or Ctrl-C at the prompt) quits.",
        epilog=f"examples: {PROG} chat --model qwen2.5:7b --base-url http://localhost:11434/v1; "
        f"{PROG} chat my_app.py:agent --thread support",
    )
    chat.add_argument(
        "target",
        metavar="TARGET",
        nargs="?",
        help=f"your agent or graph instead of the built-in agent: {TARGET_HELP} A graph "
        "needs a 'messages' key: each line is sent as a UserMessage there.",
    )
    chat.add_argument(
        "--thread",
        metavar="ID",
        help=f"the conversation to continue (default: {DEFAULT_THREAD}; with TARGET, its name)",
    )
    chat.add_argument(
        "--saver",
        metavar="memory|sqlite:PATH|redis://...",
        help=f"where the conversation is kept (default: {mask_url(DEFAULT_SAVER)}, so a "
        "thread survives restarts; TARGET with a saver of its own, other than a MemorySaver, "
        "keeps its threads there and refuses --saver); a password in a URL is never printed",
    )
    chat.add_argument(
        "--model",
        metavar="NAME",
        help="the built-in agent's model (default: $GRAPH_AGENT_MODEL, else gpt-4o-mini)",
    )
    chat.add_argument(
        "--base-url",
        metavar="URL",
        help="the built-in agent's OpenAI-compatible server (default: $OPENAI_BASE_URL, else "
        "the OpenAI API)",
    )
    chat.set_defaults(handler=_cmd_chat)
    serve = commands.add_parser(
        "serve",
        help="serve agents, flows and graphs over HTTP (the Agent Protocol)",
        description="Serve each TARGET over HTTP with the core of the Agent Protocol, as "
        "LangGraph's Agent Server speaks it (langgraph-sdk clients work unchanged); clients "
        "pick one by its name (the object's, or NAME in NAME=TARGET). A LangGraph project's "
        "langgraph.json serves its graphs, with its env. Needs the 'server' extra.",
        epilog=f"examples: {PROG} serve my_app.py:agent my_app.py:team --port 8123; "
        f"{PROG} serve billing=billing/app.py:agent support=support/app.py:agent; "
        f"{PROG} serve path/to/langgraph.json",
    )
    serve.add_argument(
        "targets",
        metavar="TARGET",
        nargs="*",
        help=f"{TARGET_HELP} NAME=TARGET serves it under NAME; a langgraph.json serves its graphs",
    )
    serve.add_argument(
        "--config",
        metavar="langgraph.json",
        help="a LangGraph project's config: its graphs (each under its name) and its env "
        "(a .env file or variables) are used, file paths relative to it",
    )
    serve.add_argument("--host", default="127.0.0.1", help="where to listen (default: 127.0.0.1)")
    serve.add_argument("--port", default="8123", help="the port, 1 to 65535 (default: 8123)")
    serve.add_argument(
        "--saver",
        metavar="memory|sqlite:PATH|redis://...",
        help="where threads are kept for targets without a durable saver of their own "
        "(default: sqlite:~/.graph-agent/server.sqlite)",
    )
    serve.add_argument(
        "--token",
        help="require 'Authorization: Bearer TOKEN' (or 'X-Api-Key: TOKEN') on every request "
        "(default: $GRAPH_AGENT_TOKEN; none: no auth)",
    )
    serve.add_argument(
        "--allow-origin",
        dest="allow_origins",
        action="append",
        default=[],
        metavar="URL",
        help="let pages of this origin (http://localhost:3000) call the server from a browser, "
        "with CORS; repeatable (default: none, only the server's own page)",
    )
    serve.add_argument(
        "--allow-host",
        dest="allow_hosts",
        action="append",
        default=[],
        metavar="NAME",
        help="answer requests whose Host is NAME (a proxy's public name); repeatable (default: "
        "on a loopback --host only localhost, 127.0.0.1 and ::1, which keeps pages of other "
        "sites out that reach it by DNS rebinding; elsewhere any)",
    )
    serve.add_argument(
        "--no-access-log",
        dest="access_log",
        action="store_false",
        help="do not log a line per request (METHOD PATH STATUS TIME ms) on stderr",
    )
    serve.add_argument(
        "--queue",
        metavar="redis://...",
        help="record runs in this Redis and leave them to 'graph-agent worker' processes "
        "(default: runs execute in this process); threads are then kept in it too, unless "
        "--saver says where",
    )
    serve.add_argument(
        "--run-timeout",
        metavar="SECONDS",
        help="stop a run that runs longer than this, as a cancel stops it (what it did is "
        "kept); it ends as 'timeout' (default: no limit)",
    )
    serve.set_defaults(handler=_cmd_serve)
    worker = commands.add_parser(
        "worker",
        help="run the runs that 'serve --queue' accepted (needs the 'queue' extra)",
        description="Run the runs that servers started with --queue accepted: any number of "
        "workers, on any machines, on one Redis. Each run's thread is leased to one worker "
        "at a time; a worker that dies has its runs taken up by another.",
        epilog=f"example: {PROG} worker my_app.py:agent --queue redis://localhost:6379/0",
    )
    worker.add_argument("targets", metavar="TARGET", nargs="*", help=TARGET_HELP)
    worker.add_argument("--config", metavar="langgraph.json", help="a LangGraph project's config")
    worker.add_argument("--queue", required=True, metavar="redis://...", help="the servers' queue")
    worker.add_argument(
        "--saver",
        metavar="sqlite:PATH|redis://...",
        help="where threads are kept (the servers' --saver; default: the queue's Redis)",
    )
    worker.add_argument("--concurrency", default="8", help="runs at once (default: 8)")
    worker.add_argument(
        "--lease-seconds",
        default="30",
        help="a thread's lease: a worker that stops answering loses its runs after this "
        "(default: 30)",
    )
    worker.add_argument(
        "--max-attempts",
        default="3",
        help="times a run is taken up before it ends as an error (default: 3)",
    )
    worker.add_argument(
        "--run-timeout",
        metavar="SECONDS",
        help="stop a run that runs longer than this, as a cancel stops it (what it did is "
        "kept); it ends as 'timeout' (default: no limit)",
    )
    worker.add_argument("--name", help="this worker's name in leases and logs")
    worker.set_defaults(handler=_cmd_worker)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``graph-agent`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    0 on success; 2 for a usage error or any error the user can fix (the message is on
    stderr). ``--help`` and ``--version`` return 0.
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else USAGE_ERROR
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except CliError as exc:
        print(f"{PROG} {args.command}: error: {Masker()(str(exc))}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`graph-agent demo | head`): stop quietly
        _silence_stdout()
        return 141  # 128 + SIGPIPE: what a shell reports for a command a closed pipe stopped


def _silence_stdout() -> None:
    """Point stdout at the null device: the interpreter flushes stdout on its way out, and a
    flush into the closed pipe would print a second ``BrokenPipeError``."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())

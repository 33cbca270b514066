"""The ``graph-agent`` command.

``graph-agent demo`` runs an offline agent and shows what it does; ``graph-agent chat``
talks to an OpenAI-compatible model from the environment; ``graph-agent graph TARGET``
prints the Mermaid diagram of a graph.

Every error a user can cause (a bad TARGET, a module that fails to import, a graph that
does not compile) is one message on stderr and exit code 2, never a traceback. Once a chat
runs, a failure is one line on stderr and the chat goes on (``_cli_chat``). No password of
a URL the user gives (``--saver``, ``OPENAI_BASE_URL``) is printed, not even in a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from . import __version__
from ._cli_errors import CliError
from ._cli_failures import Masker, mask_url
from .errors import GraphValidationError
from .graph import CompiledGraph, StateGraph

__all__ = ["CliError", "load_graph", "main"]

PROG = "graph-agent"
USAGE_ERROR = 2
DIRECTIONS = ("TD", "TB", "LR", "RL", "BT")
DEFAULT_CHAT_SAVER = "sqlite:~/.graph-agent/chat.sqlite"
_NOT_GRAPHS = frozenset({"None", "int", "str", "bool", "float", "bytes"})
_TARGET_HELP = (
    "FILE.py:OBJECT or package.module:OBJECT. OBJECT (a dotted path is allowed) is a "
    "CompiledGraph, a StateGraph (compiled here), an object whose .graph is a CompiledGraph "
    "(an agent), or a zero-argument callable returning one of these."
)


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


def _resolve(value: Any, label: str, *, may_call: bool = True) -> CompiledGraph:
    if isinstance(value, CompiledGraph):
        return value
    if isinstance(value, StateGraph):
        try:
            return value.compile()
        except GraphValidationError as exc:
            raise CliError(f"{label} is a StateGraph that does not compile: {exc}") from None
        except Exception as exc:
            raise CliError(f"compiling {label} failed: {_describe(exc)}") from None
    inner = _graph_attr(value)
    if isinstance(inner, (CompiledGraph, StateGraph)):
        return _resolve(inner, f"{label}.graph", may_call=False)
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


def _cmd_graph(args: argparse.Namespace) -> int:
    # What the user's code prints while it loads goes to stderr: stdout is the diagram.
    with contextlib.redirect_stdout(sys.stderr):
        graph = load_graph(args.target)
    sys.stdout.write(graph.draw_mermaid(direction=args.direction))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from ._cli_agent import run_demo

    return run_demo(sys.stdout)


def _cmd_chat(args: argparse.Namespace) -> int:
    from ._cli_chat import run_chat, stdin_reader

    return run_chat(args.thread, args.saver, stdin_reader, sys.stdout, sys.stderr)


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors mask URL passwords (``redis://:***@...``):
    an unrecognized argument is echoed back as given."""

    def error(self, message: str) -> NoReturn:
        super().error(Masker()(message))


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Run the demo agent, chat with a model, or draw a graph.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    draw = commands.add_parser(
        "graph",
        help="print the Mermaid diagram of a graph",
        description="Print the Mermaid flowchart of a compiled graph on stdout.",
        epilog=f"example: {PROG} graph examples/approval_workflow.py:graph --direction LR",
    )
    draw.add_argument("target", metavar="TARGET", help=_TARGET_HELP)
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
        help="chat with an OpenAI-compatible model",
        description="An interactive chat on a thread, with the model from OPENAI_API_KEY, "
        "OPENAI_BASE_URL and GRAPH_AGENT_MODEL. Tool calls show as they run; a failure "
        "prints one line and the chat goes on; Ctrl-C cancels the answer being written; "
        "/history shows the thread, /retry runs the last message again, /help lists the "
        "commands; Ctrl-D (or Ctrl-C at the prompt) quits.",
    )
    chat.add_argument("--thread", default="chat", metavar="ID", help="the conversation to continue")
    chat.add_argument(
        "--saver",
        default=DEFAULT_CHAT_SAVER,
        metavar="memory|sqlite:PATH|redis://...",
        help=f"where the conversation is kept (default: {mask_url(DEFAULT_CHAT_SAVER)}, so a "
        "thread survives restarts); a password in a URL is never printed",
    )
    chat.set_defaults(handler=_cmd_chat)
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
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())

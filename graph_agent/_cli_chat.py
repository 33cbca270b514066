"""``graph-agent chat``: a terminal chat with an OpenAI-compatible model, on a kept thread.

No failure ends the chat: the model server down or refusing the key, Redis gone, a bug in a
turn, each prints one line on stderr (what failed, where, how to fix it; secrets masked)
and the prompt comes back. Ctrl-C while an answer is produced cancels that answer; at the
prompt, Ctrl-C or Ctrl-D ends the chat. Tool calls are shown as they run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import httpx

from checkpoint import BaseCheckpointSaver, CheckpointError, MemorySaver

from ._cli_cancel import Canceller, sigint_calls
from ._cli_errors import CliError
from ._cli_failures import Masker, describe_failure, mask_url, url_password
from .agent import WITHDRAWN, ReactAgent
from .errors import ModelError
from .events import ModelDelta, ModelEnd, ModelStart, RunEnd, RunEvent, ToolEnd, ToolStart
from .graph import RunnableConfig
from .messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)
from .models import OpenAIChatModel
from .tools import tool

__all__ = ["check_saver", "history_lines", "make_saver", "run_chat", "shorten", "stdin_reader"]

ERROR_PREFIX = "graph-agent chat: error: "
TIMEOUT = 60.0  # seconds to connect, and between two pieces of a streamed answer
SHOWN = 160  # characters of a tool call's arguments or result shown on its line
CANCELLED = "[answer cancelled; /retry runs it again]"
HELP = """\
/history  the messages of this thread (tool calls and results shortened)
/retry    run the last message again (after an error or Ctrl-C)
/help     this list
/exit     end the chat (so do Ctrl-D, and Ctrl-C at the prompt)
Ctrl-C while an answer is being written cancels that answer."""


@tool
def current_time() -> str:
    """The current date and time (UTC), ISO-8601."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# -- the conversation store ----------------------------------------------------------------


def make_saver(spec: str) -> BaseCheckpointSaver:
    """``memory``, ``sqlite:PATH`` or a ``redis://`` / ``rediss://`` / ``unix://`` URL (Redis
    connects lazily: ``check_saver`` tries it). ``CliError`` for a spec that cannot work,
    its password masked."""
    from checkpoint import RedisSaver, SqliteSaver

    shown, mask = mask_url(spec), Masker([url_password(spec)])
    if spec == "memory":
        return MemorySaver()
    if spec.startswith("sqlite:"):
        path = Path(spec.removeprefix("sqlite:")).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return SqliteSaver(path)
        except (OSError, CheckpointError, sqlite3.Error) as error:
            raise CliError(
                f"--saver {shown}: cannot open the SQLite file: {mask(str(error))}"
            ) from None
    if spec.startswith(("redis://", "rediss://", "unix://")):
        try:
            return RedisSaver.from_url(spec)
        except ValueError as error:
            raise CliError(
                f"--saver {shown} is not a Redis URL that works: {mask(str(error))}; expected "
                "redis://[:PASSWORD@]HOST:PORT/DB"
            ) from None
    raise CliError(f"--saver must be memory, sqlite:PATH or a redis:// URL, got {shown!r}")


def check_saver(saver: BaseCheckpointSaver, spec: str) -> None:
    """Connect a Redis saver once (a wrong password or an unreachable server is found now,
    not in the middle of the first answer); ``CliError`` with a fix when that fails."""
    client = getattr(saver, "client", None)
    if client is None or not hasattr(client, "ping"):
        return
    import redis

    shown, mask = mask_url(spec), Masker([url_password(spec)])
    try:
        client.ping()
    except redis.AuthenticationError as error:
        what = "refused the password" if url_password(spec) else "needs a password"
        raise CliError(
            f"--saver {shown}: Redis {what} ({mask(str(error))}): give the right one in the "
            "URL, redis://:PASSWORD@HOST:PORT/DB"
        ) from None
    except (redis.ConnectionError, redis.TimeoutError) as error:
        raise CliError(
            f"--saver {shown}: cannot reach Redis ({mask(str(error))}): start it, or fix the "
            "host and port in the URL"
        ) from None
    except redis.RedisError as error:
        raise CliError(f"--saver {shown}: Redis failed: {mask(str(error))}") from None


# -- showing a run -------------------------------------------------------------------------


def shorten(text: str, limit: int = SHOWN) -> str:
    """``text`` on one line, at most ``limit`` characters (cut with ``...``)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _error_text(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class _View:
    """Prints a turn's run events: the model's text as it streams, one line per tool call
    as it starts (``  -> name(arguments)``) and as it ends (``  <- name: result``)."""

    def __init__(self, out: IO[str], mask: Masker) -> None:
        self.out = out
        self.mask = mask
        self.at_line_start = True
        self.streamed = ""  # the text of the latest model call

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.at_line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        """``text`` on a line of its own."""
        if not self.at_line_start:
            self.write("\n")
        self.write(text + "\n")

    def see(self, event: RunEvent) -> None:
        if event.namespace:  # agents and graphs run by a tool: their own business
            return
        if isinstance(event, ModelStart):
            self.streamed = ""
        elif isinstance(event, ModelDelta):
            self.streamed += event.text
            self.write(event.text)
        elif isinstance(event, ModelEnd) and event.error is not None and self.streamed:
            self.streamed = ""
            self.line(WITHDRAWN.strip())
        elif isinstance(event, ToolStart):
            self.line(f"  -> {event.name}({self.mask(shorten(event.arguments))})")
        elif isinstance(event, ToolEnd):
            if event.error is not None:
                shown = shorten(self.mask(_error_text(event.error)))
                self.line(f"  <- {event.name} failed: {shown}")
            else:
                self.line(f"  <- {event.name}: {shorten(self.mask(event.result or ''))}")
        elif isinstance(event, RunEnd) and not event.interrupts:
            messages = event.values.get("messages") or ()
            last = messages[-1] if messages else None
            if isinstance(last, AssistantMessage) and last.answer and last.answer != self.streamed:
                self.line(last.answer)  # not streamed: a refusal, a return-direct result

    def end(self) -> None:
        if not self.at_line_start:
            self.write("\n")


def history_lines(messages: Sequence[Message]) -> list[str]:
    """The lines ``/history`` prints: ``role: text`` per message, a tool call as
    ``  -> name(arguments)`` and a tool result as ``  <- name: result`` (both shortened)."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, ToolResponseMessage):
            lines += [f"  <- {r.name}: {shorten(r.response_data)}" for r in message.responses]
        elif isinstance(message, AssistantMessage):
            if message.answer or not message.tool_calls:
                lines.append(f"assistant: {message.answer}".replace("\n", "\n  "))
            lines += [f"  -> {c.name}({shorten(c.arguments)})" for c in message.tool_calls]
        elif isinstance(message, (UserMessage, SystemMessage)):
            lines.append(f"{message.message_type}: {message.text}".replace("\n", "\n  "))
    return lines


# -- the chat ------------------------------------------------------------------------------


class _Chat:
    """The read-answer loop of one chat; ``labels`` name the thread, model and saver."""

    def __init__(
        self,
        agent: ReactAgent,
        canceller: Canceller,
        labels: dict[str, str],
        *,
        out: IO[str],
        err: IO[str],
        mask: Masker,
    ) -> None:
        self.agent = agent
        self.canceller = canceller
        self.labels = labels
        self.out = out
        self.err = err
        self.mask = mask
        self.config = RunnableConfig(thread_id=labels["thread"])

    def loop(self, read: Callable[[], str]) -> int:
        while True:
            try:
                line = read()
            except (EOFError, KeyboardInterrupt):  # Ctrl-D, or Ctrl-C at the prompt
                print(file=self.out)
                return 0
            text = line.strip()
            if not text:
                continue
            if text in ("/exit", "/quit"):
                return 0
            try:
                self.dispatch(text, line)
            except KeyboardInterrupt:  # between turns (a turn takes Ctrl-C itself)
                print(file=self.out)
                return 0
            except Exception as error:  # the store failing in /history or /retry
                self.fail(error)

    def dispatch(self, text: str, line: str) -> None:
        if text == "/help":
            print(HELP, file=self.out)
        elif text == "/history":
            self.history()
        elif text == "/retry":
            snapshot = self.agent.get_state(self.config)
            if snapshot is None or not snapshot.next:
                print("nothing to retry: the thread's last message was answered", file=self.out)
            else:
                self.turn(None)
        else:
            self.turn(line)

    def turn(self, input: str | None) -> None:
        """One run of the agent: ``input``, or ``None`` to run the pending step again."""
        self.canceller.reset()
        view = _View(self.out, self.mask)
        failure: Exception | None = None
        events = self.agent.stream_events(input, self.config)
        with sigint_calls(self.canceller.cancel):
            try:
                for event in events:
                    if self.canceller.cancelled:
                        break
                    view.see(event)
            except Exception as error:
                failure = error
            finally:
                close = getattr(events, "close", None)
                if callable(close):  # stops the run at its next step boundary
                    close()
        if self.canceller.cancelled:
            view.line(CANCELLED)
        elif failure is not None:
            view.end()
            self.fail(failure)
        else:
            view.end()

    def history(self) -> None:
        snapshot = self.agent.get_state(self.config)
        messages = snapshot.values.get("messages") if snapshot is not None else None
        if not messages:
            print(f"(thread '{self.labels['thread']}' has no messages yet)", file=self.out)
            return
        for line in history_lines(messages):
            print(self.mask(line), file=self.out)

    def fail(self, error: BaseException) -> None:
        self.out.flush()
        line = describe_failure(
            error, model=self.labels["model"], saver=self.labels["saver"], mask=self.mask
        )
        print(ERROR_PREFIX + line, file=self.err)
        if os.environ.get("GRAPH_AGENT_DEBUG"):
            traceback.print_exception(type(error), error, error.__traceback__, file=self.err)
        self.err.flush()


def _model(canceller: Canceller, client: httpx.Client) -> OpenAIChatModel:
    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        raise CliError(
            "no model configured: set OPENAI_API_KEY (and optionally OPENAI_BASE_URL for another "
            "OpenAI-compatible server, GRAPH_AGENT_MODEL for the model name); a local server "
            "needs only OPENAI_BASE_URL, e.g. http://localhost:11434/v1"
        )
    try:
        return OpenAIChatModel(http_client=client, sleep=canceller.wait)
    except (ModelError, ValueError, httpx.InvalidURL) as error:
        mask = Masker([os.environ.get("OPENAI_API_KEY", "").strip()])
        raise CliError(f"the model settings do not work: {mask(str(error))}") from None


def run_chat(
    thread: str,
    saver_spec: str,
    read: Callable[[], str],
    out: IO[str],
    err: IO[str] | None = None,
) -> int:
    """Talk to an OpenAI-compatible model from the environment on thread ``thread``, kept
    by ``saver_spec``; ``read()`` gives the user's lines (``EOFError`` at the end). Returns
    0 when the user ends the chat; ``CliError`` for settings that cannot work."""
    canceller = Canceller()
    client = canceller.client(timeout=TIMEOUT)
    saver: BaseCheckpointSaver | None = None
    try:
        model = _model(canceller, client)
        saver = make_saver(saver_spec)
        check_saver(saver, saver_spec)
        agent = (
            ReactAgent.builder()
            .name("chat")
            .model(model)
            .tools(current_time)
            .system_prompt("You are a helpful assistant.")
            .saver(saver)
            .build()
        )
        mask = Masker(
            [
                os.environ.get("OPENAI_API_KEY", "").strip(),
                url_password(model.base_url),
                url_password(saver_spec),
            ]
        )
        labels = {"thread": thread, "model": model.model, "saver": mask_url(saver_spec)}
        chat = _Chat(agent, canceller, labels, out=out, err=err or sys.stderr, mask=mask)
        kept = "memory, gone when the chat ends" if saver_spec == "memory" else labels["saver"]
        print(
            f"chatting with {model.model} at {mask(mask_url(model.base_url))} on thread "
            f"'{thread}' (kept in {kept}); /help lists the commands, Ctrl-D quits",
            file=out,
        )
        with _quiet_library_logs():
            return chat.loop(read)
    finally:
        client.close()
        close: Any = getattr(saver, "close", None)
        if callable(close):
            close()


@contextlib.contextmanager
def _quiet_library_logs() -> Iterator[None]:
    """The model's retry warnings and the tools' error warnings stay off the terminal: a
    failure is reported once, as one line, and a tool's error shows as its result."""
    loggers = [logging.getLogger(name) for name in ("graph_agent.models", "graph_agent.tools")]
    handler = logging.NullHandler()
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def stdin_reader() -> str:
    """Prompt with ``> `` on stdout and read a line of stdin (``EOFError`` at its end)."""
    sys.stdout.write("> ")
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")

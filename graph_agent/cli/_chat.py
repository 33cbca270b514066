"""``graph-agent chat``: a terminal chat on a kept thread, with the built-in agent (an
OpenAI-compatible model from ``--model``/``--base-url`` or the environment, and a
``current_time`` tool) or with the user's own agent or graph (``TARGET``, ``_target``).

A line is a message, unless its first word is a slash command (``/WORD``); an unknown one
prints the list of commands and goes nowhere. No failure ends the chat: the model server
down or refusing the key, Redis gone, a bug in a turn, each prints one line on stderr (what
failed, where, how to fix it; secrets masked) and the prompt comes back. Nothing else
reaches stderr: the library's loggers (retry warnings included) print only where the
application configured logging. Ctrl-C while an answer is produced cancels that answer (a sync
tool cannot be stopped: the run stops once it returns) and says what the thread kept: the
answer when the run had finished all the same, else a run ``/retry`` goes on with; at the
prompt, Ctrl-C or Ctrl-D ends the chat. Tool calls are shown as they run.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from typing import IO

import httpx

from ..agent import WITHDRAWN, ReactAgent
from ..errors import ModelError
from ..events import ModelDelta, ModelEnd, ModelStart, RunEnd, RunEvent, ToolEnd, ToolStart
from ..graph import RunnableConfig
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)
from ..models import OpenAIChatModel
from ..tools import tool
from ._cancel import Canceller, sigint_calls
from ._errors import CliError
from ._failures import Masker, describe_failure, mask_url, url_password
from ._options import DEFAULT_SAVER, DEFAULT_THREAD, ChatOptions
from ._saver import check_saver, close_saver, make_saver
from ._target import Conversation, Partner, open_target

__all__ = [
    "ChatOptions",
    "check_saver",
    "command_of",
    "history_lines",
    "make_saver",
    "run_chat",
    "shorten",
    "stdin_reader",
]

ERROR_PREFIX = "graph-agent chat: error: "
TIMEOUT = 60.0  # seconds to connect, and between two pieces of a streamed answer
SHOWN = 160  # characters of a tool call's arguments or result shown on its line
CANCELLED = "[answer cancelled; /retry runs it again]"
FINISHED = "[Ctrl-C came as the answer was finished: it is kept, nothing to retry]"
NOT_STARTED = "[cancelled before the run kept anything; send the message again]"
WAITING_FOR_TOOL = "[Ctrl-C: a running tool cannot be stopped; the answer stops once it returns]"
HELP = """\
/history  the messages of this thread (tool calls and results shortened)
/retry    run the last message again (after an error or Ctrl-C)
/help     this list
/exit     end the chat (so do Ctrl-D, and Ctrl-C at the prompt)
A line whose first word is /WORD is a command, never sent; a first word with another /
(a path: /etc/hosts) is sent as it is, and //text sends /text.
Ctrl-C while an answer is being written cancels that answer (a running tool finishes
first); the chat then says what the thread kept."""
COMMANDS = ("/history", "/retry", "/help", "/exit", "/quit")
_COMMAND = re.compile(r"/[A-Za-z][A-Za-z0-9_-]*")


@tool
def current_time() -> str:
    """The current date and time (UTC), ISO-8601."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
    as it starts (``  -> name(arguments)``) and as it ends (``  <- name: result``), and one
    line when the run pauses for a person (``interrupt()``, ``HumanInTheLoopHook``)."""

    def __init__(self, out: IO[str], mask: Masker) -> None:
        self.out = out
        self.mask = mask
        self.at_line_start = True
        self.streamed = ""  # the text of the latest model call
        self.tools_running = 0

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
            self.tools_running += 1
            self.line(f"  -> {event.name}({self.mask(shorten(event.arguments))})")
        elif isinstance(event, ToolEnd):
            self.tools_running -= 1
            if event.error is not None:
                shown = shorten(self.mask(_error_text(event.error)))
                self.line(f"  <- {event.name} failed: {shown}")
            else:
                self.line(f"  <- {event.name}: {shorten(self.mask(event.result or ''))}")
        elif isinstance(event, RunEnd) and event.interrupts:  # a hook or node asks a person
            asked = "; ".join(shorten(repr(getattr(i, "value", i))) for i in event.interrupts)
            self.line(
                f"[paused for input: {self.mask(asked)}] graph-agent chat cannot answer it; "
                "resume this thread from Python with Command(resume=...)"
            )
        elif isinstance(event, RunEnd):
            messages = event.values.get("messages") or ()
            last = messages[-1] if messages else None
            if isinstance(last, AssistantMessage) and last.answer and last.answer != self.streamed:
                self.line(last.answer)  # not streamed: a refusal, a return-direct result

    def end(self) -> None:
        if not self.at_line_start:
            self.write("\n")

    def rest_of(self, answer: str) -> None:
        """Finish showing ``answer``, which the run kept but this view did not see whole."""
        if self.streamed and answer.startswith(self.streamed):
            self.write(answer[len(self.streamed) :])
            self.end()
        elif answer:
            self.line(answer)


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


def command_of(text: str) -> str | None:
    """The slash command that ``text`` (a stripped line) starts with, or ``None`` when it is
    a message: a command is the line's first word when that is ``/WORD`` (a letter, then
    letters, digits, ``_`` or ``-``). ``/etc/hosts is what?`` and ``//help`` are messages."""
    words = text.split(maxsplit=1)
    return words[0] if words and _COMMAND.fullmatch(words[0]) else None


class _Chat:
    """The read-answer loop of one chat; ``labels`` name the thread, model and saver."""

    def __init__(
        self,
        conversation: Conversation,
        canceller: Canceller,
        labels: dict[str, str],
        *,
        out: IO[str],
        err: IO[str],
        mask: Masker,
    ) -> None:
        self.conversation = conversation
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
            command = command_of(text)
            if command in ("/exit", "/quit") and text == command:
                return 0
            try:
                if command is None:  # a message; //text is /text
                    self.turn(line.lstrip()[1:] if text.startswith("//") else line)
                else:
                    self.command(command, text)
            except KeyboardInterrupt:  # between turns (a turn takes Ctrl-C itself)
                print(file=self.out)
                return 0
            except Exception as error:  # the store failing in /history or /retry
                self.fail(error)

    def command(self, command: str, text: str) -> None:
        if command not in COMMANDS or text != command:
            problem = "takes nothing after it" if command in COMMANDS else "is not a command"
            print(f"{command} {problem}; nothing was sent. The commands:", file=self.out)
            print(HELP, file=self.out)
        elif command == "/help":
            print(HELP, file=self.out)
        elif command == "/history":
            self.history()
        else:  # /retry
            snapshot = self.conversation.get_state(self.config)
            if snapshot is None or not snapshot.next:
                print("nothing to retry: the thread's last message was answered", file=self.out)
            else:
                self.turn(None)

    def turn(self, input: str | None) -> None:
        """One run: ``input``, or ``None`` to run the pending step again.

        Ctrl-C cuts the model's request off (``Canceller``) and stops the run at its next
        step boundary; a sync tool cannot be stopped, so a run waiting for one stops once it
        returns (its result kept). What the chat then says is read from the thread: the
        answer may have been finished and kept all the same."""
        self.canceller.reset()
        before = self.conversation.get_state(self.config)
        view = _View(self.out, self.mask)
        failure: Exception | None = None
        events = iter(self.conversation.stream_events(input, self.config))
        stop = _Stop(self.canceller, view)
        with sigint_calls(stop.on_ctrl_c):
            try:
                while not self.canceller.cancelled:
                    event = stop.next_of(events)
                    if event is None or self.canceller.cancelled:
                        break
                    view.see(event)
            except _Stopped:
                pass  # the stream is closed: the run stopped at its step boundary
            except Exception as error:
                failure = error
            finally:
                if self.canceller.cancelled:
                    stop.tell()
                close = getattr(events, "close", None)
                if callable(close):  # stops the run at its next step boundary
                    close()
        if self.canceller.cancelled:
            kept_before = before.checkpoint_id if before is not None else None
            self.after_cancel(view, None if input is None else kept_before)
        elif failure is not None:
            view.end()
            self.fail(failure)
        else:
            view.end()

    def after_cancel(self, view: _View, before: str | None) -> None:
        """Say what a cancelled turn left: an answer kept all the same (shown), a run
        stopped where ``/retry`` goes on, or nothing kept at all (the thread still at
        ``before``, its checkpoint when a new message was sent)."""
        snapshot = self.conversation.get_state(self.config)
        if snapshot is None or (before is not None and snapshot.checkpoint_id == before):
            view.line(NOT_STARTED)
        elif snapshot.next:
            view.line(CANCELLED)
        else:
            messages = snapshot.values.get("messages") or ()
            last = messages[-1] if messages else None
            if isinstance(last, AssistantMessage) and not last.tool_calls:
                view.rest_of(self.mask(last.answer))
            view.line(FINISHED)

    def history(self) -> None:
        snapshot = self.conversation.get_state(self.config)
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


class _Stopped(BaseException):
    """Ctrl-C while the chat waits for the run's next event: raised there, it closes the
    event stream at once (a ``BaseException``: no ``except Exception`` of a run takes it)."""


class _Stop:
    """Ctrl-C during a turn: cancels the model's request, and when the chat is waiting for
    the run's next event (a tool running, a model thinking), stops the run at once (it stops
    at its next step boundary). While an event is being shown it only marks the turn
    cancelled: the chat stops after that event, never in the middle of a line. Either way,
    when a tool is running the chat says at once that the stop waits for it."""

    def __init__(self, canceller: Canceller, view: _View) -> None:
        self.canceller = canceller
        self.view = view
        self.waiting = False
        self.told = False
        self.started = False

    def next_of(self, events: Iterator[RunEvent]) -> RunEvent | None:
        """The run's next event, ``None`` at its end. Until the first one the stream may
        still be starting its run, where an exception would leave that run unstopped."""
        self.waiting = self.started
        try:
            return next(events, None)
        finally:
            self.waiting = False
            self.started = True

    def on_ctrl_c(self) -> None:
        first = not self.canceller.cancelled
        self.canceller.cancel()
        if first and self.waiting:
            self.waiting = False
            self.tell()
            raise _Stopped

    def tell(self) -> None:
        """Say, once, that the stop waits for a running tool (a sync tool cannot be
        stopped, and it may run for long)."""
        if self.view.tools_running and not self.told:
            self.told = True
            self.view.line(WAITING_FOR_TOOL)


def _model(canceller: Canceller, client: httpx.Client, options: ChatOptions) -> OpenAIChatModel:
    """The built-in agent's model: ``--model``/``--base-url``, else the environment."""
    if not (
        options.base_url or os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")
    ):
        raise CliError(
            "no model configured: set OPENAI_API_KEY (and optionally OPENAI_BASE_URL or "
            "--base-url for another OpenAI-compatible server, GRAPH_AGENT_MODEL or --model for "
            "the model name); a local server needs only its URL, e.g. --base-url "
            "http://localhost:11434/v1"
        )
    try:
        return OpenAIChatModel(
            options.model or None,
            options.base_url or None,
            http_client=client,
            sleep=canceller.wait,
        )
    except (ModelError, ValueError, httpx.InvalidURL) as error:
        mask = Masker([os.environ.get("OPENAI_API_KEY", "").strip()])
        raise CliError(f"the model settings do not work: {mask(str(error))}") from None


def _builtin(options: ChatOptions, canceller: Canceller, client: httpx.Client) -> Partner:
    """The built-in agent: the model of ``--model``/``--base-url`` or the environment, the
    ``current_time`` tool, its thread kept by ``--saver`` (default: a SQLite file)."""
    model = _model(canceller, client, options)
    spec = options.saver or DEFAULT_SAVER
    saver = make_saver(spec)
    try:
        check_saver(saver, spec)
        agent = (
            ReactAgent.builder()
            .name("chat")
            .model(model)
            .tools(current_time)
            .system_prompt("You are a helpful assistant.")
            .saver(saver)
            .build()
        )
    except BaseException:
        close_saver(saver)
        raise
    store = mask_url(spec)
    return Partner(
        conversation=agent,
        what=f"{model.model} at {mask_url(model.base_url)}",
        model=model.model,
        thread=DEFAULT_THREAD,
        kept="memory, gone when the chat ends" if spec == "memory" else store,
        store=store,
        saver=saver,
        secrets=(url_password(model.base_url),),
    )


def run_chat(
    options: ChatOptions, read: Callable[[], str], out: IO[str], err: IO[str] | None = None
) -> int:
    """Chat on a kept thread with the built-in agent, or with ``options.target``;
    ``read()`` gives the user's lines (``EOFError`` at the end). Returns 0 when the user
    ends the chat; ``CliError`` for settings that cannot work."""
    canceller = Canceller()
    client = canceller.client(timeout=TIMEOUT)
    chosen: Partner | None = None
    try:
        if options.target is not None:
            chosen = open_target(options)
        else:
            chosen = _builtin(options, canceller, client)
        mask = Masker(
            [
                os.environ.get("OPENAI_API_KEY", "").strip(),
                url_password(options.saver or ""),
                *chosen.secrets,
            ]
        )
        thread = options.thread or chosen.thread
        labels = {"thread": thread, "model": chosen.model, "saver": chosen.store}
        chat = _Chat(
            chosen.conversation, canceller, labels, out=out, err=err or sys.stderr, mask=mask
        )
        print(
            mask(
                f"chatting with {chosen.what} on thread '{thread}' (kept in {chosen.kept}); "
                "/help lists the commands, Ctrl-D quits"
            ),
            file=out,
        )
        return chat.loop(read)
    finally:
        client.close()
        if chosen is not None:
            close_saver(chosen.saver)


def stdin_reader() -> str:
    """Prompt with ``> `` on stdout and read a line of stdin (``EOFError`` at its end)."""
    sys.stdout.write("> ")
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")

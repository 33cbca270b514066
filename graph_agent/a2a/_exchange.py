"""The wire side of a remote A2A agent, over a2a-sdk's client: one exchange
(a message sent, the task's events read until the task ends or asks for input).
Every failure becomes a ``RemoteA2AError`` that says what, where and how to fix it."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    AgentCard,
    Artifact,
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import A2AError

from ..messages import DATA, FILES
from ._card import client
from ._parts import Said
from .errors import RemoteA2AError

logger = logging.getLogger(__name__)

__all__ = ["DONE", "PAUSED", "Remote", "Reply", "exchange", "message", "state_name"]

DONE = "completed"
PAUSED = "input-required"
# The states a task stops in for good, besides DONE: the remote gave up on it.
_ENDED_BADLY = {"failed", "rejected", "canceled"}
_AUTH = "auth-required"

Say = Callable[[str], None]  # a piece of the answer's text, as it streams
Tell = Callable[[Mapping[str, Any]], None]  # an event of the remote task, summed up


def state_name(state: int) -> str:
    """A task state as the A2A spec names it (``TASK_STATE_INPUT_REQUIRED`` ->
    ``"input-required"``)."""
    name: str = TaskState.Name(state)
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


@dataclasses.dataclass(frozen=True)
class Remote:
    """Where a remote agent is and how to reach it."""

    url: str
    card: AgentCard
    headers: Mapping[str, str]
    timeout: float

    async def http(self) -> httpx.AsyncClient:
        return await client(self.headers, self.timeout)


@dataclasses.dataclass(frozen=True)
class Reply:
    """How an exchange ended: the task's ``state`` (``"completed"`` or ``"input-required"``),
    the answer's (or the question's) ``text``, and the ids to continue with; ``files`` and
    ``data`` are what its file and data parts held (``_parts``: the text names them)."""

    state: str
    text: str
    task_id: str
    context_id: str
    files: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    data: list[Any] = dataclasses.field(default_factory=list)


def message(parts: Sequence[Part], context_id: str | None, task_id: str | None) -> Message:
    """A user message of ``parts``, on the remote context and task when there are ones."""
    sent = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=parts)
    if context_id:
        sent.context_id = context_id
    if task_id:
        sent.task_id = task_id
    return sent


async def exchange(
    remote: Remote,
    name: str,
    sent: Message,
    say: Say,
    tell: Tell,
) -> Reply:
    """Send ``sent`` to the remote agent (streaming when its card says it streams) and read
    its task's events until the task completes or asks for input. ``say`` gets each piece of
    the answer's text as it comes, ``tell`` a summary of each event. A task that fails, is
    rejected or canceled, or asks for credentials raises ``RemoteA2AError``."""
    where = f"remote A2A agent '{name}' at {remote.url}"
    config_streams = remote.card.capabilities.streaming
    run = _Run(say, tell)
    try:
        async with await remote.http() as http:
            config = ClientConfig(httpx_client=http, streaming=config_streams)
            client = ClientFactory(config).create(remote.card)
            try:
                async for event in client.send_message(SendMessageRequest(message=sent)):
                    run.read(event)
                    if run.stopped():
                        break
            except asyncio.CancelledError:  # our run was cancelled: so is the remote task
                await _cancel(client, run, remote)
                raise
            finally:
                await client.close()
    except A2AError as error:
        raise _failure(error, where, remote) from None
    except httpx.HTTPError as error:  # what the SDK did not wrap (reading a stream)
        raise RemoteA2AError(f"{where}: {error!r}", url=remote.url) from None
    except ValueError as error:  # the SDK: no transport of the card it can speak
        raise RemoteA2AError(
            f"{where}: cannot talk to it ({error}); its card offers "
            f"{[i.protocol_binding for i in remote.card.supported_interfaces]}, and we speak "
            "JSONRPC",
            url=remote.url,
        ) from None
    return run.reply(where, remote.url)


async def _cancel(client: Client, run: _Run, remote: Remote) -> None:
    """Ask the remote to cancel the task ``run`` was reading, if it still runs (at most a few
    seconds: our run's cancel does not wait on a remote that is gone)."""
    if not run.task_id or run.stopped():
        return
    try:
        request = CancelTaskRequest(id=run.task_id)
        await asyncio.wait_for(client.cancel_task(request), min(remote.timeout, 5.0))
    except Exception as error:  # the remote may be gone, or the task already over
        logger.debug("cancelling remote task %s at %s failed: %r", run.task_id, remote.url, error)


def _failure(error: A2AError, where: str, remote: Remote) -> RemoteA2AError:
    cause = error.__cause__
    status = cause.response.status_code if isinstance(cause, httpx.HTTPStatusError) else None
    if status in (401, 403):
        return RemoteA2AError(
            f"{where} refused our credentials (HTTP {status}): pass the ones it expects, "
            "e.g. headers={'Authorization': 'Bearer <token>'}",
            url=remote.url,
        )
    if isinstance(cause, httpx.TimeoutException):
        return RemoteA2AError(
            f"{where} did not answer within {remote.timeout:g} s; check that it is up, or "
            "give a longer timeout=",
            url=remote.url,
        )
    if isinstance(cause, httpx.TransportError):
        return RemoteA2AError(
            f"cannot reach the {where} ({cause}): is it running, and is the URL right?",
            url=remote.url,
        )
    return RemoteA2AError(f"{where} answered with an error: {error}", url=remote.url)


class _Run:
    """What the events of one exchange said so far."""

    def __init__(self, say: Say, tell: Tell) -> None:
        self.say = say
        self.tell = tell
        self.task_id = ""
        self.context_id = ""
        self.state = ""
        self.status = Said("\n", [], [])
        self.files: list[dict[str, Any]] = []  # the artifacts' files and data
        self.data: list[Any] = []
        self.artifacts: dict[str, Said] = {}  # artifact id -> what it said so far
        self.streamed = False  # some text was said
        self.answer: Said | None = None  # a direct Message's

    def stopped(self) -> bool:
        return self.answer is not None or self.state in (DONE, PAUSED, _AUTH, *_ENDED_BADLY)

    def read(self, event: StreamResponse) -> None:
        if event.HasField("message"):
            self.context_id = event.message.context_id or self.context_id
            self.answer = Said("\n", [], [])
            text = self.answer.add(event.message.parts)
            self._tell("message", text=text, **_extras(self.answer.files, self.answer.data))
        elif event.HasField("task"):
            self._task(event.task)
        elif event.HasField("status_update"):
            update = event.status_update
            self.task_id, self.context_id = update.task_id, update.context_id
            self._status(update.status)
        elif event.HasField("artifact_update"):
            update = event.artifact_update
            self.task_id, self.context_id = update.task_id, update.context_id
            self._artifact(update.artifact, update.append)

    def _task(self, task: Task) -> None:
        self.task_id, self.context_id = task.id, task.context_id
        for artifact in task.artifacts:
            self._artifact(artifact, append=False)
        self._status(task.status)

    def _status(self, status: TaskStatus) -> None:
        self.state = state_name(status.state)
        self.status = Said("\n", [], [], quiet=True)
        if status.HasField("message"):
            self.status.add(status.message.parts)
        extras = _extras(self.status.files, self.status.data)
        self._tell("status", state=self.state, text=self.status.text, **extras)

    def _artifact(self, artifact: Artifact, append: bool) -> None:
        known = self.artifacts.get(artifact.artifact_id)
        if known is None or not append:
            known = self.artifacts[artifact.artifact_id] = Said("", self.files, self.data)
        files, data = len(self.files), len(self.data)
        piece = known.add(artifact.parts)
        others = any(s.text for s in self.artifacts.values() if s is not known)
        if piece and piece == known.text and others:
            piece = "\n" + piece  # a second artifact: a line of its own
            known.text = piece
        if piece:
            self.streamed = True
            self.say(piece)
        extras = _extras(self.files[files:], self.data[data:])
        self._tell("artifact", artifact_id=artifact.artifact_id, text=piece, **extras)

    def _tell(self, kind: str, **fields: Any) -> None:
        self.tell({"event": kind, "task_id": self.task_id, "context_id": self.context_id, **fields})

    def reply(self, where: str, url: str) -> Reply:
        ids = (self.task_id, self.context_id)
        if self.answer is not None:  # the remote answered with a message, not a task
            self.say(self.answer.text)
            return Reply(DONE, self.answer.text, *ids, self.answer.files, self.answer.data)
        task = f"{where}, task {self.task_id}"
        status = self.status
        if self.state == DONE:
            text = "".join(s.text for s in self.artifacts.values())
            if text:
                reply = Reply(DONE, text, *ids, self.files, self.data)
            else:
                reply = Reply(DONE, status.text, *ids, status.files, status.data)
            if not self.streamed and reply.text:
                self.say(reply.text)
            return reply
        if self.state == PAUSED:
            return Reply(PAUSED, status.text, *ids, status.files, status.data)
        said = f": {status.text}" if status.text else " (it gave no reason)"
        if self.state in _ENDED_BADLY:
            raise RemoteA2AError(f"{task} {self.state}{said}", url=url, state=self.state)
        if self.state == _AUTH:
            raise RemoteA2AError(
                f"{task} asks for credentials (auth-required){said} (give them with "
                "headers= when the agent is made)",
                url=url,
                state=self.state,
            )
        raise RemoteA2AError(
            f"{task}: the stream ended while the task was {self.state or 'not yet started'}; "
            "the remote closed it early",
            url=url,
            state=self.state or None,
        )


def _extras(files: list[dict[str, Any]], data: list[Any]) -> dict[str, Any]:
    """An event summary's files and data, when it has some."""
    extras: dict[str, Any] = {}
    if files:
        extras[FILES] = list(files)
    if data:
        extras[DATA] = list(data)
    return extras

"""A real A2A agent for the client's tests, built on a2a-sdk's own server side (its JSON-RPC
routes, request handler and task store) and served by uvicorn on a free loopback port.

What it does, by the text it is sent:

- ``fail ...``: the task fails, its status message saying why;
- ``quick ...``: a message (no task) answers ``Quick: <text>``;
- ``auth ...``: the task asks for credentials (``auth-required``);
- ``wait ...``: the task works until a client cancels it;
- ``book ...``: the task asks ``Which city?`` (``input-required``); the next message on that
  task completes it with ``Booked for <answer> (task <id>)``; ``seat ...`` asks ``Which
  seat?`` the same way, with a seat map (a file part, the URL ``SEATS``);
- ``report ...``: the answer ``Here is the report.``, then, in a second chunk of the same
  artifact, a file as bytes (``report.txt``, ``text/plain``), a file as a URL
  (``chart.png``, ``image/png``) and a data part ``{"currency": "EUR"}``;
- a message that carries files: the answer ``Got <n> files: <text>`` followed by those files,
  as they came (their bytes or URL, name and media type);
- anything else: the answer ``Echo: <text> (turn <n>)``, streamed in pieces as artifact
  updates, where ``n`` counts the messages its context has seen (a follow-up in the same
  context says ``turn 2``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from a2a.helpers.proto_helpers import (
    new_data_part,
    new_raw_part,
    new_task_from_user_message,
    new_text_message,
    new_url_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Role,
    TaskState,
)
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse

from tests.redis_servers import free_port

REPORT = b"total: 42\n"  # the bytes of the file ``report ...`` answers with
CHART = "https://files.example.com/chart.png"  # the URL of the other one
SEATS = "https://files.example.com/seats.png"  # the seat map ``seat ...`` asks with


class Scripted(AgentExecutor):
    """The remote agent's logic (see the module's docstring)."""

    def __init__(self, voice: str = "Echo") -> None:
        self.voice = voice  # what its echo starts with
        self.turns: dict[str, int] = {}  # context id -> messages seen
        self.canceled: list[str] = []  # the ids of the tasks a client cancelled

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        text = context.get_user_input()
        task = context.current_task
        if task is None and text.startswith("quick"):  # an answer without a task
            await event_queue.enqueue_event(
                new_text_message(
                    f"Quick: {text}", role=Role.ROLE_AGENT, context_id=context.context_id
                )
            )
            return
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        turn = self.turns[task.context_id] = self.turns.get(task.context_id, 0) + 1
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.complete(self._said(updater, f"Booked for {text} (task {task.id})"))
            return
        await updater.start_work()
        files = [p for p in context.message.parts if p.HasField("raw") or p.HasField("url")]
        if files:
            await updater.add_artifact([Part(text=f"Got {len(files)} files: {text}"), *files])
            await updater.complete()
        elif text.startswith("report"):
            await self._report(updater)
        elif text.startswith("fail"):
            await updater.failed(self._said(updater, "the flight API is down"))
        elif text.startswith("auth"):
            await updater.requires_auth(self._said(updater, "Sign in at the portal first."))
        elif text.startswith("wait"):
            await asyncio.Event().wait()  # until the task is cancelled
        elif text.startswith("book"):
            await updater.requires_input(self._said(updater, "Which city?"))
        elif text.startswith("seat"):
            asked = self._said(updater, "Which seat?")
            asked.parts.append(new_url_part(SEATS, "image/png", "seats.png"))
            await updater.requires_input(asked)
        else:
            answer = f"{self.voice}: {text} (turn {turn})"
            pieces = [answer[:6], answer[6:]]
            for n, piece in enumerate(pieces):
                await updater.add_artifact(
                    [Part(text=piece)],
                    artifact_id="answer",
                    append=n > 0,
                    last_chunk=n == len(pieces) - 1,
                )
            await updater.complete()

    @staticmethod
    async def _report(updater: TaskUpdater) -> None:
        await updater.add_artifact([Part(text="Here is the report.")], artifact_id="report")
        chunk = [
            new_raw_part(REPORT, "text/plain", "report.txt"),
            new_url_part(CHART, "image/png", "chart.png"),
            new_data_part({"currency": "EUR"}),
        ]
        await updater.add_artifact(chunk, artifact_id="report", append=True, last_chunk=True)
        await updater.complete()

    @staticmethod
    def _said(updater: TaskUpdater, text: str) -> Any:
        return new_text_message(
            text, role=Role.ROLE_AGENT, context_id=updater.context_id, task_id=updater.task_id
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        self.canceled.append(context.task_id)
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def card(url: str, *, streaming: bool = True, extended: bool = False) -> AgentCard:
    return AgentCard(
        name="travel",
        description="Books flights and answers travel questions.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url=url, protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming, extended_agent_card=extended),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="book", name="book", description="Books a flight", tags=["travel"])],
    )


def member_card(url: str) -> AgentCard:
    """The authenticated extended card: more said, one more skill, and its own interface
    (``/members``, where the echo says ``Member echo``)."""
    extended = card(url, extended=True)
    extended.description = "Books flights, and sees a member's bookings."
    extended.skills.append(
        AgentSkill(
            id="bookings", name="bookings", description="A member's bookings", tags=["travel"]
        )
    )
    del extended.supported_interfaces[:]
    extended.supported_interfaces.append(
        AgentInterface(protocol_binding="JSONRPC", url=f"{url}/members", protocol_version="1.0")
    )
    return extended


def app(
    url: str,
    *,
    streaming: bool = True,
    token: str | None = None,
    executor: Scripted | None = None,
    extended: bool = False,
) -> Starlette:
    """The remote agent's app; with ``token``, its JSON-RPC routes answer 401 to a request
    without ``Authorization: Bearer <token>`` (its card stays public). With ``extended``,
    its card says it has an authenticated extended card (``member_card``), which
    ``GetExtendedAgentCard`` answers."""
    served = card(url, streaming=streaming, extended=extended)
    handler = DefaultRequestHandlerV2(
        agent_executor=executor or Scripted(),
        task_store=InMemoryTaskStore(),
        agent_card=served,
        extended_agent_card=member_card(url) if extended else None,
    )
    routes = [*create_agent_card_routes(served), *create_jsonrpc_routes(handler, "/")]
    if extended:
        members = DefaultRequestHandlerV2(
            agent_executor=Scripted("Member echo"),
            task_store=InMemoryTaskStore(),
            agent_card=member_card(url),
        )
        routes += create_jsonrpc_routes(members, "/members")
    if token is None:
        return Starlette(routes=routes)

    async def guard(request: Request, call_next: Any) -> Any:
        given = request.headers.get("authorization")
        if request.method == "POST" and given != f"Bearer {token}":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        return await call_next(request)

    return Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)])


@contextmanager
def remote_agent(
    *,
    streaming: bool = True,
    token: str | None = None,
    executor: Scripted | None = None,
    extended: bool = False,
) -> Iterator[str]:
    """The remote agent served by uvicorn in a thread of this process; yields its URL."""
    options: dict[str, Any] = {"streaming": streaming, "token": token, "executor": executor}
    with served(lambda url: app(url, extended=extended, **options)) as url:
        yield url


@contextmanager
def served(make: Callable[[str], Any]) -> Iterator[str]:
    """The app ``make(url)`` served by uvicorn in a thread of this process; yields its URL."""
    import uvicorn

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = uvicorn.Server(
        uvicorn.Config(make(url), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, name=f"a2a-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on port {port}")
        time.sleep(0.01)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(10)

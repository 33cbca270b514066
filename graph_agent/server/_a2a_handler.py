"""A2A's request handling over our runs service: ``a2a-sdk``'s ``RequestHandler``, whose
methods start, read, follow and cancel runs as the Agent Protocol's routes do (the same
runs, the same threads), so that a task started over A2A is watched, answered and cancelled
over the Agent Protocol too, and the other way round. It keeps no task of its own (unlike
the SDK's ``DefaultRequestHandler`` with its ``TaskStore``): see ``_a2a_tasks``."""

from __future__ import annotations

import functools
import inspect
import logging
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any, TypeVar, cast

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE, MAX_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from ..a2a import data_value, read_parts
from ..messages import DATA, FILES
from ..runs import Run
from ._a2a_stream import MORE_IN_BATCH, task_events
from ._a2a_tasks import (
    TERMINAL,
    TaskRuns,
    build_task,
    task_runs,
    task_state,
)
from ._http import HTTPProblem
from ._run_chains import chains
from ._server import Served, Server

__all__ = ["RunsRequestHandler"]

_log = logging.getLogger("graph_agent.server")
F = TypeVar("F", bound=Callable[..., Any])

_NO_PUSH = (
    "push notifications are not served here (the server never calls an address a client "
    "names); stream the task (SendStreamingMessage), subscribe to it, or poll GetTask"
)


def _fault(error: Exception) -> InternalError:
    """What a client is told of a fault of the server's (its traceback goes to the log)."""
    _log.error("an A2A request failed", exc_info=error)
    return InternalError(message="An internal error occurred")


def _faults_hidden(method: F) -> F:
    """``method`` (a coroutine or an async generator) with a fault of the server's answered
    as A2A's internal error saying no more, as the server's other routes answer one (the
    SDK would send the exception's text); the protocol's own errors go out as they are."""
    if inspect.isasyncgenfunction(method):

        @functools.wraps(method)
        async def stream(*args: Any, **kwargs: Any) -> Any:
            inner = method(*args, **kwargs)
            try:
                async for item in inner:
                    yield item
            except A2AError:
                raise
            except Exception as error:
                raise _fault(error) from None
            finally:
                await inner.aclose()

        return cast("F", stream)

    @functools.wraps(method)
    async def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return await method(*args, **kwargs)
        except A2AError:
            raise
        except Exception as error:
            raise _fault(error) from None

    return cast("F", call)


def _server(context: ServerCallContext) -> tuple[Server, Served]:
    server: Server = context.state["server"]
    return server, context.state["served"]


def _state_name(state: TaskState) -> str:
    name: str = TaskState.Name(state)
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _history_length(params: Any) -> int | None:
    if not params.HasField("history_length"):
        return None
    if params.history_length < 0:
        raise InvalidParamsError(
            message=f"historyLength must be 0 or more, got {params.history_length}"
        )
    return int(params.history_length)


def _new_input(message: Message) -> dict[str, Any]:
    """A new task's input: the user's message (its text parts, each file and data value
    named on a line, the files and values in its metadata, as ``graph_agent.a2a`` reads a
    remote's), or a message of one data part alone, a JSON object of the graph's state
    keys, as it is."""
    if not message.parts:
        raise InvalidParamsError(
            message="the message has no parts: send a text part (or a data part, a JSON object)"
        )
    text, files, data = read_parts(message.parts)
    if len(message.parts) == 1 and len(data) == 1:
        if not isinstance(data[0], dict):
            raise InvalidParamsError(
                message="a message of one data part gives the graph's input: a JSON object "
                "of its state keys; send text for the agent to read"
            )
        return dict(data[0])
    said: dict[str, Any] = {"role": "user", "content": text}
    kept = {key: value for key, value in ((FILES, files), (DATA, data)) if value}
    if kept:
        said["response_metadata"] = kept
    return {"messages": [said]}


def _answer(message: Message) -> Any:
    """An ``input-required`` task's answer (the interrupt's resume value): the one data
    part's value, else the text; ``ContentTypeNotSupportedError`` for a file, which an
    answer cannot carry."""
    texts, data = [], []
    for number, part in enumerate(message.parts):
        if part.HasField("text"):
            texts.append(part.text)
        elif part.HasField("data"):
            data.append(data_value(part))
        else:
            raise ContentTypeNotSupportedError(
                message=f"message.parts[{number}] is a file; an answer to an input-required "
                "task is text or one data part (send the file in a new task)"
            )
    if data and not texts:
        if len(data) != 1:
            raise InvalidParamsError(
                message="an answer to an input-required task is one data part or text"
            )
        return data[0]
    if not texts:
        raise InvalidParamsError(
            message="the message has no parts: send a text part (or a data part, a JSON object)"
        )
    return "\n".join(texts)


class RunsRequestHandler(RequestHandler):
    """A2A's methods over the runs of the served agent named by the route."""

    async def _find(self, context: ServerCallContext, task_id: str) -> TaskRuns:
        server, served = _server(context)
        if not task_id:
            raise InvalidParamsError(message="give the task's id")
        found = await task_runs(server, task_id, served)
        if found is None:
            raise TaskNotFoundError(message=f"task {task_id!r} not found on {served.graph_id!r}")
        return found

    async def _start(self, params: SendMessageRequest, context: ServerCallContext) -> TaskRuns:
        """Start the run ``params.message`` asks for: a new task, or the answer of an
        ``input-required`` one (a resume on its thread)."""
        server, served = _server(context)
        if params.configuration.HasField("task_push_notification_config"):
            raise PushNotificationNotSupportedError(message=_NO_PUSH)
        message = params.message
        if message.task_id:
            task = await self._find(context, message.task_id)
            if message.context_id and message.context_id != task.context_id:
                raise InvalidParamsError(
                    message=f"contextId {message.context_id!r} is not that of task "
                    f"{task.task_id!r} ({task.context_id!r})"
                )
            state = task_state(task.head)
            if state != TaskState.TASK_STATE_INPUT_REQUIRED:
                how = (
                    "send a new message without taskId (the same contextId goes on in the "
                    "conversation)"
                    if state in TERMINAL
                    else "wait for it (SubscribeToTask, GetTask), or cancel it"
                )
                raise UnsupportedOperationError(
                    message=f"task {task.task_id!r} is {_state_name(state)}, it takes no "
                    f"message; {how}"
                )
            body = {"assistant_id": served.graph_id, "command": {"resume": _answer(message)}}
            run = await self._run(server, task.context_id, body)
            return TaskRuns([*task.runs, run])
        body = {
            "assistant_id": served.graph_id,
            "input": _new_input(message),
            "if_not_exists": "create",
        }
        run = await self._run(server, message.context_id or str(uuid.uuid4()), body)
        return TaskRuns([run])

    @staticmethod
    async def _run(server: Server, thread_id: str, body: dict[str, Any]) -> Run:
        try:
            return await server.start_run(thread_id, body)
        except HTTPProblem as problem:
            raise InvalidParamsError(message=problem.detail) from None

    @_faults_hidden
    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        server, _ = _server(context)
        length = _history_length(params.configuration)
        task = await self._start(params, context)
        if not params.configuration.return_immediately:
            await server.runs.join(task.head)
        return await build_task(server, task, length)

    @_faults_hidden
    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        server, _ = _server(context)
        task = await self._start(params, context)
        context.state[MORE_IN_BATCH] = False
        yield await build_task(server, task, 0)
        async for event in task_events(server, task, context.state):
            yield event

    @_faults_hidden
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        server, _ = _server(context)
        task = await self._find(context, params.id)
        state = task_state(task.head)
        if state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {task.task_id!r} is {_state_name(state)}: nothing more will "
                "come; read it with GetTask"
            )
        context.state[MORE_IN_BATCH] = False
        yield await build_task(server, task, 0)
        if state != TaskState.TASK_STATE_INPUT_REQUIRED:
            async for event in task_events(server, task, context.state):
                yield event

    @_faults_hidden
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        server, _ = _server(context)
        length = _history_length(params)
        return await build_task(server, await self._find(context, params.id), length)

    @_faults_hidden
    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        server, served = _server(context)
        size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        if not 1 <= size <= MAX_LIST_TASKS_PAGE_SIZE:
            raise InvalidParamsError(
                message=f"pageSize must be 1 to {MAX_LIST_TASKS_PAGE_SIZE}, got {size}"
            )
        try:
            start = int(params.page_token or 0)
        except ValueError:
            start = -1
        if start < 0:
            raise InvalidParamsError(
                message=f"pageToken {params.page_token!r} is not one this server gave"
            )
        length = _history_length(params)
        if params.context_id:
            thread_ids = [params.context_id]
        else:
            thread_ids = [
                t.thread_id for t in await server.all_threads() if t.graph_id == served.graph_id
            ]
        found: list[TaskRuns] = []
        for thread_id in thread_ids:
            runs = await server.runs.thread_runs(thread_id)
            mine = [r for r in runs if server.by_assistant.get(r.assistant_id) is served]
            found.extend(TaskRuns(chain) for chain in chains(mine))
        if params.status:
            found = [t for t in found if task_state(t.head) == params.status]
        if params.HasField("status_timestamp_after"):
            after = params.status_timestamp_after.ToDatetime().timestamp()
            found = [t for t in found if t.head.updated_at > after]
        found.sort(key=lambda t: t.head.updated_at, reverse=True)
        page = found[start : start + size]
        tasks = [await build_task(server, t, length) for t in page]
        following = start + size
        return ListTasksResponse(
            tasks=tasks,
            next_page_token=str(following) if following < len(found) else "",
            page_size=size,
            total_size=len(found),
        )

    @_faults_hidden
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        server, _ = _server(context)
        task = await self._find(context, params.id)
        state = task_state(task.head)
        if state in TERMINAL or state == TaskState.TASK_STATE_INPUT_REQUIRED:
            why = (
                "it waits for an answer, nothing runs"
                if state == TaskState.TASK_STATE_INPUT_REQUIRED
                else "it has ended"
            )
            raise TaskNotCancelableError(
                message=f"task {task.task_id!r} is {_state_name(state)}: {why}"
            )
        await server.runs.cancel(task.head, wait=True)
        return await build_task(server, await self._find(context, params.id))

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError(message=_NO_PUSH)

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError(message=_NO_PUSH)

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError(message=_NO_PUSH)

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError(message=_NO_PUSH)

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError(
            message="this agent has one card, at .well-known/agent-card.json beside its URL"
        )

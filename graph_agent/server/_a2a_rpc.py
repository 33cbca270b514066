"""The JSON-RPC endpoint of A2A: ``a2a-sdk``'s dispatcher (it reads a request, checks it,
answers a protocol error for a bad one), with what the server's own routes promise around
it: a body over the server's limit is refused, the request handler answers from the runs of
the agent the path names, and a stream is written as the Agent Protocol's is
(``_a2a_sse``)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.jsonrpc_models import InvalidRequestError, JSONParseError
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.utils.constants import PROTOCOL_VERSION_1_0
from a2a.utils.version_validator import validate_version
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Message

from ._a2a_handler import RunsRequestHandler
from ._a2a_sse import answers, sse_frames
from ._a2a_stream import QUIET_AFTER
from ._server import server_of

__all__ = ["rpc_endpoint"]


class _Context(DefaultServerCallContextBuilder):
    """The call's context, with the server and the served agent the path names."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        server = server_of(request)
        context.state["server"] = server
        context.state["served"] = server.assistant(request.path_params["assistant_id"])
        return context


async def _body_within(request: Request, limit: int) -> bytes | None:
    """The request's body, ``None`` once it is over ``limit`` bytes (not read further)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class _Dispatcher(JsonRpcDispatcher):
    """``JsonRpcDispatcher`` whose streams are written by ``_a2a_sse.sse_frames``."""

    @validate_version(PROTOCOL_VERSION_1_0)
    async def _process_streaming_request(  # type: ignore[override]
        self, request_id: str | int | None, request_obj: Any, context: ServerCallContext
    ) -> AsyncGenerator[bytes]:
        """The stream's frames, ready to write (the SDK gives them to ``_create_response``
        alone, which is ours)."""
        context.state[QUIET_AFTER] = context.state["server"].heartbeat
        if context.state.get("method") == "SendStreamingMessage":
            events = self.request_handler.on_message_send_stream(request_obj, context)
        else:
            events = self.request_handler.on_subscribe_to_task(request_obj, context)
        try:  # a protocol error before the first event is the call's answer
            first = await anext(events)
        except StopAsyncIteration:
            first = None
        return answers(events, first, request_id)

    def _create_response(
        self, context: ServerCallContext, handler_result: AsyncGenerator[Any] | dict[str, Any]
    ) -> Response:
        if not isinstance(handler_result, AsyncGenerator):
            return super()._create_response(context, handler_result)
        return StreamingResponse(
            sse_frames(handler_result, context.state),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )


def rpc_endpoint() -> Callable[[Request], Awaitable[Response]]:
    """The endpoint answering A2A's JSON-RPC requests (1.0's methods; 0.3's names too)."""
    dispatcher = _Dispatcher(RunsRequestHandler(), _Context(), enable_v0_3_compat=True)

    async def endpoint(request: Request) -> Response:
        limit = server_of(request).max_body
        body = await _body_within(request, limit)
        if body is None:
            error = InvalidRequestError(
                message=f"the request body is over {limit} bytes, the most this server reads"
            )
            return JSONResponse(build_error_response(None, error), 413)
        try:
            json.loads(body)
        except ValueError as bad:  # not UTF-8 either: the SDK would call it its own fault
            parse = JSONParseError(message=f"the request body is not JSON: {bad}")
            return JSONResponse(build_error_response(None, parse))

        async def replay() -> Message:  # the body read, for the dispatcher to read again
            return {"type": "http.request", "body": body, "more_body": False}

        return await dispatcher.handle_requests(Request(request.scope, replay))

    return endpoint

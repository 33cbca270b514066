"""The MCP SDK's stateful streamable-HTTP sessions (the revisions of the ``initialize``
handshake), each request answered with one JSON body unless it can use a stream of its own.

The transport lets a server answer a POST either way, request by request. The SDK's session
transport answers every request of a session the same way: all SSE (what ``/mcp`` needs for
progress and for asking a person), or all JSON. An SSE answer costs the server about a
millisecond more per call than a JSON one: a task group, ``sse-starlette``'s response with its
ping and disconnect tasks, and a writer task. That is what made an MCP call cost more than the
same run over the Agent Protocol (W18 in benchmarks/BASELINE.md).

So a request here is answered over SSE only when something may travel on its stream before
its answer: a ``tools/call`` that asked for progress (a ``progressToken``), or one from a
client that declared elicitation at ``initialize`` (its run may stop at an interrupt, which
``/mcp`` asks of the client on the call's stream). Every other ``tools/call``, and
``initialize``, ``ping`` and ``tools/list``, is answered in JSON. Any other method keeps the
SDK's SSE answer.

Nothing of ours can reach a call answered in JSON before its result: progress is reported
only to a call that gave a token, and ``_mcp._ask`` asks only a client that declared
elicitation and whose request can carry one (``can_send_request``, which the SDK sets false
for a JSON answer).
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any

from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

__all__ = ["McpSessions"]

_ANSWERED_IN_JSON: ContextVar[bool] = ContextVar("graph_agent_mcp_answered_in_json", default=False)
_PLAIN_METHODS = frozenset({"initialize", "ping", "tools/list"})


class _SessionTransport(StreamableHTTPServerTransport):
    """A session's transport that picks, per POST, a JSON answer or an SSE stream."""

    can_elicit = False  # what the client declared at initialize

    @property
    def is_json_response_enabled(self) -> bool:
        """Whether the request being handled is answered in one JSON body (read in the
        request's own task; the SDK's router reads ``False`` and routes as for SSE)."""
        return _ANSWERED_IN_JSON.get()

    @is_json_response_enabled.setter
    def is_json_response_enabled(self, value: bool) -> None:
        """Ignored: the answer's form is chosen per request."""

    async def handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":
            await super().handle_request(scope, receive, send)
            return
        body = await Request(scope, receive).body()  # the SDK's size limit already read it
        chosen = _ANSWERED_IN_JSON.set(self._answered_in_json(body))
        try:
            await super().handle_request(scope, _replayed(body, receive), send)
        finally:
            _ANSWERED_IN_JSON.reset(chosen)

    def _answered_in_json(self, body: bytes) -> bool:
        """Whether the request ``body`` holds is answered in JSON (see the module's doc);
        at ``initialize``, what the client can be asked is noted."""
        try:
            message = json.loads(body)
        except ValueError:
            return False  # the SDK answers the parse error
        if not isinstance(message, dict) or "id" not in message:
            return False  # not a request: the SDK acknowledges it (202) or refuses it
        method, params = message.get("method"), message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "initialize":
            capabilities = params.get("capabilities")
            self.can_elicit = isinstance(capabilities, dict) and "elicitation" in capabilities
        if method in _PLAIN_METHODS:
            return True
        if method != "tools/call" or self.can_elicit:
            return False
        meta = params.get("_meta")
        return not (isinstance(meta, dict) and meta.get("progressToken") is not None)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """``receive`` that gives ``body`` first (already read), then what ``receive`` gives."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class McpSessions(StreamableHTTPSessionManager):
    """The SDK's session manager, its sessions on transports that answer a request in JSON
    when nothing may travel on its stream."""

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is not None:  # the SDK made it: only its answers' form changes
            transport.__class__ = _SessionTransport
        return transport

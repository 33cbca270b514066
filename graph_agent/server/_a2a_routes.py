"""Every served agent over A2A 1.0 (and 0.3's method names), where LangGraph's server puts
it: JSON-RPC at ``POST /a2a/{assistant_id}`` and the agent's card at
``GET /a2a/{assistant_id}/.well-known/agent-card.json`` (``assistant_id``: the agent's name
or its assistant id; the card also at ``/.well-known/agent-card.json?assistant_id=...``, as
LangGraph's server has it). ``a2a-sdk`` parses the requests and writes the answers (its
``JsonRpcDispatcher``); ``RunsRequestHandler`` answers them from our runs."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from ._http import HTTPProblem, route
from ._server import Served, server_of

__all__ = ["a2a_routes"]

CARD_PATH = "/.well-known/agent-card.json"
_INSTALL = "A2A needs the a2a extra: pip install 'graph-agent[a2a]'"


def a2a_routes(*, secured: bool) -> list[BaseRoute]:
    """The A2A routes; with ``secured`` (the server asks for a token), each card says
    how to send it. Without ``a2a-sdk``, the routes answer 501 saying what to install."""
    try:
        from ._a2a_card import agent_card, card_json
        from ._a2a_rpc import rpc_endpoint
    except ImportError:
        paths = [("/a2a/{assistant_id}", "POST"), ("/a2a/{assistant_id}" + CARD_PATH, "GET"),
                 (CARD_PATH, "GET")]  # fmt: skip
        return [route(path, [method])(_absent) for path, method in paths]

    def answer_card(request: Request, assistant_id: str) -> Response:
        served = server_of(request).assistant(assistant_id)
        url = f"{str(request.base_url).rstrip('/')}/a2a/{quote(assistant_id, safe='')}"
        return JSONResponse(card_json(agent_card(served, url, secured=secured)))

    @route("/a2a/{assistant_id}" + CARD_PATH, ["GET"])
    async def card(request: Request) -> Response:
        return answer_card(request, request.path_params["assistant_id"])

    @route(CARD_PATH, ["GET"])
    async def card_by_query(request: Request) -> Response:
        """Where LangGraph's server puts it: ``?assistant_id=...`` (none: the one served)."""
        assistant_id = request.query_params.get("assistant_id")
        if assistant_id is None:
            names = sorted(server_of(request).served)
            if len(names) != 1:
                raise HTTPProblem(
                    404,
                    f"this server serves {len(names)} agents ({', '.join(names)}): name one "
                    f"with ?assistant_id=, or read /a2a/<name>{CARD_PATH}",
                )
            assistant_id = names[0]
        return answer_card(request, assistant_id)

    endpoint = rpc_endpoint()

    @route("/a2a/{assistant_id}", ["POST"])
    async def rpc(request: Request) -> Response:
        _served(request)  # a 404 for an agent not served, before the body is read
        return await endpoint(request)

    return [card, card_by_query, rpc]


def _served(request: Request) -> Served:
    return server_of(request).assistant(request.path_params["assistant_id"])


async def _absent(request: Request) -> Any:
    raise HTTPProblem(501, _INSTALL)

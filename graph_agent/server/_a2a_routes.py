"""Every served agent over A2A 1.0 (and 0.3's method names), where LangGraph's server puts
it: JSON-RPC at ``POST /a2a/{assistant_id}`` and the agent's card at
``GET /a2a/{assistant_id}/.well-known/agent-card.json`` (``assistant_id``: the agent's name
or its assistant id). ``a2a-sdk`` parses the requests and writes the answers (its
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
        return [route("/a2a/{assistant_id}", ["POST"])(_absent), route(
            "/a2a/{assistant_id}" + CARD_PATH, ["GET"])(_absent)]  # fmt: skip

    @route("/a2a/{assistant_id}" + CARD_PATH, ["GET"])
    async def card(request: Request) -> Response:
        served = _served(request)
        url = (
            f"{str(request.base_url).rstrip('/')}/a2a/{quote(request.path_params['assistant_id'])}"
        )
        return JSONResponse(card_json(agent_card(served, url, secured=secured)))

    endpoint = rpc_endpoint()

    @route("/a2a/{assistant_id}", ["POST"])
    async def rpc(request: Request) -> Response:
        _served(request)  # a 404 for an agent not served, before the body is read
        return await endpoint(request)

    return [card, rpc]


def _served(request: Request) -> Served:
    return server_of(request).assistant(request.path_params["assistant_id"])


async def _absent(request: Request) -> Any:
    raise HTTPProblem(501, _INSTALL)

"""The authenticated extended card: a remote whose public card says it has one
(``capabilities.extendedAgentCard``, 0.3's ``supportsAuthenticatedExtendedCard``) gives it,
through ``GetExtendedAgentCard``, only to a client with its bearer token; ``RemoteA2AAgent``
fetches it with its headers and uses it (its description, skills and interface). A failure
to fetch it says the URL and the HTTP status."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from graph_agent.a2a import RemoteA2AAgent, RemoteA2AError

from ._remote_server import remote_agent, served

TOKEN = "s3cret"
MEMBER = {"Authorization": f"Bearer {TOKEN}"}


def test_with_its_token_the_extended_card_is_the_one_used() -> None:
    with remote_agent(token=TOKEN, extended=True) as url:
        remote = RemoteA2AAgent(url, headers=MEMBER)
        assert remote.description == "Books flights, and sees a member's bookings."
        assert [skill.id for skill in remote.card.skills] == ["book", "bookings"]
        assert remote.as_tool().tool_definition.description == remote.description
        # its interface is the extended card's: /members, whose echo says so
        assert remote.call("hello").text == "Member echo: hello (turn 1)"


@pytest.mark.parametrize("headers", [None, {"Authorization": "Bearer wrong"}])
def test_without_its_token_the_error_names_the_url_and_the_status(
    headers: dict[str, str] | None,
) -> None:
    with remote_agent(token=TOKEN, extended=True) as url, pytest.raises(RemoteA2AError) as raised:
        RemoteA2AAgent(url, headers=headers)
    message = str(raised.value)
    assert message.startswith(
        f"the A2A agent at {url} says it has an authenticated extended agent card, and "
        f"fetching it (GetExtendedAgentCard at {url}) failed: HTTP 401, it refused our "
        "credentials: pass the ones it expects, e.g. headers={'Authorization': 'Bearer <token>'}"
    ), message
    assert raised.value.url == url


def test_a_remote_without_an_extended_card_is_read_from_its_public_card() -> None:
    with remote_agent(token=TOKEN) as url:
        remote = RemoteA2AAgent(url, headers=MEMBER)
        assert remote.description == "Books flights and answers travel questions."
        assert remote.call("hello").text == "Echo: hello (turn 1)"


def legacy_card_app(url: str) -> Starlette:
    """A 0.3 card (``supportsAuthenticatedExtendedCard``) whose JSON-RPC endpoint fails."""

    async def card(request: Request) -> Response:
        return JSONResponse(
            {
                "name": "legacy",
                "description": "An A2A 0.3 agent.",
                "url": f"{url}/rpc",
                "protocolVersion": "0.3.0",
                "version": "1",
                "capabilities": {},
                "supportsAuthenticatedExtendedCard": True,
                "defaultInputModes": ["text/plain"],
                "defaultOutputModes": ["text/plain"],
                "skills": [],
            }
        )

    async def broken(request: Request) -> Response:
        return Response(json.dumps({"detail": "down"}), status_code=503)

    return Starlette(
        routes=[
            Route("/.well-known/agent-card.json", card),
            Route("/rpc", broken, methods=["POST"]),
        ]
    )


def test_a_0_3_card_s_extended_card_is_fetched_too_and_its_failure_is_clear() -> None:
    with served(legacy_card_app) as url, pytest.raises(RemoteA2AError) as raised:
        RemoteA2AAgent(url)
    message = str(raised.value)
    assert message == (
        f"the A2A agent at {url} says it has an authenticated extended agent card, and "
        f"fetching it (GetExtendedAgentCard at {url}/rpc) failed: HTTP 503"
    )

"""Reading a remote agent's card, on the event loop: the public card at its well-known URL,
then, when the card says the agent has one (``capabilities.extendedAgentCard``; 0.3's
``supportsAuthenticatedExtendedCard``), its authenticated extended card, fetched with our
headers through the SDK's ``GetExtendedAgentCard``; that card is the one we use (its
description, skills and interfaces). Every failure is a ``RemoteA2AError`` that says what,
where and how to fix it."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Mapping
from typing import Any

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import AgentCard, GetExtendedAgentCardRequest
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from a2a.utils.errors import A2AError

from .errors import RemoteA2AError

__all__ = ["card_url", "client", "parse_card", "read_card", "timeout"]

_REFUSED = "pass the ones it expects, e.g. headers={'Authorization': 'Bearer <token>'}"


_TLS: list[ssl.SSLContext] = []  # the one TLS context every remote's client shares


async def client(headers: Mapping[str, str], seconds: float) -> httpx.AsyncClient:
    """An HTTP client for a remote agent. Its TLS context (the CA bundle, which takes tens of
    milliseconds to load) is made once, on a worker thread: never on the event loop."""
    if not _TLS:
        made = await asyncio.to_thread(httpx.create_ssl_context)
        if not _TLS:
            _TLS.append(made)
    return httpx.AsyncClient(
        headers=dict(headers), timeout=timeout(seconds), follow_redirects=True, verify=_TLS[0]
    )


def timeout(seconds: float) -> httpx.Timeout:
    """How long a remote may stay silent (``read``: a streamed task sends its events as it
    goes), and at most 10 s to connect."""
    return httpx.Timeout(seconds, connect=min(seconds, 10.0))


def card_url(url: str) -> str:
    """Where the agent card of the agent at ``url`` is (``url`` itself when it names a
    ``.json`` file)."""
    if url.endswith(".json"):
        return url
    return url.rstrip("/") + AGENT_CARD_WELL_KNOWN_PATH


async def read_card(url: str, headers: Mapping[str, str], seconds: float) -> AgentCard:
    """The card of the agent at ``url``: its extended card when it has one, else its public
    card. A clear error when the agent is unreachable, refuses us, has no card there, serves
    an invalid one, or does not give its extended card."""
    async with await client(headers, seconds) as http:
        card = await _public(http, url, seconds)
        if card.capabilities.extended_agent_card:
            card = await _extended(http, card, url)
    return card


async def _public(http: httpx.AsyncClient, url: str, seconds: float) -> AgentCard:
    where = card_url(url)
    try:
        response = await http.get(where)
    except httpx.TimeoutException:
        raise RemoteA2AError(
            f"the A2A agent at {url} did not answer within {seconds:g} s (reading its card "
            f"at {where}); check that it is up, or give a longer timeout=",
            url=url,
        ) from None
    except httpx.HTTPError as error:
        raise RemoteA2AError(
            f"cannot reach the A2A agent at {url} ({error}; reading its card at {where}): "
            "is it running, and is the URL right?",
            url=url,
        ) from None
    if response.status_code in (401, 403):
        raise RemoteA2AError(
            f"the A2A agent at {url} refused our credentials (HTTP {response.status_code} for "
            f"its card at {where}): {_REFUSED}",
            url=url,
        )
    if response.status_code != 200:
        raise RemoteA2AError(
            f"no agent card at {where} (HTTP {response.status_code}): give the agent's base "
            "URL (its card is at /.well-known/agent-card.json under it) or its card's URL",
            url=url,
        )
    return parse_card(response.content, url, where)


async def _extended(http: httpx.AsyncClient, public: AgentCard, url: str) -> AgentCard:
    """The authenticated extended card, asked of the interface the public card names."""
    client = None
    try:
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(public)
        card = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
    except (A2AError, httpx.HTTPError, ValueError) as error:
        raise _extended_failure(error, public, url) from None
    finally:
        if client is not None:
            await client.close()
    if not card.supported_interfaces:  # it adds to the public card, and keeps its interfaces
        card.supported_interfaces.extend(public.supported_interfaces)
    if not card.name:
        card.name = public.name
    return card


def _extended_failure(error: Exception, public: AgentCard, url: str) -> RemoteA2AError:
    where = ", ".join(i.url for i in public.supported_interfaces) or url
    what = (
        f"the A2A agent at {url} says it has an authenticated extended agent card, and "
        f"fetching it (GetExtendedAgentCard at {where}) failed"
    )
    cause = error.__cause__ if isinstance(error, A2AError) else error
    if isinstance(cause, httpx.HTTPStatusError):
        status = cause.response.status_code
        if status in (401, 403):
            return RemoteA2AError(
                f"{what}: HTTP {status}, it refused our credentials: {_REFUSED}", url=url
            )
        return RemoteA2AError(f"{what}: HTTP {status}", url=url)
    if isinstance(cause, httpx.TimeoutException):
        return RemoteA2AError(f"{what}: it did not answer in time", url=url)
    if isinstance(cause, httpx.TransportError):
        return RemoteA2AError(f"{what}: cannot reach it ({cause})", url=url)
    return RemoteA2AError(f"{what}: {type(error).__name__}: {error}", url=url)


def parse_card(content: bytes | str | Mapping[str, Any], url: str, where: str) -> AgentCard:
    """An agent card from its JSON; a clear error when it is not one."""
    problem = None
    try:
        data = dict(content) if isinstance(content, Mapping) else json.loads(content)
        card = parse_agent_card(data)
    except Exception as error:  # not JSON, or protobuf's ParseError: not a card
        problem = str(error)
    else:
        if not card.name:
            problem = "it has no name"
        elif not card.supported_interfaces:
            problem = "it names no interface (supportedInterfaces) to send messages to"
    if problem is not None:
        raise RemoteA2AError(
            f"the agent card at {where} is not a valid A2A agent card ({problem}); check the "
            "URL, and that the agent speaks A2A 1.0 or 0.3",
            url=url,
        )
    return card

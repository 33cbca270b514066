"""A served agent's A2A card: its name and description, a skill for the agent and one per
tool, what it can do (streaming; no push notifications: the server calls no address a client
names), the interface it speaks (JSON-RPC, A2A 1.0 and 0.3) and, when the server asks for a token,
how to send it."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, TransportProtocol

from ._server import Served

__all__ = ["agent_card", "card_json"]

MODES = ["text/plain", "application/json"]
BEARER = "bearer"


def _skills(served: Served) -> list[AgentSkill]:
    """A skill for the agent itself, then one per tool it calls (its name and description)."""
    about = served.description or f"the {served.graph_id} agent"
    skills = [
        AgentSkill(
            id=served.graph_id,
            name=served.graph_id,
            description=about,
            tags=["agent"],
            input_modes=MODES,
            output_modes=MODES,
        )
    ]
    for tool in getattr(served.target, "tools", None) or ():
        definition = getattr(tool, "tool_definition", None)
        if definition is None:
            continue
        skills.append(
            AgentSkill(
                id=f"{served.graph_id}.{definition.name}",
                name=definition.name,
                description=definition.description or definition.name,
                tags=["tool"],
            )
        )
    return skills


def agent_card(served: Served, url: str, *, secured: bool) -> AgentCard:
    """``served``'s card, its JSON-RPC interface at ``url``; ``secured``: the bearer token
    it needs (``Authorization: Bearer <token>``)."""
    card = AgentCard(
        name=served.graph_id,
        description=served.description or f"The {served.graph_id} agent, served by graph-agent",
        # one endpoint, both versions: 1.0's method names with its header, 0.3's without
        supported_interfaces=[
            AgentInterface(
                url=url, protocol_binding=TransportProtocol.JSONRPC.value, protocol_version=v
            )
            for v in (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3)
        ],
        version=version("graph-agent"),
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=_skills(served),
    )
    if secured:
        card.security_schemes[BEARER].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="the server's token (graph-agent serve --token)",
                )
            )
        )
        card.security_requirements.append(
            SecurityRequirement(schemes={BEARER: StringList(list=[])})
        )
    return card


def card_json(card: AgentCard) -> dict[str, Any]:
    """The card as JSON, with the fields an A2A 0.3 client reads too."""
    return agent_card_to_dict(card)

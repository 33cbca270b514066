"""Remote A2A agents (extra ``a2a``: ``a2a-sdk`` 1.x, which speaks A2A 1.0 and 0.3).

``RemoteA2AAgent(url)`` reads the agent card of an agent served over A2A and stands where a
``ReactAgent`` stands: called on a thread, a sub-agent of a flow, or a tool::

    from graph_agent.a2a import RemoteA2AAgent

    travel = RemoteA2AAgent("https://travel.example.com")  # in async code:
    # travel = await RemoteA2AAgent.aconnect("https://travel.example.com")
    agent = ReactAgent.builder().name("assistant").model(model).tools(travel.as_tool()).build()
"""

from __future__ import annotations

try:
    import a2a.client  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised in a subprocess
    if isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] == "a2a":
        raise ImportError(
            "graph_agent.a2a needs the A2A SDK, which is not installed: "
            "pip install 'graph-agent[a2a]'"
        ) from error
    raise ImportError(
        f"graph_agent.a2a needs the A2A SDK, which is installed but does not import ({error}); "
        "pip install --upgrade 'graph-agent[a2a]'"
    ) from error

from ._parts import data_value, read_parts
from .errors import RemoteA2AError
from .remote import RemoteA2AAgent, RemoteA2ATool

__all__ = ["RemoteA2AAgent", "RemoteA2AError", "RemoteA2ATool", "data_value", "read_parts"]

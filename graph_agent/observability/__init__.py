"""OpenTelemetry spans for every run, by the GenAI semantic conventions (extra ``otel``).

``instrument()`` traces every graph and agent run in the process::

    from graph_agent.observability import instrument

    instrument()  # spans go to the global TracerProvider your application set up

A run is one trace: ``invoke_agent {name}`` (a ``ReactAgent``) or ``invoke_workflow {graph}``
(a graph) at the root, a span per node task under it, and ``chat {model}`` and
``execute_tool {tool}`` spans (right under ``invoke_agent`` for an agent's own calls);
subgraphs nest under the node that runs them, sub-agents under the tool call that runs them. A run that resumes a paused thread links to the run that
paused it. Message content is recorded only with ``capture_content=True``.
"""

from __future__ import annotations

try:
    import opentelemetry.trace  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised in a subprocess without the extra
    raise ImportError(
        "graph_agent.observability needs OpenTelemetry's API, which is not installed: "
        "pip install 'graph-agent[otel]' (and an SDK and exporter for your backend, e.g. "
        "opentelemetry-sdk and opentelemetry-exporter-otlp)"
    ) from error

from ._instrument import instrument, uninstrument
from ._spans import OpenTelemetryListener

__all__ = ["OpenTelemetryListener", "instrument", "uninstrument"]

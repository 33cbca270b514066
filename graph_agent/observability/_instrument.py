"""Installing the tracer for every run of the process."""

from __future__ import annotations

import threading

from opentelemetry.trace import TracerProvider

from ..events import install_listener, uninstall_listener
from ._spans import OpenTelemetryListener

__all__ = ["instrument", "uninstrument"]

_current: OpenTelemetryListener | None = None
_lock = threading.Lock()


def instrument(
    tracer_provider: TracerProvider | None = None, capture_content: bool = False
) -> OpenTelemetryListener:
    """Trace every graph and agent run in this process from the next run on; return the
    listener that does it.

    ``tracer_provider`` defaults to OpenTelemetry's global one (``trace.set_tracer_provider``).
    With ``capture_content=True`` spans also carry the messages sent to and received from
    models and tools' arguments and results (they may hold personal data: off by default).
    Calling it again replaces the previous instrumentation; ``uninstrument()`` removes it.
    """
    global _current
    listener = OpenTelemetryListener(tracer_provider, capture_content=capture_content)
    with _lock:
        if _current is not None:
            uninstall_listener(_current)
        install_listener(listener)
        _current = listener
    return listener


def uninstrument() -> bool:
    """Stop tracing new runs; ``False`` if ``instrument()`` was not in effect."""
    global _current
    with _lock:
        listener, _current = _current, None
    return listener is not None and uninstall_listener(listener)

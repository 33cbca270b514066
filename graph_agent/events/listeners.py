"""Listeners every run gets: those installed for the whole process, and the DEBUG log.

``install_listener(listener)`` (exported by ``graph_agent.events``) adds a listener to every
run of every graph and agent in the process, beside the listeners they were built with;
``graph_agent.observability.instrument()`` installs its tracer this way. With nothing
installed and DEBUG logging off, a run pays one tuple test and one ``isEnabledFor`` call.
``run_listeners`` is the engine's side: the listeners a new run gets.
"""

from __future__ import annotations

import threading
from typing import Any

from ._log import with_event_log

__all__ = ["install_listener", "installed_listeners", "run_listeners", "uninstall_listener"]

_installed: tuple[Any, ...] = ()
_lock = threading.Lock()


def install_listener(listener: Any) -> None:
    """Give every run in this process ``listener`` (an object with ``on_event(event)``), from
    the next run on. Installing one listener twice installs it once."""
    global _installed
    if not callable(getattr(listener, "on_event", None)):
        raise TypeError(
            f"install_listener: {listener!r} has no on_event(event) method; see graph_agent.events"
        )
    with _lock:
        if not any(existing is listener for existing in _installed):
            _installed = (*_installed, listener)


def uninstall_listener(listener: Any) -> bool:
    """Stop giving new runs ``listener``; ``False`` if it was not installed."""
    global _installed
    with _lock:
        kept = tuple(existing for existing in _installed if existing is not listener)
        removed = len(kept) != len(_installed)
        _installed = kept
    return removed


def installed_listeners() -> tuple[Any, ...]:
    """The listeners installed for the whole process, in the order they were installed."""
    return _installed


def run_listeners(listeners: tuple[Any, ...]) -> tuple[Any, ...]:
    """A run's listeners: its own, then the installed ones it does not have already, then an
    ``EventLog`` when the ``graph_agent`` logger is enabled for DEBUG."""
    installed = _installed
    if installed:
        extra = tuple(i for i in installed if not any(i is own for own in listeners))
        listeners = (*listeners, *extra) if extra else listeners
    return with_event_log(listeners)

"""Which error messages a client may be shown, whatever the protocol that shows them: its own
message for Python's plain errors and ours, ``HIDDEN_MESSAGE`` for a third party's (it may
hold a secret). A run's log keeps a failure as a client may see it (``_codec``)."""

from __future__ import annotations

from typing import Final

__all__ = ["HIDDEN_MESSAGE", "error_text"]

HIDDEN_MESSAGE: Final = "An internal error occurred"
"""What a client is shown instead of the message of an error that is neither Python's nor
ours (``error_text``)."""

# Python's errors whose message a client sees, as LangGraph's server shows them; any other
# error of Python's (an OSError names files, a StopIteration carries a value) is hidden.
_PYTHONS_SHOWN: Final = (
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    RuntimeError,
    RecursionError,
    TimeoutError,
)
# The packages whose errors are ours: we write their messages, with no secret in them.
_OUR_PACKAGES: Final = frozenset({"graph_agent", "checkpoint", "hooks"})


def _own_words(error: BaseException) -> bool:
    """Whether ``error``'s class is one of Python's shown above (not a subclass another
    library defines) or one of our packages' (``graph_agent.errors``, ``checkpoint.errors``,
    the built-in hooks' errors: by where the class is defined, whatever its bases)."""
    home = type(error).__module__.partition(".")[0]
    if home == "builtins":
        return isinstance(error, _PYTHONS_SHOWN)
    return home in _OUR_PACKAGES


def error_text(error: BaseException) -> str:
    """The message a client is shown for ``error``, wherever a server shows one (a failed
    run's ``error`` event, ``__error__`` of ``wait`` and ``join``, a task's error in the
    ``tasks`` and ``debug`` modes, the errors of ``run_events``): its own message when it is
    one of Python's errors (``ValueError``, ``TypeError``, ``KeyError``, ``AttributeError``,
    ``RuntimeError``, ``RecursionError``, ``TimeoutError``) or ours, and so is every error it
    was raised from or while handling (an error of ours that wraps another, as a tool's
    failure does, quotes its message); otherwise ``HIDDEN_MESSAGE``: a third party's message
    may hold a secret (a password, a key, a customer's data). The server's log has it all."""
    pending: list[BaseException] = [error]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if not _own_words(current):
            return HIDDEN_MESSAGE
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
    return str(error)

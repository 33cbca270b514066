"""The Redis I/O of a RedisSaver's logic, as effects (``checkpoint.effects``), and the retried
call around them.

Each operation of the saver (write, read, list a page, delete, the eviction check) is written
once, as a generator of these effects; ``put`` runs it with ``perform`` (the sync client and
its lean connections), ``aput`` with ``aperform`` (the async client). The driver's context is
the saver: a script call reads the saver's ``_calls`` / ``_acalls`` when it runs.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..effects import Effect, Steps
from ..retry import Backoff, retried
from ._errors import retry_pause, translate
from ._lean import script_call

__all__ = ["Command", "ScriptCall", "attempts"]


class ScriptCall:
    """One of the saver's Lua scripts run with ``keys`` and ``args``: ``script`` (registered
    on the sync client) on ``saver._calls`` in a sync run, ``ascript`` (on the async client)
    on ``saver._acalls`` in an async one (``_lean.script_call``). ``meanwhile`` runs while
    the server runs it."""

    __slots__ = ("args", "ascript", "keys", "meanwhile", "script")

    def __init__(
        self,
        script: Any,
        ascript: Any,
        keys: Sequence[str],
        args: Sequence[Any],
        meanwhile: Callable[[], object] | None = None,
    ) -> None:
        self.script = script
        self.ascript = ascript
        self.keys = keys
        self.args = args
        self.meanwhile = meanwhile

    def attempt(self, n: int) -> Steps[Any]:
        """One attempt at it (``retry.retried``'s ``attempt``)."""
        return (
            yield from script_call(self.script, self.ascript, self.keys, self.args, self.meanwhile)
        )


class Command(Effect):
    """A client's command: ``method(*args)``, called as it is in a sync call and awaited in an
    async one (the logic names the sync or the async client's method)."""

    __slots__ = ("args", "method")

    def __init__(self, method: Callable[..., Any], *args: Any) -> None:
        self.method = method
        self.args = args

    def run(self, context: Any) -> Any:
        return self.method(*self.args)

    def arun(self, context: Any) -> Awaitable[Any]:
        return self.method(*self.args)  # type: ignore[no-any-return]

    def attempt(self, n: int) -> Steps[Any]:
        """One attempt at it (``retry.retried``'s ``attempt``)."""
        return (yield self)


def attempts(
    effect: ScriptCall | Command,
    client: Any,
    thread_id: str,
    operation: str,
    retries: int,
    backoff: float,
    sleep: Callable[[float], Any] | None,
) -> Steps[Any]:
    """``effect``'s value, tried again while the connection is lost (``retries`` times at
    most: ``retry.retried``), after failed attempt ``n`` pausing ``backoff * 2**(n - 1)``
    seconds times a random factor in [0.5, 1.5) (``Backoff``, uncapped); what still fails
    raises the saver's error for ``operation`` on ``thread_id`` (``_errors.translate``),
    naming ``client``'s server. ``sleep`` pauses a sync call (an async one awaits
    ``asyncio.sleep``)."""

    def pause_after(error: Exception, attempt: int) -> float | None:
        pauses = Backoff(initial=backoff, factor=2.0, maximum=math.inf, jitter=True)
        return retry_pause(error, client, thread_id, operation, attempt, retries, pauses)

    try:
        return (yield from retried(effect.attempt, pause_after, sleep=sleep))
    except Exception as error:
        import redis

        if not isinstance(error, redis.RedisError):
            raise
        raise translate(error, client=client, thread_id=thread_id, operation=operation) from error

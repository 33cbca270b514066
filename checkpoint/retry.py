"""The one backoff formula and the one retry loop, shared by every part that retries: a
node's ``RetryPolicy``, the model and tool retry interceptors, the OpenAI client and the
Redis saver.

The loop is logic written once (``retried`` is a generator of effects, see
``checkpoint.effects``): it yields the attempt's own effects and a ``Sleep`` between
attempts, so the same loop runs under the sync and the async driver.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from .effects import Effect, Sleep

__all__ = ["Backoff", "retried"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Backoff:
    """Capped exponential backoff: after failed attempt ``n`` (1 for the first), wait
    ``initial * factor ** (n - 1)`` seconds, at most ``maximum``, times a random factor in
    ``spread`` (default [0.5, 1.5)) when ``jitter``."""

    initial: float = 0.5
    factor: float = 2.0
    maximum: float = 30.0
    jitter: bool = True
    spread: tuple[float, float] = (0.5, 1.5)

    def __post_init__(self) -> None:
        for name in ("initial", "factor", "maximum"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"Backoff.{name} must be a number >= 0, got {value!r}")
        low, high = self.spread
        if not 0 <= low <= high:
            raise ValueError(
                f"Backoff.spread must be (low, high) with 0 <= low <= high, got {self.spread!r}"
            )

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1 for the first)."""
        interval = min(self.maximum, self.initial * self.factor ** (attempt - 1))
        if not self.jitter:
            return float(interval)
        low, high = self.spread
        return float(interval * (low + (high - low) * random.random()))


def retried(
    attempt: Callable[[int], Generator[Effect, Any, T]],
    pause_after: Callable[[Exception, int], float | None],
    *,
    sleep: Callable[[float], Any] | None = None,
    asleep: Callable[[float], Awaitable[Any]] | None = None,
) -> Generator[Effect, Any, T]:
    """Run ``attempt(1)``, ``attempt(2)``, ... (each a generator of effects) until one
    returns; its value. After attempt ``n`` fails with an ``Exception``,
    ``pause_after(error, n)`` says how many seconds to wait before the next one, or ``None``
    to give up: the error is raised as it is. (``pause_after`` is where a caller logs, adds
    notes or sends events.) A ``BaseException`` (a cancel, Ctrl-C) is never retried."""
    n = 1
    while True:
        try:
            return (yield from attempt(n))
        except Exception as error:
            pause = pause_after(error, n)
            if pause is None:
                raise
        yield Sleep(pause, sleep, asleep)
        n += 1

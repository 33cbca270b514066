"""``RetryPolicy``: run a failing task again, with backoff."""

from __future__ import annotations

import dataclasses

from checkpoint.retry import Backoff

__all__ = ["RetryPolicy"]


@dataclasses.dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how soon a node's failing task runs again.

    Attempt ``n`` (``n >= 2``) waits ``initial_interval * backoff_factor ** (n - 2)`` seconds,
    at most ``max_interval``, times a random factor in [0.5, 1.5) with ``jitter``. Only an
    exception that is an instance of ``retry_on`` (a class, a tuple of classes, or a
    predicate ``exc -> bool``) is retried; only the failing task runs again, never its
    siblings. Every failed attempt is a ``node_error`` event.
    """

    max_attempts: int = 3
    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 30.0
    jitter: bool = True
    retry_on: type[BaseException] | tuple[type[BaseException], ...] | object = (Exception,)

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts!r}")
        for name in ("initial_interval", "backoff_factor", "max_interval"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"RetryPolicy.{name} must be a number >= 0, got {value!r}")

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether a task that failed on ``attempt`` (1 for the first) with ``error`` runs
        again."""
        if attempt >= self.max_attempts or not isinstance(error, Exception):
            return False
        retry_on = self.retry_on
        if isinstance(retry_on, (type, tuple)):
            return isinstance(error, retry_on)
        return bool(retry_on(error))  # type: ignore[operator]

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (``checkpoint.retry.Backoff``, the
        one backoff formula, with this policy's numbers)."""
        return self.backoff.delay(attempt)

    @property
    def backoff(self) -> Backoff:
        """This policy's waits as a ``checkpoint.retry.Backoff``."""
        return Backoff(
            float(self.initial_interval),
            float(self.backoff_factor),
            float(self.max_interval),
            bool(self.jitter),
        )

"""The one effect protocol: logic written once as a generator of effects, run by a thin
sync driver (``perform``) or async driver (``aperform``).

A piece of logic that does I/O (calls a node, a model, Redis; sleeps before a retry) is a
generator that yields an ``Effect`` for each such step and receives its result back (or has
its exception thrown in, at the ``yield``). The logic decides everything; the drivers only
perform: ``effect.run(context)`` in a sync run, ``await effect.arun(context)`` in an async
one. ``context`` is whatever the caller hands the driver (the graph engine passes its saver
and run; most logic needs none).

This module sits at the bottom of the layers (``checkpoint`` imports nothing from
``graph_agent``) so that the savers, the engine, the agent, the tools and the model client
share it. See docs/architecture.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

__all__ = ["Effect", "Sleep", "Steps", "aperform", "perform"]

T = TypeVar("T")


class Effect:
    """Something a piece of logic needs done: ``run`` does it in a sync run, ``arun`` in an
    async one. Both get the driver's ``context`` (``None`` unless the caller gave one)."""

    __slots__ = ()

    def run(self, context: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no sync form")

    def arun(self, context: Any) -> Awaitable[Any]:
        """What to await. (An effect that only passes on an inner coroutine returns it as it
        is: one coroutine less waiting in every run is one object less for the collector.)"""
        raise NotImplementedError(f"{type(self).__name__} has no async form")


Steps = Generator[Effect, Any, T]
"""Logic as the drivers see it: yields effects, receives their results, returns a value."""


class Sleep(Effect):
    """Wait ``seconds`` (before a retry): ``time.sleep`` / ``asyncio.sleep`` unless the
    logic names its own (a test's clock, a client's injected sleep)."""

    __slots__ = ("asleep", "seconds", "sleep")

    def __init__(
        self,
        seconds: float,
        sleep: Callable[[float], Any] | None = None,
        asleep: Callable[[float], Awaitable[Any]] | None = None,
    ) -> None:
        self.seconds = seconds
        self.sleep = sleep
        self.asleep = asleep

    def run(self, context: Any) -> None:
        (self.sleep or time.sleep)(self.seconds)

    def arun(self, context: Any) -> Awaitable[Any]:
        return (self.asleep or asyncio.sleep)(self.seconds)

    def __repr__(self) -> str:
        return f"Sleep({self.seconds!r})"


def perform(steps: Steps[T], context: Any = None) -> T:
    """Run ``steps`` to its end, performing each effect with plain calls; its return value.

    An effect's exception (any ``BaseException``: the logic may clean up) is thrown into the
    logic at its ``yield``; what the logic does not catch propagates."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            value, error = effect.run(context), None
        except BaseException as exc:
            value, error = None, exc


async def aperform(steps: Steps[T], context: Any = None) -> T:
    """Run ``steps`` to its end, awaiting each effect; its return value (see ``perform``)."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            pending = effect.arun(context)
            del effect  # what it was made of is the awaitable's now, for as long as needed
            value, error = await pending, None
        except BaseException as exc:
            value, error = None, exc

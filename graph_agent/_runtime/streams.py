"""Streams written once: logic that reads a stream piece by piece, and hands on what it
makes as it goes, is one generator that a sync and an async driver run.

The effect protocol (``checkpoint.effects``) runs logic that yields an ``Effect`` per I/O
step and gets its result back. Two things make it stream:

- ``Pull``, the effect "the next piece of this stream": a sync run reads it with ``next``,
  an async one awaits ``anext``; the logic gets the piece, or ``END`` when the stream has
  ended (or has the stream's error thrown in at its ``yield``). The logic asks for each
  piece; only the drivers loop and await.
- ``stream`` and ``astream``, the drivers of logic that also yields what it makes (anything
  that is not an ``Effect``: a chunk, a piece of text): they perform the effects as
  ``perform``/``aperform`` do and yield the rest to their reader, one by one.

Logic that only reads (folds a stream into one answer) needs no new driver: ``perform`` and
``aperform`` perform a ``Pull`` like any effect.

A reader that stops early (``close()``, ``aclose()``, a cancelled task) has its exit thrown
into the logic at the ``yield`` of the piece it was handed, so the logic's ``finally`` can
still yield the effects that clean up (close a response) and the drivers perform them. A
failure leaves the drivers' frames holding nothing the stream brought (a traceback printed
with its locals shows none of it).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Generator, Iterable, Iterator
from typing import Any, Final, Generic, TypeVar

from checkpoint.effects import Effect

__all__ = ["END", "Pull", "Streamed", "astream", "stream"]

T = TypeVar("T")
R = TypeVar("R")


class _End:
    """The type of ``END``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "END"


END: Final = _End()
"""What a ``Pull`` gives once its stream has no more pieces."""

Streamed = Generator[Effect | T, Any, R]
"""Logic that streams: yields effects (and gets their results) and the pieces it makes,
of type ``T``; returns ``R`` (``stream``/``astream`` drop it; ``perform`` returns it)."""


class _Ready:
    """An awaitable whose value is at hand: awaiting it does not suspend."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, Any]:
        return self.value
        yield  # a generator: ``await`` needs an iterator


class Pull(Effect, Generic[T]):
    """The next piece of a stream, or ``END`` after its last.

    The stream is opened on the first read, by ``open()`` in a sync run and ``aopen()`` in
    an async one (a response's ``iter_bytes`` / ``aiter_bytes``, a model's ``stream`` /
    ``astream`` for a prompt), and read from there on with ``next`` / ``anext``. Yield the
    same ``Pull`` for every piece of one stream. Without ``aopen`` the pieces are at hand
    (``Pull.of``): an async run reads them with ``next`` too."""

    __slots__ = ("_aopen", "_apieces", "_open", "_pieces")

    def __init__(
        self,
        open: Callable[[], Iterable[T]] | None,
        aopen: Callable[[], AsyncIterable[T]] | None = None,
    ) -> None:
        self._open = open
        self._aopen = aopen
        self._pieces: Iterator[T] | None = None
        self._apieces: AsyncIterator[T] | None = None

    @classmethod
    def of(cls, pieces: Iterable[T]) -> Pull[T]:
        """A stream of pieces at hand (bytes in memory, a list), read alike in both runs."""
        return cls(lambda: pieces)

    def run(self, context: Any) -> T | _End:
        pieces = self._pieces
        if pieces is None:
            if self._open is None:
                raise NotImplementedError("this Pull has no sync stream (only aopen)")
            pieces = self._pieces = iter(self._open())
        return next(pieces, END)

    def arun(self, context: Any) -> Any:
        pieces = self._apieces
        if pieces is None:
            if self._aopen is None:
                return _Ready(self.run(context))
            pieces = self._apieces = aiter(self._aopen())
        return anext(pieces, END)

    def __repr__(self) -> str:
        return "Pull()"  # never the stream's pieces


class _Logic:
    """What both drivers keep of the logic they run: the generator, and what goes into it
    next (the value of the last effect, or the error to throw in)."""

    __slots__ = ("error", "steps", "value")

    def __init__(self, steps: Streamed[Any, Any]) -> None:
        self.steps = steps
        self.value: Any = None
        self.error: BaseException | None = None

    def next(self) -> Any:
        """The logic's next item, or ``_RETURNED``; what the logic raises propagates, from
        frames that hold nothing of the stream (a traceback shows their locals)."""
        value, error = self.value, self.error
        self.value = self.error = None
        try:
            return self.steps.send(value) if error is None else self.steps.throw(error)
        except StopIteration:
            return _RETURNED
        except BaseException:
            value = error = None
            raise


_RETURNED: Final = object()


def stream(steps: Streamed[T, Any], context: Any = None) -> Iterator[T]:
    """Run ``steps``, performing its effects with plain calls (``effect.run(context)``) and
    yielding everything else it yields; its return value is dropped. An effect's exception,
    and whatever ends the reading early (``GeneratorExit`` from ``close()``), is thrown into
    the logic at its ``yield``."""
    logic = _Logic(steps)
    while (item := logic.next()) is not _RETURNED:
        if isinstance(item, Effect):
            try:
                logic.value = item.run(context)
            except BaseException as exc:
                logic.error = exc
            continue
        try:
            yield item
        except BaseException as exc:
            logic.error = exc
        item = None


async def astream(steps: Streamed[T, Any], context: Any = None) -> AsyncIterator[T]:
    """Run ``steps``, awaiting its effects (``effect.arun(context)``) and yielding everything
    else it yields (see ``stream``)."""
    logic = _Logic(steps)
    while (item := logic.next()) is not _RETURNED:
        if isinstance(item, Effect):
            try:
                pending, item = item.arun(context), None  # the awaitable holds what it needs
                logic.value = await pending
            except BaseException as exc:
                logic.error = exc
            continue
        try:
            yield item
        except BaseException as exc:
            logic.error = exc
        item = None

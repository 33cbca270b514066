"""A thread's lease, held for a run and kept alive off the run's event loop.

A worker that runs a thread holds the thread's lease (``BaseCheckpointSaver.acquire_lease``)
and passes its token as ``RunnableConfig.lease``, so every checkpoint write of the run is
fenced by it. The lease must be renewed before it expires, whatever the run does: a node
that blocks the event loop for minutes (a sync call in an ``async def``, a long CPU-bound
step; LangGraph's #7213) must not let the lease lapse and the thread be handed to a second
worker. So ``LeaseKeeper`` renews it from a daemon thread of its own, with the saver's sync
lease API, never on the loop. If the lease is lost anyway (another worker took the thread
after a pause of the whole process, the saver answered that it is gone, or it could not be
renewed before it expired), the keeper says so (``lost``, ``on_lost``, ``wait_lost``); the
run's next write is refused with ``LeaseLostError`` in any case.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType

from checkpoint import BaseCheckpointSaver, LeaseBusyError
from checkpoint.base import lease_seconds, supports_leases

__all__ = ["LeaseKeeper"]

_log = logging.getLogger("graph_agent.runs")


class LeaseKeeper:
    """Holds the lease of ``thread_id`` for ``token`` on ``saver`` and renews it every
    ``ttl_seconds / 3`` from a daemon thread of its own (not the event loop), until
    ``release()``.

    ``acquire()`` returns whether the lease was acquired (then the heartbeat runs);
    ``with LeaseKeeper(...)`` / ``async with LeaseKeeper(...)`` acquire it on entry
    (``checkpoint.LeaseBusyError`` when another token holds it) and release it on exit. The async
    forms run the saver's calls in a worker thread, so they never block the loop either.

    Loss is reported, not raised: ``lost`` (a ``threading.Event``) is set, ``on_lost(keeper)``
    is called from the heartbeat thread, and ``await wait_lost()`` returns (inside
    ``async with``). The lease is lost when a renewal answers that it is not the token's
    any more, or when renewals failed (the saver unreachable) until it expired. A run
    fenced by the token stops at its next write with ``LeaseLostError`` either way.
    """

    def __init__(
        self,
        saver: BaseCheckpointSaver,
        thread_id: str,
        token: str,
        ttl_seconds: float = 30.0,
        *,
        on_lost: Callable[[LeaseKeeper], object] | None = None,
    ) -> None:
        if not supports_leases(saver):
            raise TypeError(
                f"LeaseKeeper needs a saver that keeps leases; {type(saver).__name__} does not "
                "(MemorySaver, SqliteSaver and RedisSaver do)"
            )
        self.ttl_seconds = lease_seconds("LeaseKeeper(ttl_seconds=...)", ttl_seconds)
        self.saver = saver
        self.thread_id = thread_id
        self.token = token
        self.on_lost = on_lost
        self.lost = threading.Event()
        self.renewals = 0  # renewals that succeeded
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._expires = 0.0  # monotonic time by which the lease expires unless renewed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._alost: asyncio.Event | None = None

    def __repr__(self) -> str:
        state = "lost" if self.lost.is_set() else "held" if self.held else "not held"
        return f"LeaseKeeper(thread_id={self.thread_id!r}, token={self.token!r}, {state})"

    @property
    def interval(self) -> float:
        """Seconds between renewals: a third of the lease, so two may fail before it ends."""
        return self.ttl_seconds / 3

    @property
    def expired(self) -> bool:
        """Whether the lease has run out by this process's clock (renewals missed: the
        process was paused, or Redis could not be reached, for longer than the lease)."""
        return self._thread is not None and time.monotonic() >= self._expires

    @property
    def held(self) -> bool:
        """Whether the keeper holds the lease now (acquired, not lost, not released)."""
        return self._thread is not None and not self.lost.is_set() and not self._stop.is_set()

    # -- acquire, the heartbeat, release ------------------------------------------------------

    def acquire(self) -> bool:
        """Acquire the lease and start the heartbeat; ``False`` when another token holds it."""
        if self._thread is not None:
            raise RuntimeError(f"{self!r} was acquired already: use a new LeaseKeeper")
        started = time.monotonic()
        if not self.saver.acquire_lease(self.thread_id, self.token, self.ttl_seconds):
            return False
        self._expires = started + self.ttl_seconds
        self._thread = threading.Thread(
            target=self._beat, name=f"lease {self.thread_id}", daemon=True
        )
        self._thread.start()
        return True

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            started = time.monotonic()
            try:
                renewed = self.saver.renew_lease(self.thread_id, self.token, self.ttl_seconds)
            except Exception as error:  # unreachable for now: try again until it expires
                if time.monotonic() >= self._expires:
                    self._lose(f"it could not be renewed before it expired ({error})")
                    return
                _log.warning(
                    "renewing the lease of thread '%s' failed (%s: %s); trying again in %.1f s",
                    self.thread_id,
                    type(error).__name__,
                    error,
                    self.interval,
                )
                continue
            if not renewed:
                self._lose("the saver says it is not this token's any more")
                return
            self._expires = started + self.ttl_seconds
            self.renewals += 1

    def _lose(self, why: str) -> None:
        if self._stop.is_set():
            return  # released meanwhile: not a loss
        _log.warning("the lease of thread '%s' (%s) is lost: %s", self.thread_id, self.token, why)
        self.lost.set()
        loop, alost = self._loop, self._alost
        if loop is not None and alost is not None:
            with contextlib.suppress(RuntimeError):  # a closed loop: no one awaits it
                loop.call_soon_threadsafe(alost.set)
        if self.on_lost is not None:
            try:
                self.on_lost(self)
            except Exception:
                _log.exception("on_lost of the lease of thread '%s' failed", self.thread_id)

    def release(self) -> None:
        """Stop the heartbeat and release the lease (if it is still the token's; a release
        that fails is logged, and the lease expires on its own). Safe to call twice, and on
        a keeper that never acquired."""
        self._stop.set()
        thread = self._thread
        if thread is None:
            return
        if thread is not threading.current_thread():  # (on_lost may release)
            thread.join()
        try:
            self.saver.release_lease(self.thread_id, self.token)
        except Exception as error:  # it expires on its own: not worth failing the run for
            _log.warning(
                "releasing the lease of thread '%s' failed (%s: %s); it expires in %.1f s",
                self.thread_id,
                type(error).__name__,
                error,
                self.ttl_seconds,
            )

    # -- context managers -----------------------------------------------------------------------

    def _busy(self) -> LeaseBusyError:
        return LeaseBusyError(self.thread_id, self.token, self.saver.lease_holder(self.thread_id))

    def __enter__(self) -> LeaseKeeper:
        if not self.acquire():
            raise self._busy()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

    async def __aenter__(self) -> LeaseKeeper:
        self._loop = asyncio.get_running_loop()
        self._alost = asyncio.Event()
        if not await asyncio.to_thread(self.acquire):
            raise await asyncio.to_thread(self._busy)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.release)

    async def wait_lost(self) -> None:
        """Return once the lease is lost (inside ``async with``; at once if it is lost)."""
        if self._alost is None:
            raise RuntimeError("wait_lost() needs the keeper entered with 'async with'")
        if self.lost.is_set():
            return
        await self._alost.wait()

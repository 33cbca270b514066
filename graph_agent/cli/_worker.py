"""``graph-agent worker TARGET... --queue redis://...``: a process that runs the runs a
``graph-agent serve ... --queue`` accepted (``graph_agent.runs.worker``)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ._errors import CliError
from ._failures import mask_url
from ._queue import QUEUE_NAME, check_queue_url
from ._serve import served_objects
from ._serve_targets import gather

__all__ = ["WorkerOptions", "run_worker"]


@dataclass(frozen=True)
class WorkerOptions:
    """What ``graph-agent worker`` was told."""

    targets: Sequence[str]
    queue: str
    saver: str | None = None
    config: str | None = None
    concurrency: int = 8
    lease_seconds: float = 30.0
    max_attempts: int = 3
    name: str | None = None
    run_timeout: float | None = None


def run_worker(options: WorkerOptions, out: TextIO) -> int:
    check_queue_url(options.queue)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise CliError(
            "workers need the 'server' extra: pip install 'graph-agent[queue,server]'"
        ) from None
    from ..runs import RedisRunStore
    from ..runs.worker import RunWorker
    from ..server import Server
    from ._saver import close_saver

    project = gather(options.targets, options.config)
    for key, value in project.env.items():
        os.environ.setdefault(key, value)
    served, made, where = served_objects(project.graphs, options.saver or options.queue)
    store = RedisRunStore.from_url(options.queue)
    server: Server | None = None

    def driver_of(run: Any, lease: str | None) -> Any:
        assert server is not None
        return server.driver_of(run, lease)

    def saver_of(run: Any) -> Any:
        assert server is not None
        return server.saver_of(run)

    worker = RunWorker(
        store,
        driver_of,
        saver_of,
        name=options.name,
        lease_seconds=options.lease_seconds,
        max_attempts=options.max_attempts,
        run_timeout=options.run_timeout,
        **Server.run_options(),
    )
    server = Server(served, 0, runs=worker)
    print(
        f"worker {worker.name}: running {', '.join(sorted(served))} from "
        f"{mask_url(options.queue)} (threads kept in {where}; {options.concurrency} at once)",
        file=out,
        flush=True,
    )
    # the runs' failures and the worker's own warnings (a lease lost), on stderr
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("graph-agent worker: %(levelname)s %(message)s"))
    loggers = [logging.getLogger(n) for n in ("graph_agent.server", "graph_agent.runs")]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)
    try:
        asyncio.run(_work(worker, store, options))
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        if made is not None:
            close_saver(made)
    return 0


async def _work(worker: Any, store: Any, options: WorkerOptions) -> None:
    from ..runs.queue import RunQueue, work

    stop = asyncio.Event()

    def stopping() -> None:
        worker.drain()  # each run stops at its next step boundary, and is queued again
        stop.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping)
    # not through the loop: the runs a pause cost their lease must stop before the loop
    # runs any of their code again
    signal.signal(signal.SIGCONT, lambda *_: worker.resumed())
    cancels = asyncio.create_task(worker.listen_for_cancels())
    async with RunQueue(options.queue, QUEUE_NAME) as queue:
        worker.requeue = queue.enqueue
        try:
            await work(
                options.queue,
                QUEUE_NAME,
                worker.handle,
                concurrency=options.concurrency,
                stop=stop,
                redelivery_timeout=options.lease_seconds,
            )
        finally:
            cancels.cancel()
            await asyncio.gather(cancels, return_exceptions=True)
            await store.aclose()

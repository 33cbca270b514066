"""What the runs service keeps of runs and threads: a run's record (its status, attempt,
times, error, what it was asked and what it answered) and a thread's record (the assistant
that runs it, its metadata, its times), as plain data a store can keep anywhere."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import time
import uuid
from datetime import datetime, timezone
from typing import Any, Literal

from ._codec import dump_data, load_data
from ._log import RunLog
from .errors import ThreadBusyError

__all__ = [
    "ACTIVE",
    "MULTITASK_STRATEGIES",
    "Run",
    "RunStatus",
    "ThreadRecord",
    "now",
]

RunStatus = Literal["pending", "running", "success", "error", "cancelled", "timeout"]
ACTIVE = ("pending", "running")  # a run in one of these has not ended
MULTITASK_STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")


def check_strategy(strategy: str) -> None:
    """``ValueError`` unless ``strategy`` is one of ``MULTITASK_STRATEGIES``."""
    if strategy not in MULTITASK_STRATEGIES:
        raise ValueError(
            f"multitask_strategy {strategy!r} is not one of {list(MULTITASK_STRATEGIES)}"
        )


def busy_error(thread_id: str, run_id: str) -> ThreadBusyError:
    """What ``multitask_strategy="reject"`` answers on a thread busy with ``run_id``."""
    return ThreadBusyError(
        f"thread {thread_id} is busy with run {run_id}; wait for it, or ask with "
        "multitask_strategy 'enqueue', 'interrupt' or 'rollback'"
    )


def next_in_turn(runs: list[Run]) -> str | None:
    """Of a thread's runs, the one whose turn has come: the oldest pending one, when none
    is running (``None`` otherwise)."""
    active = [r for r in runs if r.status in ACTIVE]
    if active and all(r.status == "pending" for r in active):
        return min(active, key=lambda r: r.created_at).run_id
    return None


def now() -> datetime:
    return datetime.now(timezone.utc)


@dataclasses.dataclass
class Run:
    """A run's record, and, while this process drives it, what drives it.

    ``kwargs`` is what its client asked (enough to run it again after a restart);
    ``started_at_checkpoint`` where its thread stood when it started (``rollback`` starts
    the thread again there); ``attempt`` counts the times it was taken up; ``output`` is what
    it answers once it ended, in no protocol's words: the thread's state after it (a
    ``StateSnapshot``, ``None`` if the thread has none), or the error it failed with."""

    run_id: str
    thread_id: str
    assistant_id: str
    multitask_strategy: str
    kwargs: dict[str, Any]
    metadata: dict[str, Any]
    status: RunStatus = "pending"
    created_at: float = dataclasses.field(default_factory=time.time)
    updated_at: float = dataclasses.field(default_factory=time.time)
    error: str | None = None
    attempt: int = 1
    started_at_checkpoint: str | None = None
    output: Any = None
    # run on a thread of its own (``POST /runs/...``), deleted when it ends
    stateless: bool = False
    rolled_back: bool = False
    # it started once already (then, taken up again, it goes on from where its thread is)
    began: bool = False
    # -- not kept: this process's handles on the run --
    log: RunLog = dataclasses.field(default_factory=RunLog)
    started: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    done: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    # its process is stopping: the run stops at its next step boundary (``RunDrained``)
    draining: bool = False
    # this drive of it takes it up again (it ``began`` before)
    resumed: bool = False
    # this drive of it was stopped because it ran past the service's ``run_timeout``
    timed_out: bool = False
    # this drive of it is being stopped (a cancel, its time up): it stops at its next event
    # too, should a library have swallowed the cancel (``asyncio.wait_for`` before 3.12)
    stopping: bool = False
    # the token of its thread's lease, while this process holds it (checkpoint writes fenced)
    lease: str | None = None
    # taken up here (it began elsewhere), it waits for its thread's lease, which another
    # process holds: it may still run there, so it is read and cancelled as that process's
    behind: bool = False

    KEPT = (
        "run_id", "thread_id", "assistant_id", "multitask_strategy", "kwargs", "metadata",
        "status", "created_at", "updated_at", "error", "attempt", "started_at_checkpoint",
        "output", "stateless", "rolled_back", "began",
    )  # fmt: skip

    @classmethod
    def new(
        cls,
        thread_id: str,
        assistant_id: str,
        kwargs: dict[str, Any],
        metadata: dict[str, Any],
        multitask_strategy: str,
        *,
        stateless: bool = False,
    ) -> Run:
        """A run just accepted: pending, a fresh id."""
        return cls(
            run_id=str(uuid.uuid4()),
            thread_id=thread_id,
            assistant_id=assistant_id,
            multitask_strategy=multitask_strategy,
            kwargs=kwargs,
            metadata=metadata,
            stateless=stateless,
        )

    def mark(self, status: RunStatus, error: str | None = None) -> None:
        self.status = status
        self.error = error
        self.updated_at = time.time()

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    def to_dict(self) -> dict[str, Any]:
        """The kept fields (``output`` as it is; ``to_json`` packs it)."""
        return {name: getattr(self, name) for name in self.KEPT}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        return cls(**{name: data[name] for name in cls.KEPT if name in data})

    def to_json(self) -> str:
        """The kept fields as JSON, ``output`` packed as the run's log is (in base64)."""
        data = self.to_dict()
        if self.output is not None:
            data["output"] = base64.b64encode(dump_data(self.output)).decode("ascii")
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str | bytes) -> Run:
        data = json.loads(text)
        output = data.get("output")
        # a string is ours; anything else, an earlier version's (in the Agent Protocol's words)
        data["output"] = load_data(base64.b64decode(output)) if isinstance(output, str) else None
        return cls.from_dict(data)


@dataclasses.dataclass
class ThreadRecord:
    """A thread as the runs service keeps it: the assistant (served graph) that runs it,
    its metadata and times, and the saver threads of its subgraphs (deleted with it)."""

    thread_id: str
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any]
    graph_id: str | None = None
    children: set[str] = dataclasses.field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "metadata": self.metadata,
            "graph_id": self.graph_id,
            "children": sorted(self.children),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ThreadRecord:
        return cls(
            data["thread_id"],
            datetime.fromisoformat(data["created_at"]),
            datetime.fromisoformat(data["updated_at"]),
            dict(data.get("metadata") or {}),
            data.get("graph_id"),
            set(data.get("children") or ()),
        )

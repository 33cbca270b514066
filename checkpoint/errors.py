"""Errors raised by checkpoint savers and the serializer."""

from __future__ import annotations


class CheckpointError(Exception):
    """Base class of every error raised by the ``checkpoint`` package."""


class SerializationError(CheckpointError, ValueError):
    """Bytes could not be turned back into values (corrupt, truncated or of an unknown type)."""


class UnserializableValueError(SerializationError, TypeError):
    """A value cannot be written to a checkpoint because its type is not allowed.

    ``key`` is the state key that holds it, ``path`` where inside that value it sits
    (``messages[3].metadata['conn']``), ``type_name`` the offending type.
    """

    def __init__(self, message: str, *, key: str | None, path: str, type_name: str) -> None:
        super().__init__(message)
        self.key = key
        self.path = path
        self.type_name = type_name


class CheckpointPathError(CheckpointError, FileNotFoundError):
    """A saver was given a file path it cannot create: the directory it names does not exist.

    ``path`` is the path as given. It is also a ``FileNotFoundError`` (``filename`` is set).
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path
        self.filename = path

    def __str__(self) -> str:  # OSError would format errno and filename around the message
        return str(self.args[0])


class CheckpointUnavailableError(CheckpointError, ConnectionError):
    """A saver could not reach its server, or the server refused it (Redis down, a reset
    connection, no answer in time, a wrong password, out of memory, a read-only replica).

    ``where`` is the server (``host:port``, never the password), ``thread_id`` the thread
    being read or written (``None`` for a command on no thread), ``operation`` what was
    being done (``"read"``, ``"write"``, ``"delete"``, ``"list"``). It is also a
    ``ConnectionError``. For a write, the step may or may not have been stored when the
    error says so: reload the thread before doing it again.
    """

    def __init__(self, message: str, *, where: str, thread_id: str | None, operation: str) -> None:
        super().__init__(message)
        self.where = where
        self.thread_id = thread_id
        self.operation = operation

    def __str__(self) -> str:  # OSError would format errno and strerror around the message
        return str(self.args[0])


class CheckpointTimeoutError(CheckpointUnavailableError, TimeoutError):
    """The server did not answer within the saver's socket timeout (a stalled or
    overloaded server, a cut network). Also a ``TimeoutError``."""


class CheckpointAuthError(CheckpointUnavailableError, PermissionError):
    """The server refused the saver's credentials or its ACL user (a wrong or missing
    password, a user without the needed commands). Never retried. Also a
    ``PermissionError``."""


class CheckpointDataError(SerializationError):
    """A thread's stored data is corrupt, truncated or partly gone (keys evicted by a
    ``maxmemory-policy``, deleted by hand, or overwritten): the saver will not guess.

    ``thread_id`` names the thread, ``checkpoint_id`` the checkpoint being read or extended
    when known.
    """

    def __init__(self, message: str, *, thread_id: str, checkpoint_id: str | None) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id


class EvictionPolicyWarning(UserWarning):
    """The Redis server's ``maxmemory-policy`` may evict a saver's keys, which would lose
    checkpoints (see docs/redis.md, "Durability")."""


class CheckpointNotFoundError(CheckpointError, LookupError):
    """A checkpoint id, or a thread, that the saver does not hold."""

    def __init__(self, message: str, *, thread_id: str, checkpoint_id: str | None) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id

    def __str__(self) -> str:  # LookupError would repr() the message
        return str(self.args[0])

    @classmethod
    def for_writes(cls, thread_id: str, checkpoint_id: str) -> CheckpointNotFoundError:
        """The error for pending writes of a checkpoint the thread does not hold."""
        return cls(
            f"thread '{thread_id}' has no checkpoint {checkpoint_id!r} to store pending writes "
            "for (pruned by max_retained, or the thread was deleted); nothing was written. "
            "Run the thread again from its latest checkpoint",
            thread_id=thread_id,
            checkpoint_id=checkpoint_id,
        )


class CheckpointConflictError(CheckpointError):
    """Another writer moved the thread's head since this writer read it; nothing was written."""

    def __init__(
        self, message: str, *, thread_id: str, expected_head: str | None, actual_head: str | None
    ) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.expected_head = expected_head
        self.actual_head = actual_head

    @classmethod
    def moved(
        cls, thread_id: str, expected_head: str | None, actual_head: str | None
    ) -> CheckpointConflictError:
        """The error for a thread whose head moved away from the writer's parent."""
        return cls(
            f"thread '{thread_id}' moved to checkpoint {actual_head!r} while this writer was "
            f"working from {expected_head!r}; nothing was written. Another run is writing the "
            "same thread: reload it and retry, or use another thread_id.",
            thread_id=thread_id,
            expected_head=expected_head,
            actual_head=actual_head,
        )


class LeaseLostError(CheckpointError):
    """A fenced write (``put``/``put_writes`` with ``fence=token``) was refused because the
    thread's lease is no longer ``token``: it expired, or another worker acquired it since.
    Nothing was written.

    The run holding ``token`` must stop: another worker owns the thread now and continues it
    from its last checkpoint. It is not a conflict to retry (``CheckpointConflictError``).
    ``thread_id`` names the thread, ``token`` the lease the writer held, ``holder`` the
    thread's live lease now (``None``: it expired and no one holds it).
    """

    def __init__(self, message: str, *, thread_id: str, token: str, holder: str | None) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.token = token
        self.holder = holder

    @classmethod
    def refused(cls, thread_id: str, token: str, holder: str | None) -> LeaseLostError:
        """The error for a write fenced by ``token`` on a thread whose lease is ``holder``."""
        now = f"is now held by {holder!r}" if holder else "expired and no one holds it now"
        return cls(
            f"thread '{thread_id}' is no longer leased to {token!r}: its lease {now}; nothing "
            "was written. This run must stop: another worker owns the thread (or will take it "
            "up) and continues it from its last checkpoint. Do not retry the write.",
            thread_id=thread_id,
            token=token,
            holder=holder,
        )


class LeaseBusyError(CheckpointError):
    """A thread's lease could not be acquired: another token holds it (another worker runs
    the thread). ``thread_id``, ``token`` (the one refused) and ``holder`` (the live lease,
    ``None`` if it ended meanwhile). Raised by ``graph_agent.runs``' lease keeper; the
    savers' ``acquire_lease`` answers ``False`` instead."""

    def __init__(self, thread_id: str, token: str, holder: str | None) -> None:
        super().__init__(
            f"thread '{thread_id}' is leased to {holder!r}, not {token!r}: another worker runs "
            "it. Run it once that lease is released or has expired (queue the run again), or "
            "use another thread_id"
        )
        self.thread_id = thread_id
        self.token = token
        self.holder = holder

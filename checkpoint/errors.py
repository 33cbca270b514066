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


class CheckpointNotFoundError(CheckpointError, LookupError):
    """A checkpoint id, or a thread, that the saver does not hold."""

    def __init__(self, message: str, *, thread_id: str, checkpoint_id: str | None) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id

    def __str__(self) -> str:  # LookupError would repr() the message
        return str(self.args[0])


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

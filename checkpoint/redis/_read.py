"""What a RedisSaver makes of the replies of its read and write scripts.

A read names the checkpoint of the thread the saver holds decoded (its ``HeadCache``); the
script then answers ``=`` when that is the checkpoint asked for, and otherwise sends only
what the held one lacks (see ``_lua.READ``). A write answers the new checkpoint's
index, so the held head moves on with the write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._savers.head import CachedHead, HeadCache, index_from_json
from .._savers.head_read import (
    HeadRead,
    HeldHeadChangedError,
    HeldWrite,
    MissingValuesError,
    UndecodableError,
    head_checkpoint,
)
from ..base import Checkpoint
from ..errors import CheckpointDataError, SerializationError
from ..serde import Serializer

__all__ = ["ReadAgain", "corrupt", "read_reply", "written_reply"]


def _text(data: Any) -> str:
    return data.decode() if isinstance(data, bytes) else str(data)


def corrupt(thread_id: str, checkpoint_id: str | None, why: str, doing: str) -> CheckpointDataError:
    """The error for a thread whose stored data a script found corrupt or incomplete."""
    hint = (
        "Keys may have been evicted (a maxmemory-policy other than noeviction), expired, deleted "
        "or overwritten by hand. Nothing was written; restore the keys from a backup, or "
        "delete_thread() it and start again"
    )
    return CheckpointDataError(
        f"thread '{thread_id}' cannot be {doing}: its data in Redis is corrupt or incomplete: "
        f"{why}. {hint}.",
        thread_id=thread_id,
        checkpoint_id=checkpoint_id,
    )


class ReadAgain(Exception):
    """The held head changed while the reply was on its way: read again holding nothing."""


def read_reply(
    serializer: Serializer,
    cache: HeadCache,
    thread_id: str,
    reply: Any,
    held: CachedHead | None,
    keep: bool,
) -> Checkpoint | None:
    """The checkpoint the read script answered, given the head ``held`` when it was asked
    (``None``: it was asked to send everything). With ``keep``, the head read is held from
    now on. Raises ``ReadAgain`` when ``held`` changed meanwhile."""
    if not reply:
        return None
    cid = _text(reply[0])
    if cid == "!":
        raise corrupt(thread_id, None, _text(reply[1]), "read")
    if len(reply) == 3 and _text(reply[1]) == "=":  # the held checkpoint itself
        values = cache.values_if(thread_id, cid) if held is not None else None
        if held is None or values is None:
            raise ReadAgain
        header = reply[2]  # as stored now: pending writes may have changed it
        if header != held.header:
            cache.rewrite_header(thread_id, cid, header)
        return head_checkpoint(serializer, thread_id, held, values, header)
    key = "<checkpoint index>"
    try:
        index = index_from_json(reply[2])
        plan = HeadRead(index, held if _text(reply[3]) == "1" else None)
        values_read: dict[str, Any] = {}
        items_read: dict[str, list[Any]] = {}
        for i in range(4, len(reply), 3):
            key = _text(reply[i])
            kind, data = _text(reply[i + 1]), reply[i + 2]
            if kind == "v":
                values_read[key] = data
            elif kind in ("l", "a"):
                items_read[key] = list(data)
        key = "<checkpoint header>"
        header = serializer.loads(reply[1])
        head = plan.decode(
            serializer,
            cache,
            thread_id,
            (cid, header["parent"], header["step"], reply[1]),
            values_read,
            items_read,
        )
    except HeldHeadChangedError:
        raise ReadAgain from None
    except UndecodableError as bad:
        raise corrupt(
            thread_id,
            cid,
            f"'{bad.key}' of checkpoint {cid} cannot be decoded ({bad.__cause__})",
            "read",
        ) from bad.__cause__
    except MissingValuesError as missing:
        raise corrupt(
            thread_id, cid, f"the values of {missing.keys} were not all sent", "read"
        ) from None
    except (SerializationError, KeyError, TypeError, ValueError) as error:
        raise corrupt(
            thread_id, cid, f"'{key}' of checkpoint {cid} cannot be decoded ({error})", "read"
        ) from error
    if keep:
        cache.keep(thread_id, head)
        return head_checkpoint(serializer, thread_id, head, head.values.hand_out(serializer))
    return head_checkpoint(serializer, thread_id, head, head.values.values)


def written_reply(held: HeldWrite, header: bytes, reply: Sequence[Any]) -> None:
    """After a write the script accepted: the head held for the thread moves on with it
    (or is dropped when the reply does not say what was written)."""
    index = reply[1] if int(reply[0]) == 1 and len(reply) > 1 else None
    # the index JSON (cjson's) is decoded when a read first needs it (index_from_json)
    if isinstance(index, (bytes, str)) and index[:1] in (b"{", "{", b"[", "["):
        held.written(index, header)
    else:  # a retried write whose first run had written: its index is unknown
        held.forget()

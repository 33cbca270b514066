"""Stable ids for tasks and interrupts, the same in every process and on every re-run."""

from __future__ import annotations

import hashlib

__all__ = ["derive_id"]


def derive_id(*parts: object) -> str:
    """A stable, UUID-shaped id for ``parts`` (version 1 of the scheme: blake2b of the
    parts joined by NUL). The same parts always give the same id, in every process."""
    digest = hashlib.blake2b(
        "\x00".join(map(str, ("v1", *parts))).encode(), digest_size=16
    ).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:]}"

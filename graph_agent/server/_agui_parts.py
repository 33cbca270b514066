"""The parts of an AG-UI user message (text, image, audio, video, document) read into what
our messages carry, and back.

Our messages hold text only, so a file travels beside it, as A2A's files do
(``graph_agent.a2a``): in the message's ``metadata["files"]``, ``{"name", "media_type",
"url"}`` or ``{"name", "media_type", "bytes"}`` (base64 text, so the thread's state stays
JSON), and in the text a line of its own names it for the model
(``[file photo.png (image/png, 1200 bytes): metadata["files"][0]]``, or its URL). A file
given by a provider's file id (a ``file`` source) is refused: this server cannot read it.
``content_parts`` turns such a message back into AG-UI parts (the messages snapshot).
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ag_ui.core import (
    AudioInputContent,
    DataSource,
    DocumentInputContent,
    FileSource,
    ImageInputContent,
    TextInputContent,
    UrlSource,
    VideoInputContent,
)

from ..messages import file_line
from ._http import HTTPProblem

__all__ = ["content_parts", "user_content"]


_ACCEPTED: Final = (
    "accepted: text parts, and image, audio, video or document parts whose source is "
    "'data' (base64 bytes with their mimeType) or 'url'"
)
_KINDS: Final = {
    "image": ImageInputContent,
    "audio": AudioInputContent,
    "video": VideoInputContent,
}


def _name(part: Any) -> str:
    """The file's name, where the part's metadata gives one (``filename`` or ``name``)."""
    metadata = part.metadata
    if isinstance(metadata, Mapping):
        for key in ("filename", "name"):
            if isinstance(metadata.get(key), str):
                return str(metadata[key])
    return ""


def _entry(message_id: str, index: int, part: Any) -> dict[str, str]:
    """The ``metadata["files"]`` entry of one non-text part; a 422 for one we cannot carry."""
    source = part.source
    where = f"message {message_id!r}, part {index} ({part.type})"
    if isinstance(source, FileSource):
        raise HTTPProblem(
            422,
            f"{where}: a 'file' source (an id of a file kept by "
            f"{source.provider or 'a provider'}) cannot be read by this server; send the "
            f"file's bytes or its URL instead ({_ACCEPTED})",
        )
    if isinstance(source, UrlSource):
        media = source.mime_type or mimetypes.guess_type(source.value)[0] or ""
        return {"name": _name(part), "media_type": media, "url": source.value}
    assert isinstance(source, DataSource)
    try:
        base64.b64decode(source.value, validate=True)
    except (binascii.Error, ValueError):
        raise HTTPProblem(
            422, f"{where}: source.value is not base64 text (a 'data' source carries the bytes)"
        ) from None
    return {"name": _name(part), "media_type": source.mime_type, "bytes": source.value}


def user_content(message_id: str, parts: Sequence[Any]) -> tuple[str, list[dict[str, str]]]:
    """The text (its text parts, each file named on a line of its own) and the files of a
    user message's ``parts``; a 422 naming a part we cannot carry and what is accepted."""
    text, files, line = "", [], False
    for index, part in enumerate(parts):
        if isinstance(part, TextInputContent):
            text += ("\n" if line else "") + part.text
            line = False
            continue
        entry = _entry(message_id, index, part)
        files.append(entry)
        text += ("\n" if text and not text.endswith("\n") else "") + file_line(
            entry, len(files) - 1
        )
        line = True
    return text, files


def _part(entry: Mapping[str, Any]) -> Any:
    media = str(entry.get("media_type") or "")
    kind = _KINDS.get(media.split("/")[0], DocumentInputContent)
    source: Any
    if "url" in entry:
        source = UrlSource(value=str(entry["url"]), mime_type=media or None)
    else:
        source = DataSource(value=str(entry.get("bytes", "")), mime_type=media)
    metadata = {"filename": entry["name"]} if entry.get("name") else None
    return kind(source=source, metadata=metadata)


def content_parts(text: str, files: Any) -> str | list[Any]:
    """A user message's ``text`` and ``files`` (its ``metadata["files"]``) as AG-UI content:
    the text alone when it has no files, else text parts with each file's part where its
    line stood (a file whose line is gone comes last)."""
    entries = [e for e in files if isinstance(e, Mapping)] if isinstance(files, list) else []
    if not entries:
        return text
    parts: list[Any] = []
    unplaced: list[Any] = []
    rest = text
    for index, entry in enumerate(entries):
        if "url" not in entry and "bytes" not in entry:
            continue
        line = file_line(entry, index)
        at = rest.find(line)
        if at < 0:
            unplaced.append(_part(entry))
            continue
        before = rest[:at].removesuffix("\n")
        if before:
            parts.append(TextInputContent(text=before))
        parts.append(_part(entry))
        rest = rest[at + len(line) :].removeprefix("\n")
    if rest:
        parts.append(TextInputContent(text=rest))
    return [*parts, *unplaced]

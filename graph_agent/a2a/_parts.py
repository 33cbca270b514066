"""A2A parts both ways. Our messages hold text only, so what is not text travels beside it:

- in: a remote's text parts are the message's text; a data part is its JSON, on a line of
  its own (in a status message, a question or a reason, only when it has no text), and its
  value is also in ``metadata["data"]``; a file part (bytes or a URL, with
  its name and media type) is a line that names it (``[file report.pdf (application/pdf,
  1200 bytes): metadata["files"][0]]``, or the URL), and the file itself is in
  ``metadata["files"]``: ``{"name", "media_type", "url"}`` or ``{"name", "media_type",
  "bytes"}`` (the bytes as base64 text, so the thread's state stays JSON).
- out: a message's text is a text part; its ``metadata["files"]`` (the same shape; ``bytes``
  may also be raw ``bytes``) are file parts, its ``metadata["data"]`` data parts. So a file a
  remote agent gave one of our flows goes on, as a file, to the next remote agent.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from a2a.helpers.proto_helpers import get_data_parts, new_data_part
from a2a.types.a2a_pb2 import Part

from ..errors import GraphUsageError
from ..messages import DATA, FILES, Message, file_line

__all__ = ["Said", "answer_part", "data_value", "message_parts", "read_parts"]


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def data_value(part: Part) -> Any:
    """A data part's value as plain JSON data, whole numbers as ints (a protobuf ``Value``
    keeps every number as a double: ``5`` arrives as ``5.0``)."""
    return _plain(get_data_parts([part])[0])


def _file(part: Part) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": part.filename, "media_type": part.media_type}
    if part.HasField("url"):
        entry["url"] = part.url
    else:
        entry["bytes"] = base64.b64encode(part.raw).decode("ascii")
    return entry


class Said:
    """The text, files and data of parts read in order (an artifact's chunks, a message):
    text parts join with ``joiner``, every other part is a line of its own."""

    def __init__(
        self, joiner: str, files: list[dict[str, Any]], data: list[Any], *, quiet: bool = False
    ) -> None:
        self.joiner = joiner
        self.quiet = quiet  # data parts only in ``data``, unless no part has text
        self.text = ""
        self.files = files  # shared by the artifacts of one task: one numbering
        self.data = data
        self._line = False  # the last part was a line of its own

    def add(self, parts: Sequence[Part]) -> str:
        """Read ``parts``; the text they add."""
        piece = ""
        for part in parts:
            if part.HasField("text"):
                text, line = part.text, False
            elif part.HasField("data"):
                value = data_value(part)
                self.data.append(value)
                if self.quiet:
                    continue
                text, line = json.dumps(value, ensure_ascii=False), True
            elif part.HasField("url") or part.HasField("raw"):
                entry = _file(part)
                self.files.append(entry)
                text, line = file_line(entry, len(self.files) - 1), True
            else:
                continue
            before = self.text + piece
            if before:
                joiner = "\n" if line or self._line else self.joiner
                piece += "" if joiner == "\n" and before.endswith("\n") else joiner
            piece += text
            self._line = line
        self.text += piece
        if self.quiet and not self.text and self.data:
            self.text = piece = "\n".join(json.dumps(v, ensure_ascii=False) for v in self.data)
        return piece


def read_parts(parts: Sequence[Part]) -> tuple[str, list[dict[str, Any]], list[Any]]:
    """What a model reads of A2A ``parts`` (a message's): the text parts each on a line,
    every file and data value named on a line of its own; and the files and data values,
    for the message's ``metadata[FILES]`` and ``metadata[DATA]`` (``graph_agent.messages``)."""
    said = Said("\n", [], [])
    said.add(parts)
    return said.text, said.files, said.data


def answer_part(answer: Any) -> Part:
    """An answer to a remote question: a text part (a ``str``) or a data part (any other
    JSON value, sent as it is)."""
    if isinstance(answer, str):
        return Part(text=answer)
    try:  # a protobuf Value holds any JSON value: a dict, a list, a str, a number
        return new_data_part(answer)
    except Exception as error:  # protobuf's ParseError, or a TypeError
        raise TypeError(
            f"an answer sent to a remote A2A agent must be a str or JSON data (dict, list, "
            f"number, bool, None), got {type(answer).__name__}: {error}"
        ) from None


def message_parts(message: Message, agent: str) -> list[Part]:
    """The parts ``message`` goes out as: its text, its files, its data (see the module);
    a clear error for a file or a data value that cannot go."""
    parts = [Part(text=message.text)] if message.text else []
    metadata = message.metadata
    files = metadata.get(FILES) or ()
    data = metadata.get(DATA) or ()
    where = f"a message sent to remote A2A agent '{agent}'"
    if not isinstance(files, (list, tuple)) or not isinstance(data, (list, tuple)):
        raise GraphUsageError(
            f'{where}: metadata["{FILES}"] and metadata["{DATA}"] must be lists, got '
            f"{type(files).__name__} and {type(data).__name__}"
        )
    parts += [
        _file_part(entry, f'{where}: metadata["{FILES}"][{n}]') for n, entry in enumerate(files)
    ]
    for n, value in enumerate(data):
        try:
            parts.append(new_data_part(value))
        except Exception as error:
            raise GraphUsageError(
                f'{where}: metadata["{DATA}"][{n}] must be a JSON value (dict, list, str, '
                f"number, bool, None), got {type(value).__name__}: {error}"
            ) from None
    return parts


def _file_part(entry: Any, where: str) -> Part:
    how = (
        '; give {"name": "report.pdf", "media_type": "application/pdf", "url": "https://..."} '
        'or {"name": ..., "media_type": ..., "bytes": b"..." (or base64 text)}'
    )
    if not isinstance(entry, Mapping) or ("url" in entry) == ("bytes" in entry):
        raise GraphUsageError(f"{where} must be a dict with either 'url' or 'bytes'{how}")
    name, media = entry.get("name") or "", entry.get("media_type") or ""
    if not isinstance(name, str) or not isinstance(media, str):
        raise GraphUsageError(f"{where}: 'name' and 'media_type' must be str{how}")
    if "url" in entry:
        url = entry["url"]
        if not isinstance(url, str) or not url:
            raise GraphUsageError(f"{where}: 'url' must be a non-empty str, got {url!r}{how}")
        return Part(url=url, filename=name, media_type=media)
    raw = entry["bytes"]
    if isinstance(raw, str):
        try:
            raw = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise GraphUsageError(f"{where}: 'bytes' is a str but not base64 text{how}") from None
    if not isinstance(raw, (bytes, bytearray)):
        raise GraphUsageError(
            f"{where}: 'bytes' must be bytes or base64 text, got {type(raw).__name__}{how}"
        )
    return Part(raw=bytes(raw), filename=name, media_type=media)

"""An MCP tool result as the text a model gets back."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

__all__ = ["result_text"]


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _part(item: Any) -> str:
    kind = getattr(item, "type", "")
    if kind == "text":
        return str(item.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {item.mimeType}, {_size(item.data)} bytes]"
    if kind == "resource":
        resource = item.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return str(text)
        mime = getattr(resource, "mimeType", None) or "unknown type"
        return f"[resource {resource.uri}: {mime}, {_size(resource.blob)} bytes]"
    if kind == "resource_link":
        return f"[resource link {item.uri}: {item.name}]"
    return f"[{kind or type(item).__name__} content]"


def result_text(result: Any) -> str:
    """Text parts joined by newlines, other parts as a short note; the structured content as
    JSON when there is no text."""
    parts = [_part(item) for item in result.content or ()]
    has_text = any(getattr(item, "type", "") == "text" for item in result.content or ())
    structured = getattr(result, "structuredContent", None)
    if structured is not None and not has_text:
        parts.insert(0, json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)

"""An MCP tool result, in its wire form (``_sdk.wire``), as the text a model gets back."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["result_text"]


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _part(item: Mapping[str, Any]) -> str:
    kind = item.get("type", "")
    if kind == "text":
        return str(item["text"])
    if kind in ("image", "audio"):
        return f"[{kind}: {item['mimeType']}, {_size(item['data'])} bytes]"
    if kind == "resource":
        resource = item["resource"]
        text = resource.get("text")
        if text is not None:
            return str(text)
        mime = resource.get("mimeType") or "unknown type"
        return f"[resource {resource['uri']}: {mime}, {_size(resource.get('blob', ''))} bytes]"
    if kind == "resource_link":
        return f"[resource link {item['uri']}: {item['name']}]"
    return f"[{kind or 'unknown'} content]"


def result_text(result: Mapping[str, Any]) -> str:
    """Text parts joined by newlines, other parts as a short note; the structured content as
    JSON when there is no text."""
    content = result.get("content") or ()
    parts = [_part(item) for item in content]
    has_text = any(item.get("type") == "text" for item in content)
    structured = result.get("structuredContent")
    if structured is not None and not has_text:
        parts.insert(0, json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)

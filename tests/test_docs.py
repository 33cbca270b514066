"""The docs test themselves: every ```python block of docs/*.md runs, offline.

The blocks of one file run in order in one fresh namespace, so a later block may use names
defined by an earlier one. A block opened with ```python no-run is skipped.
"""

from __future__ import annotations

import linecache
import re
import sys
import traceback
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
_OPEN = re.compile(r"^```\s*(\S*)(.*)$")


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """``(first code line number, source)`` of each runnable ```python block, in order."""
    blocks: list[tuple[int, str]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = _OPEN.match(lines[i])
        i += 1
        if match is None:
            continue
        lang, rest = match.group(1), match.group(2).split()
        start = i
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path.name}: the fence opened at line {start} is never closed")
        if lang == "python" and "no-run" not in rest:
            blocks.append((start + 1, "\n".join(lines[start:i]) + "\n"))
        i += 1  # the closing fence
    return blocks


@pytest.mark.parametrize("doc", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_doc_examples_run(doc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real module (in sys.modules while the blocks run), so dataclasses and pydantic work.
    module = types.ModuleType(f"docs_{doc.stem}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for n, (line, source) in enumerate(python_blocks(doc), start=1):
        # Pad with blank lines so that tracebacks show the line numbers of the .md file.
        padded = "\n" * (line - 1) + source
        filename = f"docs/{doc.name}:block{n}(line {line})"
        linecache.cache[filename] = (len(padded), None, padded.splitlines(True), filename)
        error = None
        try:
            exec(compile(padded, filename, "exec", dont_inherit=True), module.__dict__)
        except Exception:
            error = traceback.format_exc()
        if error is not None:
            pytest.fail(
                f"docs/{doc.name}: the python block starting at line {line} (block {n}) "
                f"failed:\n{error}",
                pytrace=False,
            )

"""Where the recorded OpenAI streams live: ``tests/fixtures/openai-sse/`` (the ``*.sse``
bodies, ``expected.json`` and ``SOURCES.md``, which says where each stream comes from). They
are part of the repository, so a test that needs one reads it; a missing file is a failure."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openai-sse"

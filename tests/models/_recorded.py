"""Where the recorded OpenAI streams live (``../shared/fixtures/openai-sse``, the shared
checkout next to this repository), and what a test does when they are not there: CI lays
``shared/`` beside the checkout, so there their absence is an error; elsewhere the tests that
need them are skipped, naming the path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "openai-sse"


def recorded_streams_present() -> bool:
    """Whether the recorded streams are there; raises on CI when they are not."""
    if (FIXTURES / "expected.json").is_file():
        return True
    if os.environ.get("CI"):
        raise RuntimeError(f"CI run without the recorded OpenAI streams at {FIXTURES}")
    return False


def skip_without_recorded_streams() -> None:
    """Skip the calling test module when the recorded streams are not there (not on CI)."""
    if not recorded_streams_present():
        pytest.skip(
            f"the recorded OpenAI streams are not there ({FIXTURES}); they live in the "
            "shared checkout next to this repository",
            allow_module_level=True,
        )

"""What the tests of the web page at ``/`` share: headless Chromium (Debian's ``chromium``,
through Playwright's Python package with the system browser: nothing is downloaded), a
page that records its errors and the bubbles it streamed, and screenshots kept as artifacts.

A test module takes the fixtures ``browser`` and ``page`` by importing ``browser_fixture``
and ``page_fixture``.
Importing this module skips the importing module, saying why, when Playwright or Chromium is
missing (``.ci/run`` installs Chromium, the ``dev`` extra Playwright); on CI that is a failure
(tests/_needs.py).

Each test saves its screenshots in its ``tmp_path``; with ``GRAPH_AGENT_TEST_ARTIFACTS`` set
(to a folder, or to ``1`` for ``tests/server/artifacts/``) they are copied there too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._needs import need_module, unavailable

sync_api = need_module("playwright.sync_api", "Playwright's Python package is in the dev extra")

CHROMIUM = (
    os.environ.get("GRAPH_AGENT_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
)
if CHROMIUM is None:
    unavailable("needs Debian's chromium on PATH (or GRAPH_AGENT_CHROMIUM); .ci/run installs it")

TIMEOUT = 15_000  # ms, for each wait in the page

# what every bubble of a message being streamed said when it was drawn (window.streamedBubbles),
# told to the test as it is drawn when the test exposed ``bubbleDrawn``
STREAMED_BUBBLES = """
window.streamedBubbles = [];
new MutationObserver((records) => {
  for (const record of records) {
    for (const node of record.addedNodes) {
      if (node.classList && node.classList.contains("streaming")) {
        const text = node.querySelector(".text");
        window.streamedBubbles.push(text ? text.textContent : "");
        if (text && text.textContent && window.bubbleDrawn) window.bubbleDrawn(text.textContent);
      }
    }
  }
}).observe(document, {childList: true, subtree: true});
"""


@pytest.fixture(name="browser")
def browser_fixture() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        # the system's browser: Playwright downloads none (a chromium that is there but does
        # not start fails the test rather than skipping it)
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(name="page")
def page_fixture(browser: Any) -> Iterator[Any]:
    """A fresh page, 1400 by 900 pixels; ``page.errors`` lists the errors its scripts raised."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT)
    opened.add_init_script(STREAMED_BUBBLES)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.errors = errors
    try:
        yield opened
    finally:
        context.close()


def screenshot(page: Any, tmp_path: Path, name: str) -> Path:
    """The page as a PNG in ``tmp_path``, copied to the artifacts folder when asked for."""
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    wanted = os.environ.get("GRAPH_AGENT_TEST_ARTIFACTS")
    if wanted:
        folder = (
            Path(__file__).with_name("artifacts")
            if wanted in ("1", "true", "yes")
            else Path(wanted)
        )
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, folder / shot.name)
    return shot


def say(page: Any, text: str) -> None:
    """Type ``text`` in the composer and send it."""
    page.fill("#input", text)
    page.click("#send")

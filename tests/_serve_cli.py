"""``graph-agent serve`` run in this process up to where it would listen: the app it built is
kept (to serve with ``tests.server.conftest.live_server``) instead of listening."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from graph_agent.cli import _serve, main


class Served:
    """What one ``graph-agent serve`` did: its exit code, and the app it would have served
    (``None`` if it stopped before)."""

    def __init__(self, code: int, app: Any) -> None:
        self.code = code
        self.app = app


def serve_in_process(monkeypatch: pytest.MonkeyPatch, args: Sequence[str]) -> Served:
    """``graph-agent serve ARGS`` (add ``--saver memory`` for targets without a saver of
    their own: no test writes in the home folder)."""
    apps: list[Any] = []
    monkeypatch.setattr(
        _serve, "listen_and_serve", lambda app, h, p, announce: (apps.append(app), announce())
    )
    code = main(["serve", *args])
    return Served(code, apps[0] if apps else None)


def unset_env(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Take ``names`` out of the environment for the test; whatever the test sets them to
    (``os.environ.setdefault``) is undone after it."""
    for name in names:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)

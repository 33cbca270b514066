"""``python -m graph_agent.cli``: the ``graph-agent`` command."""

from __future__ import annotations

from ._commands import main

if __name__ == "__main__":
    raise SystemExit(main())

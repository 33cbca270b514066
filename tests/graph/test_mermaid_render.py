"""draw_mermaid() output rendered by the real Mermaid library in headless Chromium.

Needs Debian's ``chromium`` and Mermaid's browser bundle: ``npm pack mermaid`` somewhere
and point ``MERMAID_JS`` at its ``package/dist/mermaid.min.js``. ``.ci/run`` installs both
(the bundle pinned, cached outside the clone), so it runs in CI, where a missing piece is a
failure; elsewhere it skips, saying what is missing (tests/_needs.py). The syntax itself is checked in test_building.py.
"""

from __future__ import annotations

import html
import os
import shutil
import subprocess
from pathlib import Path

from graph_agent import END, START, StateGraph
from tests._needs import unavailable

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MERMAID_JS = os.environ.get("MERMAID_JS", "")

if not (CHROMIUM and Path(MERMAID_JS).is_file()):
    unavailable(
        "needs chromium on PATH and MERMAID_JS=path/to/mermaid.min.js "
        f"(MERMAID_JS is {MERMAID_JS!r}); .ci/run installs both"
    )


def _awkward_graph() -> str:
    name = 'say "hi" <now> & `x`'
    graph = StateGraph().add_node(name, lambda s: None).add_node("end", lambda s: None)
    graph.add_node("model", lambda s: None)
    graph.add_edge(START, name).add_edge(name, "end").add_edge("end", "model")
    graph.add_conditional_edges(
        "model", lambda s: END, {"again": "model", 'do"ne': END, "x|y": "end"}
    )
    return graph.compile().draw_mermaid("LR")


def _flows_of_agents() -> list[str]:
    """Sub-agents drawn as boxes, one nested in another, and a supervisor's agents inside
    its tool node."""
    from graph_agent import (
        ParallelAgent,
        ReactAgent,
        ScriptedChatModel,
        SequentialAgent,
        SupervisorAgent,
    )

    def agent(name: str) -> ReactAgent:
        return ReactAgent(name=name, model=ScriptedChatModel([]), description=name)

    research = ParallelAgent(name="research", sub_agents=[agent("web"), agent("papers")])
    team = SequentialAgent(name="team", sub_agents=[agent("planner"), research, agent("writer")])
    boss = SupervisorAgent(
        name="boss", model=ScriptedChatModel([]), sub_agents=[agent("a"), agent("b")]
    )
    return [team.graph.draw_mermaid(), boss.graph.draw_mermaid("LR")]


def test_mermaid_renders_every_diagram(tmp_path: Path) -> None:
    from examples.approval_workflow import graph as example

    diagrams = [example.draw_mermaid(), _awkward_graph(), *_flows_of_agents()]
    shutil.copy(MERMAID_JS, tmp_path / "mermaid.min.js")
    blocks = "".join(f'<pre class="mermaid">{html.escape(d)}</pre>' for d in diagrams)
    (tmp_path / "page.html").write_text(
        f"<html><head><title>pending</title></head><body>{blocks}"
        '<script src="mermaid.min.js"></script><script>'
        "mermaid.initialize({startOnLoad: false});"
        "mermaid.run({querySelector: '.mermaid'})"
        ".then(() => { document.title = 'rendered ' + document.querySelectorAll('svg').length; })"
        ".catch(e => { document.title = 'failed: ' + e.message; });"
        "</script></body></html>"
    )
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--allow-file-access-from-files",
         "--virtual-time-budget=10000", "--dump-dom", (tmp_path / "page.html").as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert f"<title>rendered {len(diagrams)}</title>" in dom, dom[:500]
    assert "Syntax error" not in dom

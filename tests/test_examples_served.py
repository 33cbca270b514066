"""Every example exports, at module level, an object ``graph-agent serve`` serves.

examples/README.md names it (``graph-agent serve examples/X.py:NAME``, a line per example);
each is loaded here the way ``serve`` loads a target (``load_target``), which imports the file
as a module: that must print nothing, write nothing and need no key. One real ``graph-agent
serve examples/research_team.py:flow`` answers a run over HTTP.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from graph_agent.cli._load import load_target
from graph_agent.graph import CompiledGraph
from tests.redis_servers import free_port

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ALL_EXAMPLES = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "_models.py")
SERVE = re.compile(r"`graph-agent serve examples/(\w+\.py):(\w+)`")
# An example that cannot export one, and why (examples/README.md says so too).
NOT_SERVED = {
    "mcp_tools.py": "its tools come from an MCP server process that McpToolProvider opens and "
    "closes around its use; a module-level object would start it on import, and a served "
    "object has no start or end to open and close it in",
}


def served_in_readme() -> dict[str, str]:
    """What examples/README.md says to serve, by example file."""
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    return dict(SERVE.findall(readme))


def test_the_readme_names_what_to_serve_for_every_example() -> None:
    named = served_in_readme()
    assert sorted(set(ALL_EXAMPLES) - set(NOT_SERVED)) == sorted(named)
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for example in NOT_SERVED:
        assert f"| [`{example}`]({example}) | not served |" in readme


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No model settings of this machine; the working directory an empty temporary one."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPH_AGENT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@pytest.mark.parametrize("example", [e for e in ALL_EXAMPLES if e not in NOT_SERVED])
def test_each_example_exports_a_servable_object(
    example: str, offline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = served_in_readme()[example]
    loaded = load_target(f"{EXAMPLES / example}:{name}")
    assert isinstance(loaded.graph, CompiledGraph)
    served = loaded.owner if loaded.owner is not None else loaded.graph
    assert callable(getattr(served, "astream_events", None)), f"{example}:{name} cannot be run"
    assert capsys.readouterr() == ("", "")  # importing it ran no demo
    assert list(offline.iterdir()) == []  # and wrote nothing


def test_a_served_scripted_model_answers_every_conversation(offline: Path) -> None:
    """An example whose offline model is a script: served, it answers a second conversation
    as the first (the script is replayed, not run out)."""
    agent = load_target(f"{EXAMPLES / 'calculator_tools.py'}:agent").owner
    question = "What is 12 times 34, and the square roots of -1 and of that product?"
    answers = [agent.call(question).text for _ in range(2)]
    assert answers[0] == answers[1]
    assert answers[0].startswith("12 times 34 is 408")


def test_serve_runs_the_research_team(tmp_path: Path) -> None:
    """``graph-agent serve examples/research_team.py:flow`` answers a run, offline."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GRAPH_AGENT"))}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "graph_agent.cli", "serve"]
    command += ["examples/research_team.py:flow", "--saver", f"sqlite:{tmp_path / 'served.sqlite'}"]
    server = subprocess.Popen(
        [*command, "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        for line in server.stdout:  # the server says when it listens
            if f":{port}" in line:
                break
        else:
            pytest.fail("the server ended before it listened")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            body = {
                "assistant_id": "research_team",
                "input": {"messages": [{"role": "user", "content": "Write a brief on green tea."}]},
            }
            answer = client.post("/runs/wait", json=body)
            assert answer.status_code == 200, answer.text
            messages = answer.json()["messages"]
        assert messages[-1]["content"].startswith("Green tea in brief. Green tea was first drunk")
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()

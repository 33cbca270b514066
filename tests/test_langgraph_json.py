"""``graph-agent serve`` on a LangGraph project's ``langgraph.json``: its ``graphs`` are served
under their names (file paths relative to the config), its ``env`` (a ``.env`` file or a
map) is set before they load, the keys not used here are named in one line, and ``auth``
is refused."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
from langgraph_sdk import get_sync_client

from tests._serve_cli import serve_in_process, unset_env
from tests.server.conftest import live_server

SERVE_ERROR = "graph-agent serve: error: "
HELLO = {"messages": [{"role": "user", "content": "hello"}]}
# a project's code: its answers come from the environment, read when the module loads
APP = """
import os
from graph_agent import END, START, ReactAgent, ScriptedChatModel, StateGraph

agent = ReactAgent(name="helper", model=ScriptedChatModel([os.environ["LG_GREETING"]] * 3))

def count(state):
    return {"n": state.get("n", 0) + int(os.environ["LG_STEP"])}

def build():
    graph = StateGraph()
    graph.add_node("count", count)
    graph.add_edge(START, "count")
    graph.add_edge("count", END)
    return graph
"""


def project(root: Path, config: dict[str, Any], env_file: str | None = None) -> Path:
    """A LangGraph-style project in ``root``: ``src/app.py``, ``langgraph.json``, a ``.env``."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(APP)
    if env_file is not None:
        (root / ".env").write_text(env_file)
    path = root / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


def answers(app: Any) -> tuple[str, int]:
    """What the served ``agent`` answers and ``counter`` counts, through the SDK."""
    with live_server(app) as url, get_sync_client(url=url) as client:
        assistants = sorted(a["graph_id"] for a in client.assistants.search())
        assert assistants == ["agent", "counter"]
        said = client.runs.wait(None, "agent", input=HELLO)
        counted = client.runs.wait(None, "counter", input={"n": 1})
    assert isinstance(said, dict) and isinstance(counted, dict)
    return said["messages"][-1]["content"], counted["n"]


def test_a_langgraph_project_is_served_from_its_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    unset_env(monkeypatch, "LG_GREETING", "LG_STEP")
    project(
        tmp_path / "my-app",
        {
            "$schema": "https://example.invalid/schema.json",
            "dependencies": ["."],
            "python_version": "3.11",
            "graphs": {
                "agent": "./src/app.py:agent",
                "counter": {"path": "./src/app.py:build", "description": "counts"},
            },
            "env": ".env",
            "http": {"cors": {"allow_origins": ["*"]}},
        },
        env_file='# the project\'s settings\nLG_GREETING="hello from .env"\nexport LG_STEP=2\n',
    )
    monkeypatch.chdir(tmp_path)  # not the project's folder: paths are the config's
    served = serve_in_process(monkeypatch, ["my-app/langgraph.json", "--saver", "memory"])
    assert served.code == 0
    info, serving = capsys.readouterr().err.splitlines()
    assert info == (
        "graph-agent serve: my-app/langgraph.json: dependencies, http, python_version: "
        "not used here, ignored"
    )
    assert serving.startswith("serving agent, counter on http://127.0.0.1:8123 ")
    assert answers(served.app) == ("hello from .env", 3)


def test_with_config_an_inline_env_and_the_environment_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    unset_env(monkeypatch, "LG_GREETING", "LG_STEP")
    monkeypatch.setenv("LG_STEP", "5")  # already set: it keeps its value
    graphs = {"agent": "src/app.py:agent", "counter": "src/app.py:build"}
    config = project(tmp_path, {"graphs": graphs, "env": {"LG_GREETING": "inline", "LG_STEP": 1}})
    served = serve_in_process(monkeypatch, ["--config", str(config), "--saver", "memory"])
    assert served.code == 0
    (serving,) = capsys.readouterr().err.splitlines()  # nothing ignored
    assert serving.startswith("serving agent, counter on ")
    assert answers(served.app) == ("inline", 6)
    assert os.environ["LG_STEP"] == "5"


def test_a_graph_given_as_a_module_imports_from_the_config_s_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unset_env(monkeypatch, "LG_GREETING", "LG_STEP")
    root = tmp_path / "proj"
    graphs = {"agent": "lg_project_pkg.app:agent", "counter": "lg_project_pkg.app:build"}
    config = project(
        root, {"graphs": graphs, "env": {"LG_GREETING": "from a module", "LG_STEP": "1"}}
    )
    (root / "src").rename(root / "lg_project_pkg")
    monkeypatch.setattr(sys, "path", list(sys.path))  # the config's folder is added to it
    try:
        served = serve_in_process(monkeypatch, [str(config), "--saver", "memory"])
        assert served.code == 0
        assert answers(served.app) == ("from a module", 2)
    finally:
        for name in [m for m in sys.modules if m.startswith("lg_project_pkg")]:
            del sys.modules[name]


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ({"graphs": {"agent": "./src/app.py:agent"}, "auth": {"path": "./auth.py:auth"}},
         "{config}: 'auth' is not supported by graph-agent serve: its custom auth would not run "
         "here, and the agents would be open; drop 'auth' and serve with --token (or "
         "GRAPH_AGENT_TOKEN)"),
        ({"dependencies": ["."]},
         '{config} names no graphs: add "graphs": {{"agent": "./my_app.py:agent"}}'),
        ({"graphs": {"agent": "./src/app.py"}},
         "{config} graphs.agent must be 'path/to/file.py:object' or 'package.module:object' (or "
         "{{\"path\": ...}}), got './src/app.py'"),
        ({"graphs": {"agent": "./src/app.py:missing"}},
         "{config} graphs.agent: {app} has no attribute 'missing'; graphs it defines: agent"),
        ({"graphs": {"agent": "./src/app.py:agent"}, "env": "./nope.env"},
         "{config} env (./nope.env): file not found: {root}/nope.env"),
    ],
)  # fmt: skip
def test_what_cannot_be_served_is_one_line_naming_the_key(
    config: dict[str, Any],
    error: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    unset_env(monkeypatch, "LG_GREETING", "LG_STEP")
    monkeypatch.setenv("LG_GREETING", "hi")
    path = project(tmp_path, config)
    served = serve_in_process(monkeypatch, [str(path), "--saver", "memory"])
    assert (served.code, served.app) == (2, None)
    app = tmp_path / "src" / "app.py"
    expected = error.format(config=path, app=app, root=tmp_path)
    assert capsys.readouterr().err == f"{SERVE_ERROR}{expected}\n"


def test_a_bad_env_file_names_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    unset_env(monkeypatch, "LG_GREETING", "LG_STEP")
    config = {"graphs": {"agent": "./src/app.py:agent"}, "env": ".env"}
    path = project(tmp_path, config, env_file="LG_GREETING=hi\nthis is not a setting\n")
    assert serve_in_process(monkeypatch, [str(path)]).code == 2
    assert capsys.readouterr().err == (
        f"{SERVE_ERROR}{path} env (.env): line 2 is not KEY=VALUE: 'this is not a setting'\n"
    )
    assert "LG_GREETING" not in os.environ  # nothing was set

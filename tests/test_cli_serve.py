"""``graph-agent serve``'s first contact: without the ``server`` extra it says how to install
it; a port that is not one is one line and exit code 2; listening beyond the loopback
without a token starts with a warning."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graph_agent.cli import _serve, main
from tests._cli import cli_env, run_cli
from tests._serve_cli import serve_in_process
from tests.test_extras import WITHOUT_EXTRAS

pytest.importorskip("uvicorn")

AGENT = (
    "from graph_agent import ReactAgent, ScriptedChatModel\n"
    "agent = ReactAgent(name='helper', model=ScriptedChatModel(['hi']))\n"
)
SERVE_ERROR = "graph-agent serve: error: "


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text(AGENT)
    return path


def test_without_the_server_extra_it_says_how_to_install_it(module: Path, tmp_path: Path) -> None:
    """Run where Starlette and uvicorn cannot be imported, as on a machine without them."""
    code = WITHOUT_EXTRAS + (
        "from graph_agent.cli import main\n"
        f"sys.exit(main(['serve', {f'{module}:agent'!r}, '--saver', 'memory']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(tmp_path), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"{SERVE_ERROR}serving needs the 'server' extra, and uvicorn is not installed: "
        "pip install 'graph-agent[server]'\n"
    )


@pytest.mark.parametrize("port", ["99999", "0", "-1", "http", "65536"])
def test_a_port_that_is_not_one_is_one_line_and_exit_2(
    port: str, module: Path, tmp_path: Path
) -> None:
    done = run_cli("serve", f"{module}:agent", "--port", port, env=cli_env(tmp_path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"{SERVE_ERROR}--port {port!r} is not a port number: give one from 1 to 65535\n"
    )


@pytest.fixture
def listened(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Where serve was asked to listen, in place of listening (it says where it serves)."""
    calls: list[dict[str, Any]] = []

    def listen(app: Any, host: str, port: int, announce: Callable[[], None]) -> None:
        calls.append({"host": host, "port": port})
        announce()

    monkeypatch.setattr(_serve, "listen_and_serve", listen)
    monkeypatch.delenv("GRAPH_AGENT_TOKEN", raising=False)
    return calls


def serve(module: Path, *options: str) -> int:
    return main(["serve", f"{module}:agent", "--saver", "memory", *options])


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "::", "example.org"])
def test_beyond_the_loopback_without_a_token_it_warns(
    host: str, module: Path, listened: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve(module, "--host", host, "--port", "8124") == 0
    warning, serving = capsys.readouterr().err.splitlines()
    assert warning == (
        f"graph-agent serve: warning: --host {host} with no token: anyone who can reach the "
        "server can run its agents (set --token or GRAPH_AGENT_TOKEN, or keep the default "
        "--host 127.0.0.1)"
    )
    assert serving.startswith(f"serving helper on http://{host}:8124 ")
    assert listened == [{"host": host, "port": 8124}]


@pytest.mark.parametrize(
    ("host", "token"),
    [("127.0.0.1", None), ("127.0.0.2", None), ("localhost", None), ("::1", None),
     ("0.0.0.0", "s3cret")],
)  # fmt: skip
def test_on_the_loopback_or_with_a_token_it_does_not(
    host: str,
    token: str | None,
    module: Path,
    listened: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert serve(module, "--host", host, *(["--token", token] if token else [])) == 0
    (serving,) = capsys.readouterr().err.splitlines()
    assert serving.startswith(f"serving helper on http://{host}:8123 ")


def agent_file(folder: Path, answer: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "app.py"
    path.write_text(
        "from graph_agent import ReactAgent, ScriptedChatModel\n"
        f"agent = ReactAgent(name='agent', model=ScriptedChatModel([{answer!r}] * 3))\n"
    )
    return path


def test_two_targets_of_one_name_are_served_under_names_the_user_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph_sdk import get_sync_client

    from tests.server.conftest import live_server

    billing = agent_file(tmp_path / "billing", "invoice sent")
    support = agent_file(tmp_path / "support", "ticket opened")
    served = serve_in_process(
        monkeypatch, [f"billing={billing}:agent", f"support={support}:agent", "--saver", "memory"]
    )
    assert served.code == 0
    assert capsys.readouterr().err.startswith("serving billing, support on ")
    hello = {"messages": [{"role": "user", "content": "hello"}]}
    with live_server(served.app) as url, get_sync_client(url=url) as client:
        assert sorted(a["graph_id"] for a in client.assistants.search()) == ["billing", "support"]
        for name, answer in (("billing", "invoice sent"), ("support", "ticket opened")):
            state = client.runs.wait(None, name, input=hello)
            assert isinstance(state, dict) and state["messages"][-1]["content"] == answer


def test_two_targets_of_one_name_without_names_is_one_line_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    billing = agent_file(tmp_path / "billing", "invoice sent")
    support = agent_file(tmp_path / "support", "ticket opened")
    served = serve_in_process(monkeypatch, [f"{billing}:agent", f"{support}:agent"])
    assert (served.code, served.app) == (2, None)
    assert capsys.readouterr().err == (
        f"{SERVE_ERROR}two targets are named 'agent': {billing}:agent and {support}:agent; "
        "clients pick one by its name, so serve them under names you give, NAME=TARGET: "
        f"graph-agent serve billing={billing}:agent support={support}:agent\n"
    )
    same = serve_in_process(monkeypatch, [f"x={billing}:agent", f"x={support}:agent"])
    assert same.code == 2
    assert capsys.readouterr().err == (
        f"{SERVE_ERROR}two targets are named 'x': x={billing}:agent and x={support}:agent; "
        "give each a name of its own\n"
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("=app.py:agent", "'=app.py:agent': NAME=TARGET serves TARGET under NAME, which takes "
         "letters, digits, '_', '-' and '.'"),
        ("billing=", "'billing=': no TARGET after '='; NAME=TARGET serves TARGET under NAME"),
    ],
)  # fmt: skip
def test_a_name_that_cannot_be_says_why(
    text: str, error: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve_in_process(monkeypatch, [text]).code == 2
    assert capsys.readouterr().err == f"{SERVE_ERROR}{error}\n"


def test_nothing_to_serve_says_what_to_name(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve_in_process(monkeypatch, []).code == 2
    assert capsys.readouterr().err == (
        f"{SERVE_ERROR}name at least one TARGET to serve (path/to/file.py:OBJECT), or a "
        "LangGraph project's langgraph.json\n"
    )


def test_a_port_in_use_is_one_line_and_exit_2(module: Path, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("serve", f"{module}:agent", "--saver", "memory", "--port", str(port),
                       env=cli_env(tmp_path))  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"{SERVE_ERROR}cannot listen on 127.0.0.1:{port}: Address already in use (choose "
        "another --port, or stop what listens there)\n"
    )


def test_it_says_where_it_serves_once_it_accepts_connections(module: Path, tmp_path: Path) -> None:
    """The "serving ... on" line is printed after the port listens: a client that connects
    as soon as it reads the line is answered (a test that did so saw "connection refused")."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    command = [sys.executable, "-m", "graph_agent.cli", "serve", f"{module}:agent"]
    server = subprocess.Popen(
        [*command, "--saver", "memory", "--port", str(port)],
        env=cli_env(tmp_path), stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert line.startswith(f"serving helper on http://127.0.0.1:{port} "), line
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stderr is not None:
            server.stderr.close()

"""An example that cannot run says why in one line: ``--live`` with no model configured, a model
server that cannot be reached or refuses the key, a package it needs that is not installed.
Each runs as a user would, ``python examples/<name>``, in a fresh interpreter."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests._examples import example_process
from tests.test_guide_examples import ALL_EXAMPLES, NO_MODEL

ROOT = Path(__file__).resolve().parents[1]
LIVE = [name for name in ALL_EXAMPLES if name not in NO_MODEL]


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    return done.stderr.strip()


@pytest.mark.parametrize("name", LIVE)
def test_live_without_a_model_configured_says_what_to_set(name: str) -> None:
    line = one_line(example_process(name, "--live"))
    assert line.startswith(f"{name}: --live needs a model: set OPENAI_API_KEY"), line
    assert "OPENAI_BASE_URL" in line


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("name", ["weather_tool.py", "streaming.py", "human_in_the_loop.py"])
def test_live_with_a_server_that_cannot_be_reached_is_one_line(name: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    line = one_line(example_process(name, "--live", OPENAI_BASE_URL=url))
    assert line.startswith(f"{name} --live: cannot reach the model server at {url}; "), line
    assert "set OPENAI_BASE_URL" in line


KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


class _Refusing(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps(
            {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error"}}
        ).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_live_with_a_refused_key_is_one_line_naming_the_key(refusing_server: str) -> None:
    done = example_process(
        "tool_errors.py", "--live", OPENAI_BASE_URL=refusing_server, OPENAI_API_KEY=KEY
    )
    line = one_line(done)
    assert line.startswith(
        f"tool_errors.py --live: the model server at {refusing_server} refused the key; "
        "set OPENAI_API_KEY"
    ), line
    assert KEY not in line


def test_graph_agent_debug_keeps_the_traceback() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = example_process("weather_tool.py", "--live", OPENAI_BASE_URL=url, GRAPH_AGENT_DEBUG="1")
    assert done.returncode == 1
    assert "Traceback (most recent call last):" in done.stderr
    assert "graph_agent.errors.ModelError" in done.stderr


@pytest.mark.parametrize(
    ("name", "package", "expected"),
    [
        (
            "tracing.py",
            "opentelemetry",
            "tracing.py needs OpenTelemetry, and opentelemetry is not installed: "
            "pip install 'graph-agent[otel]' opentelemetry-sdk",
        ),
        (
            "mcp_tools.py",
            "mcp",
            "mcp_tools.py needs the MCP SDK, and mcp is not installed: "
            "pip install 'graph-agent[mcp]'",
        ),
    ],
)
def test_an_example_without_its_extra_says_what_to_install(
    name: str, package: str, expected: str
) -> None:
    hide = (
        "import runpy, sys\n"
        "class Missing:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] == {package!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Missing())\n"
        f"sys.argv = ['examples/{name}']\n"
        "sys.path.insert(0, 'examples')\n"
        f"runpy.run_path('examples/{name}', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", hide], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert one_line(done) == expected


NEEDS = {"mcp": ("mcp", "graph_agent.mcp"), "otel": ("opentelemetry", "graph_agent.observability")}


def test_the_examples_readme_names_each_examples_extras() -> None:
    readme = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    needs = readme[readme.index("## What each example needs") :]
    rows = {line.split("`")[1]: line for line in needs.splitlines() if line.startswith("| [`")}
    for name in ALL_EXAMPLES:
        source = (ROOT / "examples" / name).read_text(encoding="utf-8")
        for extra, packages in NEEDS.items():
            imports = [
                line
                for line in source.splitlines()
                if line.strip().startswith(
                    tuple(f"{k} {p}" for p in packages for k in ("from", "import"))
                )
            ]
            if imports:
                assert name in rows, f"examples/README.md: {name} needs [{extra}], not listed"
                assert f"'graph-agent[{extra}]'" in rows[name], rows[name]

"""The web page's files over HTTP, without a browser: served ahead of the bearer token, with
a content security policy that keeps the page to its own server, and installed as package
data. (tests/server/test_page.py drives the page itself in headless Chromium.)"""

from __future__ import annotations

import fnmatch
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.server import create_app
from graph_agent.server._page import STATIC


def client(token: str | None = None) -> TestClient:
    agent = ReactAgent(name="echo", model=ScriptedChatModel(["hi"]), saver=MemorySaver())
    return TestClient(create_app({"echo": agent}, token=token))


def test_the_page_and_its_files_are_served_with_their_types_and_policy() -> None:
    with client() as http:
        page = http.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert '<script type="module" src="static/main.js">' in page.text
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "connect-src 'self'" in policy
        style = http.get("/static/app.css")
        assert style.headers["content-type"] == "text/css; charset=utf-8"
        assert headers_of(style) == headers_of(page)
        assert http.head("/").status_code == 200


def headers_of(response: Any) -> dict[str, str]:
    """The headers every file of the page gets: its caching and its security policy."""
    names = (
        "cache-control",
        "content-security-policy",
        "x-content-type-options",
        "referrer-policy",
    )
    return {name: response.headers[name] for name in names}


def test_every_module_the_page_imports_is_served_as_javascript_with_the_page_s_headers() -> None:
    """From main.js, each ``import ... from "./x.js"`` is followed: every module is served as
    JavaScript (a browser runs no module of another type) with the page's own headers, and
    every .js file in static/ is one of them (none left behind)."""
    with client() as http:
        page_headers = headers_of(http.get("/"))
        seen: dict[str, str] = {}
        waiting = ["main.js"]
        while waiting:
            name = waiting.pop()
            if name in seen:
                continue
            script = http.get(f"/static/{name}")
            assert script.status_code == 200, name
            assert script.headers["content-type"] == "text/javascript; charset=utf-8", name
            assert headers_of(script) == page_headers, name
            seen[name] = script.text
            waiting += imports(script.text)
    assert sorted(seen) == sorted(p.name for p in STATIC.glob("*.js"))
    assert any("run_events" in text for text in seen.values())


def imports(module: str) -> list[str]:
    """The page's own modules that ``module`` (a module's text) imports."""
    return re.findall(r'^import [^;]*? from "\./([\w.-]+\.js)";', module, re.M)


def test_the_page_s_modules_are_small_and_import_no_cycle() -> None:
    """Several people work on the page at once: each module keeps to one part of it (at most
    400 lines), and a module imports only modules below it (a part that must call one above
    is handed the function, as approvals.js is with onResume)."""
    graph = {p.name: imports(p.read_text()) for p in STATIC.glob("*.js")}
    for name in graph:
        lines = len((STATIC / name).read_text().splitlines())
        assert lines <= 400, f"{name} has {lines} lines: split it"

    def walk(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"import cycle: {' -> '.join((*path, name))}"
        for imported in graph[name]:
            walk(imported, (*path, name))

    for name in graph:
        walk(name, ())


@pytest.mark.parametrize("path", ["/static/nope.js", "/static/..%2F_page.py", "/static/.hidden"])
def test_only_the_page_s_own_files_are_served(path: str) -> None:
    with client() as http:
        assert http.get(path).status_code == 404


def test_with_a_token_the_page_loads_without_it_and_the_api_wants_it() -> None:
    with client(token="s3cret") as http:
        assert http.get("/").status_code == 200
        assert http.get("/static/main.js").status_code == 200
        assert http.post("/assistants/search", json={}).status_code == 401
        assert http.post("/", json={}).status_code == 401  # only GET / is the page
        answer = http.post(
            "/assistants/search", json={}, headers={"Authorization": "Bearer s3cret"}
        )
        assert [a["graph_id"] for a in answer.json()] == ["echo"]


def test_every_file_of_the_page_is_package_data() -> None:
    """Each file in static/ is matched by pyproject's package-data, so it installs."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - pytest brings tomli on 3.10
        import tomli as tomllib
    root = Path(__file__).parents[2]
    config = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["graph_agent"]
    files = sorted(p.name for p in STATIC.iterdir())
    assert {"index.html", "main.js", "app.css"} <= set(files)
    for name in files:
        relative = (STATIC / name).relative_to(root / "graph_agent").as_posix()
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), f"{relative} won't install"

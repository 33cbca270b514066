"""tests/_needs.py: what a test needs and does not find skips it locally, saying why, and
fails it on CI; a folder whose modules cannot be imported is one such item, not nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ._needs import need_module, unavailable

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("ci", [None, "true"], ids=["elsewhere", "on-ci"])
def test_a_missing_module_skips_except_on_ci(
    monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome) as info:
        need_module("no_such_module_here", "pip install it")
    message = str(info.value)
    assert message.startswith("no_such_module_here cannot be imported (No module named ")
    assert ": pip install it" in message
    assert message.endswith(": CI installs everything the suite needs") == bool(ci)
    with pytest.raises(outcome) as info:
        unavailable("no chromium: apt-get install chromium", "CI must run it")
    expected = "no chromium: apt-get install chromium"
    assert str(info.value) == (f"{expected}: CI must run it" if ci else expected)


def _pytest_without_mcp(ci: bool) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(
        """
        import sys

        import pytest

        class _NotInstalled:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "mcp":
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, _NotInstalled())
        sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", "tests/mcp"]))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_mcp_suite_without_mcp_is_one_skipped_line_and_a_failure_on_ci() -> None:
    local = _pytest_without_mcp(ci=False)
    assert local.returncode == 0, local.stdout + local.stderr
    assert "1 skipped" in local.stdout and "passed" not in local.stdout, local.stdout
    assert "mcp cannot be imported (No module named 'mcp')" in local.stdout
    assert "pip install 'graph-agent[mcp]'" in local.stdout
    on_ci = _pytest_without_mcp(ci=True)
    assert on_ci.returncode == 1, on_ci.stdout + on_ci.stderr
    assert "1 failed" in on_ci.stdout, on_ci.stdout
    assert "CI installs everything the suite needs" in on_ci.stdout

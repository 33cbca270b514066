"""``graph-agent worker`` and ``serve --queue``'s first contact: a queue that cannot be
reached, or an option that is not a number, is one line and exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._cli import cli_env, run_cli
from tests.redis_servers import free_port

pytest.importorskip("docket")

AGENT = (
    "from graph_agent import ReactAgent, ScriptedChatModel\n"
    "agent = ReactAgent(name='helper', model=ScriptedChatModel(['hi']))\n"
)


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text(AGENT)
    return path


@pytest.mark.parametrize("command", ["worker", "serve"])
def test_a_queue_no_one_answers_at_is_one_line_and_exit_2(
    command: str, module: Path, tmp_path: Path
) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    done = run_cli(command, f"{module}:agent", "--queue", url, env=cli_env(tmp_path))
    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"graph-agent {command}: error: --queue: the run queue's Redis at {url}")
    assert "cannot be reached" in line


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--concurrency", "0"),
        ("--lease-seconds", "soon"),
        ("--max-attempts", "-1"),
        ("--run-timeout", "0"),
    ],
)
def test_a_count_that_is_not_one_is_one_line_and_exit_2(
    option: str, value: str, module: Path, tmp_path: Path
) -> None:
    done = run_cli(
        "worker", f"{module}:agent", "--queue", "redis://127.0.0.1:1/0", option, value,
        env=cli_env(tmp_path),
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert (
        done.stderr == f"graph-agent worker: error: {option} {value!r} is not a positive number\n"
    )


def test_a_run_timeout_given_to_a_queued_server_is_refused_saying_where_it_belongs(
    module: Path, tmp_path: Path
) -> None:
    done = run_cli(
        "serve", f"{module}:agent", "--queue", "redis://127.0.0.1:1/0", "--run-timeout", "5",
        env=cli_env(tmp_path),
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "graph-agent serve: error: --run-timeout: with --queue, the workers run the runs: "
        "give it to 'graph-agent worker'\n"
    )

"""``graph-agent chat --model NAME --base-url URL``: the built-in agent's model from flags,
which win over ``GRAPH_AGENT_MODEL`` and ``OPENAI_BASE_URL``; the banner names the model
and server actually used (password masked)."""

from __future__ import annotations

from pathlib import Path

from tests._cli import ERROR_PREFIX, FakeOpenAI, cli_env, run_cli
from tests.redis_servers import free_port


def test_flags_win_over_the_environment(fake_model: FakeOpenAI, tmp_path: Path) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/v1"  # the environment's server: not used
    env = cli_env(tmp_path, OPENAI_BASE_URL=nowhere, GRAPH_AGENT_MODEL="env-model")
    url = fake_model.url("ada:s3cret-pw@")
    args = ("chat", "--saver", "memory", "--model", "flag-model", "--base-url", url)
    done = run_cli(*args, input="hello\n", env=env)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(
        f"chatting with flag-model at {fake_model.url('ada:***@')} on thread 'chat'"
    )
    assert "you said 'hello' (1 messages from you)" in done.stdout
    assert [r["model"] for r in fake_model.requests] == ["flag-model"]
    assert "s3cret-pw" not in done.stdout


def test_the_environment_when_no_flag_is_given(fake_model: FakeOpenAI, tmp_path: Path) -> None:
    env = cli_env(tmp_path, OPENAI_BASE_URL=fake_model.url(), GRAPH_AGENT_MODEL="env-model")
    done = run_cli("chat", "--saver", "memory", input="hello\n", env=env)
    assert done.stdout.startswith(f"chatting with env-model at {fake_model.url()} on thread 'chat'")
    assert [r["model"] for r in fake_model.requests] == ["env-model"]


def test_base_url_alone_is_a_configured_model(fake_model: FakeOpenAI, tmp_path: Path) -> None:
    env = cli_env(tmp_path)  # no OPENAI_API_KEY, no OPENAI_BASE_URL
    done = run_cli(
        "chat", "--base-url", fake_model.url(), "--saver", "memory", input="hi\n", env=env
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert "you said 'hi'" in done.stdout


def test_no_model_at_all_names_the_flags_too(tmp_path: Path) -> None:
    done = run_cli("chat", "--model", "m", input="hi\n", env=cli_env(tmp_path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"{ERROR_PREFIX}no model configured: set OPENAI_API_KEY")
    assert "--base-url" in done.stderr and "--model" in done.stderr

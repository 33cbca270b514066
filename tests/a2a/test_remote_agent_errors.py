"""What goes wrong with a remote A2A agent raises ``RemoteA2AError``, saying what, where and
how to fix it, at once (never a hang): a remote that is down, no card or an invalid one,
refused credentials, a task that fails. No connection is left open (ResourceWarning is an
error in the suite)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall
from graph_agent.a2a import RemoteA2AAgent, RemoteA2AError
from graph_agent.errors import AgentBuildError, GraphAgentError
from graph_agent.events import CustomEvent, ToolEnd
from tests.redis_servers import free_port

from ._remote_server import Scripted, card, remote_agent, served

ROOT = Path(__file__).resolve().parents[2]


def card_app(body: str, status: int = 200) -> Starlette:
    async def answer(request: Request) -> Response:
        return PlainTextResponse(body, status_code=status, media_type="application/json")

    return Starlette(routes=[Route("/.well-known/agent-card.json", answer)])


def test_a_remote_that_is_down_says_it_cannot_be_reached() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(RemoteA2AError) as raised:
        RemoteA2AAgent(url)
    message = str(raised.value)
    assert message.startswith(f"cannot reach the A2A agent at {url}"), message
    assert "is it running, and is the URL right?" in message
    assert raised.value.url == url and isinstance(raised.value, GraphAgentError)


def test_a_remote_that_goes_down_after_its_card_was_read() -> None:
    with remote_agent() as url:
        remote = RemoteA2AAgent(url)
    with pytest.raises(RemoteA2AError, match=r"cannot reach the remote A2A agent 'travel' at "):
        remote.call("hello")
    with pytest.raises(RemoteA2AError, match="is it running, and is the URL right"):
        asyncio.run(remote.acall("hello"))


def test_no_card_at_the_url() -> None:
    with served(lambda url: Starlette()) as url, pytest.raises(RemoteA2AError) as raised:
        RemoteA2AAgent(url)
    assert str(raised.value).startswith(
        f"no agent card at {url}/.well-known/agent-card.json (HTTP 404): give the agent's base URL"
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("<html>not json</html>", "Expecting value"),
        (json.dumps({"description": "no name"}), "it has no name"),
        (json.dumps({"name": "x", "version": "1"}), "it names no interface"),
        (json.dumps({"name": "x", "supportedInterfaces": "nope"}), "supportedInterfaces"),
    ],
)
def test_an_invalid_card_says_what_is_wrong_with_it(body: str, problem: str) -> None:
    with served(lambda url: card_app(body)) as url, pytest.raises(RemoteA2AError) as raised:
        RemoteA2AAgent(url)
    message = str(raised.value)
    assert message.startswith(
        f"the agent card at {url}/.well-known/agent-card.json is not a valid A2A agent card ("
    ), message
    assert problem in message, message


def test_a_card_given_directly_is_checked_too() -> None:
    with pytest.raises(RemoteA2AError, match=r"the card given is not a valid A2A agent card"):
        RemoteA2AAgent("http://127.0.0.1:1", card={"name": "x"})
    given = card("http://127.0.0.1:1")
    assert RemoteA2AAgent("http://127.0.0.1:1", card=given).name == "travel"


def test_refused_credentials_say_how_to_give_them() -> None:
    with remote_agent(token="s3cret") as url:
        remote = RemoteA2AAgent(url)  # its card is public
        with pytest.raises(RemoteA2AError) as raised:
            remote.call("hello")
        message = str(raised.value)
        assert "refused our credentials (HTTP 401)" in message, message
        assert "headers={'Authorization': 'Bearer <token>'}" in message
        allowed = RemoteA2AAgent(url, headers={"Authorization": "Bearer s3cret"})
        assert allowed.call("hello").text == "Echo: hello (turn 1)"


def test_a_refused_card_says_so() -> None:
    refused = pytest.raises(RemoteA2AError, match=r"refused our credentials \(HTTP 401 for")
    with served(lambda url: card_app("{}", status=401)) as url, refused:
        RemoteA2AAgent(url)


def test_a_failed_task_raises_with_the_remote_s_reason(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    with pytest.raises(RemoteA2AError) as raised:
        remote.call("fail please")
    message = str(raised.value)
    assert message.startswith(f"remote A2A agent 'travel' at {remote_url}, task "), message
    assert message.endswith(" failed: the flight API is down")
    assert raised.value.state == "failed"


def test_as_a_tool_a_failed_task_is_the_tool_s_error_for_the_model(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    call = ToolCall(id="call_1", name="travel", arguments=json.dumps({"input": "fail"}))
    model = ScriptedChatModel([AssistantMessage("", tool_calls=[call]), "Sorry."])
    agent = ReactAgent(name="assistant", model=model, tools=[remote.as_tool()])
    events = list(agent.stream_events("book"))
    (ended,) = [e for e in events if isinstance(e, ToolEnd) and not e.namespace]
    assert isinstance(ended.error, RemoteA2AError)
    assert "failed: the flight API is down" in (ended.result or "")


def test_bad_arguments_are_refused_at_once() -> None:
    with pytest.raises(AgentBuildError) as raised:
        RemoteA2AAgent("travel.example.com", timeout=0, name="my agent")
    assert str(raised.value) == (
        "cannot build agent 'my agent' (3 problems):\n"
        "  - url must be the agent's http(s) URL (or its card's), got 'travel.example.com'\n"
        "  - timeout must be a positive number of seconds, got 0\n"
        "  - name 'my agent' must be 1-64 letters, digits, '_' or '-' (it names the agent's "
        "tool and namespaces)"
    )


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A loopback port that takes connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_a_silent_remote_times_out_instead_of_hanging(silent_url: str) -> None:
    with pytest.raises(RemoteA2AError) as raised:
        RemoteA2AAgent(silent_url, timeout=0.2)
    assert str(raised.value).startswith(
        f"the A2A agent at {silent_url} did not answer within 0.2 s (reading its card at "
    )
    remote = RemoteA2AAgent(silent_url, card=card(silent_url), timeout=0.2)
    with pytest.raises(RemoteA2AError) as raised:
        remote.call("hello")
    assert str(raised.value) == (
        f"remote A2A agent 'travel' at {silent_url} did not answer within 0.2 s; check that "
        "it is up, or give a longer timeout="
    )


def test_without_the_a2a_extra_the_import_says_what_to_install() -> None:
    hide = textwrap.dedent(
        """
        import sys

        class NotInstalled:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "a2a":
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, NotInstalled())
        import graph_agent
        assert graph_agent.ReactAgent
        graph_agent.RemoteA2AAgent
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", hide], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: graph_agent.a2a needs the A2A SDK, which is not installed: "
        "pip install 'graph-agent[a2a]'"
    ), done.stderr


def test_cancelling_our_run_cancels_the_remote_task() -> None:
    executor = Scripted()
    with remote_agent(executor=executor) as url:
        remote = RemoteA2AAgent(url)

        async def main() -> list[str]:
            working = asyncio.Event()
            seen: list[str] = []

            async def run() -> None:
                async for event in remote.astream_events("wait for it"):
                    if isinstance(event, CustomEvent) and event.data["a2a"].get("state"):
                        seen.append(event.data["a2a"]["task_id"])
                        if event.data["a2a"]["state"] == "working":
                            working.set()

            running = asyncio.create_task(run())
            await working.wait()
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await running
            return seen

        seen = asyncio.run(main())
        assert executor.canceled == [seen[-1]]


def test_a_task_that_asks_for_credentials_says_how_to_give_them(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    with pytest.raises(RemoteA2AError) as raised:
        remote.call("auth me")
    message = str(raised.value)
    assert message.endswith(
        " asks for credentials (auth-required): Sign in at the portal first. (give them with "
        "headers= when the agent is made)"
    ), message
    assert raised.value.state == "auth-required"

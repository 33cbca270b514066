"""What A2A's endpoint answers to bad requests (a JSON-RPC error saying what is wrong, never
a 500), to push notifications (not served), to a client of A2A 0.3, and with ``--token``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from graph_agent.server import create_app
from tests._needs import need_module

from .conftest import live_server
from .test_sdk_client import weather_agent

need_module("a2a.client", "the a2a extra: pip install 'graph-agent[a2a]' (make test)")

from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState  # noqa: E402

V1 = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with live_server(create_app({"weather": weather_agent()}, max_body=4096)) as base:
        yield base


def call(url: str, body: Any, headers: dict[str, str] = V1, **options: Any) -> httpx.Response:
    return httpx.post(f"{url}/a2a/weather", json=body, headers=headers, timeout=20, **options)


def rpc(method: str, params: Any, id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def error_of(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert "result" not in body, body
    error: dict[str, Any] = body["error"]
    return error


def text_message(text: str, **fields: Any) -> dict[str, Any]:
    return {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}], **fields}


def test_what_is_not_json_rpc_is_a_protocol_error(url: str) -> None:
    not_json = httpx.post(
        f"{url}/a2a/weather",
        content=b"{not json",
        headers={**V1, "Content-Type": "application/json"},
    )
    assert error_of(not_json)["code"] == -32700
    not_utf8 = httpx.post(
        f"{url}/a2a/weather",
        content=b'{"a": "\xff"}',
        headers={**V1, "Content-Type": "application/json"},
    )
    assert error_of(not_utf8)["code"] == -32700
    assert "not JSON" in error_of(not_utf8)["message"]
    assert error_of(call(url, [rpc("GetTask", {"id": "x"})]))["code"] == -32600  # a batch
    wrong_version = {**rpc("GetTask", {"id": "x"}), "jsonrpc": "1.0"}
    assert "2.0" in error_of(call(url, wrong_version))["message"]
    assert error_of(call(url, rpc("tasks/nothing", {})))["code"] == -32601
    assert error_of(call(url, rpc("SendMessage", {"message": "hello"})))["code"] == -32602


def test_a_bad_message_says_what_is_wrong(url: str) -> None:
    no_parts = error_of(call(url, rpc("SendMessage", {"message": {"messageId": "m"}})))
    assert no_parts["code"] == -32602 and "no parts" in no_parts["message"]
    unknown = error_of(call(url, rpc("GetTask", {"id": "no-such-task"})))
    assert unknown["code"] == -32001 and "no-such-task" in unknown["message"]
    to_unknown = rpc("SendMessage", {"message": text_message("hi", taskId="no-such-task")})
    assert error_of(call(url, to_unknown))["code"] == -32001
    negative = error_of(call(url, rpc("GetTask", {"id": "x", "historyLength": -1})))
    assert negative["code"] == -32602 and "historyLength" in negative["message"]


def test_a_completed_task_takes_no_message_and_cannot_be_cancelled(url: str) -> None:
    done = call(url, rpc("SendMessage", {"message": text_message("weather?")}))
    task = done.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    again = rpc("SendMessage", {"message": text_message("more", taskId=task["id"])})
    refused = error_of(call(url, again))
    assert refused["code"] == -32004
    assert "completed" in refused["message"] and "without taskId" in refused["message"]
    other_context = text_message("more", taskId=task["id"], contextId="another")
    mismatch = error_of(call(url, rpc("SendMessage", {"message": other_context})))
    assert mismatch["code"] == -32602 and "contextId" in mismatch["message"]
    cancel = error_of(call(url, rpc("CancelTask", {"id": task["id"]})))
    assert cancel["code"] == -32002 and "completed" in cancel["message"]


def test_push_notifications_are_not_served(url: str) -> None:
    config = {"taskId": "t", "url": "http://127.0.0.1:9/hook"}
    refused = error_of(call(url, rpc("CreateTaskPushNotificationConfig", config)))
    assert refused["code"] == -32003 and "never calls" in refused["message"]
    asked = {"message": text_message("hi"), "configuration": {"taskPushNotificationConfig": config}}
    assert error_of(call(url, rpc("SendMessage", asked)))["code"] == -32003


def test_an_a2a_0_3_client_is_answered_in_0_3(url: str) -> None:
    message = {"kind": "message", "messageId": "m1", "role": "user", "parts": [
        {"kind": "text", "text": "weather?"}]}  # fmt: skip
    answer = call(url, rpc("message/send", {"message": message}), headers={})
    assert answer.status_code == 200, answer.text
    task = answer.json()["result"]
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    # 1.0's names need 1.0's header
    refused = error_of(call(url, rpc("GetTask", {"id": task["id"]}), headers={}))
    assert "version" in refused["message"].lower()


def test_a_body_over_the_limit_an_agent_not_served_and_the_only_card(url: str) -> None:
    big = call(url, rpc("SendMessage", {"message": text_message("x" * 5000)}))
    assert big.status_code == 413
    assert "4096 bytes" in big.json()["error"]["message"]
    only = httpx.get(f"{url}/.well-known/agent-card.json").json()  # the one served
    assert only["name"] == "weather"
    missing = httpx.post(f"{url}/a2a/nobody", json=rpc("GetTask", {"id": "x"}), headers=V1)
    assert missing.status_code == 404 and "nobody" in missing.json()["detail"]


def test_the_token_is_needed_for_the_card_and_the_calls() -> None:
    app = create_app({"weather": weather_agent()}, token="s3cret")
    with live_server(app) as base:
        card_url = f"{base}/a2a/weather/.well-known/agent-card.json"
        assert httpx.get(card_url).status_code == 401
        refused = httpx.post(f"{base}/a2a/weather", json=rpc("GetTask", {"id": "x"}))
        assert refused.status_code == 401
        bearer = {"Authorization": "Bearer s3cret"}
        card = httpx.get(card_url, headers=bearer).json()
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
        assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]

        async def scenario() -> Any:
            async with httpx.AsyncClient(headers=bearer, timeout=20) as http:
                config = ClientConfig(httpx_client=http, streaming=False)
                client = await create_client(f"{base}/a2a/weather", config)
                message = Message(message_id="m", role=Role.ROLE_USER, parts=[Part(text="hi")])
                answers = [
                    a async for a in client.send_message(SendMessageRequest(message=message))
                ]
                await client.close()
                return answers[0].task

        task = asyncio.run(scenario())
        assert task.status.state == TaskState.TASK_STATE_COMPLETED


def test_a_fault_of_the_server_says_no_more_than_that() -> None:
    app = create_app({"weather": weather_agent()})

    async def broken(run_id: str) -> Any:
        raise RuntimeError("the secret path /etc/runs is unreadable")

    app.state.server.runs.get = broken
    with live_server(app) as base:
        for method in ("GetTask", "CancelTask"):
            fault = error_of(call(base, rpc(method, {"id": "t"})))
            assert (fault["code"], fault["message"]) == (-32603, "An internal error occurred")
            assert "secret" not in str(fault)
        stream = call(base, rpc("SubscribeToTask", {"id": "t"}))
        assert stream.status_code == 200
        assert "An internal error occurred" in stream.text and "secret" not in stream.text

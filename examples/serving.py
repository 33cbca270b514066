"""Two agents served over HTTP (the Agent Protocol), and a client that talks to them.

``weather`` answers with a tool call; ``payments`` pauses for a person's approval before
``send_payment`` runs (``HumanInTheLoopHook``). Run as a script, this starts the server
(``create_app`` on uvicorn, the app ``graph-agent serve`` runs) on a free local port, then,
with nothing but HTTP and Server-Sent Events:

- streams a run of ``weather`` and prints each step as it arrives;
- starts a payment, which pauses: the thread waits, its status ``interrupted``;
- approves it with ``command={"resume": ...}``, and the payment goes out.

The same objects serve from the command line, with the web page at ``/``:

    graph-agent serve examples/serving.py:weather examples/serving.py:payments

    python examples/serving.py [--live]
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from checkpoint import MemorySaver
from graph_agent import (
    AssistantMessage,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from graph_agent.models import ChatModel
from hooks import HumanInTheLoopHook


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@tool
def send_payment(to: str, amount: float) -> str:
    """Send money from the user's account to a person."""
    return f"sent {amount:.2f} EUR to {to}"


def offline_reply(prompt: Prompt) -> AssistantMessage | str:
    """A deterministic stand-in for an LLM: asks for the tool the request needs, then answers
    with what the tool said."""
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        said = last.responses[0].response_data
        return f"It is {said}." if said.startswith("sunny") else f"{said[0].upper()}{said[1:]}."
    if "pay" in last.text.lower():
        arguments = {"to": "Alice", "amount": 120.0}
        call = ToolCall(id="call_pay", name="send_payment", arguments=json.dumps(arguments))
    else:
        call = ToolCall(id="call_weather", name="get_weather", arguments='{"city": "Paris"}')
    return AssistantMessage("", tool_calls=[call])


def weather_agent(model: ChatModel) -> ReactAgent:
    return ReactAgent(
        name="weather",
        model=model,
        tools=[get_weather],
        saver=MemorySaver(),  # `graph-agent serve` keeps threads in its --saver instead
        description="Answers questions about the weather.",
    )


def payments_agent(model: ChatModel) -> ReactAgent:
    return ReactAgent(
        name="payments",
        model=model,
        tools=[send_payment],
        hooks=[HumanInTheLoopHook(["send_payment"])],
        saver=MemorySaver(),
        description="Sends payments, once a person approves each one.",
    )


# what `graph-agent serve examples/serving.py:weather ...` serves
weather = weather_agent(FunctionChatModel(offline_reply))
payments = payments_agent(FunctionChatModel(offline_reply))


def events(client: httpx.Client, path: str, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The ``(event, data)`` of a Server-Sent Events stream (one ``data:`` line each)."""
    with client.stream("POST", path, json=body) as response:
        response.raise_for_status()
        event = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[len("event: ") :]
            elif line.startswith("data: "):
                yield event, json.loads(line[len("data: ") :])


def show_update(update: dict[str, Any]) -> str:
    node, written = next(iter(update.items()))
    message = written["messages"][-1]
    if message.get("tool_calls"):
        call = message["tool_calls"][0]
        return f"{node} asked {call['name']}({json.dumps(call['args'])})"
    verb = "answered" if node == "tools" else "said"
    return f"{node} {verb} {message['content']}"


def talk(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        print("weather: a streamed run")
        thread = client.post("/threads", json={}).json()
        ask = {"messages": [{"role": "user", "content": "Weather in Paris?"}]}
        run = {"assistant_id": "weather", "input": ask, "stream_mode": "updates"}
        for event, data in events(client, f"/threads/{thread['thread_id']}/runs/stream", run):
            if event == "updates":
                print(f"  {show_update(data)}")

        print("payments: a run that pauses for approval")
        thread = client.post("/threads", json={}).json()
        where = f"/threads/{thread['thread_id']}"
        pay = {"messages": [{"role": "user", "content": "Pay Alice 120 EUR"}]}
        paused = client.post(
            f"{where}/runs/wait", json={"assistant_id": "payments", "input": pay}
        ).json()
        (pending,) = paused["__interrupt__"][0]["value"]["tool_calls"]
        print(f"  waits for: {pending['name']}({json.dumps(pending['arguments'])})")
        print(f"  thread status: {client.get(where).json()['status']}")

        print("payments: approved over HTTP")
        decision = {"tool_call_id": pending["id"], "decision": "approved"}
        done = client.post(
            f"{where}/runs/wait",
            json={"assistant_id": "payments", "command": {"resume": decision}},
        ).json()
        print(f"  assistant: {done['messages'][-1]['content']}")
        print(f"  thread status: {client.get(where).json()['status']}")


def main(argv: Sequence[str] | None = None) -> None:
    from _models import choose, needs, parse_args

    args = parse_args(__doc__.splitlines()[0], argv)
    model = choose(args, FunctionChatModel(offline_reply))
    with needs("the server extra", "pip install 'graph-agent[server]'"):
        import uvicorn

        from graph_agent.server import create_app
    app = create_app({"weather": weather_agent(model), "payments": payments_agent(model)})
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    serving = threading.Thread(target=server.run, daemon=True)
    serving.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        talk(f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        serving.join(10)


if __name__ == "__main__":
    main()

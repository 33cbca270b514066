"""A worker process for tests/checkpoint/test_redis_processes.py.

Run as ``python -m tests.checkpoint._redis_worker MODE JSON`` from the repository root; JSON
holds the mode's arguments (always ``url`` and ``prefix``). The modes:

- ``threads``: the agent (a ``FunctionChatModel`` calling an ``echo`` tool) runs ``turns``
  turns on each of ``threads`` thread ids of its own, turn after turn across its threads;
- ``contend``: ``steps`` read-modify-write steps on one thread that another worker writes
  too, each retried on ``CheckpointConflictError``; a node waits on a file barrier so both
  workers start every round from the same head;
- ``crash``: runs the four-node ``line_graph`` on a thread; its node ``c`` reports that it
  started (a file) and blocks: the test kills the process there;
- ``resume``: resumes a thread of ``line_graph`` with ``invoke(None, config)``;
- ``chat``: ``turns`` turns of ``chat_graph`` on one thread, as fast as it can.

The last line a worker prints is a JSON report. Every wait is bounded, so a worker whose
test died stops by itself.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from checkpoint import CheckpointConflictError, RedisSaver
from graph_agent import (
    END,
    START,
    AssistantMessage,
    CompiledGraph,
    FunctionChatModel,
    KeyStrategy,
    Prompt,
    ReactAgent,
    StateGraph,
    ToolCall,
    ToolResponseMessage,
    tool,
)

WAIT = 60.0  # seconds any wait of a worker may take at most
POLL = 0.002


def _wait_for(path: Path, also: Path | None = None, timeout: float = WAIT) -> bool:
    """Wait until ``path`` (or ``also``) exists; False when the time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() or (also is not None and also.exists()):
            return True
        time.sleep(POLL)
    return False


# -- the agent of the ``threads`` mode --------------------------------------------------------


@tool
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


def _reply(prompt: Prompt) -> AssistantMessage:
    """Call ``echo`` on the user's message, then answer with what it returned."""
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return AssistantMessage(f"answer: {last.responses[0].response_data}")
    return AssistantMessage(
        "",
        tool_calls=[
            ToolCall(id=f"call-{last.text}", name="echo", arguments=json.dumps({"text": last.text}))
        ],
    )


def agent(saver: RedisSaver) -> ReactAgent:
    return ReactAgent(name="echo", model=FunctionChatModel(_reply), tools=[echo], saver=saver)


def expected_turn(text: str) -> list[tuple[str, str]]:
    """The messages one ``threads`` turn adds, as (message_type, text)."""
    return [
        ("user", text),
        ("assistant", ""),
        ("tool", f"echo: {text}"),
        ("assistant", f"answer: echo: {text}"),
    ]


def thread_ids(worker: int, threads: int) -> list[str]:
    return [f"w{worker}-t{i:02d}" for i in range(threads)]


def user_text(thread: str, turn: int) -> str:
    return f"{thread} says {turn}"


def run_threads(saver: RedisSaver, args: dict[str, Any]) -> dict[str, Any]:
    Path(args["ready"]).touch()
    if not _wait_for(Path(args["go"])):
        raise SystemExit("the test never said go")
    app = agent(saver)
    threads = thread_ids(args["worker"], args["threads"])
    for turn in range(args["turns"]):
        for thread in threads:
            answer = app.call(user_text(thread, turn), {"thread_id": thread})
            assert answer.text == f"answer: echo: {user_text(thread, turn)}", answer
    return {"runs": args["turns"] * len(threads)}


# -- the counter of the ``contend`` mode --------------------------------------------------------


def counter_graph(saver: RedisSaver) -> CompiledGraph:
    """One node: adds one to ``n``; the input appends to ``messages``. A run reads the head,
    writes its input, runs the node and writes its step."""

    def bump(state: Any) -> dict[str, Any]:
        return {"n": (state.get("n") or 0) + 1}

    graph = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
    graph.add_node("bump", bump)
    graph.add_edge(START, "bump").add_edge("bump", END)
    return graph.compile(saver=saver)


def run_contend(saver: RedisSaver, args: dict[str, Any]) -> dict[str, Any]:
    me, other = args["worker"], args["other"]
    barrier = Path(args["barrier"])
    attempt = 0
    write = saver.put

    def meet_then_write(checkpoint: Any, delta: Any = None, *, check_head: bool = True) -> None:
        # A run's first write is its input. Both workers loaded the thread's head before
        # they got here: once both arrived, both write from the same parent, and one of
        # them must be refused.
        if checkpoint.metadata.get("source") == "input":
            (barrier / f"{me}-{attempt}").touch()
            _wait_for(barrier / f"{other}-{attempt}", also=barrier / f"done-{other}")
        write(checkpoint, delta, check_head=check_head)

    saver.put = meet_then_write  # type: ignore[method-assign]
    app = counter_graph(saver)
    config = {"thread_id": args["thread"]}
    successes: list[str] = []
    outcomes: list[str] = []  # per attempt: "ok" or "conflict"
    try:
        for step in range(args["steps"]):
            while True:
                attempt += 1
                if attempt > 20 * args["steps"]:
                    raise SystemExit(f"{me}: {attempt} attempts for {step} steps")
                try:
                    app.invoke({"messages": [f"{me}-{step}"]}, config)
                except CheckpointConflictError:
                    outcomes.append("conflict")
                    # the winner's run goes on to its step: retry once it has finished
                    _wait_for(barrier / f"ok-{other}-{attempt}", also=barrier / f"done-{other}")
                    continue
                (barrier / f"ok-{me}-{attempt}").touch()
                outcomes.append("ok")
                successes.append(f"{me}-{step}")
                break
    finally:
        (barrier / f"done-{me}").touch()
    conflicts = outcomes.count("conflict")
    return {"successes": successes, "conflicts": conflicts, "outcomes": outcomes}


# -- the line of the ``crash`` and ``resume`` modes -----------------------------------------------


def line_graph(saver: RedisSaver, inside: Path | None = None) -> CompiledGraph:
    """START -> a -> b -> c -> d -> END, each node appending its name to ``messages`` and
    counting in ``done``. With ``inside``, node ``c`` touches that file and then blocks."""

    def node(name: str) -> Callable[[Any], dict[str, Any]]:
        def run(state: Any) -> dict[str, Any]:
            if name == "c" and inside is not None:
                inside.touch()
                time.sleep(WAIT)  # killed here; gone by itself if nobody does
                raise SystemExit("node c was not killed")
            return {"messages": [name], "done": (state.get("done") or 0) + 1}

        return run

    graph = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
    for name in "abcd":
        graph.add_node(name, node(name))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", "d")
    graph.add_edge("d", END)
    return graph.compile(saver=saver)


def run_crash(saver: RedisSaver, args: dict[str, Any]) -> dict[str, Any]:
    line_graph(saver, Path(args["inside"])).invoke(
        {"messages": ["start"]}, {"thread_id": args["thread"]}
    )
    return {"finished": True}  # never: the test kills the process in node c


def run_resume(saver: RedisSaver, args: dict[str, Any]) -> dict[str, Any]:
    state = line_graph(saver).invoke(None, {"thread_id": args["thread"]})
    return {"messages": list(state["messages"]), "done": state["done"]}


# -- the chat of the ``chat`` mode -----------------------------------------------------------------


def chat_graph(saver: RedisSaver) -> CompiledGraph:
    """One node answering the last message: a turn writes the user's message (its input),
    then the reply."""
    graph = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
    graph.add_node("reply", lambda s: {"messages": [f"re: {s['messages'][-1]}"]})
    graph.add_edge(START, "reply").add_edge("reply", END)
    return graph.compile(saver=saver)


def run_chat(saver: RedisSaver, args: dict[str, Any]) -> dict[str, Any]:
    app = chat_graph(saver)
    config = {"thread_id": args["thread"]}
    start, deadline = args.get("start", 0), time.monotonic() + WAIT
    for turn in range(start, start + args["turns"]):
        if time.monotonic() > deadline:  # a test that never killed it is gone
            raise SystemExit(f"chat: stopped after {turn - start} turns and {WAIT}s")
        app.invoke({"messages": [f"u{turn}"]}, config)
    return {"turns": args["turns"]}


MODES: dict[str, Callable[[RedisSaver, dict[str, Any]], dict[str, Any]]] = {
    "threads": run_threads,
    "contend": run_contend,
    "crash": run_crash,
    "resume": run_resume,
    "chat": run_chat,
}


def main(argv: list[str]) -> int:
    mode, args = argv[0], json.loads(argv[1])
    saver = RedisSaver.from_url(args["url"], key_prefix=args["prefix"])
    try:
        report = MODES[mode](saver, args)
    finally:
        saver.client.close()
    print(json.dumps({"pid": os.getpid(), **report}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

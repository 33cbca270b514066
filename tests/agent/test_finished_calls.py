"""A tool call that finished is never run twice and never reported as having no result: not
after a sibling call failed (``always_throw``), and not after the process was killed while
sibling calls still ran (a durable saver stores each finished call as it finishes)."""

from __future__ import annotations

import asyncio
import json
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from checkpoint import BaseCheckpointSaver, RedisSaver, SqliteSaver
from graph_agent import (
    AssistantMessage,
    DefaultToolExecutionExceptionProcessor,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.agent._unanswered import UNANSWERED_TEXT
from graph_agent.errors import ToolExecutionException

from .._kill import kill_when
from .conftest import Runner


def booking_model(seen: list[list[Any]]) -> FunctionChatModel:
    """Asks for ``book`` and ``check`` in parallel on the first user message; otherwise
    answers with text. Every prompt's messages are recorded in ``seen``."""

    def answer(prompt: Prompt) -> AssistantMessage:
        messages = list(prompt.messages)
        seen.append(messages)
        if isinstance(messages[-1], UserMessage) and messages[-1].text == "book it":
            return AssistantMessage(
                "",
                tool_calls=(
                    ToolCall(id="c1", name="book", arguments=json.dumps({"room": 7})),
                    ToolCall(id="c2", name="check", arguments="{}"),
                ),
            )
        return AssistantMessage("ok")

    return FunctionChatModel(answer)


def responses(messages: list[Any]) -> dict[str, str]:
    return {
        r.id: r.response_data
        for m in messages
        if isinstance(m, ToolResponseMessage)
        for r in m.responses
    }


def test_new_input_after_a_sibling_failed_gets_the_finished_calls_result(
    durable: BaseCheckpointSaver, run: Runner
) -> None:
    booked: list[int] = []
    book_returns = threading.Event()

    @tool
    def book(room: int) -> str:
        """Books a room."""
        booked.append(room)
        book_returns.set()
        return f"booking #{len(booked)} for room {room}"

    @tool
    def check() -> str:
        """Fails after book has finished."""
        assert book_returns.wait(10)
        raise RuntimeError("the checker is down")

    seen: list[list[Any]] = []
    agent = ReactAgent(
        name="a", model=booking_model(seen), tools=[book, check], saver=durable,
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True),
    )  # fmt: skip
    config = {"thread_id": f"booking-{run}"}
    with pytest.raises(ToolExecutionException, match="checker is down"):
        run.call(agent, "book it", config)
    assert booked == [7]
    run.call(agent, "what happened?", config)  # new input, not a resume
    answered = responses(seen[-1])
    assert answered["c1"] == "booking #1 for room 7"  # its kept result, not "no result"
    assert answered["c2"] == UNANSWERED_TEXT  # the one that failed has none
    assert booked == [7]


def test_resume_after_a_sibling_failed_does_not_book_twice(
    durable: BaseCheckpointSaver, run: Runner
) -> None:
    booked: list[int] = []
    broken = [True]
    book_returns = threading.Event()

    @tool
    def book(room: int) -> str:
        """Books a room."""
        booked.append(room)
        book_returns.set()
        return f"booked {room}"

    @tool
    def check() -> str:
        """Fails while broken, after book has finished."""
        assert book_returns.wait(10)
        if broken[0]:
            raise RuntimeError("the checker is down")
        return "checked"

    seen: list[list[Any]] = []
    agent = ReactAgent(
        name="a", model=booking_model(seen), tools=[book, check], saver=durable,
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True),
    )  # fmt: skip
    config = {"thread_id": f"resume-{run}"}
    with pytest.raises(ToolExecutionException):
        run.call(agent, "book it", config)
    broken[0] = False
    assert run.call(agent, None, config).text == "ok"
    assert booked == [7]
    assert responses(seen[-1]) == {"c1": "booked 7", "c2": "checked"}


# -- a killed process ------------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from graph_agent import AssistantMessage, FunctionChatModel, ReactAgent, ToolCall, tool

    kind, where, marks, mode = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    if kind == "sqlite":
        from checkpoint import SqliteSaver
        saver = SqliteSaver(where)
    else:
        from checkpoint import RedisSaver
        saver = RedisSaver.from_url(where)

    def mark(text):
        with marks.open("a") as f:
            f.write(text + "\\n")

    def stored_after_book(n):
        # a write that began after booking n returned (one under way then may not hold it)
        lines = marks.read_text().splitlines() if marks.exists() else []
        books = [i for i, line in enumerate(lines) if line == "book"]
        if len(books) < n:
            return False
        since = books[n - 1] + 1
        return any(
            line.startswith("stored@") and int(line[7:]) >= since for line in lines[since:]
        )

    @tool
    def book(room: int) -> str:
        '''Books a room.'''
        # room n ends once the write of room n - 1 has landed: each finished booking is
        # stored by a write of its own, so the test knows which write holds the last one
        while room > 1 and not stored_after_book(room - 1):
            time.sleep(0.001)
        mark("book")
        return f"booked {room}"

    @tool
    def wait() -> str:
        '''Never ends before the kill.'''
        mark("wait")
        time.sleep(60)
        return "late"

    calls = tuple(
        ToolCall(id=f"c{i}", name=name, arguments=json.dumps(args))
        for i, (name, args) in enumerate(
            [("book", {"room": 1}), ("wait", {}), ("book", {"room": 2}), ("book", {"room": 3})],
            start=1,
        )
    )
    agent = ReactAgent(
        name="a", model=FunctionChatModel(lambda p: AssistantMessage("", tool_calls=calls)),
        tools=[book, wait], saver=saver,
    )
    if mode == "async":
        import asyncio
        asyncio.run(agent.acall("book three", {"thread_id": "killed-" + mode}))
    else:
        agent.call("book three", {"thread_id": "killed-" + mode})
    """
)


def run_and_kill(args: list[str], marks: Path) -> None:
    kill_when(
        WORKER,
        args,
        lambda: marks.exists() and marks.read_text().split().count("book") == 3,
        marks,
        stored_after="book",
    )


def check_no_second_booking(saver: BaseCheckpointSaver, marks: Path, mode: str) -> None:
    booked: list[int] = []

    @tool
    def book(room: int) -> str:
        """Books a room."""
        booked.append(room)
        return f"booked {room}"

    @tool
    def wait() -> str:
        """Ends at once now."""
        return "waited"

    seen: list[list[Any]] = []

    def answer(prompt: Prompt) -> AssistantMessage:
        seen.append(list(prompt.messages))
        return AssistantMessage("all done")

    agent = ReactAgent(name="a", model=FunctionChatModel(answer), tools=[book, wait], saver=saver)
    config = {"thread_id": f"killed-{mode}"}
    if mode == "async":

        async def resume() -> AssistantMessage:
            try:
                return await agent.acall(None, config)
            finally:
                await saver.aclose()  # its async client belongs to this loop

        answer = asyncio.run(resume())
    else:
        answer = agent.call(None, config)
    assert answer.text == "all done"  # the killed step resumed
    assert booked == []  # the three finished bookings were kept, not run again
    assert responses(seen[-1]) == {
        "c1": "booked 1", "c2": "waited", "c3": "booked 2", "c4": "booked 3",
    }  # fmt: skip


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_killed_process_keeps_finished_parallel_calls_sqlite(tmp_path: Path, mode: str) -> None:
    path, marks = tmp_path / "threads.db", tmp_path / "marks.txt"
    run_and_kill(["sqlite", str(path), str(marks), mode], marks)
    with SqliteSaver(path) as saver:
        check_no_second_booking(saver, marks, mode)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_killed_process_keeps_finished_parallel_calls_redis(
    tmp_path: Path, redis_url: str, mode: str
) -> None:
    marks = tmp_path / "marks.txt"
    with RedisSaver.from_url(redis_url) as saver:
        saver.delete_thread(f"killed-{mode}")
        run_and_kill(["redis", redis_url, str(marks), mode], marks)
        check_no_second_booking(saver, marks, mode)

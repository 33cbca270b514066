"""OpenAIChatModel lets go of a stream's response whatever its reader does: reads it to the
end, leaves it early, or is cancelled in the middle; sync and async alike. No network."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from graph_agent.models import ChatResponse, Prompt
from graph_agent.models.openai import OpenAIChatModel


def event(text: str) -> bytes:
    return (
        b'data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"'
        + text.encode()
        + b'"},"finish_reason":null}]}\n\n'
    )


EVENTS = [event("One"), event(" two"), event(" three"), b"data: [DONE]\n\n"]


class Body(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body, one event per read, that notes when it is closed; it may stall
    after its first event until ``stall`` is set."""

    def __init__(self, stall: asyncio.Event | None = None) -> None:
        self.closed = 0
        self.stall = stall

    def __iter__(self) -> Iterator[bytes]:
        yield from EVENTS

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for n, piece in enumerate(EVENTS):
            if n == 1 and self.stall is not None:
                await self.stall.wait()
            yield piece

    def close(self) -> None:
        self.closed += 1

    async def aclose(self) -> None:
        self.closed += 1


def models(body: Body) -> tuple[OpenAIChatModel, OpenAIChatModel]:
    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    transport = httpx.MockTransport(reply)
    return (
        OpenAIChatModel(http_client=httpx.Client(transport=transport), max_retries=0),
        OpenAIChatModel(async_http_client=httpx.AsyncClient(transport=transport), max_retries=0),
    )


def test_a_stream_read_to_its_end_is_closed() -> None:
    body = Body()
    model, amodel = models(body)
    assert ChatResponse.merge(list(model.stream(Prompt("hi")))).text == "One two three"
    assert body.closed >= 1

    async def main() -> str:
        return ChatResponse.merge([c async for c in amodel.astream(Prompt("hi"))]).text

    body.closed = 0
    assert asyncio.run(main()) == "One two three"
    assert body.closed >= 1


def test_a_stream_left_early_is_closed() -> None:
    body = Body()
    model, amodel = models(body)
    chunks = model.stream(Prompt("hi"))
    assert next(chunks).text == "One"
    assert body.closed == 0
    chunks.close()  # type: ignore[attr-defined]
    assert body.closed >= 1

    async def main() -> None:
        chunks = amodel.astream(Prompt("hi"))
        assert (await anext(chunks)).text == "One"
        assert body.closed == 0
        await chunks.aclose()  # type: ignore[attr-defined]

    body.closed = 0
    asyncio.run(main())
    assert body.closed >= 1


def test_a_stream_cancelled_while_it_waits_is_closed() -> None:
    async def main() -> int:
        body = Body(stall=asyncio.Event())
        _, amodel = models(body)
        first = asyncio.Event()

        async def read() -> None:
            async for _ in amodel.astream(Prompt("hi")):
                first.set()

        task = asyncio.create_task(read())
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return body.closed

    assert asyncio.run(main()) >= 1

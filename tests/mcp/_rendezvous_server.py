"""The test server (tests/mcp/_server.py, over stdio) with one more tool, ``rendezvous``, for
checking that calls overlap without timing them.

python tests/mcp/_rendezvous_server.py

Each ``rendezvous(parties, timeout)`` call counts itself in and waits until ``parties`` calls
have come in; then each answers ``"together"``. Calls that do not overlap never all get there:
the one waiting gives up after ``timeout`` seconds with an error saying how many came, and
every later call fails at once, so a failing test waits one ``timeout``, not one per call.
"""

from __future__ import annotations

import asyncio

import _server  # the test server, beside this file (run as a script: its folder is on sys.path)


class _Rendezvous:
    arrived = 0
    gave_up = False
    all_here: asyncio.Event | None = None


@_server.server.tool()
async def rendezvous(parties: int, timeout: float) -> str:
    """Waits until ``parties`` calls are here at once, at most ``timeout`` seconds."""
    state = _Rendezvous
    if state.all_here is None:
        state.all_here = asyncio.Event()
    state.arrived += 1
    if state.gave_up:
        raise RuntimeError(f"call {state.arrived} came after an earlier call gave up waiting")
    if state.arrived >= parties:
        state.all_here.set()
    try:
        await asyncio.wait_for(state.all_here.wait(), timeout)
    except asyncio.TimeoutError:
        state.gave_up = True
        raise RuntimeError(
            f"only {state.arrived} of {parties} calls were in flight together within {timeout} s"
        ) from None
    return "together"


if __name__ == "__main__":
    _server.server.run("stdio")

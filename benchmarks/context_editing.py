"""W17 (context editing): what ``ContextEditingInterceptor`` adds to a model call on a
500-message thread (ours only).

    python benchmarks/run.py --only W17C

The thread is a user message and 249 tool rounds (an assistant message asking for a tool and
its 2,000-character result: about 125,000 tokens by the estimate). The interceptor wraps a
model call that answers at once, so what is timed is the interceptor's own work, against the
bare call, in alternating rounds (the machine's drift falls on both alike):

- ``within``: under the budget, no usage reported: the whole prompt is estimated, nothing sent
  changes (the common case of a call);
- ``within_reported``: under the budget, the last answer carries the provider's usage: only
  the messages after it are estimated;
- ``clearing``: over a 100,000-token budget: the oldest results are cleared until it fits;
- ``clearing_most``: over a 10,000-token budget: all but the last 3 results are cleared.

``added_us_per_call`` is the median time of a wrapped call minus the bare call's.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from graph_agent import AssistantMessage, ToolCall, ToolResponse, ToolResponseMessage, UserMessage
from graph_agent.messages import Message
from graph_agent.models import ChatResponse, ToolCallingChatOptions
from hooks import ContextEditingInterceptor, ModelRequest

ROUNDS = 249  # + the user message: 499 messages, and the answer to come makes 500
RESULT = "r" * 2_000


def thread(reported: bool) -> list[Message]:
    messages: list[Message] = [UserMessage("Read every page.")]
    for n in range(ROUNDS):
        call = ToolCall(id=f"c{n}", name="read_page", arguments=f'{{"page": {n}}}')
        usage = {"prompt_tokens": 500 * n + 100, "completion_tokens": 20, "total_tokens": 0}
        metadata = {"usage": usage} if reported else {}
        messages.append(AssistantMessage("", tool_calls=(call,), metadata=metadata))
        result = ToolResponse(id=call.id, name=call.name, response_data=RESULT)
        messages.append(ToolResponseMessage(responses=(result,)))
    return messages


def w17_context_editing(calls: int, rounds: int, emit: Callable[..., None]) -> None:
    """``emit`` is _common.py's (passed in, as the other workload modules take theirs)."""
    answer = ChatResponse.of(AssistantMessage("done"))

    def bare(request: ModelRequest) -> ChatResponse:
        return answer

    plain, reported = thread(False), thread(True)
    options = ToolCallingChatOptions()
    settings: dict[str, tuple[ContextEditingInterceptor | None, list[Message]]] = {
        "bare": (None, plain),
        "within": (ContextEditingInterceptor(trigger_tokens=10_000_000), plain),
        "within_reported": (ContextEditingInterceptor(trigger_tokens=10_000_000), reported),
        "clearing": (ContextEditingInterceptor(trigger_tokens=100_000), plain),
        "clearing_most": (ContextEditingInterceptor(trigger_tokens=10_000), plain),
    }
    cleared: dict[str, int] = {}
    for name, (interceptor, messages) in settings.items():
        if interceptor is not None:
            done = interceptor.edit(messages)
            cleared[name] = done.cleared if done is not None else 0
    assert cleared["within"] == cleared["within_reported"] == 0
    assert 0 < cleared["clearing"] < cleared["clearing_most"] == ROUNDS - 3

    times: dict[str, list[float]] = {name: [] for name in settings}
    for round_ in range(rounds + 1):  # round 0 warms up
        for name, (interceptor, messages) in settings.items():
            request = ModelRequest(messages, options)
            gc.collect()
            t0 = time.perf_counter()
            if interceptor is None:
                for _ in range(calls):
                    bare(request)
            else:
                for _ in range(calls):
                    interceptor.intercept_model(request, bare)
            if round_:
                times[name].append((time.perf_counter() - t0) / calls)
    base = statistics.median(times["bare"])
    for name in settings:
        if name == "bare":
            continue
        took = statistics.median(times[name])
        emit(
            f"W17_context_editing_{name}",
            calls * rounds,
            sum(times[name]) * calls,
            unit="model call",
            thread_messages=len(plain) + 1,
            results_cleared=cleared[name],
            added_us_per_call=round((took - base) * 1e6, 1),
        )


if __name__ == "__main__":
    import json

    def show(workload: str, n: int, seconds: float, **extra: Any) -> None:
        print(json.dumps({"workload": workload, "n": n, "seconds": seconds, **extra}))

    w17_context_editing(50, 5, show)

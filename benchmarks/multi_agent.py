"""W14: what a multi-agent flow costs per model call, against one agent doing the same work
(benchmarks/WORKLOADS.md, "W14 multi_agent"; LangGraph's side: benchmarks/peer_extra.py).

Every agent is a ``ReactAgent`` whose scripted model (instant answers, no LLM) asks for the
``echo`` tool once, then answers; so what is timed is the framework. Three shapes, each run
on a new thread per invoke of one ``MemorySaver``, 600 model calls per shape and trial, the
trials alternated (single, sequential, supervisor, then again; ``w14_trials``, 7) so that the
machine's noise hits them alike:

- ``W14_single``: one such agent (2 model calls, 1 tool call per invoke): the reference.
- ``W14_sequential``: a ``SequentialAgent`` of three of them (6 model calls, 3 tool calls).
- ``W14_supervisor``: a ``SupervisorAgent`` over three of them whose model delegates to each
  in turn, ONE delegation per answer (a, then b, then c), then answers: 4 supervisor model
  calls + 3 x 2 sub-agent calls = 10 model calls, 3 delegations, 3 tool calls.

One op is a model call (``per_op_us`` = per model call); ``vs_single`` = this shape's time
per model call / ``W14_single``'s, from the same alternated trials (target <= 1.5).
"""

from __future__ import annotations

import json
import time
from typing import Any

from _common import SIZES, cfg, emit, median_trial

from checkpoint import MemorySaver
from graph_agent import (
    AssistantMessage,
    ChatResponse,
    Prompt,
    ReactAgent,
    SequentialAgent,
    SupervisorAgent,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)

__all__ = ["w14_multi_agent"]

AGENTS = ("a", "b", "c")
MODEL_CALLS = {"W14_single": 2, "W14_sequential": 6, "W14_supervisor": 10}


class _Model:
    """What both scripted models share: the ChatModel protocol over ``answer``, and a count
    of calls (checked after the timed loop)."""

    calls = 0

    def answer(self, prompt: Prompt) -> ChatResponse:
        raise NotImplementedError

    def call(self, prompt: Prompt) -> ChatResponse:
        self.calls += 1
        return self.answer(prompt)

    def stream(self, prompt: Prompt) -> Any:
        yield self.call(prompt)

    async def acall(self, prompt: Prompt) -> ChatResponse:
        return self.call(prompt)

    async def astream(self, prompt: Prompt) -> Any:
        yield self.call(prompt)


class WorkerModel(_Model):
    """A sub-agent's model: asks for ``echo`` once, then answers. Stateless: it counts the
    echo rounds at the end of the conversation (an assistant message calling ``echo`` and its
    result), so it works wherever the agent starts (after the user, after another agent's
    answer, on a supervisor's task)."""

    def answer(self, prompt: Prompt) -> ChatResponse:
        n = 0
        for message in reversed(prompt.messages):
            if isinstance(message, ToolResponseMessage):
                n += 1
            elif not (isinstance(message, AssistantMessage) and message.tool_calls):
                break
        if n < 1:
            call = ToolCall(id=f"call_{n}", name="echo", arguments=json.dumps({"x": n}))
            return ChatResponse.of(AssistantMessage("", tool_calls=(call,)), "tool_calls")
        return ChatResponse.of(AssistantMessage(f"final answer after {n} tool calls"), "stop")


class SupervisorModel(_Model):
    """The supervisor's model: delegates to a, b, c, one per answer (it counts the agents'
    answers since the user's message), then answers."""

    def answer(self, prompt: Prompt) -> ChatResponse:
        n = 0
        for message in reversed(prompt.messages):
            if isinstance(message, UserMessage):
                break
            if isinstance(message, ToolResponseMessage):
                n += 1
        if n < len(AGENTS):
            args = json.dumps({"input": f"task {n}"})
            call = ToolCall(id=f"delegate_{n}", name=AGENTS[n], arguments=args)
            return ChatResponse.of(AssistantMessage("", tool_calls=(call,)), "tool_calls")
        return ChatResponse.of(AssistantMessage(f"supervisor answer after {n} agents"), "stop")


@tool
def echo(x: int) -> str:
    """Echo the integer back."""
    return f"ok {x}"


def _worker(name: str, model: WorkerModel) -> ReactAgent:
    return ReactAgent(name=name, model=model, tools=[echo], description=f"agent {name}")


def make_shapes(saver: Any) -> dict[str, tuple[Any, list[_Model]]]:
    """Each shape's agent and the models whose calls it makes."""
    single_model = WorkerModel()
    single = ReactAgent(name="single", model=single_model, tools=[echo], saver=saver)
    seq_models = [WorkerModel() for _ in AGENTS]
    sequential = SequentialAgent(
        name="team",
        sub_agents=[_worker(n, m) for n, m in zip(AGENTS, seq_models)],
        saver=saver,
    )
    sup_models: list[_Model] = [WorkerModel() for _ in AGENTS]
    boss = SupervisorModel()
    supervisor = SupervisorAgent(
        name="boss",
        model=boss,
        sub_agents=[_worker(n, m) for n, m in zip(AGENTS, sup_models)],  # type: ignore[arg-type]
        saver=saver,
    )
    return {
        "W14_single": (single, [single_model]),
        "W14_sequential": (sequential, list(seq_models)),
        "W14_supervisor": (supervisor, [boss, *sup_models]),
    }


def check(name: str, out: Any) -> None:
    messages = out["messages"]
    if name == "W14_supervisor":
        assert messages[-1].text == f"supervisor answer after {len(AGENTS)} agents", messages
        answers = [m for m in messages if isinstance(m, ToolResponseMessage)]
        assert len(answers) == len(AGENTS), messages
        for r in answers:
            assert r.responses[0].response_data == "final answer after 1 tool calls", r
    else:
        answers = [m for m in messages if isinstance(m, AssistantMessage)]
        count = 1 if name == "W14_single" else len(AGENTS)
        assert [m.text for m in answers][-count:] == ["final answer after 1 tool calls"] * count


def w14_multi_agent() -> None:
    saver = MemorySaver()
    shapes = make_shapes(saver)
    calls = SIZES["w14_model_calls"]  # per trial and shape
    invokes = {name: max(1, calls // per) for name, per in MODEL_CALLS.items()}
    for name, (agent, models) in shapes.items():  # warm-up, and the model calls per invoke
        before = sum(m.calls for m in models)
        check(name, agent.invoke({"messages": [UserMessage("go")]}, cfg(f"{name}-warm")))
        made = sum(m.calls for m in models) - before
        assert made == MODEL_CALLS[name], (name, made)
    times: dict[str, list[tuple[float, dict[str, Any]]]] = {name: [] for name in shapes}
    order = list(shapes)
    for trial in range(SIZES["w14_trials"]):
        for name in order[trial % 3 :] + order[: trial % 3]:  # each shape starts a trial in turn
            agent, models = shapes[name]
            before = sum(m.calls for m in models)
            t0 = time.perf_counter()
            for i in range(invokes[name]):
                out = agent.invoke({"messages": [UserMessage("go")]}, cfg(f"{name}-{trial}-{i}"))
            dt = time.perf_counter() - t0
            check(name, out)
            assert sum(m.calls for m in models) - before == invokes[name] * MODEL_CALLS[name]
            times[name].append((dt / (invokes[name] * MODEL_CALLS[name]), {}))
    # per model call, trial by trial: each shape against the single agent of the same round
    single = [t for t, _ in times["W14_single"]]
    for name in shapes:
        per_call, extra = median_trial(times[name])
        n = invokes[name] * MODEL_CALLS[name]
        ratios = sorted(t / s for (t, _), s in zip(times[name], single))
        best = min(t for t, _ in times[name]) / min(single)  # noise only adds: best against best
        extra["trial_per_call_us"] = [round(t * 1e6, 2) for t, _ in times[name]]
        del extra["trial_seconds"]
        if name == "W14_supervisor":
            extra["delegation"] = "one agent per supervisor answer"
        emit(name, n, per_call * n, unit="model call", invokes=invokes[name],
             model_calls_per_invoke=MODEL_CALLS[name], tool_calls_per_invoke=1 if name == "W14_single" else 3,
             per_invoke_us=round(per_call * MODEL_CALLS[name] * 1e6, 1),
             vs_single=round(ratios[len(ratios) // 2], 3), vs_single_trials=[round(r, 3) for r in ratios],
             vs_single_best=round(best, 3),
             saver="MemorySaver", **extra)  # fmt: skip

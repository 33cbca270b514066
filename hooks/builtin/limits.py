"""Call limits: stop an agent that calls the model, or tools, too often in a run or a thread."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from graph_agent.graph import KeyStrategy, KeyStrategyLike, OverAllState, Overwrite, RunnableConfig
from graph_agent.messages import JUMP_TO, MESSAGES, AssistantMessage, ToolCall

from ..base import HookResult, JumpTo, ModelHook
from ._messages import answer_missing_calls, messages_of, pending_calls, responses_for
from .errors import LimitScope, ModelCallLimitExceededError, ToolCallLimitExceededError

__all__ = ["ExitBehavior", "ModelCallLimitHook", "ToolCallLimitHook"]

ExitBehavior = Literal["end", "error"]

THREAD_MODEL_CALLS = "thread_model_call_count"
RUN_MODEL_CALLS = "run_model_call_count"
THREAD_TOOL_CALLS = "thread_tool_call_count"
RUN_TOOL_CALLS = "run_tool_call_count"
ALL_TOOLS = "__all__"


def _check_limit(value: int | None, what: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{what} must be a non-negative int or None, got {value!r}")
    return value


def _check_caps(
    hook: str, run_limit: int | None, thread_limit: int | None
) -> tuple[int | None, int | None]:
    """The two caps, checked: each a non-negative int or None, not both None."""
    run, thread = _check_limit(run_limit, "run_limit"), _check_limit(thread_limit, "thread_limit")
    if run is None and thread is None:
        raise ValueError(f"{hook} needs run_limit, thread_limit or both")
    return run, thread


def _check_exit(exit_behavior: str) -> ExitBehavior:
    if exit_behavior not in ("end", "error"):
        raise ValueError(f"exit_behavior must be 'end' or 'error', got {exit_behavior!r}")
    return "end" if exit_behavior == "end" else "error"


def _exceeded(
    thread: tuple[int, int | None], run: tuple[int, int | None]
) -> tuple[LimitScope, int, int] | None:
    """``(scope, limit, count)`` for the first of ``thread`` and ``run`` (each ``(count after
    the new calls, limit)``) whose count passes its limit, or ``None``."""
    scopes: tuple[tuple[LimitScope, tuple[int, int | None]], ...] = (
        ("thread", thread),
        ("run", run),
    )
    for scope, (count, limit) in scopes:
        if limit is not None and count > limit:
            return scope, limit, count
    return None


class ModelCallLimitHook(ModelHook):
    """Caps the model calls of one run (``run_limit``) and of one thread across runs
    (``thread_limit``); ``None`` means no cap.

    The counts live in the state: ``thread_model_call_count`` (kept with the thread, so the cap
    holds across ``call``s on one ``thread_id`` and never leaks to another thread) and
    ``run_model_call_count`` (reset to 0 when a run starts). A call counts when this hook lets
    it through (``before_model``), so a call that then fails counts too. When the next call
    would pass a cap: ``exit_behavior="end"`` ends the run with an ``AssistantMessage`` saying
    so (what ``agent.call`` returns; its metadata has ``stopped_by`` and ``limit``), and
    ``"error"`` raises ``ModelCallLimitExceededError`` before the model is called. Use one
    instance per agent: it takes both caps.
    """

    def __init__(
        self,
        run_limit: int | None = None,
        thread_limit: int | None = None,
        exit_behavior: ExitBehavior = "end",
        *,
        name: str | None = None,
    ) -> None:
        self.run_limit, self.thread_limit = _check_caps(
            "ModelCallLimitHook", run_limit, thread_limit
        )
        self.exit_behavior = _check_exit(exit_behavior)
        self.can_jump_to = (JumpTo.END,) if self.exit_behavior == "end" else ()
        if name is not None:
            self.name = name

    def before_agent(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        return {RUN_MODEL_CALLS: 0}

    def before_model(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        thread = int(state.get(THREAD_MODEL_CALLS) or 0)
        run = int(state.get(RUN_MODEL_CALLS) or 0)
        hit = _exceeded((thread + 1, self.thread_limit), (run + 1, self.run_limit))
        if hit is None:
            return {THREAD_MODEL_CALLS: thread + 1, RUN_MODEL_CALLS: run + 1}
        scope, limit, count = hit
        text = (
            f"Model call limit reached: {count - 1} model call(s) made in this {scope} "
            f"({scope}_limit={limit}); stopping."
        )
        if self.exit_behavior == "error":
            raise ModelCallLimitExceededError(
                f"{self.hook_name}: {text} Raise {scope}_limit, or use exit_behavior='end' to "
                "end the run with a message instead",
                scope=scope,
                limit=limit,
                count=count - 1,
            )
        answer = AssistantMessage(text, metadata={"stopped_by": self.hook_name, "limit": scope})
        return {MESSAGES: [answer], JUMP_TO: JumpTo.END}


class ToolCallLimitHook(ModelHook):
    """Caps the tool calls the model asks for, per run (``run_limit``) and per thread
    (``thread_limit``): all calls, or only those of ``tool_name``.

    After each model answer (``after_model``) the calls it asks for are counted. The counts
    live in the state as dicts keyed by ``tool_name`` (``"__all__"`` for every tool):
    ``thread_tool_call_count`` (kept with the thread) and ``run_tool_call_count`` (reset when
    a run starts); several instances (e.g. one per tool) share them. When the new calls would
    pass a cap, none of them runs: ``exit_behavior="end"`` answers each pending call with a
    tool response saying the limit was reached and ends the run with an ``AssistantMessage``
    (the conversation stays valid for the next turn); ``"error"`` raises
    ``ToolCallLimitExceededError``, and the unanswered calls get such a response when the next
    run on the thread starts. Refused calls are not counted.

    The default name is ``ToolCallLimitHook`` or ``ToolCallLimitHook[<tool_name>]``. In
    ``after_model`` hooks run in reverse list order: list this hook after a
    ``HumanInTheLoopHook`` so that calls over the limit are refused before anyone is asked.
    """

    key_strategies: ClassVar[dict[str, KeyStrategyLike]] = {
        THREAD_TOOL_CALLS: KeyStrategy.MERGE,
        RUN_TOOL_CALLS: KeyStrategy.MERGE,
    }

    def __init__(
        self,
        run_limit: int | None = None,
        thread_limit: int | None = None,
        tool_name: str | None = None,
        exit_behavior: ExitBehavior = "end",
        *,
        name: str | None = None,
    ) -> None:
        self.run_limit, self.thread_limit = _check_caps(
            "ToolCallLimitHook", run_limit, thread_limit
        )
        if tool_name is not None and (not isinstance(tool_name, str) or not tool_name):
            raise ValueError(f"tool_name must be a tool's name or None, got {tool_name!r}")
        self.tool_name = tool_name
        self.exit_behavior = _check_exit(exit_behavior)
        self.can_jump_to = (JumpTo.END,) if self.exit_behavior == "end" else ()
        default = "ToolCallLimitHook" if tool_name is None else f"ToolCallLimitHook[{tool_name}]"
        self.name = name or default

    def tool_names_used(self) -> tuple[str, ...]:
        return () if self.tool_name is None else (self.tool_name,)

    @property
    def _key(self) -> str:
        return ALL_TOOLS if self.tool_name is None else self.tool_name

    def _what(self) -> str:
        return "tool calls" if self.tool_name is None else f"calls of tool '{self.tool_name}'"

    def before_agent(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        update: dict[str, Any] = {RUN_TOOL_CALLS: {self._key: 0}}
        repaired = answer_missing_calls(
            messages_of(state), "Not run: the tool call limit was reached."
        )
        if repaired is not None:
            update[MESSAGES] = Overwrite(repaired)
        return update

    def after_model(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        messages = messages_of(state)
        calls = pending_calls(messages[-1] if messages else None)
        counted = [c for c in calls if self.tool_name is None or c.name == self.tool_name]
        if not counted:
            return None
        thread = int((state.get(THREAD_TOOL_CALLS) or {}).get(self._key, 0))
        run = int((state.get(RUN_TOOL_CALLS) or {}).get(self._key, 0))
        new = len(counted)
        hit = _exceeded((thread + new, self.thread_limit), (run + new, self.run_limit))
        if hit is None:
            return {
                THREAD_TOOL_CALLS: {self._key: thread + new},
                RUN_TOOL_CALLS: {self._key: run + new},
            }
        scope, limit, count = hit
        made = count - new
        text = (
            f"Tool call limit reached: {made} {self._what()} made in this {scope} "
            f"({scope}_limit={limit}); the {new} more the model asked for were not run."
        )
        if self.exit_behavior == "error":
            raise ToolCallLimitExceededError(
                f"{self.hook_name}: {text} Raise {scope}_limit, or use exit_behavior='end' to "
                "end the run with a message instead",
                scope=scope,
                limit=limit,
                count=made,
                tool_name=self.tool_name,
            )

        def refusal(call: ToolCall) -> str:
            if self.tool_name is None or call.name == self.tool_name:
                return f"Not run: the limit of {self._what()} per {scope} ({limit}) was reached."
            return f"Not run: the run stopped because the limit of {self._what()} was reached."

        answer = AssistantMessage(text, metadata={"stopped_by": self.hook_name, "limit": scope})
        return {MESSAGES: [responses_for(calls, refusal), answer], JUMP_TO: JumpTo.END}

"""Retry and fallback interceptors, and the order interceptors run in."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from graph_agent import (
    AssistantMessage,
    ChatResponse,
    FunctionChatModel,
    ModelError,
    Prompt,
    ReactAgent,
    ScriptedChatModel,
    ToolArgumentsError,
    ToolCall,
    ToolContext,
    ToolExecutionException,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from hooks import (
    ModelCallHandler,
    ModelFallbackInterceptor,
    ModelInterceptor,
    ModelRequest,
    ModelRetryInterceptor,
    ToolCallHandler,
    ToolCallRequest,
    ToolInterceptor,
    ToolRetryInterceptor,
)
from hooks.builtin import exponential_backoff

CONFIG = {"thread_id": "t"}


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def call(agent: ReactAgent, value: Any, mode: str) -> AssistantMessage:
    if mode == "sync":
        return agent.call(value, CONFIG)
    return asyncio.run(agent.acall(value, CONFIG))


def asks(name: str, arguments: dict[str, Any], call_id: str = "c1") -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))]
    )


class Sleeps:
    """An injected sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


# -- ModelRetryInterceptor -------------------------------------------------------------------------


def test_model_retry_retries_model_errors_then_answers(mode: str) -> None:
    sleeps = Sleeps()
    model = ScriptedChatModel([ModelError("503"), ModelError("503"), "hello"])
    agent = ReactAgent(
        name="r", model=model, interceptors=[ModelRetryInterceptor(max_attempts=3, sleep=sleeps)]
    )
    assert call(agent, "hi", mode).text == "hello"
    assert len(model.prompts) == 3
    assert sleeps.delays == [0.5, 1.0]  # exponential_backoff() by default


def test_model_retry_final_failure_propagates_and_writes_no_half_step(mode: str) -> None:
    sleeps = Sleeps()
    model = ScriptedChatModel(["first", ModelError("down 1"), ModelError("down 2")])
    agent = ReactAgent(
        name="r",
        model=model,
        interceptors=[ModelRetryInterceptor(max_attempts=2, backoff=0.25, sleep=sleeps)],
    )
    call(agent, "one", mode)
    with pytest.raises(ModelError, match="down 2") as caught:
        call(agent, "two", mode)
    if sys.version_info >= (3, 11):  # notes need add_note()
        assert "the model call failed 2 times (max_attempts=2)" in caught.value.__notes__
    assert sleeps.delays == [0.25]
    state = agent.get_state(CONFIG)
    assert state is not None  # the user's message is kept, the failed model step is not
    assert [m.text for m in state.values["messages"]] == ["one", "first", "two"]
    assert state.next == ("model",)


def test_model_retry_leaves_other_errors_alone(mode: str) -> None:
    model = ScriptedChatModel([ValueError("bug"), "unused"])
    agent = ReactAgent(name="r", model=model, interceptors=[ModelRetryInterceptor(sleep=Sleeps())])
    with pytest.raises(ValueError, match="bug"):
        call(agent, "hi", mode)
    assert len(model.prompts) == 1


def test_model_retry_with_a_predicate_and_a_backoff_function(mode: str) -> None:
    sleeps = Sleeps()
    model = ScriptedChatModel(
        [ModelError("rate limited", status=429), ModelError("bad request", status=400), "unused"]
    )
    retry = ModelRetryInterceptor(
        max_attempts=5,
        retry_on=lambda e: isinstance(e, ModelError) and e.status == 429,
        backoff=lambda attempt: attempt * 10.0,
        sleep=sleeps,
    )
    agent = ReactAgent(name="r", model=model, interceptors=[retry])
    with pytest.raises(ModelError, match="bad request"):
        call(agent, "hi", mode)
    assert sleeps.delays == [10.0]


def test_async_runs_await_an_async_sleep() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    model = ScriptedChatModel([ModelError("x"), "ok"])
    agent = ReactAgent(
        name="r", model=model, interceptors=[ModelRetryInterceptor(backoff=2.0, sleep=sleep)]
    )
    assert asyncio.run(agent.acall("hi", CONFIG)).text == "ok"
    assert slept == [2.0]


def test_retry_arguments_are_checked() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_attempts must be a positive int"):
            ModelRetryInterceptor(max_attempts=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="backoff must not be negative"):
        ToolRetryInterceptor(backoff=-1)
    with pytest.raises(TypeError, match="tools must be a list of tool names"):
        ToolRetryInterceptor(tools="search")


def test_exponential_backoff() -> None:
    delay = exponential_backoff(initial=1.0, factor=3.0, max_delay=20.0)
    assert [delay(n) for n in range(1, 5)] == [1.0, 3.0, 9.0, 20.0]
    with pytest.raises(ValueError):
        exponential_backoff(factor=0.5)


# -- ModelFallbackInterceptor ----------------------------------------------------------------------


def test_fallback_answers_with_the_same_prompt(mode: str) -> None:
    @tool
    def search(query: str) -> str:
        """Search."""
        return "r"

    primary = ScriptedChatModel([ModelError("primary down")])
    broken = ScriptedChatModel([ModelError("first fallback down")])
    backup = ScriptedChatModel(["from the backup"])
    agent = ReactAgent(
        name="f",
        model=primary,
        tools=[search],
        system_prompt="sys",
        interceptors=[ModelFallbackInterceptor(broken, backup)],
    )
    assert call(agent, "hi", mode).text == "from the backup"
    sent = backup.prompts[0]
    assert sent.messages == primary.prompts[0].messages == broken.prompts[0].messages
    assert [m.text for m in sent.messages] == ["sys", "hi"]
    options = sent.tool_options
    assert options is not None
    assert [t.tool_definition.name for t in options.tool_callbacks] == ["search"]


def test_fallback_all_failing_raises_the_last_error_noting_the_others(mode: str) -> None:
    primary = ScriptedChatModel([ModelError("primary down")])
    second = ScriptedChatModel([ModelError("second down")])
    third = ScriptedChatModel([ModelError("third down")])
    agent = ReactAgent(
        name="f", model=primary, interceptors=[ModelFallbackInterceptor(second, third)]
    )
    with pytest.raises(ModelError, match="third down") as caught:
        call(agent, "hi", mode)
    if sys.version_info >= (3, 11):  # notes need add_note()
        assert caught.value.__notes__[:2] == [
            "the primary model failed first: ModelError: primary down",
            "fallback model 1 failed first: ModelError: second down",
        ]
    context = caught.value.__context__
    assert isinstance(context, ModelError) and str(context) == "second down"
    assert [m.text for m in state_messages(agent)] == ["hi"]  # only the user's message is kept


def state_messages(agent: ReactAgent) -> list[Any]:
    state = agent.get_state(CONFIG)
    return [] if state is None else list(state.values.get("messages") or [])


def test_fallback_only_on_the_listed_errors(mode: str) -> None:
    primary = ScriptedChatModel([KeyError("bug")])
    backup = ScriptedChatModel(["unused"])
    agent = ReactAgent(
        name="f",
        model=primary,
        interceptors=[ModelFallbackInterceptor(backup, fallback_on=(ModelError,))],
    )
    with pytest.raises(KeyError):
        call(agent, "hi", mode)
    assert backup.prompts == []


class Exhausted:
    """A model whose answers ran out the way an iterator's do: ``StopIteration``."""

    def call(self, prompt: Prompt) -> ChatResponse:
        raise StopIteration

    async def acall(self, prompt: Prompt) -> ChatResponse:
        raise StopIteration

    def stream(self, prompt: Prompt) -> Any:
        raise StopIteration

    def astream(self, prompt: Prompt) -> Any:
        raise StopIteration


def test_a_fallback_that_raises_stop_iteration_is_a_model_error_saying_so(mode: str) -> None:
    primary = ScriptedChatModel([ModelError("primary down")])
    agent = ReactAgent(
        name="f", model=primary, interceptors=[ModelFallbackInterceptor(Exhausted())]
    )
    with pytest.raises(ModelError, match=r"Exhausted\.call raised StopIteration"):
        call(agent, "hi", mode)


def test_fallback_needs_chat_models() -> None:
    with pytest.raises(ValueError, match="at least one fallback model"):
        ModelFallbackInterceptor()
    with pytest.raises(TypeError, match="must be ChatModels"):
        ModelFallbackInterceptor("gpt-4o")  # type: ignore[arg-type]


def test_retry_inside_fallback(mode: str) -> None:
    """[fallback, retry]: the primary is retried before the fallback is asked."""
    primary = ScriptedChatModel([ModelError("a"), ModelError("b")])
    backup = ScriptedChatModel(["backup"])
    agent = ReactAgent(
        name="f",
        model=primary,
        interceptors=[
            ModelFallbackInterceptor(backup),
            ModelRetryInterceptor(max_attempts=2, sleep=Sleeps()),
        ],
    )
    assert call(agent, "hi", mode).text == "backup"
    assert len(primary.prompts) == 2


# -- ToolRetryInterceptor --------------------------------------------------------------------------


class Flaky:
    """A tool that fails its first ``failures`` runs, and one that always fails."""

    def __init__(self, failures: int) -> None:
        self.runs: list[str] = []
        self.failures = failures
        self.lock = threading.Lock()

        @tool
        def fetch(url: str) -> str:
            """Fetch a page."""
            with self.lock:
                self.runs.append(url)
                attempt = len(self.runs)
            if attempt <= self.failures:
                raise ConnectionError(f"attempt {attempt} failed")
            return f"page {url}"

        @tool
        def other(x: int) -> str:
            """Always fails."""
            with self.lock:
                self.runs.append(f"other {x}")
            raise RuntimeError("other is broken")

        self.fetch = fetch
        self.other = other


def tool_result(model: ScriptedChatModel) -> str:
    message = model.prompts[-1].messages[-1]
    assert isinstance(message, ToolResponseMessage)
    return message.responses[0].response_data


def test_tool_retry_runs_a_flaky_tool_again(mode: str) -> None:
    flaky = Flaky(failures=2)
    sleeps = Sleeps()
    model = ScriptedChatModel([asks("fetch", {"url": "a"}), "done"])
    agent = ReactAgent(
        name="t",
        model=model,
        tools=[flaky.fetch],
        interceptors=[ToolRetryInterceptor(max_attempts=3, backoff=0.1, sleep=sleeps)],
    )
    assert call(agent, "go", mode).text == "done"
    assert flaky.runs == ["a", "a", "a"]
    assert sleeps.delays == [0.1, 0.1]
    assert tool_result(model) == "page a"


def test_tool_retry_final_failure_reaches_the_model(mode: str) -> None:
    flaky = Flaky(failures=5)
    model = ScriptedChatModel([asks("fetch", {"url": "a"}), "sorry"])
    agent = ReactAgent(
        name="t",
        model=model,
        tools=[flaky.fetch],
        interceptors=[ToolRetryInterceptor(max_attempts=2, sleep=Sleeps())],
    )
    assert call(agent, "go", mode).text == "sorry"
    assert flaky.runs == ["a", "a"]
    assert "attempt 2 failed" in tool_result(model)


def test_tool_retry_only_for_the_named_tools(mode: str) -> None:
    flaky = Flaky(failures=0)
    model = ScriptedChatModel([asks("other", {"x": 1}), "ok"])
    agent = ReactAgent(
        name="t",
        model=model,
        tools=[flaky.fetch, flaky.other],
        interceptors=[ToolRetryInterceptor(tools=["fetch"], sleep=Sleeps())],
    )
    call(agent, "go", mode)
    assert flaky.runs == ["other 1"]
    assert "other is broken" in tool_result(model)


def test_tool_retry_does_not_retry_bad_arguments(mode: str) -> None:
    flaky = Flaky(failures=0)
    model = ScriptedChatModel([asks("fetch", {"url": 3, "extra": 1}), "ok"])
    sleeps = Sleeps()
    agent = ReactAgent(
        name="t",
        model=model,
        tools=[flaky.fetch],
        interceptors=[ToolRetryInterceptor(sleep=sleeps)],
    )
    call(agent, "go", mode)
    assert flaky.runs == [] and sleeps.delays == []
    retry_all = ToolRetryInterceptor(retry_on=(ToolArgumentsError,), sleep=sleeps)
    request = ToolCallRequest(ToolCall(id="x", name="fetch"), flaky.fetch, _context())
    attempts: list[int] = []

    def handler(_: ToolCallRequest) -> str:
        attempts.append(1)
        raise ToolArgumentsError("bad", tool_name="fetch")

    with pytest.raises(ToolArgumentsError):
        retry_all.intercept_tool_call(request, handler)
    assert len(attempts) == 3  # named explicitly: retried


def _context() -> ToolContext:
    return ToolContext()


def test_tool_retry_with_a_custom_error_class(mode: str) -> None:
    request = ToolCallRequest(ToolCall(id="x", name="fetch"), None, _context())
    results: list[str | Exception] = [TimeoutError("slow"), TimeoutError("slow"), "fine"]
    outcomes = iter(results)

    def handler(_: ToolCallRequest) -> str:
        item = next(outcomes)
        if isinstance(item, Exception):
            raise item
        return item

    async def ahandler(request: ToolCallRequest) -> str:
        return handler(request)

    retry = ToolRetryInterceptor(retry_on=TimeoutError, sleep=Sleeps())
    if mode == "sync":
        assert retry.intercept_tool_call(request, handler) == "fine"
    else:
        assert asyncio.run(retry.aintercept_tool_call(request, ahandler)) == "fine"
    with pytest.raises(ToolExecutionException):
        ToolRetryInterceptor(sleep=Sleeps()).intercept_tool_call(request, _always_failing)


def _always_failing(request: ToolCallRequest) -> str:
    raise ToolExecutionException("nope", tool_name=request.tool_call.name)


def _run_retried(
    retry: ToolRetryInterceptor, outcomes: list[str | BaseException], mode: str
) -> tuple[str | BaseException, int]:
    """``retry`` around a handler that gives ``outcomes`` in turn: the result (or the error
    raised) and how many calls the handler got."""
    request = ToolCallRequest(ToolCall(id="x", name="fetch"), None, _context())
    pending = iter(outcomes)
    calls: list[int] = []

    def handler(_: ToolCallRequest) -> str:
        calls.append(1)
        item = next(pending)
        if isinstance(item, BaseException):
            raise item
        return item

    async def ahandler(request: ToolCallRequest) -> str:
        return handler(request)

    try:
        if mode == "sync":
            result: str | BaseException = retry.intercept_tool_call(request, handler)
        else:
            result = asyncio.run(retry.aintercept_tool_call(request, ahandler))
    except BaseException as error:  # what the loop let through is the result
        result = error
    return result, len(calls)


def test_sync_and_async_retries_pause_alike() -> None:
    """The one retry loop under both drivers: the same calls, the same pauses (the default
    exponential backoff and a backoff function), the same error with the same note."""
    pauses = []
    for backoff in (None, lambda n: n / 10):
        seen = []
        for mode in ("sync", "async"):
            sleeps = Sleeps()
            retry = ToolRetryInterceptor(
                max_attempts=4, retry_on=TimeoutError, backoff=backoff, sleep=sleeps
            )
            failures: list[str | BaseException] = [TimeoutError(f"slow {n}") for n in range(4)]
            result, calls = _run_retried(retry, failures, mode)
            assert isinstance(result, TimeoutError) and str(result) == "slow 3"
            notes = getattr(result, "__notes__", [])
            seen.append((calls, sleeps.delays, notes))
        assert seen[0] == seen[1]
        assert seen[0][0] == 4
        pauses.append(seen[0][1])
    assert pauses[0] == [0.5, 1.0, 2.0] and pauses[1] == pytest.approx([0.1, 0.2, 0.3])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_cancel_or_an_interrupt_is_never_retried(mode: str) -> None:
    for stop in (KeyboardInterrupt(), asyncio.CancelledError()):
        sleeps = Sleeps()
        retry = ToolRetryInterceptor(retry_on=BaseException, sleep=sleeps)
        result, calls = _run_retried(retry, [stop, "unused"], mode)
        assert (result, calls, sleeps.delays) == (stop, 1, [])


def test_exponential_backoff_is_the_shared_backoff_without_jitter() -> None:
    from checkpoint.retry import Backoff

    delay = exponential_backoff(initial=0.25, factor=3.0, max_delay=5.0)
    shared = Backoff(0.25, 3.0, 5.0, jitter=False)
    assert [delay(n) for n in range(1, 8)] == [shared.delay(n) for n in range(1, 8)]


# -- ordering --------------------------------------------------------------------------------------


class RecordingModel(ModelInterceptor):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def intercept_model(self, request: ModelRequest, handler: ModelCallHandler) -> ChatResponse:
        self.log.append(f"{self.name} in")
        changed = request.replace(messages=[*request.messages, UserMessage(f"+{self.name}")])
        response = handler(changed)
        self.log.append(f"{self.name} out")
        return response

    async def aintercept_model(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ChatResponse]]
    ) -> ChatResponse:
        self.log.append(f"{self.name} ain")
        changed = request.replace(messages=[*request.messages, UserMessage(f"+{self.name}")])
        response = await handler(changed)
        self.log.append(f"{self.name} aout")
        return response


class RecordingTool(ToolInterceptor):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def intercept_tool_call(self, request: ToolCallRequest, handler: ToolCallHandler) -> str:
        self.log.append(f"{self.name} in")
        result = handler(request)
        self.log.append(f"{self.name} out")
        return f"{result}+{self.name}"

    async def aintercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[str]]
    ) -> str:
        self.log.append(f"{self.name} ain")
        result = await handler(request)
        self.log.append(f"{self.name} aout")
        return f"{result}+{self.name}"


def test_the_first_interceptor_is_outermost(mode: str) -> None:
    log: list[str] = []

    @tool
    def ping() -> str:
        """Ping."""
        log.append("tool")
        return "pong"

    def reply(prompt: Prompt) -> AssistantMessage | str:
        log.append("model")
        if not any(isinstance(m, ToolResponseMessage) for m in prompt.messages):
            return asks("ping", {})
        return "done"

    model = FunctionChatModel(reply)
    agent = ReactAgent(
        name="o",
        model=model,
        tools=[ping],
        interceptors=[
            RecordingModel("A", log),
            RecordingTool("X", log),
            RecordingModel("B", log),
            RecordingTool("Y", log),
        ],
    )
    assert call(agent, "go", mode).text == "done"
    a = "a" if mode == "async" else ""
    model_round = [f"A {a}in", f"B {a}in", "model", f"B {a}out", f"A {a}out"]
    tool_round = [f"X {a}in", f"Y {a}in", "tool", f"Y {a}out", f"X {a}out"]
    assert log == [*model_round, *tool_round, *model_round]
    assert [m.text for m in model.prompts[0].messages] == ["go", "+A", "+B"]
    result = model.prompts[1].messages[-3]  # the outer interceptor changed the result last
    assert isinstance(result, ToolResponseMessage)
    assert result.responses[0].response_data == "pong+Y+X"


def test_retry_interceptors_override_both_methods() -> None:
    for cls in (ModelRetryInterceptor, ModelFallbackInterceptor, ToolRetryInterceptor):
        base = ModelInterceptor if issubclass(cls, ModelInterceptor) else ToolInterceptor
        names = (
            ("intercept_model", "aintercept_model")
            if base is ModelInterceptor
            else ("intercept_tool_call", "aintercept_tool_call")
        )
        for name in names:
            assert getattr(cls, name) is not getattr(base, name), (cls, name)

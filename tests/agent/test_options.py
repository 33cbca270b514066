"""Every option of the agent, given to the builder and as ``ReactAgent(...)`` keywords, does
what it says, in sync and async runs."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import (
    AgentMaxIterationsError,
    AssistantMessage,
    ChatResponse,
    DefaultToolExecutionExceptionProcessor,
    FunctionChatModel,
    FunctionToolCallback,
    KeyStrategy,
    Prompt,
    ReactAgent,
    ReactAgentBuilder,
    RunnableConfig,
    ScriptedChatModel,
    StaticToolCallbackProvider,
    StaticToolCallbackResolver,
    SystemMessage,
    ToolContext,
    ToolExecutionException,
    ToolProviderRequest,
    ToolResponseMessage,
    UnknownToolError,
    UserMessage,
    tool,
    tool_provider,
)
from hooks import ModelHook, ModelInterceptor, ModelRequest, ToolCallRequest, ToolInterceptor

from .conftest import Runner, tool_calls

LIST_OPTIONS = {
    "tools",
    "method_tools",
    "tool_callback_providers",
    "tool_names",
    "tool_providers",
    "hooks",
    "interceptors",
}


def make(style: str, **options: Any) -> ReactAgent:
    """The agent built from ``options`` with the builder or with keywords."""
    if style == "keywords":
        return ReactAgent(**options)
    builder = ReactAgent.builder()
    for key, value in options.items():
        method = getattr(builder, key)
        returned = method(*value) if key in LIST_OPTIONS else method(value)
        assert returned is builder  # every builder method chains
    return builder.build()


@pytest.fixture(params=["builder", "keywords"])
def style(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def offered(prompt: Prompt) -> list[str]:
    """The tool names a model call was offered."""
    options = prompt.tool_options
    assert options is not None
    return [c.tool_definition.name for c in options.tool_callbacks]


def responses(state: Any) -> dict[str, str]:
    """Tool call id -> the tool's response, over the whole conversation."""
    return {
        r.id: r.response_data
        for m in state["messages"]
        if isinstance(m, ToolResponseMessage)
        for r in m.responses
    }


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class Calculator:
    @tool(description="Add two numbers")
    def add(self, a: int, b: int) -> int:
        return a + b


def echo(text: str) -> str:
    return f"echo {text}"


echo_tool = FunctionToolCallback.builder("echo", echo).description("Echo the text").build()


# -- the builder and the keywords are the same options ------------------------------------------


def test_every_keyword_has_a_builder_method_and_back() -> None:
    keywords = set(inspect.signature(ReactAgent.__init__).parameters) - {"self"}
    methods = {
        name
        for name, value in vars(ReactAgentBuilder).items()
        if callable(value) and not name.startswith("_") and name != "build"
    }
    # .output_validator(fn) is the one-at-a-time spelling of .output_validators(*fns)
    assert keywords == methods - {"output_validator"}


def test_list_options_accumulate_across_builder_calls(run: Runner) -> None:
    model = ScriptedChatModel(["ok"])
    agent = (
        ReactAgent.builder()
        .name("a")
        .model(model)
        .tools(get_weather)
        .tools(echo_tool)
        .tool_context({"x": 1})
        .tool_context({"y": 2})
        .build()
    )
    assert [t.tool_definition.name for t in agent.tools] == ["get_weather", "echo"]
    run.call(agent, "hi")
    assert offered(model.prompts[0]) == ["get_weather", "echo"]
    options = model.prompts[0].tool_options
    assert options is not None and dict(options.tool_context) == {"x": 1, "y": 2}


# -- identity -----------------------------------------------------------------------------------


def test_name_description_and_model(style: str, run: Runner) -> None:
    model = ScriptedChatModel(["hello there"])
    agent = make(style, name="greeter", model=model, description="Says hello")
    assert agent.name == "greeter"
    assert agent.description == "Says hello"
    assert agent.model is model
    assert "greeter" in repr(agent)
    reply = run.call(agent, "hi")
    assert reply == AssistantMessage("hello there")
    assert model.prompts[0].messages == [UserMessage("hi")]


# -- tools --------------------------------------------------------------------------------------


def test_tools_take_callbacks_tool_functions_and_objects(style: str, run: Runner) -> None:
    model = ScriptedChatModel(
        [
            tool_calls(
                ("echo", {"text": "x"}),
                ("get_weather", {"city": "Oslo"}),
                ("add", {"a": 2, "b": 3}),
            ),
            "done",
        ]
    )
    agent = make(style, name="a", model=model, tools=[echo_tool, get_weather, Calculator()])
    state = run.invoke(agent, "go")
    assert offered(model.prompts[0]) == ["echo", "get_weather", "add"]
    assert responses(state) == {"c1": "echo x", "c2": "sunny in Oslo", "c3": "5"}
    assert state["messages"][-1] == AssistantMessage("done")


def test_method_tools(style: str, run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("add", {"a": 40, "b": 2})), "42"])
    agent = make(style, name="a", model=model, method_tools=[Calculator()])
    state = run.invoke(agent, "add")
    assert offered(model.prompts[0]) == ["add"]
    assert responses(state) == {"c1": "42"}


def test_tool_callback_providers(style: str, run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("get_weather", {"city": "Rome"})), "ok"])
    provider = StaticToolCallbackProvider(get_weather, Calculator())
    agent = make(style, name="a", model=model, tool_callback_providers=[provider])
    state = run.invoke(agent, "weather?")
    assert offered(model.prompts[0]) == ["get_weather", "add"]
    assert responses(state) == {"c1": "sunny in Rome"}


def test_tool_names_with_a_resolver(style: str, run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("echo", {"text": "hi"})), "ok"])
    resolver = StaticToolCallbackResolver([get_weather, echo_tool])
    agent = make(style, name="a", model=model, tool_names=["echo"], resolver=resolver)
    state = run.invoke(agent, "echo")
    assert offered(model.prompts[0]) == ["echo"]  # only the named tool, not all it knows
    assert responses(state) == {"c1": "echo hi"}


def test_tool_providers_choose_tools_per_model_call(style: str, run: Runner) -> None:
    seen: list[str] = []

    @tool
    def book_room(room: str) -> str:
        """Book a room."""
        return f"booked {room}"

    @tool_provider
    def booking_tools(request: ToolProviderRequest) -> Any:
        seen.append(request.last_user_text)
        assert request.state is not None and request.config is not None
        return [book_room] if "book" in request.last_user_text else None

    model = ScriptedChatModel(["hello", tool_calls(("book_room", {"room": "A1"})), "booked"])
    agent = make(style, name="a", model=model, tools=[get_weather], tool_providers=[booking_tools])
    config = RunnableConfig(thread_id="booking")
    run.call(agent, "hi", config)
    state = run.invoke(agent, "please book A1", config)
    assert offered(model.prompts[0]) == ["get_weather"]
    assert offered(model.prompts[1]) == ["get_weather", "book_room"]
    assert offered(model.prompts[2]) == ["get_weather", "book_room"]
    assert responses(state) == {"c1": "booked A1"}  # the tool node runs the provided tool
    assert seen[0] == "hi" and set(seen[1:]) == {"please book A1"}


# -- the prompt ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("system_prompt", "instruction", "expected"),
    [
        ("You are terse.", None, "You are terse."),
        (None, "Answer in French.", "Answer in French."),
        ("You are terse.", "Answer in French.", "You are terse.\n\nAnswer in French."),
    ],
)
def test_system_prompt_and_instruction(
    style: str, run: Runner, system_prompt: str | None, instruction: str | None, expected: str
) -> None:
    model = ScriptedChatModel(["ok"])
    options: dict[str, Any] = {"name": "a", "model": model}
    if system_prompt is not None:
        options["system_prompt"] = system_prompt
    if instruction is not None:
        options["instruction"] = instruction
    run.call(make(style, **options), "hi")
    assert model.prompts[0].messages == [SystemMessage(expected), UserMessage("hi")]


# -- saver --------------------------------------------------------------------------------------


def test_default_saver_is_a_memory_saver(style: str, run: Runner) -> None:
    agent = make(style, name="a", model=ScriptedChatModel(["one", "two"]))
    assert isinstance(agent.saver, MemorySaver)
    config = RunnableConfig(thread_id="t")
    run.call(agent, "first", config)
    run.call(agent, "second", config)
    snapshot = agent.get_state(config)
    assert snapshot is not None
    assert [m.text for m in snapshot.values["messages"]] == ["first", "one", "second", "two"]


def test_a_passed_saver_is_used(style: str, run: Runner) -> None:
    saver = MemorySaver()
    agent = make(style, name="a", model=ScriptedChatModel(["one"]), saver=saver)
    assert agent.saver is saver
    run.call(agent, "first", RunnableConfig(thread_id="kept"))
    checkpoint = saver.get("kept")
    assert checkpoint is not None
    assert [m.text for m in checkpoint.values["messages"]] == ["first", "one"]
    # Another agent on the same saver continues the same thread.
    model = ScriptedChatModel(["two"])
    other = make(style, name="b", model=model, saver=saver)
    run.call(other, "second", RunnableConfig(thread_id="kept"))
    assert [m.text for m in model.prompts[0].messages] == ["first", "one", "second"]


# -- interceptors -------------------------------------------------------------------------------


class LogModel(ModelInterceptor):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def intercept_model(self, request: ModelRequest, handler: Callable[..., Any]) -> ChatResponse:
        self.log.append(f"{self.name} in")
        response: ChatResponse = handler(request)
        self.log.append(f"{self.name} out")
        return response


class AsyncLogModel(ModelInterceptor):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    async def aintercept_model(self, request: ModelRequest, handler: Any) -> ChatResponse:
        self.log.append(f"{self.name} in")
        response: ChatResponse = await handler(request)
        self.log.append(f"{self.name} out")
        return response


class LogTool(ToolInterceptor):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def intercept_tool_call(self, request: ToolCallRequest, handler: Callable[..., str]) -> str:
        self.log.append(f"{self.name} in {request.tool_call.name}")
        text = handler(request)
        self.log.append(f"{self.name} out")
        return text


def test_interceptors_wrap_model_and_tool_calls_first_outermost(style: str, run: Runner) -> None:
    log: list[str] = []
    model = ScriptedChatModel([tool_calls(("get_weather", {"city": "Oslo"})), "ok"])
    agent = make(
        style,
        name="a",
        model=model,
        tools=[get_weather],
        interceptors=[
            LogModel("m1", log),
            LogTool("t1", log),
            AsyncLogModel("m2", log),
            LogTool("t2", log),
        ],
    )
    run.call(agent, "weather")
    model_round = ["m1 in", "m2 in", "m2 out", "m1 out"]
    tool_round = ["t1 in get_weather", "t2 in get_weather", "t2 out", "t1 out"]
    assert log == [*model_round, *tool_round, *model_round]


class Shout(ModelInterceptor):
    """Rewrites the request: the last user message in capitals."""

    def intercept_model(self, request: ModelRequest, handler: Callable[..., Any]) -> ChatResponse:
        *earlier, last = request.messages
        response: ChatResponse = handler(
            request.replace(messages=[*earlier, UserMessage(last.text.upper())])
        )
        return response


class Canned(ModelInterceptor):
    """Answers without calling the model."""

    def intercept_model(self, request: ModelRequest, handler: Callable[..., Any]) -> ChatResponse:
        return ChatResponse.of(AssistantMessage("from the cache"))


class Paris(ToolInterceptor):
    """Rewrites every tool call's arguments."""

    def intercept_tool_call(self, request: ToolCallRequest, handler: Callable[..., str]) -> str:
        call = request.tool_call.model_copy(update={"arguments": '{"city": "Paris"}'})
        return handler(request.replace(tool_call=call))


def test_interceptors_rewrite_and_short_circuit(style: str, run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("get_weather", {"city": "Oslo"})), "ok"])
    agent = make(style, name="a", model=model, tools=[get_weather], interceptors=[Shout(), Paris()])
    state = run.invoke(agent, "weather please")
    assert model.prompts[0].messages == [UserMessage("WEATHER PLEASE")]
    assert responses(state) == {"c1": "sunny in Paris"}
    # The stored conversation keeps what the user said.
    assert state["messages"][0] == UserMessage("weather please")

    unused = ScriptedChatModel([])
    cached = make(style, name="b", model=unused, interceptors=[Canned()])
    assert run.call(cached, "hi").text == "from the cache"
    assert unused.prompts == []


# -- what tools see -----------------------------------------------------------------------------


def test_tool_context_entries_and_store_reach_tools(style: str, run: Runner) -> None:
    seen: dict[str, Any] = {}
    store = {"preferences": {"u1": "metric"}}

    @tool
    def inspect_context(ctx: ToolContext) -> str:
        """Look at the context."""
        seen["tenant"] = ctx.get("tenant")
        seen["item"] = ctx["region"]
        seen["store"] = ctx.store
        return "ok"

    model = ScriptedChatModel([tool_calls(("inspect_context", {})), "ok"])
    agent = make(
        style,
        name="a",
        model=model,
        tools=[inspect_context],
        tool_context={"tenant": "acme", "region": "eu"},
        store=store,
    )
    run.call(agent, "go")
    assert seen == {"tenant": "acme", "item": "eu", "store": store}


def test_without_a_store_the_tool_context_store_is_none(style: str, run: Runner) -> None:
    seen: list[Any] = []

    @tool
    def look(ctx: ToolContext) -> str:
        """Look."""
        seen.append(ctx.store)
        return "ok"

    agent = make(
        style, name="a", model=ScriptedChatModel([tool_calls(("look", {})), "ok"]), tools=[look]
    )
    run.call(agent, "go")
    assert seen == [None]


# -- tool execution -----------------------------------------------------------------------------


def test_parallel_tool_execution_runs_a_batch_concurrently(style: str, run: Runner) -> None:
    barrier = threading.Barrier(3, timeout=10)  # each call waits until all three are running

    @tool
    def meet(who: str) -> str:
        """Wait for the others."""
        barrier.wait()
        return f"{who} met"

    model = ScriptedChatModel(
        [tool_calls(("meet", {"who": "a"}), ("meet", {"who": "b"}), ("meet", {"who": "c"})), "ok"]
    )
    agent = make(style, name="a", model=model, tools=[meet], parallel_tool_execution=True)
    state = run.invoke(agent, "go")
    assert responses(state) == {"c1": "a met", "c2": "b met", "c3": "c met"}


def test_parallel_is_the_default() -> None:
    @tool
    def meet(who: str) -> str:
        """Wait for the other."""
        barrier.wait()
        return who

    barrier = threading.Barrier(2, timeout=10)
    model = ScriptedChatModel([tool_calls(("meet", {"who": "a"}), ("meet", {"who": "b"})), "ok"])
    agent = ReactAgent(name="a", model=model, tools=[meet])
    # Run one after the other, the first call's barrier times out and becomes an error message
    # for the model (the run still succeeds): only the answers tell the two apart.
    assert responses(agent.invoke("go")) == {"c1": "a", "c2": "b"}


def test_sequential_tool_execution(style: str, run: Runner) -> None:
    events: list[str] = []
    threads: set[int] = set()

    @tool
    def step(n: int) -> str:
        """One step."""
        events.append(f"start {n}")
        threads.add(threading.get_ident())
        events.append(f"end {n}")
        return str(n)

    @tool
    async def astep(n: int) -> str:
        """One async step."""
        events.append(f"start {n}")
        await asyncio.sleep(0)  # a chance for another call to start: it must not
        events.append(f"end {n}")
        return str(n)

    batch = tool_calls(("step", {"n": 1}), ("astep", {"n": 2}), ("step", {"n": 3}))
    model = ScriptedChatModel([batch, "ok"])
    agent = make(style, name="a", model=model, tools=[step, astep], parallel_tool_execution=False)
    state = run.invoke(agent, "go")
    assert events == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]
    assert responses(state) == {"c1": "1", "c2": "2", "c3": "3"}
    if not run.is_async:
        assert len(threads) == 1  # one after another on one thread


# -- state --------------------------------------------------------------------------------------


def test_output_key_receives_the_final_answer(style: str, run: Runner) -> None:
    model = ScriptedChatModel(
        [tool_calls(("get_weather", {"city": "Oslo"}), text="checking"), "It is sunny."]
    )
    agent = make(style, name="a", model=model, tools=[get_weather], output_key="answer")
    outputs = run.stream(agent, "weather")
    assert [o.update.get("answer") for o in outputs if o.node == "model" and o.update] == [
        None,
        "It is sunny.",
    ]
    assert outputs[-1].state["answer"] == "It is sunny."


def test_key_strategies_merge_what_tools_write(style: str, run: Runner) -> None:
    @tool
    def remember(fact: str, ctx: ToolContext) -> str:
        """Remember a fact."""
        ctx.extra_state["facts"] = [fact]
        ctx.extra_state["profile"] = {fact: True}
        ctx.extra_state["latest"] = fact
        return "noted"

    model = ScriptedChatModel(
        [
            tool_calls(("remember", {"fact": "tea"})),
            "noted tea",
            tool_calls(("remember", {"fact": "cats"})),
            "noted cats",
        ]
    )
    agent = make(
        style,
        name="a",
        model=model,
        tools=[remember],
        key_strategies={"facts": KeyStrategy.APPEND, "profile": KeyStrategy.MERGE},
    )
    config = RunnableConfig(thread_id="facts")
    run.call(agent, "I like tea", config)
    state = run.invoke(agent, "and cats", config)
    assert state["facts"] == ["tea", "cats"]
    assert state["profile"] == {"tea": True, "cats": True}
    assert state["latest"] == "cats"  # REPLACE by default


def test_unknown_tool_strategy(style: str, run: Runner) -> None:
    def script() -> ScriptedChatModel:
        return ScriptedChatModel([tool_calls(("teleport", {})), "sorry"])

    default = make(style, name="a", model=script(), tools=[get_weather])
    reply = responses(run.invoke(default, "go"))["c1"]
    assert "no tool named 'teleport'" in reply and "get_weather" in reply

    custom = make(
        style,
        name="a",
        model=script(),
        tools=[get_weather],
        unknown_tool_strategy=lambda name, available: f"{name}? try {available}",
    )
    assert responses(run.invoke(custom, "go")) == {"c1": "teleport? try ['get_weather']"}

    throwing = make(
        style, name="a", model=script(), tools=[get_weather], unknown_tool_strategy="throw"
    )
    config = RunnableConfig(thread_id="throw")
    with pytest.raises(UnknownToolError, match="teleport"):
        run.call(throwing, "go", config)
    snapshot = throwing.get_state(config)
    assert snapshot is not None and snapshot.next == ("tools",)  # no half step written


def test_exception_processor(style: str, run: Runner) -> None:
    @tool
    def explode() -> str:
        """Fails."""
        raise RuntimeError("kaboom")

    def agent(**options: Any) -> ReactAgent:
        model = ScriptedChatModel([tool_calls(("explode", {})), "it failed"])
        return make(style, name="a", model=model, tools=[explode], **options)

    state = run.invoke(agent(), "go")  # by default the model reads the failure
    assert "kaboom" in responses(state)["c1"]
    assert state["messages"][-1].text == "it failed"

    throwing = agent(exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True))
    with pytest.raises(ToolExecutionException, match="kaboom"):
        run.call(throwing, "go")


def test_function_model_sees_the_tools_results(run: Runner) -> None:
    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return AssistantMessage(f"the tool said: {last.responses[0].response_data}")
        return tool_calls(("get_weather", {"city": "Lima"}))

    agent = ReactAgent(name="a", model=FunctionChatModel(reply), tools=[get_weather])
    assert run.call(agent, "weather").text == "the tool said: sunny in Lima"


# -- hooks and limits ---------------------------------------------------------------------------


class Tag(ModelHook):
    """Writes which model call this was, after each one."""

    def after_model(self, state: Any, config: Any) -> dict[str, Any]:
        return {
            "tag": f"after call {state.get('calls', 0) + 1}",
            "calls": state.get("calls", 0) + 1,
        }


def test_hooks_option(style: str, run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("get_weather", {"city": "Oslo"})), "ok"])
    agent = make(style, name="a", model=model, tools=[get_weather], hooks=[Tag()])
    assert [h.hook_name for h in agent.hooks] == ["Tag"]
    state = run.invoke(agent, "go")
    assert (state["tag"], state["calls"]) == ("after call 2", 2)


def test_max_iterations_option(style: str, run: Runner) -> None:
    model = FunctionChatModel(lambda prompt: tool_calls(("get_weather", {"city": "Oslo"})))
    agent = make(style, name="a", model=model, tools=[get_weather], max_iterations=2)
    assert agent.max_iterations == 2
    with pytest.raises(AgentMaxIterationsError, match="max_iterations=2"):
        run.call(agent, "go")
    assert len(model.prompts) == 2

"""Flows of agents: SequentialAgent, ParallelAgent, LoopAgent, flows nested in flows, their
builders and build errors, and a human approval inside a flow.

Each behaviour runs through the sync and the async API (``run``). Scripted models play the
sub-agents' LLMs; what each model was sent (``model.prompts``) shows what each sub-agent saw.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import (
    AgentBuildError,
    BaseAgent,
    Command,
    FunctionChatModel,
    GraphResumeError,
    KeyStrategy,
    LlmRoutingAgent,
    LoopAgent,
    ModelError,
    ParallelAgent,
    Prompt,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    SequentialAgent,
    SupervisorAgent,
    tool,
)
from hooks import AgentHook, HumanInTheLoopHook, ToolFeedback

from .conftest import Runner, tool_calls
from .flow_kit import (
    Concurrency,
    Flags,
    Meeting,
    bot,
    said,
    scripted,
    seen,
    user,
    waiting_model,
)


class Remember(AgentHook):
    """Records, when its agent starts, the state keys it is given."""

    def __init__(self, *keys: str) -> None:
        self.keys = keys
        self.seen: list[dict[str, Any]] = []

    def before_agent(self, state: Any, config: Any) -> None:
        self.seen.append({k: state.get(k) for k in self.keys})


class Writes(AgentHook):
    """Writes ``values`` to the state when its agent ends."""

    def __init__(self, **values: Any) -> None:
        self.values = values

    def after_agent(self, state: Any, config: Any) -> dict[str, Any]:
        return dict(self.values)


# -- builders and keywords ------------------------------------------------------------------


def _route(*names: str) -> str:
    return json.dumps({"agents": [{"agent": n, "query": f"ask {n}"} for n in names]})


def _subs() -> list[BaseAgent]:
    return [
        scripted("alpha", "A1", "A2", description="answers alpha")[0],
        scripted("beta", "B1", "B2", description="answers beta")[0],
    ]


def _stop_after_one_round(state: Any) -> bool:
    return True


KINDS: dict[str, tuple[type[Any], Callable[[], dict[str, Any]]]] = {
    "sequential": (SequentialAgent, dict),
    "parallel": (
        ParallelAgent,
        lambda: {"merge_strategy": "list", "max_concurrency": 1},
    ),
    "loop": (LoopAgent, lambda: {"max_iterations": 2, "until": _stop_after_one_round}),
    "routing": (
        LlmRoutingAgent,
        lambda: {
            "model": ScriptedChatModel([_route("beta")]),
            "instruction": "Prefer beta.",
            "fallback_agent": scripted("spare", "S1")[0],
        },
    ),
    "supervisor": (
        SupervisorAgent,
        lambda: {
            "model": ScriptedChatModel(
                [tool_calls(("alpha", {"input": "go"})), "The team says A1."]
            ),
            "instruction": "Be brief.",
            "max_iterations": 3,
        },
    ),
}


class Heard:
    """A listener: the kinds of the events it was given."""

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def on_event(self, event: Any) -> None:
        self.kinds.append(event.kind)


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_builder_and_keywords_make_the_same_flow(run: Runner, kind: str) -> None:
    cls, options_of = KINDS[kind]
    savers, heard = (MemorySaver(), MemorySaver()), (Heard(), Heard())
    by_keywords = cls(
        name="team",
        description="a team",
        sub_agents=_subs(),
        output_key="out",
        saver=savers[0],
        listeners=[heard[0]],
        **options_of(),
    )
    builder = cls.builder().name("team").description("a team").output_key("out")
    first, second = _subs()
    builder.sub_agents(first).sub_agents(second)  # sub_agents accumulates
    builder.saver(savers[1]).listeners(heard[1])
    for option, value in options_of().items():
        builder = getattr(builder, option)(value)
    by_builder = builder.build()

    assert type(by_builder) is cls
    for flow, saver in zip((by_keywords, by_builder), savers):
        assert (flow.name, flow.description, flow.output_key) == ("team", "a team", "out")
        assert [a.name for a in flow.sub_agents] == ["alpha", "beta"]
        assert flow.saver is saver
    for option in options_of():
        mine, theirs = getattr(by_builder, option), getattr(by_keywords, option)
        assert type(mine) is type(theirs)
        assert mine == theirs or isinstance(mine, (BaseAgent, ScriptedChatModel))
    assert set(by_builder.graph.nodes) == set(by_keywords.graph.nodes)
    assert set(by_builder.graph.get_graph().edges) == set(by_keywords.graph.get_graph().edges)
    one = run.invoke(by_keywords, "go", RunnableConfig(thread_id="k"))
    other = run.invoke(by_builder, "go", RunnableConfig(thread_id="b"))
    assert said(one["messages"]) == said(other["messages"])
    assert one["out"] == other["out"]
    assert savers[0].get("k") is not None and savers[1].get("b") is not None
    assert heard[0].kinds == heard[1].kinds
    assert heard[1].kinds[0] == "run_start"


# -- build errors ---------------------------------------------------------------------------


def problems_of(make: Callable[[], Any]) -> list[str]:
    with pytest.raises(AgentBuildError) as caught:
        make()
    problems = caught.value.problems
    for problem in problems:  # every problem is in the message too
        assert problem in str(caught.value)
    return problems


@pytest.mark.parametrize("cls", [SequentialAgent, ParallelAgent, LoopAgent])
@pytest.mark.parametrize("style", ["keywords", "builder"])
def test_a_flow_without_name_or_sub_agents_lists_both_problems(cls: Any, style: str) -> None:
    make = cls if style == "keywords" else lambda: cls.builder().build()
    problems = problems_of(make)
    assert len(problems) == 2
    assert "no name" in problems[0]
    assert "no sub-agents" in problems[1]


def test_flow_and_sub_agent_names_must_be_usable_as_tool_names() -> None:
    # a name names the flow's namespaces, and the tool a supervisor or as_tool makes of it
    odd = scripted("x", "y")[0]
    odd.name = "the writer"
    problems = problems_of(lambda: SequentialAgent(name="my team", sub_agents=[odd]))
    assert problems == [
        "name 'my team' must be 1-64 letters, digits, '_' or '-' (it names the flow's tools "
        "and namespaces)",
        "sub-agent name 'the writer' must be 1-64 letters, digits, '_' or '-'",
    ]


def test_duplicate_names_duplicate_output_keys_and_non_agents_are_all_listed() -> None:
    first = scripted("writer", "x", output_key="draft")[0]
    second = scripted("writer", "y")[0]
    third = scripted("editor", "z", output_key="draft")[0]
    problems = problems_of(
        lambda: SequentialAgent(
            name="team", sub_agents=[first, second, third, "critic"], output_key="messages"
        )
    )
    assert len(problems) == 4, problems
    text = "\n".join(problems)
    assert "two sub-agents are named 'writer'" in text
    assert "'writer' and 'editor' both write output_key 'draft'" in text
    assert "'critic' is not an agent" in text
    assert "output_key 'messages'" in text


@pytest.mark.parametrize("cls", [LlmRoutingAgent, SupervisorAgent])
def test_a_router_or_supervisor_needs_a_model_and_described_sub_agents(cls: Any) -> None:
    described = scripted("billing", "x", description="money questions")[0]
    undescribed = scripted("tech", "y")[0]
    problems = problems_of(
        lambda: cls.builder().name("desk").sub_agents(described, undescribed).build()
    )
    assert len(problems) == 2, problems
    assert "no model" in problems[0]
    assert "'tech' has no description" in problems[1]
    assert "billing" not in "\n".join(problems)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda agents: ParallelAgent(name="f", sub_agents=agents), "merge"),
        (lambda agents: LoopAgent(name="f", sub_agents=agents), "round"),
        (
            lambda agents: LlmRoutingAgent(
                name="f", model=ScriptedChatModel([]), sub_agents=agents
            ),
            "router",
        ),
        (
            lambda agents: LlmRoutingAgent(
                name="f", model=ScriptedChatModel([]), sub_agents=agents
            ),
            "merge",
        ),
        (lambda agents: SequentialAgent(name="f", sub_agents=agents), "__start__"),
        (lambda agents: SequentialAgent(name="f", sub_agents=agents), "__end__"),
    ],
)
def test_a_sub_agent_named_like_a_node_of_the_flow_is_a_build_error(
    make: Callable[[list[Any]], Any], name: str
) -> None:
    agents = [scripted(name, "x", description="d")[0], scripted("ok", "y", description="d")[0]]
    problems = problems_of(lambda: make(agents))
    assert len(problems) == 1, problems
    assert f"sub-agent name '{name}'" in problems[0]
    assert "rename" in problems[0]


def test_a_supervisor_sub_agent_may_be_named_like_a_node() -> None:
    # its sub-agents are tools, not nodes of its graph
    agent = scripted("model", "x", description="d")[0]
    flow = SupervisorAgent(name="boss", model=ScriptedChatModel([]), sub_agents=[agent])
    assert [a.name for a in flow.sub_agents] == ["model"]


def test_a_fallback_agent_named_like_another_sub_agent_is_a_build_error() -> None:
    billing = scripted("billing", "x", description="Money.")[0]
    impostor = scripted("billing", "y")[0]
    merge = scripted("merge", "z")[0]
    problems = problems_of(
        lambda: LlmRoutingAgent(
            name="desk", model=ScriptedChatModel([]), sub_agents=[billing], fallback_agent=impostor
        )
    )
    assert problems == [
        "fallback_agent 'billing' is another agent than the sub-agent named 'billing'; "
        "give it its own name, or pass that sub-agent"
    ]
    problems = problems_of(
        lambda: LlmRoutingAgent(
            name="desk", model=ScriptedChatModel([]), sub_agents=[billing], fallback_agent=merge
        )
    )
    assert len(problems) == 1 and "fallback_agent name 'merge'" in problems[0]
    # the sub-agent itself may be the fallback
    LlmRoutingAgent(
        name="desk", model=ScriptedChatModel([]), sub_agents=[billing], fallback_agent=billing
    )


@pytest.mark.parametrize("cls", [LlmRoutingAgent, SupervisorAgent])
def test_a_router_or_supervisor_lists_a_non_agent_and_an_empty_description(cls: Any) -> None:
    blank = scripted("blank", "x", description="")[0]
    problems = problems_of(
        lambda: cls(name="desk", model=ScriptedChatModel([]), sub_agents=[blank, "billing"])
    )
    assert len(problems) == 2, problems
    assert "'billing' is not an agent" in problems[0]
    assert "'blank' has no description" in problems[1]


class AppendsTrace(AgentHook):
    key_strategies = {"trace": KeyStrategy.APPEND}

    def after_agent(self, state: Any, config: Any) -> dict[str, Any]:
        return {"trace": ["appended"]}


class MergesTrace(AgentHook):
    key_strategies = {"trace": KeyStrategy.MERGE}

    def after_agent(self, state: Any, config: Any) -> dict[str, Any]:
        return {"trace": {"merged": True}}


def test_sub_agents_merging_one_key_differently_is_a_build_error() -> None:
    first = scripted("first", "x", hooks=[AppendsTrace()])[0]
    second = scripted("second", "y", hooks=[MergesTrace()])[0]
    problems = problems_of(lambda: SequentialAgent(name="s", sub_agents=[first, second]))
    assert problems == [
        "sub-agents 'first' and 'second' merge key 'trace' differently (APPEND and MERGE); "
        "give them one strategy for it"
    ]


def test_sub_agents_merging_one_key_alike_share_it(run: Runner) -> None:
    first = scripted("first", "x", hooks=[AppendsTrace()])[0]
    second = scripted("second", "y", hooks=[AppendsTrace()])[0]
    state = run.invoke(ParallelAgent(name="p", sub_agents=[first, second]), "go")
    assert state["trace"] == ["appended", "appended"]


def test_a_router_model_must_be_a_chat_model() -> None:
    agent = scripted("billing", "x", description="money")[0]
    problems = problems_of(lambda: LlmRoutingAgent(name="desk", model="gpt-4o", sub_agents=[agent]))
    assert problems == ["model 'gpt-4o' is not a ChatModel (call, stream, acall, astream)"]


def test_bad_parallel_options_are_all_listed() -> None:
    agents = [scripted("a", "x")[0], scripted("b", "y")[0]]
    problems = problems_of(
        lambda: ParallelAgent(
            name="p", sub_agents=agents, merge_strategy="sum", max_concurrency=0, retries=3
        )
    )
    assert len(problems) == 3, problems
    assert "merge_strategy 'sum'" in problems[0]
    assert "['concat', 'dict', 'list']" in problems[0]
    assert "max_concurrency must be a positive int" in problems[1]
    assert "unknown option(s) ['retries']" in problems[2]


@pytest.mark.parametrize("count", [0, -1, True, "3", 2.5])
def test_max_concurrency_must_be_a_positive_int(count: Any) -> None:
    agents = [scripted("a", "x")[0]]
    problems = problems_of(
        lambda: ParallelAgent(name="p", sub_agents=agents, max_concurrency=count)
    )
    assert problems == [f"max_concurrency must be a positive int or None, got {count!r}"]


@pytest.mark.parametrize("count", [0, -2, False, "10"])
def test_bad_loop_options_are_all_listed(count: Any) -> None:
    agents = [scripted("a", "x")[0]]
    problems = problems_of(
        lambda: (
            LoopAgent.builder()
            .name("loop")
            .sub_agents(*agents)
            .max_iterations(count)
            .until("done")
            .build()
        )
    )
    assert problems == [
        f"max_iterations must be a positive int, got {count!r}",
        "until must be a function (state) -> bool, got 'done'",
    ]


def test_a_supervisor_max_iterations_must_be_a_positive_int() -> None:
    agent = scripted("a", "x", description="does a")[0]
    problems = problems_of(
        lambda: SupervisorAgent(
            name="boss", model=ScriptedChatModel([]), sub_agents=[agent], max_iterations=0
        )
    )
    assert problems == ["max_iterations must be a positive int, got 0"]


def test_an_option_of_another_kind_of_flow_is_unknown() -> None:
    agents = [scripted("a", "x")[0]]
    problems = problems_of(
        lambda: (
            SequentialAgent.builder()
            .name("s")
            .sub_agents(*agents)
            .merge_strategy("list")
            .max_iterations(3)
            .build()
        )
    )
    assert problems == [
        "unknown option(s) ['max_iterations', 'merge_strategy'] for a SequentialAgent"
    ]


# -- sequential -----------------------------------------------------------------------------


def test_each_sub_agent_sees_the_input_and_every_earlier_answer(run: Runner) -> None:
    # spring-ai-alibaba #3108 (2): the next agent must carry the previous agent's reply
    researcher, researched = scripted("researcher", "Owls hunt at night.", system_prompt="R")
    writer, wrote = scripted("writer", "Draft: owls hunt at night.", system_prompt="W")
    editor, edited = scripted("editor", "Owls are nocturnal hunters.")
    flow = SequentialAgent(name="team", sub_agents=[researcher, writer, editor])

    answer = run.call(flow, "Write about owls.")

    assert answer.text == "Owls are nocturnal hunters."
    assert said(seen(researched)) == [user("Write about owls.")]
    assert said(seen(wrote)) == [user("Write about owls."), bot("Owls hunt at night.")]
    assert said(seen(edited)) == [
        user("Write about owls."),
        bot("Owls hunt at night."),
        bot("Draft: owls hunt at night."),
    ]
    # each sees its own system prompt only
    assert said(wrote.prompts[0].messages)[0] == ("system", "W")
    assert all(m.text != "R" for m in wrote.prompts[0].messages)


def test_an_output_key_reaches_later_sub_agents_and_the_flow(run: Runner) -> None:
    remember = Remember("plan", "topic")
    planner, _ = scripted(
        "planner", "1. find 2. write", output_key="plan", hooks=[Writes(topic="owls")]
    )
    writer, _ = scripted("writer", "done", hooks=[remember])
    flow = SequentialAgent(name="team", sub_agents=[planner, writer])

    state = run.invoke(flow, "Plan then write.")

    assert remember.seen == [{"plan": "1. find 2. write", "topic": "owls"}]
    assert state["plan"] == "1. find 2. write"
    assert state["topic"] == "owls"  # a key its hook wrote passes into the flow


@tool
def look_up(topic: str) -> str:
    """Look a topic up."""
    return f"facts about {topic}"


def test_a_sub_agent_runs_its_tools_and_keeps_their_traffic_to_itself(run: Runner) -> None:
    researcher, researched = scripted(
        "researcher",
        tool_calls(("look_up", {"topic": "owls"}), text="Looking it up."),
        "Owls: nocturnal.",
        tools=[look_up],
    )
    writer, wrote = scripted("writer", "An essay on owls.")
    saver = MemorySaver()
    flow = SequentialAgent(name="team", sub_agents=[researcher, writer], saver=saver)
    config = RunnableConfig(thread_id="essay")

    state = run.invoke(flow, "Owls?", config)

    # the flow's conversation: the input and one answer per sub-agent
    assert said(state["messages"]) == [
        user("Owls?"),
        bot("Owls: nocturnal."),
        bot("An essay on owls."),
    ]
    assert not any(getattr(m, "tool_calls", ()) for m in state["messages"])
    # the tool ran: its result reached the researcher's second model call
    assert said(seen(researched, 1))[-1] == ("tool", "facts about owls")
    # the writer saw no tool traffic
    assert said(seen(wrote)) == [user("Owls?"), bot("Owls: nocturnal.")]
    # the tool traffic is in the researcher's own checkpoints, in the flow's thread
    own = [t for t in saver.thread_ids() if t.startswith("essay|researcher:")]
    assert len(own) == 1
    kept = saver.get(own[0])
    assert kept is not None
    assert said(kept.values["messages"]) == [
        user("Owls?"),
        bot("Looking it up."),
        ("tool", "facts about owls"),
        bot("Owls: nocturnal."),
    ]


def test_the_flow_thread_continues_on_a_second_turn(run: Runner) -> None:
    researcher, researched = scripted("researcher", "Owls: nocturnal.", "Bats: echolocation.")
    writer, wrote = scripted("writer", "Owl essay.", "Bat essay.")
    flow = SequentialAgent(name="team", sub_agents=[researcher, writer])
    config = RunnableConfig(thread_id="two-turns")

    assert run.call(flow, "Owls?", config).text == "Owl essay."
    assert run.call(flow, "Now bats.", config).text == "Bat essay."

    first_turn = [user("Owls?"), bot("Owls: nocturnal."), bot("Owl essay.")]
    assert said(seen(researched, 1)) == [*first_turn, user("Now bats.")]
    assert said(seen(wrote, 1)) == [*first_turn, user("Now bats."), bot("Bats: echolocation.")]
    snapshot = flow.get_state(config)
    assert snapshot is not None
    assert said(snapshot.values["messages"]) == [
        *first_turn,
        user("Now bats."),
        bot("Bats: echolocation."),
        bot("Bat essay."),
    ]


# -- parallel -------------------------------------------------------------------------------


def test_parallel_sub_agents_run_at_the_same_time(run: Runner) -> None:
    # spring-ai-alibaba #3108 (1), langgraph-supervisor #222/#230: each model waits until the
    # three are in their model calls at once; run one after another, the first waits alone
    meeting = Meeting(3)
    agents = [
        ReactAgent(name=n, model=waiting_model(run, n, f"{n} done", meet=meeting))
        for n in ("news", "weather", "sports")
    ]
    flow = ParallelAgent(name="briefing", sub_agents=agents)

    answer = run.call(flow, "Brief me.")

    assert sorted(meeting.arrived) == ["news", "sports", "weather"]
    assert answer.text == "news:\nnews done\n\nweather:\nweather done\n\nsports:\nsports done"


def test_each_parallel_sub_agent_sees_only_its_own_prompt_and_the_input(run: Runner) -> None:
    # spring-ai-alibaba #3304/#3307: one branch's instructions never reach another
    models = {}
    agents = []
    for name in ("optimist", "pessimist", "realist"):
        agent, model = scripted(
            name,
            f"{name} view",
            f"{name} second view",
            system_prompt=f"You are the {name}.",
            instruction=f"Answer as the {name}.",
        )
        agents.append(agent)
        models[name] = model
    flow = ParallelAgent(name="panel", sub_agents=agents)
    config = RunnableConfig(thread_id="panel")

    run.call(flow, "Will it rain?", config)
    run.call(flow, "And tomorrow?", config)

    joined = "optimist:\noptimist view\n\npessimist:\npessimist view\n\nrealist:\nrealist view"
    for name, model in models.items():
        assert said(model.prompts[0].messages) == [
            ("system", f"You are the {name}.\n\nAnswer as the {name}."),
            user("Will it rain?"),
        ]
        # the second turn: the conversation so far (one merged answer), never a sibling's
        # prompt or this turn's answers
        assert said(model.prompts[1].messages) == [
            ("system", f"You are the {name}.\n\nAnswer as the {name}."),
            user("Will it rain?"),
            bot(joined),
            user("And tomorrow?"),
        ]


def _double_lengths(results: dict[str, Any]) -> Any:
    return {name: 2 * len(text) for name, text in results.items()}


@pytest.mark.parametrize(
    ("strategy", "merged"),
    [
        ("dict", {"pros": "cheap", "cons": "slow"}),
        ("list", ["cheap", "slow"]),
        ("concat", "cheap\n\nslow"),
        (_double_lengths, {"pros": 10, "cons": 8}),
    ],
)
def test_merge_strategies_shape_the_flow_output_key(
    run: Runner, strategy: Any, merged: Any
) -> None:
    pros, _ = scripted("pros", "cheap")
    cons, _ = scripted("cons", "slow")
    flow = ParallelAgent(
        name="review", sub_agents=[pros, cons], merge_strategy=strategy, output_key="verdicts"
    )

    state = run.invoke(flow, "Judge it.")

    assert state["verdicts"] == merged
    assert said(state["messages"]) == [user("Judge it."), bot("pros:\ncheap\n\ncons:\nslow")]


def test_without_a_merge_strategy_the_output_key_holds_results_by_name(run: Runner) -> None:
    pros, _ = scripted("pros", "cheap")
    cons, _ = scripted("cons", "slow")
    flow = ParallelAgent(name="review", sub_agents=[pros, cons], output_key="verdicts")
    assert run.invoke(flow, "Judge it.")["verdicts"] == {"pros": "cheap", "cons": "slow"}


def test_a_sub_agent_output_key_value_is_its_result(run: Runner) -> None:
    # a nested parallel flow writes a dict under its output_key: the outer merge takes that
    inner = ParallelAgent(
        name="inner",
        sub_agents=[scripted("a", "A")[0], scripted("b", "B")[0]],
        output_key="inner_results",
    )
    c, _ = scripted("c", "C")
    outer = ParallelAgent(name="outer", sub_agents=[inner, c], output_key="all")

    state = run.invoke(outer, "go")

    assert state["all"] == {"inner": {"a": "A", "b": "B"}, "c": "C"}
    assert state["inner_results"] == {"a": "A", "b": "B"}


def test_parallel_results_keep_the_given_order_whatever_finishes_first(run: Runner) -> None:
    flags = Flags()
    # slow waits for medium and fast to answer; medium for fast
    order = {"slow": ["medium", "fast"], "medium": ["fast"], "fast": []}
    agents = [
        ReactAgent(name=n, model=waiting_model(run, n, f"{n} answer", after=order[n], flags=flags))
        for n in ("slow", "medium", "fast")
    ]
    flow = ParallelAgent(name="race", sub_agents=agents, merge_strategy="list", output_key="out")

    state = run.invoke(flow, "go")

    assert flags.set == ["fast", "medium", "slow"]  # they finished in reverse order
    assert state["out"] == ["slow answer", "medium answer", "fast answer"]
    assert said(state["messages"]) == [
        user("go"),
        bot("slow:\nslow answer\n\nmedium:\nmedium answer\n\nfast:\nfast answer"),
    ]


def test_max_concurrency_runs_waves_of_at_most_that_many(run: Runner) -> None:
    count = Concurrency()
    first, second = Meeting(2), Meeting(2)
    meeting_of = {"a": first, "b": first, "c": second, "d": second, "e": None}
    agents = [
        ReactAgent(name=n, model=waiting_model(run, n, n.upper(), meet=meeting_of[n], count=count))
        for n in "abcde"
    ]
    flow = ParallelAgent(
        name="waves", sub_agents=agents, max_concurrency=2, merge_strategy="concat", output_key="o"
    )

    state = run.invoke(flow, "go")

    assert count.peak == 2  # two at once (they met), never more
    waves = [set(count.log[0:4]), set(count.log[4:8]), set(count.log[8:])]
    assert waves == [
        {"start a", "start b", "end a", "end b"},
        {"start c", "start d", "end c", "end d"},
        {"start e", "end e"},
    ]
    assert state["o"] == "A\n\nB\n\nC\n\nD\n\nE"


def test_one_parallel_sub_agent_answer_is_the_flow_answer_as_is(run: Runner) -> None:
    solo, model = scripted("solo", "Only me.")
    flow = ParallelAgent(name="p", sub_agents=[solo])
    state = run.invoke(flow, "go")
    assert said(state["messages"]) == [user("go"), bot("Only me.")]
    assert len(model.prompts) == 1


def test_parallel_sub_agents_private_keys_and_structured_response_stay_out(run: Runner) -> None:
    # deepagents #527: parallel sub-agents each writing structured_response (and their own
    # bookkeeping keys) must not collide in the flow's single-value keys
    agents = [
        scripted(
            n,
            tool_calls(("look_up", {"topic": n})),
            f"{n} found",
            tools=[look_up],
            hooks=[HumanInTheLoopHook([]), Writes(structured_response={"who": n})],
        )[0]
        for n in ("left", "right")
    ]
    flow = ParallelAgent(name="p", sub_agents=agents, output_key="found")

    state = run.invoke(flow, "go")

    assert state["found"] == {"left": "left found", "right": "right found"}
    assert set(state) == {"messages", "found"}


# -- loop -----------------------------------------------------------------------------------


def test_a_loop_runs_max_iterations_rounds(run: Runner) -> None:
    writer, wrote = scripted("writer", "d1", "d2", "d3")
    critic, criticized = scripted("critic", "c1", "c2", "c3")
    flow = LoopAgent(name="refine", sub_agents=[writer, critic], max_iterations=3)

    state = run.invoke(flow, "Write a haiku.")

    assert said(state["messages"]) == [
        user("Write a haiku."),
        *[bot(t) for t in ("d1", "c1", "d2", "c2", "d3", "c3")],
    ]
    assert len(wrote.prompts) == len(criticized.prompts) == 3
    # a round sees the earlier rounds
    assert said(seen(wrote, 2))[-2:] == [bot("d2"), bot("c2")]


def test_until_stops_the_loop_after_the_round_it_holds(run: Runner) -> None:
    writer, wrote = scripted("writer", "draft 1", "draft 2")
    critic, _ = scripted("critic", "Needs work.", "APPROVED", output_key="verdict")
    checked: list[str] = []

    def approved(state: Any) -> bool:
        checked.append(state["verdict"])
        return state["verdict"] == "APPROVED"

    flow = LoopAgent(name="refine", sub_agents=[writer, critic], max_iterations=5, until=approved)

    answer = run.call(flow, "Write.")

    assert answer.text == "APPROVED"
    assert checked == ["Needs work.", "APPROVED"]  # after each round
    assert len(wrote.prompts) == 2  # the scripts would run out on a third round


def test_a_second_turn_counts_its_rounds_afresh(run: Runner) -> None:
    worker, worked = scripted("worker", "r1", "r2", "r3", "r4")
    flow = LoopAgent(name="loop", sub_agents=[worker], max_iterations=2)
    config = RunnableConfig(thread_id="loop")

    run.call(flow, "first", config)
    state = run.invoke(flow, "second", config)

    assert len(worked.prompts) == 4  # two rounds each turn
    assert said(state["messages"]) == [
        user("first"),
        bot("r1"),
        bot("r2"),
        user("second"),
        bot("r3"),
        bot("r4"),
    ]


def test_a_loop_nested_in_a_sequential_flow(run: Runner) -> None:
    planner, _ = scripted("planner", "plan")
    writer, _ = scripted("writer", "d1", "d2")
    critic, _ = scripted("critic", "again", "ok", output_key="verdict")
    loop = LoopAgent(
        name="refine",
        sub_agents=[writer, critic],
        max_iterations=4,
        until=lambda state: state["verdict"] == "ok",
    )
    publisher, published = scripted("publisher", "published")
    flow = SequentialAgent(name="pipeline", sub_agents=[planner, loop, publisher])

    state = run.invoke(flow, "Make a post.")

    # the loop hands back its last answer; the publisher sees it after the plan
    assert said(seen(published)) == [user("Make a post."), bot("plan"), bot("ok")]
    assert said(state["messages"]) == [
        user("Make a post."),
        bot("plan"),
        bot("ok"),
        bot("published"),
    ]
    assert state["verdict"] == "ok"


# -- nesting --------------------------------------------------------------------------------


def test_a_parallel_flow_as_a_step_of_a_sequential_flow(run: Runner) -> None:
    pros, _ = scripted("pros", "cheap")
    cons, _ = scripted("cons", "slow")
    review = ParallelAgent(name="review", sub_agents=[pros, cons], output_key="review")
    judge, judged = scripted("judge", "Buy it.")
    flow = SequentialAgent(name="decide", sub_agents=[review, judge])

    state = run.invoke(flow, "Buy it?")

    assert said(seen(judged)) == [user("Buy it?"), bot("pros:\ncheap\n\ncons:\nslow")]
    assert state["review"] == {"pros": "cheap", "cons": "slow"}
    assert state["messages"][-1].text == "Buy it."


def test_a_sequential_flow_as_a_branch_of_a_parallel_flow(run: Runner) -> None:
    draft, _ = scripted("draft", "rough")
    polish, polished = scripted("polish", "smooth")
    chain = SequentialAgent(name="chain", sub_agents=[draft, polish])
    quick, _ = scripted("quick", "fast take")
    flow = ParallelAgent(name="both", sub_agents=[chain, quick], output_key="takes")

    state = run.invoke(flow, "Say it.")

    # the chain's answer is its last sub-agent's; its steps stay inside it
    assert state["takes"] == {"chain": "smooth", "quick": "fast take"}
    assert said(seen(polished)) == [user("Say it."), bot("rough")]
    assert said(state["messages"]) == [
        user("Say it."),
        bot("chain:\nsmooth\n\nquick:\nfast take"),
    ]


def test_flows_nest_three_levels_deep(run: Runner) -> None:
    a, _ = scripted("a", "A")
    b, b_model = scripted("b", "B")
    inner = SequentialAgent(name="inner", sub_agents=[a, b])
    c, _ = scripted("c", "C")
    middle = ParallelAgent(name="middle", sub_agents=[inner, c])
    d, d_model = scripted("d", "D")
    saver = MemorySaver()
    outer = SequentialAgent(name="outer", sub_agents=[middle, d], saver=saver)
    config = RunnableConfig(thread_id="deep")

    answer = run.call(outer, "go", config)

    assert answer.text == "D"
    assert said(seen(b_model)) == [user("go"), bot("A")]
    assert said(seen(d_model)) == [user("go"), bot("inner:\nB\n\nc:\nC")]
    # b's checkpoints are three namespaces down, in the outer flow's thread
    deep = [t.split("|") for t in saver.thread_ids() if t.count("|") == 3]
    assert sorted([part.partition(":")[0] for part in parts] for parts in deep) == [
        ["deep", "middle", "inner", "a"],
        ["deep", "middle", "inner", "b"],
    ]


def test_an_agent_with_handoffs_is_a_step_that_keeps_who_took_over(run: Runner) -> None:
    # openai-agents #741: the next turn starts with the agent that took over, in a flow too
    billing, billed = scripted(
        "billing", "Refunded.", "Refund sent today.", description="Money questions."
    )
    triage, triaged = scripted(
        "triage", tool_calls(("transfer_to_billing", {})), handoffs=[billing]
    )  # one reply: asked again, it fails
    logger, logged = scripted("logger", "Logged.", "Logged again.")
    flow = SequentialAgent(name="desk", sub_agents=[triage, logger])
    config = RunnableConfig(thread_id="swarm-step")

    state = run.invoke(flow, "Refund me.", config)
    assert said(state["messages"]) == [user("Refund me."), bot("Refunded."), bot("Logged.")]
    state = run.invoke(flow, "When?", config)

    assert said(state["messages"])[-2:] == [bot("Refund sent today."), bot("Logged again.")]
    assert len(triaged.prompts) == 1
    assert said(seen(billed, 1))[-1] == user("When?")
    assert said(seen(logged)) == [user("Refund me."), bot("Refunded.")]


# -- a human approval inside a flow ---------------------------------------------------------


def _banker(sent: list[str], *replies: Any) -> tuple[Any, ScriptedChatModel]:
    """A banker whose transfers need approval; its model asks for one, then answers."""

    @tool
    def transfer(to: str, amount: int) -> str:
        """Send money."""
        sent.append(f"{amount} to {to}")
        return "sent"

    return scripted(
        "banker",
        *(replies or (tool_calls(("transfer", {"to": "Bob", "amount": 5})), "Paid Bob 5.")),
        tools=[transfer],
        hooks=[HumanInTheLoopHook(["transfer"])],
    )


def test_an_approval_in_a_sub_agent_pauses_the_flow_and_resumes_in_place(run: Runner) -> None:
    sent: list[str] = []
    planner, planned = scripted("planner", "Pay Bob 5.")  # one answer: run twice, it fails
    banker, banked = _banker(sent)
    reporter, reported = scripted("reporter", "Done: Bob has 5.")
    flow = SequentialAgent(name="office", sub_agents=[planner, banker, reporter])
    config = RunnableConfig(thread_id="approval")

    state = run.invoke(flow, "Pay Bob.", config)

    assert sent == []
    snapshot = flow.get_state(config)
    assert snapshot is not None
    assert snapshot.next == ("banker",)
    (pending,) = snapshot.interrupts
    assert pending.value["tool_calls"][0]["name"] == "transfer"
    assert len(pending.namespace) == 1
    assert pending.namespace[0].startswith("banker:")
    assert said(state["messages"]) == [user("Pay Bob."), bot("Pay Bob 5.")]

    answer = run.call(flow, Command(resume=ToolFeedback.approve()), config)

    assert answer.text == "Done: Bob has 5."
    assert sent == ["5 to Bob"]
    assert len(planned.prompts) == 1  # not run again
    assert len(banked.prompts) == 2
    assert said(seen(reported)) == [user("Pay Bob."), bot("Pay Bob 5."), bot("Paid Bob 5.")]


def test_an_approval_in_a_parallel_branch_resumes_without_rerunning_its_sibling(
    run: Runner,
) -> None:
    sent: list[str] = []
    banker, _ = _banker(sent)
    clerk, clerked = scripted("clerk", "Filed.")  # one answer: run twice, it fails
    flow = ParallelAgent(name="office", sub_agents=[banker, clerk], output_key="done")
    config = RunnableConfig(thread_id="parallel-approval")

    run.invoke(flow, "Pay and file.", config)
    snapshot = flow.get_state(config)
    assert snapshot is not None and snapshot.interrupts
    assert snapshot.interrupts[0].namespace[0].startswith("banker:")

    state = run.invoke(flow, Command(resume=ToolFeedback.approve()), config)

    assert sent == ["5 to Bob"]
    assert len(clerked.prompts) == 1
    assert state["done"] == {"banker": "Paid Bob 5.", "clerk": "Filed."}


@pytest.mark.parametrize("cls", [SequentialAgent, LoopAgent])
def test_a_sequential_or_loop_flow_output_key_holds_its_answer(run: Runner, cls: Any) -> None:
    # a flow is a sub-agent like any other: its output_key hands its answer on
    first, _ = scripted("first", "draft")
    last, _ = scripted("last", "summary text")
    options = {"max_iterations": 1} if cls is LoopAgent else {}
    inner = cls(name="inner", sub_agents=[first, last], output_key="summary", **options)
    remember = Remember("summary")
    reader, _ = scripted("reader", "read it", hooks=[remember])
    outer = SequentialAgent(name="outer", sub_agents=[inner, reader])

    state = run.invoke(outer, "go")

    assert remember.seen == [{"summary": "summary text"}]
    assert state["summary"] == "summary text"
    assert (
        run.invoke(
            cls(name="alone", sub_agents=[scripted("x", "X")[0]], output_key="o", **options), "go"
        )["o"]
        == "X"
    )


def test_an_approval_in_a_later_loop_round_resumes_that_round(run: Runner) -> None:
    sent: list[str] = []

    @tool
    def transfer(to: str, amount: int) -> str:
        """Send money."""
        sent.append(f"{amount} to {to}")
        return "sent"

    worker, worked = scripted(
        "worker",
        "Round one: nothing to pay.",
        tool_calls(("transfer", {"to": "Bob", "amount": 5})),
        "Round two: paid Bob 5.",
        tools=[transfer],
        hooks=[HumanInTheLoopHook(["transfer"])],
    )
    flow = LoopAgent(name="rounds", sub_agents=[worker], max_iterations=2)
    config = RunnableConfig(thread_id="loop-approval")

    run.invoke(flow, "Pay what is due.", config)
    snapshot = flow.get_state(config)
    assert snapshot is not None and snapshot.interrupts

    state = run.invoke(flow, Command(resume=ToolFeedback.approve()), config)

    assert sent == ["5 to Bob"]
    assert len(worked.prompts) == 3  # no third round: the count survived the pause
    assert said(state["messages"]) == [
        user("Pay what is due."),
        bot("Round one: nothing to pay."),
        bot("Round two: paid Bob 5."),
    ]


def test_a_failed_parallel_branch_keeps_what_its_sibling_finished(run: Runner) -> None:
    # deepagents #693, nothing lost: a branch fails while its sibling still answers; what
    # finished is kept with the thread, and the retry runs only what did not finish. A sync
    # run's sibling (a thread) runs to its end, so it is not asked again; an async run
    # cancels the sibling still running when a task fails (the engine's rule for async
    # steps), so the retry asks it again
    flags = Flags()
    calls: list[str] = []

    def flaky_reply(prompt: Prompt) -> str:
        calls.append("flaky")
        if len(calls) == 1:
            flags.raise_("flaky")
            raise ModelError("provider down")
        return "Recovered."

    steadied = waiting_model(run, "steady", "Fine.", after=["flaky"], flags=flags)
    steady = ReactAgent(name="steady", model=steadied)
    flaky = ReactAgent(name="flaky", model=FunctionChatModel(flaky_reply))
    flow = ParallelAgent(name="pair", sub_agents=[steady, flaky], output_key="both")
    config = RunnableConfig(thread_id="retry")

    with pytest.raises(ModelError, match="provider down"):
        run.invoke(flow, "go", config)
    snapshot = flow.get_state(config)
    assert snapshot is not None and "flaky" in snapshot.next

    state = run.invoke(flow, None, config)

    assert calls == ["flaky", "flaky"]
    if run.is_async:
        assert len(steadied.prompts) == 2  # cancelled mid-answer, so asked again
    else:
        assert flags.set == ["flaky", "steady"]  # steady answered after flaky failed
        assert len(steadied.prompts) == 1  # ... and was not asked again
    assert state["both"] == {"steady": "Fine.", "flaky": "Recovered."}


def test_a_paused_flow_resumes_from_a_durable_saver_in_a_new_process(
    run: Runner, durable: Any
) -> None:
    sent: list[str] = []

    def office(*banker_replies: Any) -> tuple[ParallelAgent, ScriptedChatModel]:
        """The flow as a process builds it, on the same saver."""
        banker, _ = _banker(sent, *banker_replies)
        clerk, clerked = scripted("clerk", "Filed.")
        flow = ParallelAgent(
            name="office", sub_agents=[banker, clerk], output_key="done", saver=durable
        )
        return flow, clerked

    config = RunnableConfig(thread_id="durable-approval")
    run.invoke(office()[0], "Pay and file.", config)

    # a new process: new agents, their models hold only what is still to come
    restarted, clerked = office("Paid Bob 5.")
    state = run.invoke(restarted, Command(resume=ToolFeedback.approve()), config)

    assert sent == ["5 to Bob"]
    assert clerked.prompts == []  # the clerk's answer came back from the saver
    assert state["done"] == {"banker": "Paid Bob 5.", "clerk": "Filed."}


def test_two_paused_parallel_branches_resume_by_interrupt_id(run: Runner) -> None:
    sent: list[str] = []

    def banker(name: str) -> ReactAgent:
        @tool
        def transfer(to: str, amount: int) -> str:
            """Send money."""
            sent.append(f"{name}: {amount} to {to}")
            return "sent"

        return scripted(
            name,
            tool_calls(("transfer", {"to": "Bob", "amount": 5})),
            f"{name} paid Bob.",
            tools=[transfer],
            hooks=[HumanInTheLoopHook(["transfer"])],
        )[0]

    flow = ParallelAgent(name="banks", sub_agents=[banker("north"), banker("south")])
    config = RunnableConfig(thread_id="two-approvals")

    run.invoke(flow, "Pay Bob from both.", config)
    snapshot = flow.get_state(config)
    assert snapshot is not None
    asked = {i.namespace[0].partition(":")[0]: i.id for i in snapshot.interrupts}
    assert sorted(asked) == ["north", "south"]
    with pytest.raises(GraphResumeError, match="2 pending interrupts"):
        run.invoke(flow, Command(resume=ToolFeedback.approve()), config)

    decisions = {
        asked["north"]: ToolFeedback.approve(),
        asked["south"]: ToolFeedback.reject("not from south"),
    }
    state = run.invoke(flow, Command(resume=decisions), config)

    assert sent == ["north: 5 to Bob"]
    assert said(state["messages"])[-1] == bot("north:\nnorth paid Bob.\n\nsouth:\nsouth paid Bob.")

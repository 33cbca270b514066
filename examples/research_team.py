"""A research team: a planner, three researchers at once, then a writer.

One ``SequentialAgent`` (``research_team``) runs three steps:

1. ``planner`` writes a plan; ``output_key="plan"`` keeps it in the flow's state;
2. ``researchers``, a ``ParallelAgent``: ``history``, ``science`` and ``market`` run at the
   same time, each on its own shelf of a small local library (a tool), each seeing the
   request and the plan but never the others' work; their notes land in their own
   ``output_key`` and, merged by name, in the parallel agent's ``output_key="notes"``;
3. ``writer``, whose instruction names ``{plan}``, writes the brief from the plan and the
   researchers' notes (the flow's conversation holds one answer per sub-agent).

Only the writer's answer is streamed (``stream_messages(..., agent="writer")``): the plan and
the notes are work in progress, not the answer. The flow's graph is printed as Mermaid, and
the whole thread is kept in SQLite (a temporary file, or ``--db PATH`` to keep it).

    python examples/research_team.py [--live] [--db team.sqlite] [--topic "green tea"]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from _models import choose, configured

from checkpoint import SqliteSaver
from graph_agent import (
    AssistantMessage,
    ParallelAgent,
    Prompt,
    ReactAgent,
    RunnableConfig,
    SequentialAgent,
    ToolCall,
    ToolCallback,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.models import ChatModel, FunctionChatModel

# The local library: one shelf per researcher, one entry per topic.
LIBRARY = {
    "history": {
        "green tea": "Green tea was first drunk in China, some 4,000 years ago.",
    },
    "science": {
        "green tea": "A cup holds about 30 mg of caffeine.",
    },
    "market": {
        "green tea": "China grows most of the world's green tea.",
    },
}
THREAD = "research-team"


def shelf(name: str) -> ToolCallback:
    """The ``<name>_library`` tool: the entry of that shelf for a topic."""

    def look_up(topic: str) -> str:
        return LIBRARY[name].get(topic.lower().strip(), f"nothing on {topic!r} in {name}")

    return tool(name=f"{name}_library", description=f"Look a topic up in the {name} shelf.")(
        look_up
    )


# -- offline stand-ins for the LLMs: small functions of the prompt, deterministic ------------


def topic_of(prompt: Prompt) -> str:
    """The topic of the latest request ("Write a brief on green tea." -> "green tea")."""
    request = next(m.text for m in reversed(prompt.messages) if isinstance(m, UserMessage))
    return request.rstrip(".").split(" on ", 1)[-1].strip().lower()


def planner_reply(prompt: Prompt) -> str:
    topic = topic_of(prompt)
    return f"Plan for {topic}: 1. where it comes from; 2. what is in a cup; 3. who grows it."


def researcher_reply(name: str) -> FunctionChatModel:
    """Looks the topic up on its shelf, then answers with what it found."""

    def reply(prompt: Prompt) -> AssistantMessage | str:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return last.responses[0].response_data
        arguments = json.dumps({"topic": topic_of(prompt)})
        call = ToolCall(id=f"{name}_1", name=f"{name}_library", arguments=arguments)
        return AssistantMessage("", tool_calls=[call])

    return FunctionChatModel(reply)


def writer_reply(prompt: Prompt) -> str:
    """The brief: the notes of each researcher, in the plan's order (from the conversation:
    the researchers' merged answer is the latest assistant message)."""
    notes = next(m.text for m in reversed(prompt.messages) if isinstance(m, AssistantMessage))
    found = dict(block.split(":\n", 1) for block in notes.split("\n\n") if ":\n" in block)
    brief = " ".join(found.get(name, "") for name in ("history", "science", "market"))
    return f"{topic_of(prompt).capitalize()} in brief. {brief}"


# -- the team ---------------------------------------------------------------------------------


def build(live: ChatModel | None = None, saver: SqliteSaver | None = None) -> SequentialAgent:
    """The team: each agent on its offline stand-in, or all on ``live``; without ``saver``
    (``graph-agent serve`` gives it the server's)."""

    def model(offline: ChatModel) -> ChatModel:
        return live or offline  # one real model for the whole team with --live

    planner = (
        ReactAgent.builder()
        .name("planner")
        .description("Plans a short research brief.")
        .model(model(FunctionChatModel(planner_reply)))
        .instruction("Write a three-step plan for a short brief on the user's topic.")
        .output_key("plan")
        .build()
    )
    researchers = [
        ReactAgent.builder()
        .name(name)
        .description(f"Finds the {name} of a topic in the library.")
        .model(model(researcher_reply(name)))
        .tools(shelf(name))
        .instruction(
            f"You research the {name} of the topic. Look it up with {name}_library "
            "(the topic in a few words), then answer with one sentence of notes."
        )
        .output_key(f"{name}_notes")
        .build()
        for name in LIBRARY
    ]
    team = (
        ParallelAgent.builder()
        .name("researchers")
        .sub_agents(*researchers)
        .output_key("notes")  # {"history": ..., "science": ..., "market": ...}
        .build()
    )
    writer = (
        ReactAgent.builder()
        .name("writer")
        .description("Writes the brief.")
        .model(model(FunctionChatModel(writer_reply)))
        .instruction(
            "Write a brief of three sentences that follows this plan:\n{plan}\n"
            "Use only the researchers' notes in the conversation."
        )
        .output_key("brief")
        .build()
    )
    flow = SequentialAgent.builder().name("research_team").sub_agents(planner, team, writer)
    return (flow.saver(saver) if saver is not None else flow).build()


# served: `graph-agent serve examples/research_team.py:flow` (its model: see _models.py)
flow = build(configured())


def run(args: argparse.Namespace, path: Path) -> None:
    with SqliteSaver(path) as saver:
        live = choose(args, FunctionChatModel(planner_reply)) if args.live else None
        flow = build(live, saver)
        researchers = flow.sub_agents[1]
        print("== the flow's graph (flow.graph.draw_mermaid())")
        print(flow.graph.draw_mermaid())
        print("== the researchers' graph: they run at once, then 'merge' joins their answers")
        print(researchers.graph.draw_mermaid())

        request = f"Write a brief on {args.topic}."
        config = RunnableConfig(thread_id=THREAD)
        print(f"== user: {request}")
        print("writer (streamed): ", end="")
        streamed = ""
        for chunk in flow.stream_messages(request, config, agent="writer"):
            streamed += chunk
            print(chunk, end="", flush=True)
        print()

        snapshot = flow.get_state(config)
        assert snapshot is not None
        state = snapshot.values
        print("== what the flow's state holds")
        print(f"plan:  {state['plan']}")
        for name, notes in state["notes"].items():
            print(f"notes[{name!r}]: {notes}")
        print(f"brief: the writer's answer, as streamed: {state['brief'] == streamed}")
        print("== the conversation: the request, then one answer per sub-agent")
        speakers = ["user", *(agent.name for agent in flow.sub_agents)]
        for message, who in zip(state["messages"][-4:], speakers):
            first, *rest = message.text.splitlines()
            print(f"  [{who}] {first}")
            for line in rest:
                print(f"      {line}".rstrip())
        print(f"thread {THREAD!r} kept in {path.name}: {len(state['messages'])} messages")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="A planner, parallel researchers and a writer (SequentialAgent + ParallelAgent)."
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="use a real OpenAI-compatible model (OPENAI_API_KEY, OPENAI_BASE_URL, GRAPH_AGENT_MODEL)",
    )
    parser.add_argument("--db", type=Path, help="SQLite file for the thread (default: a temp file)")
    parser.add_argument("--topic", default="green tea", help="what the brief is about")
    args = parser.parse_args(argv)
    if args.db is not None:
        run(args, args.db)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        run(args, Path(folder) / "team.sqlite")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

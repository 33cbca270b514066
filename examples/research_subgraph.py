"""A research desk: a map-reduce over ``Send`` inside a subgraph, paused for a human.

The parent graph plans a report, runs a ``research`` subgraph, then writes the report. Inside
the subgraph, ``plan_searches`` sends one ``search`` task per topic (``Send``: they run in
parallel, and their findings merge in topic order), ``digest`` reduces them, and
``editor_review`` calls ``interrupt()``: the whole run pauses, checkpointed to SQLite, until
an editor answers; the first half prints the pending interrupt with its namespace (the path
to the subgraph it is in, ``("research:<task id>",)``). The answer can come from another
process: the child graph continues where it stopped (the searches do not run again), and the
parent writes the report.
Offline and deterministic: ``search`` reads a small local library instead of the web.

    python examples/research_subgraph.py                       # both halves, one process
    python examples/research_subgraph.py --db desk.sqlite      # runs until the editor's pause
    python examples/research_subgraph.py --db desk.sqlite --resume "approved: keep it short"
    graph-agent graph examples/research_subgraph.py:graph
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from checkpoint import BaseCheckpointSaver, MemorySaver, SqliteSaver
from graph_agent import (
    END,
    START,
    Command,
    CompiledGraph,
    KeyStrategy,
    OverAllState,
    RunnableConfig,
    Send,
    StateGraph,
    interrupt,
)

LIBRARY = {
    "owls": "Owls hunt at night; their feathers make flight nearly silent.",
    "bats": "Bats navigate by echolocation and eat up to their weight in insects.",
    "moths": "Moths outnumber butterflies about nine to one.",
}
THREAD = "night-animals"


# -- the research subgraph: map (Send per topic), reduce, review ------------------------------


def plan_searches(state: OverAllState) -> list[Send]:
    """The router that fans out: one ``search`` task per topic, each seeing only its topic."""
    return [Send("search", {"topic": topic}) for topic in state["topics"]]


def search(state: OverAllState) -> dict[str, Any]:
    topic = state["topic"]
    return {"findings": [f"{topic}: {LIBRARY.get(topic, 'nothing found')}"]}


def digest(state: OverAllState) -> dict[str, Any]:
    return {"digest": " ".join(state["findings"])}


def editor_review(state: OverAllState) -> dict[str, Any]:
    verdict = interrupt({"question": "Publish this digest?", "digest": state["digest"]})
    return {"verdict": verdict}


def research_graph() -> StateGraph:
    research = StateGraph(key_strategies={"findings": KeyStrategy.APPEND})
    research.add_node("search", search).add_node("digest", digest)
    research.add_node("editor_review", editor_review)
    research.add_conditional_edges(START, plan_searches, ["search"])
    research.add_edge("search", "digest").add_edge("digest", "editor_review")
    return research.add_edge("editor_review", END)


# -- the parent: plan, research (the subgraph), write ------------------------------------------


def plan(state: OverAllState) -> dict[str, Any]:
    return {"topics": sorted(t.strip() for t in state["request"].split(",")), "findings": []}


def write(state: OverAllState) -> dict[str, Any]:
    return {"report": f"REPORT ({state['verdict']}): {state['digest']}"}


def build(saver: BaseCheckpointSaver) -> CompiledGraph:
    desk = StateGraph(key_strategies={"findings": KeyStrategy.APPEND})
    desk.add_node("plan", plan)
    desk.add_node("research", research_graph().compile(), output_keys=["digest", "verdict"])
    desk.add_node("write", write)
    desk.add_edge(START, "plan").add_edge("plan", "research").add_edge("research", "write")
    return desk.add_edge("write", END).compile(saver=saver)


def _drawable() -> CompiledGraph:
    return build(MemorySaver())  # for drawing only: no file, nothing to close


# for `graph-agent graph examples/research_subgraph.py:graph`, and served (the server gives it
# its saver): `graph-agent serve examples/research_subgraph.py:graph`
graph = _drawable()


def show_steps(app: CompiledGraph, value: Any, config: RunnableConfig) -> None:
    """Run, printing every node as it finishes, the subgraph's included."""
    for output in app.stream(value, config, subgraphs=True):
        where = "/".join(part.split(":")[0] for part in output.namespace) or "desk"
        print(f"ran {where}.{output.node}")


def start(app: CompiledGraph, config: RunnableConfig) -> None:
    show_steps(app, {"request": "owls, bats, moths"}, config)
    snapshot = app.get_state(config, subgraphs=True)
    assert snapshot is not None
    for pending in snapshot.interrupts:
        where = "/".join(part.split(":")[0] for part in pending.namespace)
        print(f"paused in {where}.{pending.node}: {pending.value['question']}")
        print(f"  namespace: {pending.namespace}")  # ("research:<task id>",)
        print(f"  interrupt id: {pending.id}")
        print(f"  digest: {pending.value['digest']}")
    for child in snapshot.subgraphs:
        print(f"  the research subgraph waits at {list(child.next)}")


def finish(app: CompiledGraph, config: RunnableConfig, answer: str) -> None:
    print(f"resuming with {answer!r}")
    show_steps(app, Command(resume=answer), config)  # the searches do not run again
    snapshot = app.get_state(config)
    assert snapshot is not None
    print(snapshot.values["report"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A map-reduce subgraph paused for an editor.")
    parser.add_argument("--db", type=Path, help="SQLite file for the thread (default: a temp file)")
    parser.add_argument("--resume", metavar="ANSWER", help="resume the paused thread with ANSWER")
    args = parser.parse_args(argv)
    config = RunnableConfig(thread_id=THREAD)
    if args.db is None:  # both halves, one process, on a throwaway file
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "desk.sqlite"
            with SqliteSaver(path) as saver:
                start(build(saver), config)
            with SqliteSaver(path) as saver:  # as a second process would
                finish(build(saver), config, args.resume or "approved")
        return 0
    with SqliteSaver(args.db) as saver:
        app = build(saver)
        current = app.get_state(config)
        paused = current is not None and bool(current.interrupts)
        if args.resume is None and paused:
            parser.error(
                f"thread {THREAD!r} in {args.db} waits for the editor: add --resume ANSWER"
            )
        if args.resume is not None and not paused:
            parser.error(
                f"thread {THREAD!r} in {args.db} is not paused: run without --resume first"
            )
        if args.resume is None:
            start(app, config)
        else:
            finish(app, config, args.resume)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Agents as tools: an orchestrator calls two agents at once, one of them asks for approval.

``trip_planner`` is a ``ReactAgent`` whose tools are two other agents, ``flights.as_tool()``
and ``hotels.as_tool()``. Its model asks for both in one answer, so they run in parallel,
each as a subgraph of its tool call: their events reach the orchestrator's ``stream_events``
with a namespace (``("hotels:<id>",)``) that says where they come from. Here the events are
printed as ``namespace  kind  detail`` (the ids left out; model deltas and checkpoints
skipped); the two agents run at the same time, so their lines may interleave differently
from run to run.

``hotels`` books with ``book_hotel``, which a ``HumanInTheLoopHook`` guards: the booking
pauses the hotels agent, and with it the orchestrator, whose tool call is still running.
The pending approval is read from ``trip_planner.get_state(config).interrupts`` (with the
namespace of the agent that asked), then ``Command(resume=ToolFeedback.approve())`` resumes
the orchestrator: the hotels agent continues where it stopped, the flights agent (already
finished) is not run again, and the orchestrator answers with both results.

    python examples/agent_as_tool.py [--live]
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence

from _models import choose, configured, parse_args

from graph_agent import (
    AssistantMessage,
    Command,
    Prompt,
    ReactAgent,
    RunnableConfig,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from graph_agent.events import (
    InterruptEvent,
    ModelEnd,
    RunEnd,
    RunEvent,
    RunStart,
    ToolEnd,
    ToolStart,
)
from graph_agent.models import ChatModel, FunctionChatModel
from hooks import HumanInTheLoopHook, ToolFeedback

BOOKINGS: list[str] = []  # the hotel rooms really booked


@tool
def find_flights(destination: str, date: str) -> str:
    """Flights to a destination on a date (YYYY-MM-DD)."""
    time.sleep(0.2)  # a slow search: the hotels agent runs meanwhile
    return f"TP 1351 to {destination} on {date}, 08:10, 129 EUR"


@tool
def book_hotel(city: str, nights: int) -> str:
    """Book a hotel room (needs the traveller's approval)."""
    BOOKINGS.append(f"{nights} nights in {city}")
    return f"booked Casa do Rio, {city}, {nights} nights, booking H-77"


# -- offline stand-ins for the LLMs ------------------------------------------------------------


def asks(prompt: Prompt, *calls: tuple[str, dict[str, object]]) -> AssistantMessage:
    """An answer asking for tools (their ids unique in the conversation)."""
    base = len(prompt.messages)
    return AssistantMessage(
        "",
        tool_calls=[
            ToolCall(id=f"call_{base}_{i}", name=name, arguments=json.dumps(arguments))
            for i, (name, arguments) in enumerate(calls, start=1)
        ],
    )


def result_of(prompt: Prompt) -> str | None:
    last = prompt.messages[-1]
    return last.responses[0].response_data if isinstance(last, ToolResponseMessage) else None


def flights_reply(prompt: Prompt) -> AssistantMessage | str:
    found = result_of(prompt)
    if found is None:
        return asks(prompt, ("find_flights", {"destination": "Lisbon", "date": "2025-06-12"}))
    return f"Best flight: {found}."


def hotels_reply(prompt: Prompt) -> AssistantMessage | str:
    booked = result_of(prompt)
    if booked is None:
        return asks(prompt, ("book_hotel", {"city": "Lisbon", "nights": 3}))
    return f"Hotel: {booked}."


def planner_reply(prompt: Prompt) -> AssistantMessage | str:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        flight, hotel = (r.response_data for r in last.responses)
        return f"Your trip is ready. {flight} {hotel}"
    return asks(
        prompt,
        ("flights", {"input": "A flight to Lisbon on 2025-06-12."}),
        ("hotels", {"input": "A hotel in Lisbon for 3 nights from 2025-06-12."}),
    )


# -- the agents --------------------------------------------------------------------------------


def build(model: ChatModel | None = None) -> ReactAgent:
    """The orchestrator and its two agents; ``model`` (``--live``) replaces every offline one."""
    flights = (
        ReactAgent.builder()
        .name("flights")
        .description("Finds flights. Give it the destination and the date.")
        .model(model or FunctionChatModel(flights_reply))
        .tools(find_flights)
        .system_prompt("You find flights with find_flights and answer with the best one.")
        .build()
    )
    hotels = (
        ReactAgent.builder()
        .name("hotels")
        .description("Books hotels. Give it the city, the date and the number of nights.")
        .model(model or FunctionChatModel(hotels_reply))
        .tools(book_hotel)
        .hooks(HumanInTheLoopHook({"book_hotel": "The traveller approves every booking"}))
        .system_prompt("You book hotels with book_hotel and answer with the booking.")
        .build()
    )
    return (
        ReactAgent.builder()
        .name("trip_planner")
        .model(model or FunctionChatModel(planner_reply))
        .tools(flights.as_tool(), hotels.as_tool())
        .system_prompt(
            "You plan trips. Ask the flights and hotels agents at the same time (both tools "
            "in one answer), then sum up their answers for the traveller."
        )
        .build()
    )


def where(namespace: tuple[str, ...]) -> str:
    """A namespace without its ids: ('hotels:1f0e...',) -> 'trip_planner/hotels'."""
    return "/".join(["trip_planner", *(part.split(":", 1)[0] for part in namespace)])


def detail(event: RunEvent) -> str | None:
    """What to print of an event (``None``: skip it)."""
    if isinstance(event, RunStart | RunEnd):
        return ""
    if isinstance(event, ToolStart):
        return f"{event.name}({event.arguments})"
    if isinstance(event, ToolEnd):
        return f"{event.name} -> {event.result}"
    if isinstance(event, ModelEnd) and event.message is not None:
        calls = [c.name for c in event.message.tool_calls]
        return f"asks for {', '.join(calls)}" if calls else f"answers {event.message.text!r}"
    if isinstance(event, InterruptEvent):
        return f"paused: {event.interrupt.value['type']}"
    return None


def show(events: Iterable[RunEvent]) -> None:
    for event in events:
        text = detail(event)
        if text is not None:
            print(f"  {where(event.namespace):<22} {event.kind:<11} {text}".rstrip())


# served: `graph-agent serve examples/agent_as_tool.py:trip_planner` (its model: see _models.py)
trip_planner = build(configured())


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("An orchestrator with two agents as tools, one asking for approval.", argv)
    live = choose(args, FunctionChatModel(planner_reply)) if args.live else None
    planner = build(live)
    config = RunnableConfig(thread_id="trip-1")

    print("== 1. the orchestrator runs; both agents are called at once")
    show(planner.stream_events("Plan my trip to Lisbon on 2025-06-12, 3 nights.", config))

    snapshot = planner.get_state(config)
    assert snapshot is not None
    print("== 2. paused: the orchestrator waits in", list(snapshot.next))
    for pending in snapshot.interrupts:
        for request in pending.value["tool_calls"]:
            arguments = json.dumps(request["arguments"])
            print(f"  {where(pending.namespace)} asks to run {request['name']}({arguments})")
    print(f"  booked so far: {BOOKINGS}")

    print("== 3. approved: Command(resume=ToolFeedback.approve())")
    show(planner.stream_events(Command(resume=ToolFeedback.approve()), config))
    snapshot = planner.get_state(config)
    assert snapshot is not None
    print(f"  booked: {BOOKINGS}")
    print(f"trip_planner: {snapshot.values['messages'][-1].text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

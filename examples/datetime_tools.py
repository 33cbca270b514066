"""Date and time tools: "set an alarm ten minutes from now".

The model first calls ``get_current_date_time`` (a tool with no arguments that reads the
user's time zone from the ToolContext), then ``set_alarm`` with an ISO-8601 time ten minutes
later. Offline, a small rule-based model plays the LLM's part; ``--live`` uses a real one.

    python examples/datetime_tools.py [--live]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from _models import choose, parse_args, served

from graph_agent import ChatClient, ReactAgent, ToolContext, tool
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graph_agent.models import FunctionChatModel, Prompt


class DateTimeTools:
    """Tools about the clock, for one user."""

    def __init__(self, now: datetime | None = None) -> None:
        self._fixed_now = now  # a fixed clock keeps the offline run reproducible
        self.alarms: list[datetime] = []

    @tool(description="Get the current date and time in the user's time zone")
    def get_current_date_time(self, context: ToolContext) -> str:
        zone = ZoneInfo(context.get("time_zone", "UTC"))
        now = self._fixed_now.astimezone(zone) if self._fixed_now else datetime.now(zone)
        return now.isoformat(timespec="seconds")

    @tool(description="Set a user alarm for the given time")
    def set_alarm(self, time: str) -> str:
        """``time`` is an ISO-8601 date-time, e.g. 2026-11-21T10:15:00+01:00."""
        alarm = datetime.fromisoformat(time)
        self.alarms.append(alarm)
        return f"Alarm set for {alarm.isoformat(timespec='minutes')}"


def offline_model() -> FunctionChatModel:
    """Plays the LLM: asks for the time, then for an alarm ten minutes later, then answers."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if not isinstance(last, ToolResponseMessage):
            call = ToolCall(id="call_1", name="get_current_date_time", arguments="")
            return AssistantMessage("", tool_calls=[call])
        response = last.responses[0]
        if response.name == "get_current_date_time":
            alarm = datetime.fromisoformat(response.response_data) + timedelta(minutes=10)
            arguments = json.dumps({"time": alarm.isoformat(timespec="seconds")})
            return AssistantMessage(
                "", tool_calls=[ToolCall(id="call_2", name="set_alarm", arguments=arguments)]
            )
        return AssistantMessage(f"Done. {response.response_data}.")

    return FunctionChatModel(reply)


# served: `graph-agent serve examples/datetime_tools.py:agent` (its model: see _models.py)
agent = (
    ReactAgent.builder()
    .name("clock")
    .model(served(offline_model))
    .method_tools(DateTimeTools())
    .tool_context({"time_zone": "Europe/Paris"})
    .build()
)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("Set an alarm ten minutes from now.", argv)
    clock = None if args.live else datetime(2026, 11, 21, 9, 5, tzinfo=ZoneInfo("UTC"))
    tools = DateTimeTools(now=clock)
    reply = (
        ChatClient.create(choose(args, offline_model()))
        .prompt("Can you set an alarm ten minutes from now?")
        .tools(tools)
        .tool_context({"time_zone": "Europe/Paris"})
        .call()
    )
    for record in reply.tool_records:
        print(f"tool {record.name}({record.arguments}) -> {record.result}")
    print(f"assistant: {reply.content()}")
    print(f"alarms: {[a.isoformat() for a in tools.alarms]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

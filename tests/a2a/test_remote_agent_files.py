"""Files and data both ways. A remote's file parts (bytes or a URL, named, with a media type)
and data parts reach our messages as text that names them, the files and values themselves
in the message's ``metadata["files"]`` / ``metadata["data"]``; our messages' files go out as
A2A file parts (the remote of tests/a2a/_remote_server.py echoes the files it receives)."""

from __future__ import annotations

import base64
import json

import pytest

from graph_agent import (
    AssistantMessage,
    Command,
    ReactAgent,
    ScriptedChatModel,
    SequentialAgent,
    ToolCall,
    UserMessage,
)
from graph_agent.a2a import RemoteA2AAgent
from graph_agent.errors import GraphUsageError
from graph_agent.events import CustomEvent, ModelDelta, ToolEnd

from ._remote_server import CHART, REPORT, SEATS

PNG = b"\x89PNG\r\n\x1a\n fake image"
REPORT_FILE = {
    "name": "report.txt",
    "media_type": "text/plain",
    "bytes": base64.b64encode(REPORT).decode(),
}
CHART_FILE = {"name": "chart.png", "media_type": "image/png", "url": CHART}
REPORT_TEXT = (
    "Here is the report.\n"
    f'[file report.txt (text/plain, {len(REPORT)} bytes): metadata["files"][0]]\n'
    f"[file chart.png (image/png): {CHART}]\n"
    '{"currency": "EUR"}'
)


def test_a_remote_file_artifact_arrives_named_in_the_text_and_whole_in_the_metadata(
    remote_url: str,
) -> None:
    remote = RemoteA2AAgent(remote_url)
    answer = remote.call("report please")
    assert answer.text == REPORT_TEXT
    assert answer.metadata["files"] == [REPORT_FILE, CHART_FILE]
    assert base64.b64decode(answer.metadata["files"][0]["bytes"]) == REPORT
    assert answer.metadata["data"] == [{"currency": "EUR"}]


def test_the_streamed_answer_names_the_files_as_they_come(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    events = list(remote.stream_events("report please"))
    assert "".join(e.text for e in events if isinstance(e, ModelDelta)) == REPORT_TEXT
    chunks = [
        e.data["a2a"]
        for e in events
        if isinstance(e, CustomEvent) and e.data["a2a"]["event"] == "artifact"
    ]
    assert [c.get("files") for c in chunks] == [None, [REPORT_FILE, CHART_FILE]]
    assert [c.get("data") for c in chunks] == [None, [{"currency": "EUR"}]]


def test_our_message_s_files_go_out_as_a2a_file_parts(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    photo = {"name": "photo.png", "media_type": "image/png", "bytes": PNG}
    paper = {"name": "paper.pdf", "media_type": "application/pdf", "url": "https://x.test/p.pdf"}
    asked = UserMessage("what is in these?", metadata={"files": [photo, paper]})
    answer = remote.call(asked)
    # the remote got two file parts with their names, media types, bytes and URL: it echoes them
    assert answer.text.startswith("Got 2 files: what is in these?\n[file photo.png (image/png, ")
    echoed = answer.metadata["files"]
    assert echoed == [{**photo, "bytes": base64.b64encode(PNG).decode()}, paper]


def test_a_remote_question_s_file_is_in_our_interrupt(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    thread = {"thread_id": "seats"}
    remote.invoke("seat for me", thread)
    state = remote.get_state(thread)
    assert state is not None
    (pause,) = state.interrupts
    assert pause.value["question"] == f"Which seat?\n[file seats.png (image/png): {SEATS}]"
    assert pause.value["files"] == [{"name": "seats.png", "media_type": "image/png", "url": SEATS}]
    assert remote.call(Command(resume="12A"), thread).text.startswith("Booked for 12A (task ")


def test_a_file_one_remote_gave_a_flow_goes_to_the_next_remote_as_a_file(
    remote_url: str,
) -> None:
    first = RemoteA2AAgent(remote_url, name="reports")
    second = RemoteA2AAgent(remote_url, name="reader")
    flow = SequentialAgent(name="pipeline", sub_agents=[first, second])
    answer = flow.call("report for May")
    assert answer.text.startswith("Got 2 files: report for May\n")
    assert answer.metadata["files"] == [REPORT_FILE, CHART_FILE]


def test_as_a_tool_the_model_reads_what_the_files_are(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    call = ToolCall(id="c1", name="travel", arguments=json.dumps({"input": "report"}))
    model = ScriptedChatModel([AssistantMessage("", tool_calls=[call]), "Done."])
    agent = ReactAgent(name="assistant", model=model, tools=[remote.as_tool()])
    events = list(agent.stream_events("get the report"))
    assert [e.result for e in events if isinstance(e, ToolEnd)] == [REPORT_TEXT]


@pytest.mark.parametrize(
    ("files", "says"),
    [
        ([{"name": "a.txt"}], r'metadata\["files"\]\[0\] must be a dict with either'),
        ([{"url": "https://x", "bytes": b"x"}], "either 'url' or 'bytes'"),
        ([{"bytes": "not base64!"}], "'bytes' is a str but not base64 text"),
        ([{"bytes": 12}], "'bytes' must be bytes or base64 text, got int"),
        ("a.txt", r'metadata\["files"\] and metadata\["data"\] must be lists'),
    ],
)
def test_a_file_that_cannot_go_is_a_clear_error(remote_url: str, files: object, says: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    with pytest.raises(GraphUsageError, match=says) as raised:
        remote.call(UserMessage("look", metadata={"files": files}))
    assert "a message sent to remote A2A agent 'travel'" in str(raised.value)

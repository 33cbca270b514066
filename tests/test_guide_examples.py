"""The user's guide examples run offline, end to end, and print what they promise; every
example takes ``--help`` and offers ``--live``; examples/README.md lists them all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ._examples import run_example

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run(name: str, *args: str) -> str:
    return run_example(name, *args)


def section(out: str, title: str) -> str:
    """The lines from the one starting with ``== title`` to the next ``== ``."""
    start = out.index(f"== {title}")
    end = out.find("\n== ", start + 1)
    return out[start : end if end != -1 else len(out)]


def test_provider_tools_offers_the_provider_the_named_and_all_combined() -> None:
    out = run("provider_tools.py")
    provider, by_name, combined = (section(out, n) for n in ("1.", "2.", "3."))
    assert "model offered:  ['get_weather', 'convert_currency']" in provider
    assert "assistant: Done: sunny, 24 degrees in Lisbon" in provider
    # Only the names asked for, found by the second resolver of the delegating one too.
    assert "model offered:  ['book_flight', 'find_hotels']" in by_name
    assert "flight to Lisbon booked, seat 12A" in by_name and "Casa do Rio Lisbon" in by_name
    assert (
        "model offered:  ['local_time', 'get_weather', 'convert_currency', 'book_flight', "
        "'find_hotels']" in combined
    )
    assert "book_hotel" not in out  # in the catalogue, but not asked for by name


def test_tool_context_reads_state_config_and_context_and_writes_extra_state() -> None:
    out = run("tool_context.py")
    first, second = out.split("user: And 1 juice", 1)
    assert (
        "tool add_to_cart -> added 2 x coffee (9.00 EUR) to u-ada's cart; "
        "seen: 2 messages, 1 from the user" in first
    )
    assert "added 1 x croissant (2.20 EUR)" in first
    assert "state['cart']: [(2, 'coffee'), (1, 'croissant')]" in first
    assert "state['last_item']: 'croissant'" in first  # REPLACE: the last call of the batch
    assert "added 1 x juice (3.90 EUR) to u-ada's cart; seen: 6 messages, 2 from the user" in second
    assert "state['cart']: [(2, 'coffee'), (1, 'croissant'), (1, 'juice')]" in second
    assert "state['last_item']: 'juice'" in second


def test_long_term_memory_is_read_back_on_another_thread() -> None:
    out = run("long_term_memory.py")
    assert "store: MemoryStore" in out
    check_long_term_memory(out)


def test_long_term_memory_in_redis(redis_url: str) -> None:
    out = run("long_term_memory.py", "--redis-url", redis_url)
    assert "store: RedisStore" in out
    check_long_term_memory(out)


def check_long_term_memory(out: str) -> None:
    monday, tuesday, wednesday = (
        section(out, f"thread '{t}'") for t in ("monday", "tuesday", "wednesday")
    )
    assert "tool save_profile -> profile saved" in monday
    assert "a new conversation" in tuesday
    assert 'tool get_profile -> {"name": "Ada", "city": "Lisbon", "diet": "vegetarian"}' in tuesday
    assert "assistant: Ada, try Jardim, a vegetarian place in Lisbon." in tuesday
    assert "tool get_profile -> no profile saved" in wednesday  # another user
    assert "{'name': 'Ada', 'city': 'Lisbon', 'diet': 'vegetarian'}" in out.splitlines()[-1]


def test_tool_errors_reach_the_model_or_raise_with_always_throw() -> None:
    out = run("tool_errors.py")
    raised = section(out, "1.")
    assert (
        "tool result: tool 'stock_price' failed: LookupError: unknown symbol 'Apple'; "
        "use a ticker such as AAPL" in raised
    )
    assert 'model calls stock_price({"symbol": "AAPL"})' in raised  # it recovered
    assert "assistant: Here you are: AAPL 227.50 USD." in raised
    invalid = section(out, "2.")
    assert "tool result: invalid arguments for tool 'stock_price' (1 error):" in invalid
    assert "- days: Input should be a valid integer" in invalid
    assert 'model calls stock_price({"symbol": "AAPL", "days": 7})' in invalid
    assert "assistant: Here you are: AAPL 221.10 -> 227.50 USD." in invalid
    strict = section(out, "3.")
    assert (
        "raised ToolExecutionException (tool_name='stock_price'): tool 'stock_price' failed"
        in strict
    )
    assert "caused by LookupError" in strict
    assert "next=('tools',)" in strict and "assistant:" not in strict


def test_unknown_tool_is_answered_with_the_available_tools() -> None:
    out = run("unknown_tool.py")
    respond = section(out, "1.")
    assert 'model calls get_current_weather({"city": "Oslo"})' in respond
    assert (
        "tool result: Error: there is no tool named 'get_current_weather'. "
        "Available tools: get_forecast, get_weather." in respond
    )
    assert 'model calls get_weather({"city": "Oslo"})' in respond  # corrected itself
    assert "assistant: Right now: light snow, -3 degrees in Oslo." in respond
    throw = section(out, "2.")
    assert (
        "raised UnknownToolError: tool_name='get_current_weather', "
        "available=['get_forecast', 'get_weather']" in throw
    )
    custom = section(out, "3.")
    assert "'get_current_weather' is not a tool here; try get_forecast or get_weather." in custom
    assert "assistant: Right now: light snow" in custom


def test_dynamic_tools_offer_the_booking_tool_only_for_a_booking() -> None:
    out = run("dynamic_tools.py")
    turns = out.split("user: ")[1:]
    assert len(turns) == 3
    assert "get_booking_details" not in turns[0]
    assert "model offered ['opening_hours'] -> calls opening_hours({})" in turns[0]
    assert (
        "model offered ['opening_hours', 'get_booking_details'] -> calls "
        'get_booking_details({"booking_ref": "BK-2231"})' in turns[1]
    )
    assert "assistant: Here you are: table for 4, Saturday 20:00, terrace." in turns[1]
    assert "model offered ['opening_hours'] -> answers" in turns[2]  # gone again
    assert "get_booking_details" not in turns[2]


def test_streaming_text_chunks_and_node_outputs() -> None:
    out = run("streaming.py")
    chunks = "Let |me |check.|Paris |is |sunny, |18 |degrees |and |Rome |is |cloudy, |21 |degrees."
    assert chunks + "|\n   (14 chunks, over every model call of the run)" in section(out, "1.")
    nodes = section(out, "2.").splitlines()[1:]
    assert re.findall(r"^   \[(\w+)\]", "\n".join(nodes), re.MULTILINE) == [
        "model",
        "tools",
        "tools",
        "model",
    ]
    assert 'asks for get_weather({"city": "Paris"}), get_weather({"city": "Rome"})' in nodes[0]
    assert nodes[2:4] == [
        "   [tools] get_weather -> sunny, 18 degrees",
        "   [tools] get_weather -> cloudy, 21 degrees",
    ]
    assert "[model] answers: Paris is sunny, 18 degrees and Rome is cloudy, 21 degrees." in out
    assert section(out, "3.").splitlines()[1] == chunks


# approval_workflow.py and research_subgraph.py are pure graph examples (no model, nothing
# to run --live against): they must take --help, but are exempt from offering --live.
NO_MODEL = {"approval_workflow.py", "research_subgraph.py"}
ALL_EXAMPLES = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "_models.py")


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_every_example_takes_help_and_offers_live(name: str) -> None:
    out = run(name, "--help")
    assert out.startswith("usage:")
    if name not in NO_MODEL:
        assert "--live" in out


def test_the_examples_readme_lists_every_example_and_its_links_work() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for name in ALL_EXAMPLES:
        assert f"[`{name}`]({name})" in readme, f"examples/README.md does not list {name}"
    rows = [line for line in readme.splitlines() if re.match(r"\| \d+ \|", line)]
    assert [int(row.split("|")[1]) for row in rows] == list(range(1, 15))
    for target in re.findall(r"\]\(([^)#]+\.(?:md|py))(#[^)]*)?\)", readme):
        path, anchor = target
        file = (EXAMPLES / path).resolve()
        assert file.exists(), f"examples/README.md links to a missing {path}"
        if anchor:
            assert anchor[1:] in anchors(file), f"no heading for {path}{anchor}"


def test_the_examples_readme_shows_real_output() -> None:
    """Each ```console block of examples/README.md (not ``no-run``) shows what its commands
    print, exactly."""
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```console\n(.*?)^```$", readme, flags=re.MULTILINE | re.DOTALL)
    assert blocks
    for block in blocks:
        commands = re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]
        for command in commands:
            line, _, shown = command.partition("\n")
            program, name, *args = line.split()
            assert (program, Path(name).parent) == ("python", Path("examples")), line
            assert run(Path(name).name, *args) == shown, f"the output of {line!r} changed"


def anchors(markdown: Path) -> set[str]:
    """GitHub's anchors for the headings of a markdown file (outside code blocks)."""
    found, fenced = set(), False
    for line in markdown.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found

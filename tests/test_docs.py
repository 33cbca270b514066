"""The docs test themselves: every code block of docs/*.md and README.md runs, offline.

What happens to a fenced block depends on its info string (the words after the opening
fence):

- ``python``: runs. The blocks of one page run in order in one fresh namespace, so a later
  block may use names defined by an earlier one. What a block prints is captured.
- ``console``: every line that starts with ``$ `` is a shell command (bash), run from the
  repository root; a command line that ends with ``\\`` continues on the next line. The
  lines after a command, up to the next ``$ `` line, are its expected output (stdout and
  stderr together), compared doctest-style: trailing whitespace is ignored, a line ``...``
  stands for any number of lines and ``...`` inside a line for any text. A command shown
  without output must exit with status 0. The commands of one block share one shell, so
  ``export`` and ``cd`` carry over to the next command.
- ``<language> output`` (``text output``, ``mermaid output``, ...): what the python block
  right before it printed, compared like console output.
- ``no-run`` (``python no-run``, ``console no-run``, ...): does not run. Each such block
  must be listed in ``NO_RUN`` with the reason; a block missing from the list, or a listed
  block that is gone, fails ``test_blocks_that_do_not_run_are_listed``, so none hides.
- Anything else (``text``, ``sh``, ``bash``, ``json``, ``mermaid``, a bare fence ...) fails,
  unless ``ALLOWANCES`` lists it: blocks still waiting to be turned into one of the above.

Everything runs offline: python blocks and commands see no ``OPENAI_*`` settings (so
``OpenAIChatModel()`` has no key or server to reach), and commands run with proxies that
point at a closed local port (only loopback addresses, a server the block started itself,
are reached directly). ``graph-agent`` and ``python`` resolve to this interpreter:
its directory comes first on ``PATH``, followed by stand-ins for both (for an interpreter
without the ``graph-agent`` console script), and ``PYTHONPATH`` is the repository root.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import linecache
import os
import re
import shlex
import signal
import subprocess
import sys
import traceback
import types
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
COMMAND_TIMEOUT = 120  # seconds for all the commands of one console block
_OPEN = re.compile(r"^```(.*)$")
_INDENTED_FENCE = re.compile(r"^\s+```")
_MODEL_SETTINGS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPH_AGENT_MODEL", "DASHSCOPE_API_KEY")

# Blocks marked no-run: (page, info string, first line) -> why they cannot run in the suite.
NO_RUN: dict[tuple[str, str, str], str] = {
    (
        "docs/serving.md",
        "nginx no-run",
        "location / {",
    ): "an nginx configuration to adapt, not a command (nginx is not part of the test setup)",
    (
        "docs/index.md",
        "console no-run",
        "$ make demo     # creates .venv, installs the package, runs the offline demo",
    ): "make demo / make test build their own .venv (pip install, network); make test runs this suite",
    (
        "docs/index.md",
        "console no-run",
        "$ export OPENAI_API_KEY=sk-...                        # OpenAI",
    ): "needs a real API key and a reachable model server",
    (
        "docs/checkpoints.md",
        "python no-run",
        "MemorySaver(max_threads=None, max_retained=None, *, copy=False, serializer=None)",
    ): "a signature, not a call",
    (
        "docs/checkpoints.md",
        "python no-run",
        'SqliteSaver(path="checkpoints.sqlite", *, max_retained=None, serializer=None, uri=False,',
    ): "a signature, not a call",
    (
        "docs/models.md",
        "python no-run",
        "OpenAIChatModel(model=None, base_url=None, api_key=None, *, http_client=None,",
    ): "a signature, not a call",
    (
        "docs/models.md",
        "python no-run",
        "model = OpenAIChatModel()  # reads OPENAI_BASE_URL, GRAPH_AGENT_MODEL, OPENAI_API_KEY",
    ): "calls a real model server",
    (
        "docs/redis.md",
        "python no-run",
        'RedisSaver(client=None, *, async_client=None, key_prefix="graph_agent", ttl=None,',
    ): "a signature, not a call",
    (
        "docs/observability.md",
        "text no-run",
        "DEBUG graph_agent.graph: run 8599b9c510204bdaa27350af2991a188 started on thread 't1'",
    ): "log output of one run: its ids and timings differ in every run (the block above checks it)",
    (
        "docs/mcp.md",
        "console no-run",
        "$ pip install 'graph-agent[mcp]'",
    ): "an install command (make test installs the extra)",
    (
        "docs/serving.md",
        "console no-run",
        "$ pip install 'graph-agent[server]'",
    ): "an install command, then a server that runs until stopped (the page's python blocks "
    "start one in a thread instead)",
    (
        "docs/observability.md",
        "console no-run",
        "$ pip install 'graph-agent[otel]' opentelemetry-sdk opentelemetry-exporter-otlp",
    ): "an install command (make test installs the extra and the SDK)",
    (
        "docs/observability.md",
        "text no-run",
        "invoke_agent weather                  gen_ai.agent.name=weather, gen_ai.conversation.id=t2",
    ): "the span tree of the block above, which checks it",
    (
        "docs/observability.md",
        "console no-run",
        "$ docker run --rm -p 16686:16686 -p 4318:4318 jaegertracing/all-in-one",
    ): "starts Jaeger in Docker",
    (
        "docs/observability.md",
        "python no-run",
        "from opentelemetry import trace",
    ): "needs opentelemetry-exporter-otlp and a collector listening",
    (
        "docs/observability.md",
        "python no-run",
        "import base64",
    ): "sends spans to Langfuse's cloud",
    (
        "docs/redis.md",
        "console no-run",
        "$ redis-cli ACL SETUSER saver on >long-random-password ~graph_agent:* resetchannels "
        "+evalsha +script|load +del +exists +get +set +expire +hget +hset +hdel +hmget +hgetall "
        "+hkeys +hlen +hincrby +zadd +zcard +zrange +zrem +zrevrange +zrevrank +zscore",
    ): "needs a Redis server with ACLs",
    (
        "docs/redis.md",
        "console no-run",
        "$ REDIS_SERVER=/usr/bin/valkey-server python -m pytest tests/checkpoint",
    ): "runs part of this test suite against a Valkey server",
    (
        "README.md",
        "console no-run",
        "$ make demo   # creates .venv, installs the package, runs the offline demo",
    ): "make demo / make test build their own .venv (pip install, network); make test runs this suite",
    (
        "README.md",
        "text no-run",
        "graph_agent/   the engine (graph/), run events (events/), the run's plumbing (_runtime/),",
    ): "a directory listing, not code",
    (
        "docs/serving.md",
        "text no-run",
        "                    clients: langgraph-sdk, the web page, curl",
    ): "a picture of servers, workers and Redis",
    (
        "docs/serving.md",
        "console no-run",
        "$ pip install 'graph-agent[server,queue]'",
    ): "an install command, then a server and a worker on a Redis elsewhere, which run until "
    "stopped (tests/runs/test_workers.py runs them on a local redis-server)",
    (
        "docs/architecture.md",
        "text no-run",
        " ┌──────────────────────────────────────────────────────────────────────────────────────┐",
    ): "a picture of the layers; the python block after it checks it against the imports",
}

# Blocks in another form than the ones above, tolerated until they are converted:
# (page, info string, first line) -> what they should become.
ALLOWANCES: dict[tuple[str, str, str], str] = {}


@dataclasses.dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # the line of the block's first content line
    info: str  # the words after the opening fence, separated by one space
    text: str

    @property
    def words(self) -> list[str]:
        return self.info.split()

    @property
    def key(self) -> tuple[str, str, str]:
        first = next((line for line in self.text.splitlines() if line.strip()), "")
        return (self.page, self.info, first.rstrip())

    def where(self) -> str:
        return f"{self.page}: the {self.info or 'bare'} block at line {self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a page, in order."""
    page = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        if _INDENTED_FENCE.match(lines[i]):
            raise AssertionError(f"{page}:{i + 1}: an indented fence; start fences in column 1")
        match = _OPEN.match(lines[i])
        i += 1
        if match is None:
            continue
        start = i
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        if i == len(lines):
            raise AssertionError(f"{page}: the fence opened at line {start} is never closed")
        info = " ".join(match.group(1).split())
        found.append(Block(page, start + 1, info, "\n".join(lines[start:i]) + "\n"))
        i += 1  # the closing fence
    return found


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """``(first code line number, source)`` of each runnable ```python block, in order."""
    return [(b.line, b.text) for b in blocks(path) if b.words == ["python"]]


# -- expected output ----------------------------------------------------------------------------


def output_matches(expected: list[str], actual: str) -> bool:
    """Doctest-style: ``...`` alone on a line matches any lines, inside a line any text."""
    want = [line.rstrip() for line in expected]
    got = [line.rstrip() for line in actual.splitlines()]
    for lines in (want, got):
        while lines and not lines[-1]:
            lines.pop()
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line == "..." else ".*".join(map(re.escape, line.split("..."))) + "\n"
        for line in want
    )
    return re.fullmatch(pattern, "".join(f"{line}\n" for line in got)) is not None


def _mismatch(what: str, expected: list[str], actual: str) -> str:
    shown = "\n".join(f"    {line}" for line in expected) or "    (nothing)"
    got = "\n".join(f"    {line}" for line in actual.rstrip("\n").splitlines()) or "    (nothing)"
    return f"{what}: the output does not match.\n  expected:\n{shown}\n  got:\n{got}"


# -- console blocks -----------------------------------------------------------------------------


def console_commands(block: Block) -> list[tuple[str, list[str]]]:
    """``(command, expected output lines)`` of each ``$ `` line of a console block."""
    commands: list[tuple[str, list[str]]] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command += "\n" + lines[i]
            commands.append((command, []))
        elif commands:
            commands[-1][1].append(line)
        elif line.strip():
            raise AssertionError(f"{block.where()}: text before the first '$ ' command: {line!r}")
        i += 1
    if not commands:
        raise AssertionError(f"{block.where()}: no '$ ' command")
    return commands


def _shim_dir(tmp: Path) -> Path:
    """``graph-agent`` and ``python`` for this interpreter, as the console script would be."""
    shims = tmp / "bin"
    shims.mkdir(exist_ok=True)
    python = shlex.quote(sys.executable)
    entry = "import sys; from graph_agent.cli import main; sys.argv[0] = 'graph-agent'; sys.exit(main())"
    scripts = {
        "graph-agent": f'#!/bin/sh\nexec {python} -c {shlex.quote(entry)} "$@"\n',
        "python": f'#!/bin/sh\nexec {python} "$@"\n',
    }
    for name, script in scripts.items():
        (shims / name).write_text(script, encoding="utf-8")
        (shims / name).chmod(0o755)
    return shims


def _command_env(shims: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _MODEL_SETTINGS}
    for name in ("NO_PROXY", "no_proxy", "BASH_ENV", "ENV"):
        env.pop(name, None)
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        env[name] = "http://127.0.0.1:9"  # nothing listens there: no request leaves
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"  # a server the block started
    interpreter = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([interpreter, str(shims), env.get("PATH", "")])
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_console(block: Block, shims: Path) -> None:
    commands = console_commands(block)
    marker = f"@@docs-{uuid.uuid4().hex}@@"
    script = [f"cd {shlex.quote(str(ROOT))}"]
    for n, (command, _) in enumerate(commands):
        script.append(f"printf '%s\\n' '{marker} start {n}'")
        script.append(command)
        script.append(f"printf '\\n%s %s\\n' '{marker} end {n}' \"$?\"")
    process = subprocess.Popen(
        ["bash", "-c", "\n".join(script)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_command_env(shims),
        start_new_session=True,
    )
    try:
        raw, _ = process.communicate(timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raw, _ = process.communicate()
        pytest.fail(
            f"{block.where()}: the commands took more than {COMMAND_TIMEOUT} s:\n"
            f"{raw.decode(errors='replace')}",
            pytrace=False,
        )
    output = raw.decode("utf-8", errors="replace")
    for n, (command, expected) in enumerate(commands):
        found = re.search(
            rf"{re.escape(marker)} start {n}\n(.*?)\n{re.escape(marker)} end {n} (\d+)\n",
            output,
            re.DOTALL,
        )
        if found is None:
            pytest.fail(f"{block.where()}: `{command}` did not finish:\n{output}", pytrace=False)
        text, status = found.group(1), int(found.group(2))
        what = f"{block.where()}, `$ {command}` (exit status {status})"
        if not any(line.strip() for line in expected):
            if status != 0:
                pytest.fail(f"{what} failed:\n{text}", pytrace=False)
        elif not output_matches(expected, text):
            pytest.fail(_mismatch(what, expected, text), pytrace=False)


# -- the tests ----------------------------------------------------------------------------------


def _run_python(block: Block, n: int, namespace: dict[str, object]) -> str:
    """Run one python block in ``namespace``; what it printed."""
    # Pad with blank lines so that tracebacks show the line numbers of the .md file.
    padded = "\n" * (block.line - 1) + block.text
    filename = f"{block.page}:block{n}(line {block.line})"
    linecache.cache[filename] = (len(padded), None, padded.splitlines(True), filename)
    printed = io.StringIO()
    error = None
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(padded, filename, "exec", dont_inherit=True), namespace)
    except Exception:
        error = traceback.format_exc()
    if error is not None:
        pytest.fail(
            f"{block.where()} (python block {n}) failed:\n{error}\nit printed:\n"
            f"{printed.getvalue()}",
            pytrace=False,
        )
    return printed.getvalue()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_doc_blocks_run(page: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in _MODEL_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(ROOT)
    # A real module (in sys.modules while the blocks run), so dataclasses and pydantic work.
    module = types.ModuleType(f"docs_{page.stem}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    shims = _shim_dir(tmp_path)
    printed: str | None = None  # what the previous block printed, if it was a python block
    python_count = 0
    for block in blocks(page):
        words, last_printed, printed = block.words, printed, None
        if "no-run" in words or block.key in ALLOWANCES:
            continue
        if words == ["python"]:
            python_count += 1
            printed = _run_python(block, python_count, module.__dict__)
        elif words == ["console"]:
            run_console(block, shims)
        elif len(words) == 2 and words[1] == "output":
            if last_printed is None:
                pytest.fail(f"{block.where()}: an output block must follow a python block")
            expected = block.text.splitlines()
            if not output_matches(expected, last_printed):
                pytest.fail(_mismatch(block.where(), expected, last_printed), pytrace=False)
        else:
            pytest.fail(
                f"{block.where()} cannot be checked: make it python or console (runnable), "
                "'<language> output' after a python block, or mark it no-run and list it in "
                "NO_RUN (tests/test_docs.py)",
                pytrace=False,
            )


def test_blocks_that_do_not_run_are_listed() -> None:
    """Every no-run block is in NO_RUN and every tolerated block in ALLOWANCES, and both
    lists hold nothing else, so a block that does not run is never missed."""
    all_blocks = [block for page in PAGES for block in blocks(page)]
    no_run = {b.key: b for b in all_blocks if "no-run" in b.words}
    allowed = {b.key: b for b in all_blocks if b.key in ALLOWANCES and "no-run" not in b.words}
    problems = [
        f"{b.where()} is marked no-run but not listed in NO_RUN: add {b.key!r} with the reason"
        for key, b in no_run.items()
        if key not in NO_RUN
    ]
    problems += [
        f"NO_RUN lists {key!r}, which no page has any more: remove it"
        for key in NO_RUN
        if key not in no_run
    ]
    problems += [
        f"ALLOWANCES lists {key!r}, which no page has any more: remove it"
        for key in ALLOWANCES
        if key not in allowed
    ]
    report = [f"{len(no_run)} no-run block(s):"]
    report += [f"  {b.where()}: {NO_RUN.get(key, '(not listed)')}" for key, b in no_run.items()]
    report += [f"{len(allowed)} block(s) tolerated until converted:"]
    report += [f"  {b.where()}: should become {ALLOWANCES[key]}" for key, b in allowed.items()]
    print("\n".join(report))
    assert not problems, "\n".join([*problems, "", *report])


def test_output_matching() -> None:
    assert output_matches(["a", "...", "d"], "a\nb\nc\nd\n")
    assert output_matches(["a", "...", "b"], "a\nb")
    assert output_matches(["error: file ... (relative to ...)"], "error: file x (relative to /r)\n")
    assert output_matches(["a  "], "a\n\n")
    assert not output_matches(["a"], "a\nb\n")
    assert not output_matches(["a", "c"], "a\nb\nc\n")
    assert not output_matches(["b"], "ab\n")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_page_on_fakeredis_says_to_install_its_lua_support_before_it_needs_it(page: Path) -> None:
    """A reader who runs a page's blocks on plain ``fakeredis`` gets "unknown command
    'evalsha'" from the savers' scripts: the page says ``pip install "fakeredis[lua]"`` first."""
    text = page.read_text(encoding="utf-8")
    first_use = text.find("import fakeredis")
    if first_use == -1:
        return
    said = text.find('pip install "fakeredis[lua]"')
    assert 0 <= said < first_use, (
        f"{page.relative_to(ROOT)}: its blocks use fakeredis; say `pip install "
        '"fakeredis[lua]"` before the first of them'
    )

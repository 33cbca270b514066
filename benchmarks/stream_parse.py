"""W9: the streaming parser's time per chunk, and a comparison with another commit.

    python benchmarks/stream_parse.py                   # W9 on this checkout (JSON lines)
    python benchmarks/stream_parse.py --against REV     # this checkout vs REV, alternating

The corpus is the recorded OpenAI streams of tests/fixtures/openai-sse/ (tool calls) and
a text answer of 400 deltas in the recorded chunks' exact shape, each fed to the parser one
event per network read, as a server writes them. Two numbers per run: the parser alone
(``iter_chunks``: bytes to ``ChatResponse`` chunks, with the idle deadline the model uses)
and the parser plus ``ChatResponse.merge``. ``--against`` checks REV out into a temporary
directory (``git worktree``) and runs both sides in fresh processes, alternately, several
rounds, then prints the median ratio: it is how issue 13's "within 10% of before" is
measured. No network, no server.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIXTURES = ROOT / "tests" / "fixtures" / "openai-sse"
RECORDED = [
    "01-single-tool-call.sse",
    "02-parallel-two-tools.sse",
    "03-strict-tool.sse",
    "04-nonstrict-tool.sse",
    "05-parallel-with-noarg-tool.sse",
]
TEXT_DELTAS = 400
REPEATS = {"full": 60, "smoke": 2}


def _text_stream() -> bytes:
    """A 400-delta text answer in the recorded chunks' shape (fields and their order)."""
    head = (
        '{"id":"chatcmpl-9tXjpPLJgivc9nyuBCCWX8HNg9L2J","object":"chat.completion.chunk",'
        '"created":1723024757,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_2a322c9ffc",'
    )
    events = [head + '"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
              '"logprobs":null,"finish_reason":null}]}']  # fmt: skip
    for n in range(TEXT_DELTAS):
        word = json.dumps(f" word{n}")
        events.append(
            head + f'"choices":[{{"index":0,"delta":{{"content":{word}}},'
            '"logprobs":null,"finish_reason":null}]}'
        )
    events.append(
        head + '"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}'
    )
    events.append(head + '"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":400,'
                  '"total_tokens":409}}')  # fmt: skip
    return "".join(f"data: {e}\n\n" for e in [*events, "[DONE]"]).encode()


def _reads(body: bytes) -> list[bytes]:
    """The body as a server writes it: one network read per event."""
    return [part + b"\n\n" for part in body.split(b"\n\n") if part]


def corpus() -> list[list[bytes]]:
    streams = [(FIXTURES / name).read_bytes() for name in RECORDED] + [_text_stream()]
    return [_reads(body) for body in streams]


def measure(repeats: int) -> dict[str, Any]:
    """Seconds per chunk for the parser, and for parser + merge, on this interpreter's
    ``graph_agent`` (the median of 5 trials)."""
    from graph_agent.models import ChatResponse
    from graph_agent.models._sse import iter_chunks

    streams = corpus()
    options: dict[str, Any] = {"status": 200}
    if "idle" in inspect.signature(iter_chunks).parameters:
        options["idle"] = 60.0  # what OpenAIChatModel passes by default
    chunks = sum(len(list(iter_chunks(reads, **options))) for reads in streams)

    def parse() -> None:
        for reads in streams:
            for _ in iter_chunks(reads, **options):
                pass

    def parse_and_merge() -> None:
        for reads in streams:
            ChatResponse.merge(list(iter_chunks(reads, **options)))

    import graph_agent

    result: dict[str, Any] = {"chunks_per_pass": chunks, "package": graph_agent.__file__}
    for name, work in (("parse", parse), ("parse_merge", parse_and_merge)):
        work()  # warm up
        trials = []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(repeats):
                work()
            trials.append((time.perf_counter() - started) / (repeats * chunks))
        result[f"{name}_us_per_chunk"] = round(statistics.median(trials) * 1e6, 3)
    return result


def w9_stream_parse(repeats: int) -> None:
    """The workload as run.py runs it: JSON lines in the fields of workloads.emit."""
    result = measure(repeats)
    for name in ("parse", "parse_merge"):
        per_chunk = result[f"{name}_us_per_chunk"] / 1e6
        n = result["chunks_per_pass"] * repeats
        print(json.dumps({
            "workload": f"W9_stream_{name}", "n": n, "seconds": round(per_chunk * n, 6),
            "per_op_us": result[f"{name}_us_per_chunk"], "peak_rss_mb": _peak_rss_mb(),
        }), flush=True)  # fmt: skip


def _peak_rss_mb() -> float:
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def _side(root: Path, repeats: int) -> dict[str, Any]:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]); "
        "import stream_parse; print(json.dumps(stream_parse.measure(int(sys.argv[3]))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(root), str(HERE), str(repeats)],
        capture_output=True, text=True, check=True, cwd=root,
    )  # fmt: skip
    return dict(json.loads(done.stdout.splitlines()[-1]))


def against(revision: str, rounds: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        other = Path(scratch) / "other"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--quiet", str(other), revision],
            cwd=ROOT, check=True,
        )  # fmt: skip
        try:
            ours: list[dict[str, Any]] = []
            theirs: list[dict[str, Any]] = []
            for _ in range(rounds):
                theirs.append(_side(other, repeats))
                ours.append(_side(ROOT, repeats))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT)
    assert ours[0]["package"] != theirs[0]["package"], "both sides imported the same package"
    for key in ("parse_us_per_chunk", "parse_merge_us_per_chunk"):
        now = statistics.median(r[key] for r in ours)
        before = statistics.median(r[key] for r in theirs)
        print(f"{key}: this checkout {now:.3f} us, {revision} {before:.3f} us, "
              f"ratio {now / before:.3f} (median of {rounds} alternating rounds)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", help="compare with this git revision")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: it runs, not how fast")
    args = parser.parse_args()
    repeats = REPEATS["smoke" if args.smoke else "full"]
    if args.against:
        against(args.against, 1 if args.smoke else args.rounds, repeats)
    else:
        sys.path.insert(0, str(ROOT))
        w9_stream_parse(repeats)


if __name__ == "__main__":
    main()

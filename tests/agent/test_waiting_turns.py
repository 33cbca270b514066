"""What a turn keeps while it waits on its tool (benchmarks/waiting.py counts it; W12 reports
the count). This test only catches a gross regression: a turn that starts to keep a copy of
its conversation, or a frame per message, blows through the bound; a few objects more or
less are W12's business, not a test's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from waiting import tracked_per_waiting_turn  # benchmarks/ is not a package: on the path above

# Measured: 62.0 (async tool) and 67.1 (sync tool) on CPython 3.11 (59.0 and 64.1 before the
# one effect protocol; 73.0 and 77.3 on 3.10, which keeps each coroutine's and generator's
# frame as an object of its own).
BOUND = 120 if sys.version_info < (3, 11) else 100


def test_a_turn_waiting_on_an_async_tool_keeps_few_objects() -> None:
    per_turn = tracked_per_waiting_turn(tool_is_async=True)
    assert per_turn <= BOUND, f"{per_turn:.1f} tracked objects per waiting turn"


def test_a_turn_waiting_on_a_sync_tool_in_a_worker_thread_keeps_few_objects() -> None:
    per_turn = tracked_per_waiting_turn(tool_is_async=False)
    assert per_turn <= BOUND, f"{per_turn:.1f} tracked objects per waiting turn"

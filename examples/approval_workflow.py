"""Expense-report approval: a parallel fan-out/join, then a pause for a human decision.

intake -> (check_policy | check_budget | check_receipts, in parallel) -> review -> approval
-> pay or reject. ``approval`` calls ``interrupt()``: the thread is checkpointed and waits
until it is resumed with ``Command(resume="approve" | "reject")``. Offline and deterministic.

    python examples/approval_workflow.py            # asks you (EOF counts as reject)
    python examples/approval_workflow.py --auto     # approves without asking
    graph-agent graph examples/approval_workflow.py:graph
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from typing import Any

from typing_extensions import TypedDict

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    Command,
    CompiledGraph,
    KeyStrategy,
    NodeOutput,
    OverAllState,
    RunnableConfig,
    StateGraph,
    interrupt,
)

ITEM_LIMIT = 400.00  # policy: no single item above this
BUDGET_LEFT = {"engineering": 1200.00, "sales": 150.00}
REPORT = {
    "employee": "Ada",
    "department": "engineering",
    "items": [
        {"what": "train ticket", "amount": 89.50, "receipt": True},
        {"what": "hotel, 2 nights", "amount": 310.00, "receipt": True},
        {"what": "team dinner", "amount": 145.00, "receipt": False},
    ],
}


class Item(TypedDict):
    what: str
    amount: float
    receipt: bool


class Report(TypedDict):
    employee: str
    department: str
    items: list[Item]


class ExpenseInput(TypedDict):
    """What a run of this graph takes: the report to approve."""

    report: Report


def intake(state: OverAllState) -> dict[str, Any]:
    total = round(sum(item["amount"] for item in state["report"]["items"]), 2)
    return {"total": total}


def check_policy(state: OverAllState) -> dict[str, Any]:
    over = [i["what"] for i in state["report"]["items"] if i["amount"] > ITEM_LIMIT]
    note = f"over the {ITEM_LIMIT:.2f} limit: {', '.join(over)}" if over else "items within limit"
    return {"findings": [{"check": "policy", "ok": not over, "note": note}]}


def check_budget(state: OverAllState) -> dict[str, Any]:
    left = BUDGET_LEFT.get(state["report"]["department"], 0.0)
    ok = state["total"] <= left
    return {"findings": [{"check": "budget", "ok": ok, "note": f"{left:.2f} left this month"}]}


def check_receipts(state: OverAllState) -> dict[str, Any]:
    missing = [i["what"] for i in state["report"]["items"] if not i["receipt"]]
    note = f"missing receipts: {', '.join(missing)}" if missing else "all receipts attached"
    return {"findings": [{"check": "receipts", "ok": not missing, "note": note}]}


def review(state: OverAllState) -> dict[str, Any]:
    """The join: runs once, after all three checks, and sees all their findings."""
    failed = [f for f in state["findings"] if not f["ok"]]
    risk = ("low", "medium")[len(failed)] if len(failed) < 2 else "high"
    return {"risk": risk, "proposal": "reject" if risk == "high" else "approve"}


def approval(state: OverAllState) -> dict[str, Any]:
    """Pause for a human. On resume this node runs again and ``interrupt()`` returns the answer."""
    answer = interrupt(
        {
            "question": f"Pay {state['total']:.2f} to {state['report']['employee']}?",
            "risk": state["risk"],
            "proposal": state["proposal"],
            "issues": [f["note"] for f in state["findings"] if not f["ok"]],
        }
    )
    return {"decision": "approve" if str(answer).strip().lower() == "approve" else "reject"}


def pay(state: OverAllState) -> dict[str, Any]:
    return {"status": f"paid {state['total']:.2f}"}


def reject(state: OverAllState) -> dict[str, Any]:
    return {"status": "rejected"}


def decided(state: OverAllState) -> str:
    return str(state["decision"])


def build_graph() -> CompiledGraph:
    """The workflow, compiled with an in-memory saver (needed to pause and resume)."""
    g = StateGraph(key_strategies={"findings": KeyStrategy.APPEND}, input_schema=ExpenseInput)
    for node in (intake, check_policy, check_budget, check_receipts, review, approval, pay, reject):
        g.add_node(node.__name__, node)
    g.add_edge(START, "intake")
    for check in ("check_policy", "check_budget", "check_receipts"):
        g.add_edge("intake", check).add_edge(check, "review")  # fan out, then join
    g.add_edge("review", "approval")
    g.add_conditional_edges("approval", decided, {"approve": "pay", "reject": "reject"})
    g.add_edge("pay", END).add_edge("reject", END)
    return g.compile(saver=MemorySaver())


# for `graph-agent graph examples/approval_workflow.py:graph`, and served:
# `graph-agent serve examples/approval_workflow.py:graph`
graph = build_graph()


def show(outputs: Iterable[NodeOutput]) -> None:
    for out in outputs:
        print(f"  {out.node:<15} -> {dict(out.update or {})}")


def ask() -> str:
    """The human's answer from stdin; end of input counts as reject."""
    try:
        reply = input("  approve or reject? [a/r] ")
    except EOFError:
        print("(no input: treating as reject)")
        return "reject"
    return "approve" if reply.strip().lower() in ("a", "approve", "y", "yes") else "reject"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Expense approval with a human in the loop.")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--auto", action="store_true", help="approve without asking")
    mode.add_argument("--decision", choices=("approve", "reject"), help="answer without asking")
    args = parser.parse_args(argv)

    app = build_graph()
    config = RunnableConfig(thread_id="expense-42", metadata={"user_id": "ada"})
    print(f"1. Submit {REPORT['employee']}'s report on thread '{config.thread_id}'. Node updates:")
    show(app.stream({"report": REPORT}, config))

    paused = app.get_state(config)
    assert paused is not None and paused.interrupts, "the workflow should be waiting for a human"
    pending = paused.interrupts[0]
    print(f"2. Paused {pending.when} node '{pending.node}'; next={list(paused.next)}. It asks:")
    for key, value in pending.value.items():
        print(f"  {key}: {value}")

    decision = "approve" if args.auto else args.decision or ask()
    print(f"3. Resume with Command(resume={decision!r}):")
    show(app.stream(Command(resume=decision), config))

    final = app.get_state(config)
    assert final is not None
    print("4. Super-steps, one checkpoint each (nodes in one step ran in parallel):")
    was_paused = False
    number = 0
    for snap in reversed(list(app.get_state_history(config))):
        if snap.metadata.get("source") == "input":
            print("  input: checkpointed before any node ran")
            continue
        number += 1
        note = " <- paused in interrupt()" if snap.interrupts else ""
        note = " <- ran again on resume; interrupt() returned the answer" if was_paused else note
        print(f"  step {number}: {', '.join(snap.metadata.get('nodes', []))}{note}")
        was_paused = bool(snap.interrupts)
    values = {k: final.values[k] for k in ("total", "risk", "decision", "status")}
    print(f"5. Finished (next={list(final.next)}). Final state: {values}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

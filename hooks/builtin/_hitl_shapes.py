"""The shapes of a ``HumanInTheLoopHook`` pause that front ends read: the request it shows
(ours and LangChain's ``HITLRequest`` side by side) and LangChain's ``{"decisions": [...]}``
answer, read into plain ``(call id, decision, reason, arguments)`` rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from .errors import ToolFeedbackError

__all__ = [
    "ALL_DECISIONS",
    "DECISIONS_USAGE",
    "DecisionType",
    "PendingCall",
    "Row",
    "allowed_decisions",
    "approval_request",
    "check_allowed",
    "is_approval_request",
    "is_decisions",
    "pending_of",
    "read_decisions",
]

DecisionType = Literal["approve", "edit", "reject", "respond"]
ALL_DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject", "respond")
Ours = Literal["approved", "rejected", "edited"]
# ours by LangChain's: respond is a rejection whose reason is the person's answer
OURS: dict[str, Ours] = {
    "approve": "approved",
    "edit": "edited",
    "reject": "rejected",
    "respond": "rejected",
}

DECISIONS_USAGE = (
    'LangChain\'s shape: {"decisions": [one per action request, in their order]}, each '
    '{"type": "approve"}, {"type": "edit", "edited_action": {"name": <tool>, "args": {...}}}, '
    '{"type": "reject", "message": <why>} or {"type": "respond", "message": <answer>}'
)


class PendingCall(NamedTuple):
    """One call waiting for a decision, as its pause describes it."""

    id: str
    name: str
    allowed: tuple[str, ...]


class Row(NamedTuple):
    """One decision in our words: ``decision`` is approved, rejected or edited."""

    call_id: str
    decision: Ours
    reason: str | None
    arguments: Mapping[str, Any] | None


def allowed_decisions(tool_name: str, value: Any) -> tuple[DecisionType, ...]:
    """``interrupt_on[tool_name]["allowed_decisions"]`` checked (``TypeError`` naming the
    tool and the known decisions if it is not a non-empty list of them)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        raise TypeError(
            f"interrupt_on[{tool_name!r}]['allowed_decisions'] must be a non-empty list of "
            f"{list(ALL_DECISIONS)}, got {value!r}"
        )
    unknown = [v for v in value if v not in ALL_DECISIONS]
    if unknown:
        raise TypeError(
            f"interrupt_on[{tool_name!r}]['allowed_decisions'] has unknown decision(s) "
            f"{unknown}; known: {list(ALL_DECISIONS)}"
        )
    return tuple(d for d in ALL_DECISIONS if d in value)


def approval_request(
    described: Sequence[Mapping[str, Any]], allowed: Sequence[Sequence[str]]
) -> dict[str, Any]:
    """The pause's value: ours (``type``, ``tool_calls``) and LangChain's ``HITLRequest``
    (``action_requests``, ``review_configs``: one each per call, in the same order)."""
    return {
        "type": "tool_approval",
        "tool_calls": [dict(d) for d in described],
        "action_requests": [
            {
                "name": d["name"],
                "args": d["arguments"] if isinstance(d["arguments"], dict) else {},
                "description": d["description"],
            }
            for d in described
        ],
        "review_configs": [
            {"action_name": d["name"], "allowed_decisions": list(a)}
            for d, a in zip(described, allowed)
        ],
    }


def pending_of(request: Mapping[str, Any]) -> list[PendingCall]:
    """The calls a pause's value waits on. A pause recorded before ``review_configs``
    existed allows approve, edit and reject."""
    configs = request.get("review_configs")
    calls: list[PendingCall] = []
    for index, call in enumerate(request["tool_calls"]):
        allowed: tuple[str, ...] = ("approve", "edit", "reject")
        if isinstance(configs, list) and index < len(configs):
            allowed = tuple(configs[index].get("allowed_decisions", allowed))
        calls.append(PendingCall(call["id"], call["name"], allowed))
    return calls


def is_approval_request(value: Any) -> bool:
    """Whether a pause's value is a ``HumanInTheLoopHook`` request."""
    return (
        isinstance(value, Mapping)
        and value.get("type") == "tool_approval"
        and isinstance(value.get("tool_calls"), list)
    )


def check_allowed(call: PendingCall, decision: str) -> None:
    """``ToolFeedbackError`` unless our ``decision`` (approved, rejected, edited) is one
    ``call`` allows (a rejection is allowed where reject or respond is)."""
    kinds = [k for k, ours in OURS.items() if ours == decision]
    if not any(k in call.allowed for k in kinds):
        raise ToolFeedbackError(
            f"{decision!r} is not allowed for tool call {call.id!r} ({call.name}); allowed: "
            f"{list(call.allowed)}"
        )


def is_decisions(feedback: Any) -> bool:
    """Whether ``feedback`` is in LangChain's shape (a dict with ``decisions``)."""
    return isinstance(feedback, Mapping) and "decisions" in feedback


def read_decisions(feedback: Mapping[str, Any], calls: Sequence[PendingCall]) -> list[Row]:
    """LangChain's ``{"decisions": [...]}`` for ``calls`` (one per call, in order), checked:
    ``ToolFeedbackError`` saying what is wrong and the expected shape."""
    unknown = sorted(set(feedback) - {"decisions"})
    if unknown:
        raise ToolFeedbackError(
            f"unknown field(s) {unknown} next to 'decisions'; {DECISIONS_USAGE}"
        )
    decisions = feedback["decisions"]
    if not isinstance(decisions, list):
        raise ToolFeedbackError(f"'decisions' must be a list, got {decisions!r}; {DECISIONS_USAGE}")
    if len(decisions) != len(calls):
        names = ", ".join(f"{c.name} ({c.id})" for c in calls)
        raise ToolFeedbackError(
            f"{len(decisions)} decision(s) for {len(calls)} pending tool call(s) ({names}); "
            f"{DECISIONS_USAGE}"
        )
    return [_row(index, d, call) for index, (d, call) in enumerate(zip(decisions, calls))]


_FIELDS = {
    "approve": set(),
    "edit": {"edited_action"},
    "reject": {"message"},
    "respond": {"message"},
}


def _row(index: int, decision: Any, call: PendingCall) -> Row:
    def bad(what: str) -> ToolFeedbackError:
        return ToolFeedbackError(
            f"decisions[{index}] (for {call.name} {call.id}) {what}; {DECISIONS_USAGE}"
        )

    kind = decision.get("type") if isinstance(decision, Mapping) else None
    if kind not in _FIELDS or not isinstance(decision, Mapping):
        raise bad(f"must be a dict whose 'type' is one of {list(ALL_DECISIONS)}, got {decision!r}")
    extra = sorted(set(decision) - {"type"} - _FIELDS[kind])
    if extra:
        raise bad(f"has unknown field(s) {extra} for a {kind!r}")
    if kind not in call.allowed:
        raise bad(
            f"is {kind!r}, which tool {call.name!r} does not allow; allowed: {list(call.allowed)}"
        )
    message = decision.get("message")
    if message is not None and not isinstance(message, str):
        raise bad(f"has a 'message' that is not text: {message!r}")
    if kind == "respond" and not message:
        raise bad("is a 'respond' without the answer as its 'message'")
    if kind != "edit":
        return Row(call.id, OURS[kind], message, None)
    action = decision.get("edited_action")
    if not isinstance(action, Mapping) or not isinstance(action.get("args"), Mapping):
        raise bad(
            f"is an 'edit' whose 'edited_action' is not {{\"name\": ..., \"args\": {{...}}}}: {action!r}"
        )
    if action.get("name", call.name) != call.name:
        raise bad(
            f"is an edit that calls another tool ({action.get('name')!r} instead of "
            f"{call.name!r}); edit the arguments, or reject the call with a message"
        )
    return Row(call.id, "edited", None, action["args"])

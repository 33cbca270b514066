"""What a resume entry of an AG-UI client means to the pause it answers.

A ``resolved`` entry's payload is the resume value, as the Agent Protocol's
``Command(resume=...)`` takes it; for a ``HumanInTheLoopHook`` approval (an interrupt with
reason ``tool_call``) AG-UI's own shape is taken too, ``{"approved": bool, "editedArgs":
{...}, "reason": "..."}`` (the ``responseSchema`` the interrupt declares), read as our
decisions (``resolved_answer``).

A ``cancelled`` entry (the person abandoned the request without an answer) resumes the pause
with what the paused code understands as "declined". AG-UI 1.0 asks the agent to go on with
the other answers and treat the cancelled request as not done (docs/ag-ui.md says why we
resume rather than cancel the run). What "not done" is depends on who paused:

- a ``HumanInTheLoopHook`` approval: every call it holds back is rejected with the reason
  ``CANCELLED_REASON`` (it does not run; the model reads "The user rejected this tool call:
  cancelled without an answer");
- a front-end tool's call: its result says the person cancelled it (it did not run);
- any other ``interrupt()``: it returns ``{"type": "cancelled", "interrupt_id": ...}`` (and
  the entry's ``metadata``, if any), which ``is_cancelled`` recognises.

No web framework and no ``ag-ui-protocol`` here: a node imports ``is_cancelled`` without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._agui_tools import is_client_call

__all__ = [
    "CANCELLED",
    "CANCELLED_CALL",
    "CANCELLED_REASON",
    "approval_schema",
    "cancelled_answer",
    "is_cancelled",
    "resolved_answer",
]

CANCELLED: Final = "cancelled"
"""The ``type`` of the answer an ``interrupt()`` gets when its request was cancelled."""

CANCELLED_CALL: Final = "The user cancelled this call without an answer; it did not run."
"""What the model reads as the result of a front-end tool's call that was cancelled."""

CANCELLED_REASON: Final = "cancelled without an answer"
"""The reason of the rejection a cancelled approval gives each call it held back."""


def is_cancelled(answer: Any) -> bool:
    """Whether ``answer`` (what ``interrupt()`` returned) says the request was cancelled (an
    AG-UI client's ``cancelled`` resume entry) rather than answered."""
    return isinstance(answer, Mapping) and answer.get("type") == CANCELLED


def _approval(value: Any) -> list[Any] | None:
    """The calls a ``HumanInTheLoopHook`` request holds back (``None``: not such a request)."""
    if isinstance(value, Mapping) and value.get("type") == "tool_approval":
        calls = value.get("tool_calls")
        if isinstance(calls, list):
            return calls
    return None


def _check_rejectable(value: Mapping[str, Any], calls: list[Any]) -> None:
    """``ValueError`` naming the first call whose tool allows no rejection (its
    ``review_configs`` entry lists neither reject nor respond)."""
    configs = value.get("review_configs")
    if not isinstance(configs, list):
        return
    for call, config in zip(calls, configs):
        allowed = config.get("allowed_decisions") if isinstance(config, Mapping) else None
        if isinstance(allowed, list) and not {"reject", "respond"} & set(allowed):
            name = call.get("name") if isinstance(call, Mapping) else None
            raise ValueError(
                f"cancelling declines the approval, a rejection of its calls, and tool "
                f"{name!r} allows none (allowed: {allowed}); answer it with status 'resolved'"
            )


def cancelled_answer(
    interrupt_id: str, value: Any, metadata: Mapping[str, Any] | None = None
) -> Any:
    """The resume value of the pause ``interrupt_id`` (whose value is ``value``) when its
    request was cancelled; ``ValueError`` saying why for an approval whose tool allows no
    rejection."""
    calls = _approval(value)
    if calls is not None:
        _check_rejectable(value, calls)
        return [
            {
                "tool_call_id": call.get("id") if isinstance(call, Mapping) else None,
                "decision": "rejected",
                "reason": CANCELLED_REASON,
            }
            for call in calls
        ]
    if is_client_call(value):
        return CANCELLED_CALL
    answer: dict[str, Any] = {"type": CANCELLED, "interrupt_id": interrupt_id}
    if metadata:
        answer["metadata"] = dict(metadata)
    return answer


def _allows(value: Mapping[str, Any], index: int, decision: str) -> bool:
    configs = value.get("review_configs")
    if not isinstance(configs, list) or index >= len(configs):
        return True
    config = configs[index]
    allowed = config.get("allowed_decisions") if isinstance(config, Mapping) else None
    return not isinstance(allowed, list) or decision in allowed


def approval_schema(value: Any) -> dict[str, Any] | None:
    """The ``responseSchema`` of a ``HumanInTheLoopHook`` approval (``None`` for any other
    pause): AG-UI's approval shape, with ``editedArgs`` (the capability signal for edits)
    where it holds one call whose tool allows an edit."""
    calls = _approval(value)
    if calls is None:
        return None
    assert isinstance(value, Mapping)
    properties: dict[str, Any] = {
        "approved": {"type": "boolean"},
        "reason": {"type": "string", "description": "Why not (with approved: false)."},
    }
    if len(calls) == 1 and _allows(value, 0, "edit"):
        properties["editedArgs"] = {
            "type": "object",
            "description": "The call's arguments in full, replacing the model's (not merged).",
        }
    return {"type": "object", "properties": properties, "required": ["approved"]}


_APPROVAL_KEYS: Final = ("approved", "editedArgs", "reason")


def resolved_answer(value: Any, payload: Any) -> Any:
    """The resume value of a resolved entry's ``payload`` for the pause whose value is
    ``value``: the payload itself, except AG-UI's approval shape for an approval, read as
    one decision per call; ``ValueError`` saying what does not fit."""
    calls = _approval(value)
    if calls is None or not isinstance(payload, Mapping) or "approved" not in payload:
        return payload
    unknown = sorted(set(payload) - set(_APPROVAL_KEYS))
    approved, edited, reason = (payload.get(key) for key in _APPROVAL_KEYS)
    if unknown or not isinstance(approved, bool):
        raise ValueError(
            f"an approval's payload is {{approved: bool, editedArgs?: {{...}}, reason?: str}}"
            f"{f', not with {unknown}' if unknown else f'; approved is {approved!r}'}"
        )
    if edited is not None and (not approved or not isinstance(edited, Mapping)):
        raise ValueError("editedArgs is an object of arguments, given with approved: true")
    if edited is not None and len(calls) != 1:
        raise ValueError(
            f"the approval holds {len(calls)} calls and editedArgs replaces the arguments of "
            'one; answer each call: {"decisions": [...]} or a list of {tool_call_id, decision}'
        )
    if reason is not None and not isinstance(reason, str):
        raise ValueError(f"reason is text, not {reason!r}")
    rows: list[dict[str, Any]] = []
    for call in calls:
        row: dict[str, Any] = {
            "tool_call_id": call.get("id") if isinstance(call, Mapping) else None
        }
        if edited is not None:
            row.update(decision="edited", arguments=dict(edited))
        elif approved:
            row["decision"] = "approved"
        else:
            row["decision"] = "rejected"
            if reason:
                row["reason"] = reason
        rows.append(row)
    return rows

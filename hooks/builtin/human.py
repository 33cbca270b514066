"""Human in the loop: pause before listed tools run, and go on with a person's decision."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from checkpoint import register_type
from graph_agent.graph import OverAllState, Overwrite, RunnableConfig, interrupt
from graph_agent.messages import MESSAGES, REJECTED, AssistantMessage, ToolCall

from ..base import HookResult, ModelHook
from ._hitl_shapes import (
    ALL_DECISIONS,
    DECISIONS_USAGE,
    DecisionType,
    allowed_decisions,
    approval_request,
    check_allowed,
    is_approval_request,
    is_decisions,
    pending_of,
    read_decisions,
)
from ._messages import call_arguments, messages_of, pending_calls
from .errors import ToolFeedbackError

__all__ = [
    "DEFAULT_DESCRIPTION_PREFIX",
    "Decision",
    "DecisionType",
    "HumanInTheLoopHook",
    "ToolFeedback",
    "feedback_for_request",
    "is_approval_request",
]

Decision = Literal["approved", "rejected", "edited"]
DECISIONS: tuple[Decision, ...] = ("approved", "rejected", "edited")
DEFAULT_DESCRIPTION_PREFIX = "Tool execution requires approval"
NO_REASON = "no reason given"


def _arguments_json(arguments: str | Mapping[str, Any]) -> str:
    """Edited arguments as the JSON object text a tool call carries."""
    if isinstance(arguments, Mapping):
        try:
            return json.dumps(dict(arguments))
        except (TypeError, ValueError) as error:
            raise ToolFeedbackError(
                f"edited arguments are not JSON-serializable: {error}"
            ) from None
    try:
        parsed = json.loads(arguments)
    except ValueError as error:
        raise ToolFeedbackError(f"edited arguments {arguments!r} are not JSON: {error}") from None
    if not isinstance(parsed, dict):
        raise ToolFeedbackError(f"edited arguments must be a JSON object, got {arguments!r}")
    return arguments


@register_type(name="hooks.ToolFeedback")
@dataclasses.dataclass(frozen=True)
class ToolFeedback:
    """A person's decision on one pending tool call, the resume value of a
    ``HumanInTheLoopHook`` pause: ``agent.call(Command(resume=feedback), config)``.

    ``decision`` is ``"approved"`` (the call runs as asked), ``"rejected"`` (it does not run;
    the model gets ``reason`` as the call's result) or ``"edited"`` (it runs with
    ``arguments``: a JSON object as text or a mapping). ``tool_call_id`` names the call; it
    may be ``None`` when only one call is pending. Checkpointable (registered with
    ``checkpoint.register_type``), so any saver can keep it. ``ToolFeedback.approve()``,
    ``.reject(reason)`` and ``.edit(arguments)`` build one. A malformed one raises
    ``ToolFeedbackError``.
    """

    tool_call_id: str | None
    decision: Decision
    reason: str | None = None
    arguments: str | Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.tool_call_id is not None and not isinstance(self.tool_call_id, str):
            raise ToolFeedbackError(
                f"tool_call_id must be a str or None, got {self.tool_call_id!r}"
            )
        if self.decision not in DECISIONS:
            raise ToolFeedbackError(
                f"decision must be one of {list(DECISIONS)}, got {self.decision!r}"
            )
        if self.reason is not None and not isinstance(self.reason, str):
            raise ToolFeedbackError(f"reason must be a str or None, got {self.reason!r}")
        if self.decision == "edited":
            if self.arguments is None:
                raise ToolFeedbackError(
                    "an 'edited' ToolFeedback needs the new arguments: "
                    "ToolFeedback.edit({'amount': 50})"
                )
            if not isinstance(self.arguments, (str, Mapping)):
                raise ToolFeedbackError(
                    f"arguments must be JSON text or a mapping, got {type(self.arguments).__name__}"
                )
            _arguments_json(self.arguments)
        elif self.arguments is not None:
            raise ToolFeedbackError(
                f"arguments are only for decision='edited', not {self.decision!r}"
            )

    @classmethod
    def approve(cls, tool_call_id: str | None = None) -> ToolFeedback:
        return cls(tool_call_id, "approved")

    @classmethod
    def reject(cls, reason: str | None = None, tool_call_id: str | None = None) -> ToolFeedback:
        return cls(tool_call_id, "rejected", reason=reason)

    @classmethod
    def edit(
        cls, arguments: str | Mapping[str, Any], tool_call_id: str | None = None
    ) -> ToolFeedback:
        return cls(tool_call_id, "edited", arguments=arguments)

    def arguments_json(self) -> str | None:
        """The edited arguments as JSON object text (``None`` unless ``"edited"``)."""
        return None if self.arguments is None else _arguments_json(self.arguments)


_FIELDS = {f.name for f in dataclasses.fields(ToolFeedback)}

_USAGE = (
    "resume with Command(resume=ToolFeedback(...)) when one call is pending, or with a list "
    "of ToolFeedback (each with its tool_call_id) or a dict {tool_call_id: ToolFeedback}, "
    'a ToolFeedback as JSON being {"tool_call_id": ..., "decision": "approved" | '
    '"rejected" | "edited", "reason": ..., "arguments": {...}}; or ' + DECISIONS_USAGE
)


def _coerce(value: Any) -> ToolFeedback:
    if isinstance(value, ToolFeedback):
        return value
    if isinstance(value, Mapping) and "decision" in value:
        unknown = set(value) - _FIELDS
        if unknown:
            raise ToolFeedbackError(f"unknown ToolFeedback field(s) {sorted(unknown)}; {_USAGE}")
        try:
            return ToolFeedback(
                value.get("tool_call_id"),
                value["decision"],
                reason=value.get("reason"),
                arguments=value.get("arguments"),
            )
        except ToolFeedbackError as error:  # sent as JSON: say the shapes expected
            raise ToolFeedbackError(f"{error}; {_USAGE}") from None
    raise ToolFeedbackError(f"expected a ToolFeedback, got {value!r}; {_USAGE}")


def feedback_for_request(request: Mapping[str, Any], feedback: Any) -> dict[str, ToolFeedback]:
    """The feedback for each call a pause's ``request`` (its interrupt value) waits on, by call
    id, from an answer in our shape (``ToolFeedback``s) or LangChain's (``{"decisions":
    [...]}``, in the order of ``action_requests``); each decision one its tool allows.
    ``ToolFeedbackError`` (saying what is wrong and the shapes expected) if it does not fit."""
    calls = pending_of(request)
    if is_decisions(feedback):
        rows = read_decisions(feedback, calls)
        return {r.call_id: ToolFeedback(*r) for r in rows}
    decided = match_feedback(feedback, [c.id for c in calls])
    for call in calls:
        check_allowed(call, decided[call.id].decision)
    return decided


def match_feedback(feedback: Any, ids: Sequence[str]) -> dict[str, ToolFeedback]:
    """The feedback for each pending call (``ids``), by call id; ``ToolFeedbackError`` if any
    call has none, if feedback names a call that is not pending, or names one twice."""
    items: list[tuple[str | None, ToolFeedback]]
    if isinstance(feedback, ToolFeedback) or (
        isinstance(feedback, Mapping) and "decision" in feedback
    ):
        single = _coerce(feedback)
        items = [(single.tool_call_id, single)]
    elif isinstance(feedback, Mapping):
        items = []
        for key, value in feedback.items():
            item = _coerce(value)
            if item.tool_call_id not in (None, key):
                raise ToolFeedbackError(
                    f"feedback under key {key!r} is for tool call {item.tool_call_id!r}"
                )
            items.append((key, item))
    elif isinstance(feedback, (list, tuple)):
        items = [(item.tool_call_id, item) for item in map(_coerce, feedback)]
    else:
        raise ToolFeedbackError(f"cannot use {feedback!r} as tool feedback; {_USAGE}")
    if any(call_id is None for call_id, _ in items):
        if len(items) != 1 or len(ids) != 1:
            raise ToolFeedbackError(
                f"{len(ids)} tool calls are pending ({', '.join(ids)}); give each ToolFeedback "
                "its tool_call_id, or resume with a dict {tool_call_id: ToolFeedback}"
            )
        items = [(ids[0], items[0][1])]
    decided: dict[str, ToolFeedback] = {}
    for call_id, item in items:
        assert call_id is not None
        if call_id not in ids:
            raise ToolFeedbackError(
                f"feedback for tool call {call_id!r}, which is not pending; pending: {ids}"
            )
        if call_id in decided:
            raise ToolFeedbackError(f"two feedbacks for tool call {call_id!r}")
        decided[call_id] = item
    missing = [i for i in ids if i not in decided]
    if missing:
        raise ToolFeedbackError(f"no feedback for pending tool call(s) {missing}; {_USAGE}")
    return decided


class HumanInTheLoopHook(ModelHook):
    """Pauses the run before the tools of ``interrupt_on`` run, until a person decides.

    ``interrupt_on`` lists tool names, or maps a name to ``True`` (ask), ``False`` (do not
    ask), a description shown to the person (instead of ``description_prefix``), or, as
    LangChain's ``HumanInTheLoopMiddleware`` takes it, ``{"allowed_decisions": [...],
    "description": ...}`` (decisions among ``"approve"``, ``"edit"``, ``"reject"`` and
    ``"respond"``; all four unless said). After each model answer (``after_model``) that calls
    a listed tool, the hook calls ``interrupt()`` with ``{"type": "tool_approval",
    "tool_calls": [{"id", "name", "arguments", "description"}, ...], "action_requests":
    [{"name", "args", "description"}, ...], "review_configs": [{"action_name",
    "allowed_decisions"}, ...]}`` (the listed calls only, in the same order in each list;
    ``arguments`` parsed from JSON; the last two are LangChain's ``HITLRequest``, which
    front ends such as agent-chat-ui show), and the thread pauses
    (``agent.get_state(config).interrupts``). The agent needs a saver (the default
    ``MemorySaver`` is one).

    Resume with ``agent.call(Command(resume=feedback), config)``: one ``ToolFeedback`` (one
    call pending), a list of them, a dict ``{call_id: ToolFeedback}``, or LangChain's
    ``{"decisions": [...]}`` (one per call, in order; ``respond`` is a rejection whose reason
    is the person's answer). Approved calls run as asked; a rejected call does not run and
    the model gets "The user rejected this tool call: <reason>" as its result (through the
    state key ``rejected_tool_calls``); an edited call runs with the edited arguments (the
    assistant message is rewritten; its metadata ``edited_tool_calls`` keeps the original
    arguments by call id). Calls of tools not listed run without asking. Feedback that
    misses a pending call, names an unknown one, is malformed or is a decision its tool does
    not allow raises ``ToolFeedbackError`` (saying the shapes expected) and leaves the thread
    paused.
    """

    def __init__(
        self,
        interrupt_on: Mapping[str, str | bool | Mapping[str, Any]] | Sequence[str],
        description_prefix: str = DEFAULT_DESCRIPTION_PREFIX,
        *,
        name: str | None = None,
    ) -> None:
        self.descriptions: dict[str, str] = {}
        self.allowed: dict[str, tuple[DecisionType, ...]] = {}
        entries: Mapping[str, str | bool | Mapping[str, Any]] = (
            {interrupt_on: True}
            if isinstance(interrupt_on, str)
            else interrupt_on
            if isinstance(interrupt_on, Mapping)
            else dict.fromkeys(interrupt_on, True)
        )
        for tool_name, setting in entries.items():
            if not isinstance(tool_name, str) or not tool_name:
                raise TypeError(f"interrupt_on: tool names must be strings, got {tool_name!r}")
            if setting is False:
                continue
            allowed, description = ALL_DECISIONS, description_prefix
            if isinstance(setting, str):
                description = setting
            elif isinstance(setting, Mapping):
                allowed, description = _setting(tool_name, setting, description_prefix)
            elif setting is not True:
                raise TypeError(
                    f"interrupt_on[{tool_name!r}] must be True, False, a description or "
                    f'{{"allowed_decisions": [...], "description": ...}}, got {setting!r}'
                )
            self.descriptions[tool_name] = description
            self.allowed[tool_name] = allowed
        self.description_prefix = description_prefix
        if name is not None:
            self.name = name

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools that need a decision."""
        return tuple(self.descriptions)

    def tool_names_used(self) -> tuple[str, ...]:
        return self.tool_names

    def describe(self, call: ToolCall) -> dict[str, Any]:
        """What a person is shown about one pending call (JSON-friendly)."""
        return {
            "id": call.id,
            "name": call.name,
            "arguments": call_arguments(call),
            "description": f"{self.descriptions[call.name]}\n\nTool: {call.name}\n"
            f"Arguments: {call.arguments}",
        }

    def request(self, calls: Sequence[ToolCall]) -> dict[str, Any]:
        """The pause's value for ``calls`` (JSON-friendly): ours and LangChain's shape."""
        return approval_request(
            [self.describe(c) for c in calls], [self.allowed[c.name] for c in calls]
        )

    def after_model(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        messages = messages_of(state)
        last = messages[-1] if messages else None
        calls = [c for c in pending_calls(last) if c.name in self.descriptions]
        if not calls or not isinstance(last, AssistantMessage):
            return None
        request = self.request(calls)
        decided = feedback_for_request(request, interrupt(request))
        update: dict[str, Any] = {}
        rejected = {
            i: f.reason or NO_REASON for i, f in decided.items() if f.decision == "rejected"
        }
        if rejected:
            update[REJECTED] = {**(state.get(REJECTED) or {}), **rejected}
        edits = {i: f.arguments_json() for i, f in decided.items() if f.decision == "edited"}
        if edits:
            originals = {c.id: c.arguments for c in last.tool_calls if c.id in edits}
            edited = tuple(
                c.model_copy(update={"arguments": edits[c.id]}) if c.id in edits else c
                for c in last.tool_calls
            )
            metadata = {**last.metadata, "edited_tool_calls": originals}
            message = last.model_copy(update={"tool_calls": edited, "metadata": metadata})
            update[MESSAGES] = Overwrite([*messages[:-1], message])
        return update or None


def _setting(
    tool_name: str, setting: Mapping[str, Any], description_prefix: str
) -> tuple[tuple[DecisionType, ...], str]:
    """``interrupt_on[tool_name]`` given as LangChain's ``InterruptOnConfig``, checked."""
    unknown = sorted(set(setting) - {"allowed_decisions", "description"})
    if unknown:
        raise TypeError(
            f"interrupt_on[{tool_name!r}] has unknown key(s) {unknown}; known: "
            "allowed_decisions, description"
        )
    description = setting.get("description", description_prefix)
    if not isinstance(description, str):
        raise TypeError(
            f"interrupt_on[{tool_name!r}]['description'] must be text, got {description!r}"
        )
    return allowed_decisions(
        tool_name, setting.get("allowed_decisions", ALL_DECISIONS)
    ), description

"""Structured output of a ``ReactAgent``: an ``output_type`` the final answer must validate as.

``output_spec`` checks the options at build and makes an ``OutputSpec``: the type's variants
(one, or the members of a union), the strategy, and what it sends the model:

- ``tool``: one final-answer tool per variant (``final_answer_<variant in snake case>``),
  offered beside the agent's own tools, never forced (``tool_choice`` is left alone), whose
  arguments are the answer;
- ``native``: OpenAI's ``response_format`` json_schema (strict when ``_strict`` can make the
  schema strict without changing it, else ``strict: false`` and ``strict_reason``);
- ``prompted``: format instructions after the system prompt; the answer is parsed from text.

A union's schema for ``native`` and ``prompted`` is a wrapper object ``{"result": <one of
the variants>}`` (OpenAI's strict mode needs an object at the root). At run time the model
node hands every answer to ``OutputSpec.decide``: ordinary tool calls go on to the tool node;
an answer is validated (pydantic ``TypeAdapter``), then checked by the user's validators;
an accepted answer ends the run (``structured_response``), a rejected one goes back to the
model with the errors, up to ``output_retries`` times, then the ``output_failed`` node raises
``OutputValidationError``. Every final-answer call is answered by a tool response in the
same update, so the thread stays valid for a provider whatever happens next.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import re
from collections.abc import Callable, Generator, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError, create_model
from typing_extensions import is_typeddict

from checkpoint.effects import Effect

from ..errors import GraphUsageError, OutputRetry, OutputValidationError
from ..messages import (
    AssistantMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from ..tools import ToolContext, ToolDefinition, ToolMetadata
from ._keys import MESSAGES, OUTPUT_ATTEMPTS, OUTPUT_FAILURE, STRUCTURED
from ._output_types import register_classes, snake_case, supported, type_name, variants_of
from ._strict import strict_schema

__all__ = ["STRATEGIES", "OutputSpec", "output_spec"]

_log = logging.getLogger("graph_agent.agent")

STRATEGIES = ("auto", "tool", "native", "prompted")
FEEDBACK = "output_feedback"  # metadata of a message that sends validation errors back
ANSWER = "structured_output"  # metadata of the accepted answer: the variant's name
ACCEPTED = "Final answer accepted."
ALONE = (
    "Not accepted: a final answer is given alone, once the other tools' results are in. "
    "Read the results of the other tool calls, then call {name} again, by itself."
)
SECOND = "Not used: another final-answer call of this message was accepted."

Validator = Callable[[Any], Any]


class FinalAnswerTool:
    """The final-answer tool of one variant (strategy ``tool``). Offered to the model, never
    run by the tool node: the model node validates its calls."""

    def __init__(self, name: str, variant: Any, schema: dict[str, Any]) -> None:
        about = schema.get("description")
        description = (
            f"Give your final answer ({type_name(variant)}) as this tool's arguments: call it "
            "once you have everything you need (after any other tools you need), by itself."
        )
        if isinstance(about, str) and about.strip():
            description = f"{description} {type_name(variant)}: {about.strip()}"
        self._definition = ToolDefinition(name, description, json.dumps(schema))

    @property
    def tool_definition(self) -> ToolDefinition:
        return self._definition

    @property
    def tool_metadata(self) -> ToolMetadata:
        return ToolMetadata()

    def call(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        return ALONE.format(name=self._definition.name)

    async def acall(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        return self.call(tool_input, tool_context)


@dataclasses.dataclass(frozen=True)
class _Variant:
    name: str  # the type's name
    tool: str  # its final-answer tool (strategy "tool")
    adapter: TypeAdapter[Any]


class _RunValidators(Effect):
    """The user's validators over an accepted value: in a sync run plain calls (an async one
    is a usage error), in an async run awaited."""

    __slots__ = ("agent", "validators", "value")

    def __init__(self, agent: str, validators: Sequence[Validator], value: Any) -> None:
        self.agent = agent
        self.validators = validators
        self.value = value

    def run(self, context: Any) -> Any:
        value = self.value
        for validator in self.validators:
            result = validator(value)
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                raise GraphUsageError(
                    f"agent '{self.agent}': the output validator {type_name(validator)} is async; "
                    "run the agent with acall/ainvoke/astream/acall_structured, or make it sync"
                )
            value = value if result is None else result
        return value

    async def arun(self, context: Any) -> Any:
        value = self.value
        for validator in self.validators:
            result = validator(value)
            if inspect.isawaitable(result):
                result = await result
            value = value if result is None else result
        return value


def _errors(error: ValidationError) -> list[dict[str, Any]]:
    return [
        {"type": e["type"], "loc": [str(p) for p in e["loc"]], "msg": e["msg"]}
        for e in error.errors(include_url=False)
    ]


def _listing(errors: Sequence[dict[str, Any]]) -> str:
    lines = []
    for error in errors:
        where = ".".join(error.get("loc") or ()) or "the answer"
        lines.append(f"- {where}: {error.get('msg')}")
    return "\n".join(lines)


def _json_text(text: str) -> str:
    """The JSON in an answer: its text, without a Markdown fence or words around the object."""
    stripped = text.strip()
    fenced = re.fullmatch(r"```[A-Za-z]*\s*(.*?)\s*```", stripped, re.DOTALL)
    if fenced:
        stripped = fenced.group(1)
    try:
        json.loads(stripped)
    except ValueError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if 0 <= start < end:
            return stripped[start : end + 1]
    return stripped


class OutputSpec:
    """What an agent's ``output_type`` became at build (``agent.output_spec``).

    ``output_type``, its ``variants``, the ``strategy`` in use (``requested``: as asked,
    ``"auto"`` included), ``retries``; ``tool_names`` (strategy ``tool``: one per variant);
    ``schema`` (the JSON schema the answer follows: for a union under ``native``/``prompted``,
    the ``{"result": ...}`` wrapper); ``response_format`` (``native``: what is sent),
    ``strict`` and ``strict_reason`` (``native``: why the schema is not strict, when it is
    not); ``instructions`` (``prompted``: what follows the system prompt).
    """

    def __init__(
        self,
        agent: str,
        output_type: Any,
        requested: str,
        strategy: str,
        retries: int,
        validators: Sequence[Validator],
    ) -> None:
        self.agent = agent
        self.output_type = output_type
        self.requested = requested
        self.strategy = strategy
        self.retries = retries
        self.validators = tuple(validators)
        self.variants = variants_of(output_type)
        self.union = len(self.variants) > 1
        names = [type_name(v) for v in self.variants]
        self._variants = tuple(
            _Variant(name, f"final_answer_{snake_case(name)}"[:64], TypeAdapter(variant))
            for name, variant in zip(names, self.variants)
        )
        self._by_tool = {v.tool: v for v in self._variants}
        self._adapter: TypeAdapter[Any] = TypeAdapter(output_type)  # the value itself
        self.tool_names: tuple[str, ...] = ()
        self.final_tools: tuple[FinalAnswerTool, ...] = ()
        self.response_format: dict[str, Any] | None = None
        self.strict: bool | None = None
        self.strict_reason: str | None = None
        self.instructions: str | None = None
        self._wrapped: TypeAdapter[Any] | None = None
        if self.union:
            wrapper = create_model("Result", result=(output_type, ...))
            self._wrapped = TypeAdapter(wrapper)
            self.schema: dict[str, Any] = self._wrapped.json_schema()
        else:
            self.schema = self._adapter.json_schema()
        if strategy == "tool":
            self.tool_names = tuple(v.tool for v in self._variants)
            self.final_tools = tuple(
                FinalAnswerTool(v.tool, variant, v.adapter.json_schema())
                for v, variant in zip(self._variants, self.variants)
            )
        elif strategy == "native":
            self._native(names)
        else:
            self.instructions = (
                "Give your final answer as one JSON object that matches this JSON schema, and "
                "write nothing else (no Markdown fence, no comment):\n"
                f"{json.dumps(self.schema)}"
            )

    def __repr__(self) -> str:
        return (
            f"OutputSpec({' | '.join(v.name for v in self._variants)}, "
            f"strategy={self.strategy!r}, retries={self.retries})"
        )

    def _native(self, names: Sequence[str]) -> None:
        fixed, problems = strict_schema(self.schema)
        self.strict = not problems
        if problems:
            self.strict_reason = (
                "the schema cannot be made strict without changing it: " + "; ".join(problems)
            )
            _log.info(
                "agent %r: output schema sent with strict: false, because %s",
                self.agent,
                self.strict_reason,
            )
        name = re.sub(r"[^A-Za-z0-9_-]", "_", "_or_".join(names))[:64]
        self.response_format = {
            "type": "json_schema",
            "json_schema": {
                "name": name,
                "schema": fixed if self.strict else self.schema,
                "strict": self.strict,
            },
        }

    # -- the model node -------------------------------------------------------------------------

    def decide(
        self, state: Any, message: AssistantMessage
    ) -> Generator[Effect, Any, dict[str, Any] | None]:
        """The model node's update for ``message`` under this spec; ``None`` when the message
        asks for ordinary tools (then the tool node runs them, and answers any final-answer
        call beside them)."""
        if message.tool_calls:
            finals = [c for c in message.tool_calls if c.name in self._by_tool]
            if not finals or len(finals) < len(message.tool_calls):
                return None
            return (yield from self._calls(state, message, finals))
        if message.refusal and not message.text:
            return self._refused(message)
        raw = message.text
        if self.strategy == "tool":  # text is taken when it is the answer's JSON anyway
            value, errors = self._parse(self._adapter, raw)
            if errors:
                missing = [{"type": "no_final_answer_call", "loc": [], "msg": self._missing()}]
                return self._feedback(state, message, raw, missing, self._told_to_call())
        else:
            value, errors = self._parse(self._wrapped or self._adapter, raw)
            if errors:
                return self._feedback(state, message, raw, errors, self._told_to_fix(errors))
            if self._wrapped is not None:
                value = value.result
        value, refused = yield from self._validated(value)
        if refused:
            return self._feedback(state, message, raw, refused, self._told_to_fix(refused))
        variant = self._variant_of(value)
        answer = message.model_copy(update={"metadata": {**message.metadata, ANSWER: variant}})
        return {MESSAGES: [answer], STRUCTURED: value}

    def _calls(
        self, state: Any, message: AssistantMessage, calls: Sequence[ToolCall]
    ) -> Generator[Effect, Any, dict[str, Any]]:
        """Only final-answer calls: the first that validates is the answer; every call is
        answered (accepted, not used, or its errors)."""
        answers: dict[str, str] = {}
        last_raw, last_errors = calls[-1].arguments, []
        for call in calls:
            variant = self._by_tool[call.name]
            value, errors = self._parse(variant.adapter, call.arguments, whole=True)
            if not errors:
                value, errors = yield from self._validated(value)
            if errors:
                answers[call.id] = self._told_to_fix(errors, call.name)
                last_raw, last_errors = call.arguments, errors
                continue
            text = variant.adapter.dump_json(value).decode()
            for other in calls:
                answers.setdefault(other.id, ACCEPTED if other is call else SECOND)
            responses = ToolResponseMessage(responses=self._responses(calls, answers))
            answer = AssistantMessage(text, metadata={ANSWER: variant.name})
            return {MESSAGES: [message, responses, answer], STRUCTURED: value}
        responses = ToolResponseMessage(
            responses=self._responses(calls, answers), metadata={FEEDBACK: True}
        )
        return self._failed(state, [message, responses], last_raw, last_errors)

    @staticmethod
    def _responses(calls: Sequence[ToolCall], answers: dict[str, str]) -> tuple[ToolResponse, ...]:
        return tuple(ToolResponse(id=c.id, name=c.name, response_data=answers[c.id]) for c in calls)

    def _validated(self, value: Any) -> Generator[Effect, Any, tuple[Any, list[dict[str, Any]]]]:
        if not self.validators:
            return value, []
        try:
            value = yield _RunValidators(self.agent, self.validators, value)
        except OutputRetry as retry:
            return value, [{"type": "output_retry", "loc": [], "msg": retry.message}]
        return value, []

    @staticmethod
    def _parse(
        adapter: TypeAdapter[Any], raw: str, whole: bool = False
    ) -> tuple[Any, list[dict[str, Any]]]:
        try:
            return adapter.validate_json(raw if whole else _json_text(raw)), []
        except ValidationError as error:
            return None, _errors(error)

    def _variant_of(self, value: Any) -> str:
        for variant, kind in zip(self._variants, self.variants):
            if isinstance(kind, type) and not is_typeddict(kind) and isinstance(value, kind):
                return variant.name
        return self._variants[0].name if len(self._variants) == 1 else "dict"

    def _missing(self) -> str:
        names = " or ".join(self.tool_names)
        return f"the model answered in text instead of calling {names}"

    def _told_to_call(self) -> str:
        names = " or ".join(self.tool_names)
        return (
            "Your answer was not accepted: it must be given by calling a final-answer tool "
            f"({names}) with the answer as its arguments, not written as text. Call it now, alone."
        )

    def _told_to_fix(self, errors: Sequence[dict[str, Any]], tool: str | None = None) -> str:
        what = (
            f"Call {tool} again with corrected arguments."
            if tool
            else ("Answer again with only a JSON object that matches the required schema.")
        )
        return f"Your answer was not accepted:\n{_listing(errors)}\n{what}"

    def _feedback(
        self,
        state: Any,
        message: AssistantMessage,
        raw: str,
        errors: list[dict[str, Any]],
        text: str,
    ) -> dict[str, Any]:
        note = UserMessage(text, metadata={FEEDBACK: True})
        return self._failed(state, [message, note], raw, errors)

    def _failed(
        self, state: Any, messages: list[Any], raw: str, errors: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """A rejected attempt: feedback and another model call, or, with the retries spent,
        the record ``output_failed`` raises from (a feedback note is then not stored: no
        further call reads it; a final-answer call keeps its answers)."""
        attempts = (state.get(OUTPUT_ATTEMPTS) or 0) + 1
        if attempts <= self.retries:
            return {MESSAGES: messages, OUTPUT_ATTEMPTS: attempts}
        kept = [m for m in messages if not isinstance(m, UserMessage)]
        failure = {"raw_output": raw, "errors": errors, "attempts": attempts}
        return {MESSAGES: kept, OUTPUT_ATTEMPTS: attempts, OUTPUT_FAILURE: failure}

    def _refused(self, message: AssistantMessage) -> dict[str, Any]:
        """A refusal is not retried: asked again in the same words, a model that declined
        for a reason declines again, and errors about the schema are beside its point."""
        refusal = message.refusal or ""
        failure = {
            "raw_output": refusal,
            "errors": [{"type": "refusal", "loc": [], "msg": refusal}],
            "refusal": refusal,
        }
        return {MESSAGES: [message], OUTPUT_FAILURE: failure}

    # -- the tool node and the end --------------------------------------------------------------

    def split(self, message: AssistantMessage) -> tuple[AssistantMessage, list[ToolCall]]:
        """``message`` with only its ordinary tool calls, and its final-answer calls."""
        finals = [c for c in message.tool_calls if c.name in self._by_tool]
        if not finals:
            return message, []
        ordinary = tuple(c for c in message.tool_calls if c.name not in self._by_tool)
        return message.model_copy(update={"tool_calls": ordinary}), finals

    def answered(
        self,
        message: AssistantMessage,
        responses: ToolResponseMessage | None,
        finals: Sequence[ToolCall],
    ) -> ToolResponseMessage:
        """The tool responses of ``message``, in its calls' order: the tools' own, and for each
        final-answer call beside them, to call it again alone once their results are in."""
        given = {r.id: r for r in responses.responses} if responses is not None else {}
        for call in finals:
            given[call.id] = ToolResponse(
                id=call.id, name=call.name, response_data=ALONE.format(name=call.name)
            )
        ordered = tuple(given[c.id] for c in message.tool_calls if c.id in given)
        metadata = dict(responses.metadata) if responses is not None else {}
        return ToolResponseMessage(responses=ordered, metadata=metadata)

    def failed(self, state: Any, config: Any) -> Generator[Effect, Any, Any]:
        """The logic of the node a run with no valid structured answer ends in
        (``output_failed``): it raises ``error``, after the model node's step kept the last
        attempt (its final-answer calls answered)."""
        raise self.error(state)
        yield  # a generator, as every node's logic is

    def error(self, state: Any) -> OutputValidationError:
        """What ``output_failed`` raises, from the record the model node kept."""
        failure = state.get(OUTPUT_FAILURE) or {}
        raw = str(failure.get("raw_output", ""))
        errors = list(failure.get("errors") or ())
        refusal = failure.get("refusal")
        if refusal:
            message = (
                f"agent '{self.agent}': the model refused to answer in the {self._type_name()} "
                f"schema: {refusal!r}. A refusal is not retried; rephrase the request, or check "
                "what it asks for"
            )
        else:
            message = (
                f"agent '{self.agent}': no valid {self._type_name()} after "
                f"{failure.get('attempts', self.retries + 1)} attempt(s) "
                f"(output_retries={self.retries}); the last errors:\n{_listing(errors)}\n"
                "Describe the fields better (docstrings, Field(description=...)), make the schema "
                "simpler, raise output_retries, or try another output strategy; the last raw "
                "output is in .raw_output"
            )
        return OutputValidationError(
            message, agent=self.agent, raw_output=raw, errors=errors, refusal=refusal or None
        )

    def _type_name(self) -> str:
        return " | ".join(v.name for v in self._variants)


def rejected(update: Any) -> bool:
    """Whether a model node's update sends the answer back (``stream_messages`` withdraws the
    text that answer streamed)."""
    messages = update.get(MESSAGES) if isinstance(update, dict) else None
    return isinstance(messages, list) and any(
        getattr(m, "metadata", {}).get(FEEDBACK) for m in messages
    )


def output_spec(
    agent: str | None,
    output_type: Any,
    strategy: Any,
    retries: Any,
    validators: Sequence[Any],
    model: Any,
    tool_names: Sequence[str],
    registry: Any,
    problems: list[str],
) -> OutputSpec | None:
    """The agent's ``OutputSpec`` (``None`` without an ``output_type``); what is wrong with
    the options goes to ``problems``."""
    if output_type is None:
        if validators:
            problems.append("output_validators need an output_type: add .output_type(T)")
        return None
    start = len(problems)
    variants = variants_of(output_type)
    bad = [v for v in variants if not supported(v)]
    if bad:
        problems.append(
            f"output_type {type_name(bad[0])} is not supported: give a pydantic model, a "
            "dataclass, a TypedDict, or a union of them (Invoice | Refund)"
        )
    if strategy not in STRATEGIES:
        problems.append(
            f"output_strategy {strategy!r} is not one of {', '.join(map(repr, STRATEGIES))}"
        )
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        problems.append(f"output_retries must be an int of 0 or more, got {retries!r}")
    for validator in validators:
        if not callable(validator):
            problems.append(f"output_validators: {validator!r} is not callable (value) -> value")
    native = getattr(model, "supports_native_output", False) is True
    if strategy == "native" and model is not None and not native:
        problems.append(
            f"output_strategy 'native' needs a model that declares supports_native_output "
            f"({type(model).__name__} does not); use 'tool' or 'prompted', or 'auto' to pick "
            "(OpenAIChatModel declares it unless supports_native_output=False)"
        )
    resolved = ("native" if native else "tool") if strategy == "auto" else strategy
    names = [type_name(v) for v in variants]
    if len(set(names)) < len(names):
        problems.append(f"output_type: two variants have one name ({', '.join(names)})")
    if len(problems) > start or agent is None:
        return None
    try:
        spec = OutputSpec(agent, output_type, strategy, resolved, retries, validators)
    except Exception as error:  # pydantic cannot make a schema of it
        problems.append(f"output_type {output_type!r}: no JSON schema can be made of it ({error})")
        return None
    clash = sorted(set(spec.tool_names) & set(tool_names))
    if clash:
        problems.append(
            f"output_type's final-answer tool {clash[0]} has the name of one of the agent's "
            "tools; rename that tool"
        )
    register_classes(output_type, registry, problems)
    return spec


def structured_run(agent: str, spec: OutputSpec | None) -> None:
    """``call_structured`` needs an ``output_type``."""
    if spec is None:
        raise GraphUsageError(
            f"agent '{agent}' has no output_type, so it has no structured answer to return: "
            "give it one (.output_type(Invoice) or ReactAgent(output_type=Invoice)), or use "
            "call() for the text answer"
        )


def structured_answer(agent: str, outcome: Any, answer: AssistantMessage, thread_id: str) -> Any:
    """The validated value of a finished run whose last answer is the structured one."""
    if ANSWER not in answer.metadata:
        raise GraphUsageError(
            f"agent '{agent}': the run on thread '{thread_id}' ended without a structured "
            f"answer (it ended with {answer.answer[:80]!r}, e.g. a hook's jump to the end); "
            "agent.invoke shows the whole state"
        )
    return outcome.values.get(STRUCTURED)

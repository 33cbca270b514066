"""The schema an ``output_type`` is asked for under the ``native`` strategy: strict when OpenAI's
strict mode can take it without a change of meaning (then the schema the openai SDK's own helper
makes), else ``strict: false`` with every reason."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

import pytest
from openai.lib._pydantic import to_strict_json_schema
from pydantic import AnyUrl, BaseModel, ConfigDict, Field
from typing_extensions import NotRequired, TypedDict

from graph_agent import ReactAgent, ScriptedChatModel


def spec_of(output_type: Any) -> Any:
    model = ScriptedChatModel([], supports_native_output=True)
    spec = ReactAgent(name="a", model=model, output_type=output_type).output_spec
    assert spec is not None and spec.strategy == "native"
    return spec


class Node(BaseModel):
    """A tree (a recursive model)."""

    label: str
    children: list[Node] = Field(description="the subtrees")
    parent: Node | None = None


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Pet(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    owner: Annotated[str, Field(description="who owns it")]


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


class Partial(TypedDict):
    name: str
    email: NotRequired[str]


class Loose(BaseModel):
    site: AnyUrl
    labels: dict[str, str]
    words: str = Field(min_length=3)


@pytest.mark.parametrize(
    "output_type", [Node, Pet, Point], ids=["recursive", "discriminated", "dataclass"]
)
def test_a_schema_strict_mode_can_take_is_sent_strict(output_type: Any) -> None:
    spec = spec_of(output_type)
    assert spec.strict is True and spec.strict_reason is None
    sent = spec.response_format["json_schema"]
    assert sent["strict"] is True
    if output_type is not Pet:  # the SDK keeps a discriminated union's oneOf (not strict)
        assert sent["schema"] == to_strict_json_schema(_adapter(output_type))
    else:
        pet = sent["schema"]["properties"]["pet"]
        assert "oneOf" not in pet and len(pet["anyOf"]) == 2


def _adapter(output_type: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(output_type)


@pytest.mark.parametrize(
    ("output_type", "reasons"),
    [
        (Open, ["Open: it allows properties it does not declare"]),
        (Partial, ["Partial.email is optional: strict mode makes the model always send it"]),
        (
            Loose,
            [
                "Loose.site: the format 'uri' is not supported",
                "Loose.labels: it allows properties it does not declare",
                "Loose.words: the keyword 'minLength' is not supported",
            ],
        ),
    ],
    ids=["extra-allowed", "not-required", "keywords"],
)
def test_a_schema_it_cannot_take_is_sent_as_it_is_with_the_reasons(
    output_type: Any, reasons: list[str]
) -> None:
    spec = spec_of(output_type)
    assert spec.strict is False
    for reason in reasons:
        assert reason in spec.strict_reason
    sent = spec.response_format["json_schema"]
    assert sent["strict"] is False and sent["schema"] == spec.schema  # unchanged

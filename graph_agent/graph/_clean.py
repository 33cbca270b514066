"""``compile(clean_input=...)`` applied to what starts a run: new input, what a parent hands a
subgraph, a resume's ``Command(update=...)``."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ._effects import SubgraphEntry
from ._spec import CleanInput
from .types import Command

__all__ = ["cleaned"]


def cleaned(clean: CleanInput, inputs: Any) -> Any:
    """``inputs`` with its new state updates through ``clean``: a dict of new input; the
    values a parent hands a subgraph (stored as the child's input); a resume's update. What
    brings none (a bare resume) comes back as it is; what ``clean`` raises propagates."""
    if isinstance(inputs, SubgraphEntry):
        return SubgraphEntry(clean(inputs.values), inputs.resume, inputs.resuming)
    if isinstance(inputs, Command):
        if not isinstance(inputs.update, Mapping):
            return inputs
        command = copy.copy(inputs)
        command.update = clean(inputs.update)
        return command
    return clean(inputs) if isinstance(inputs, Mapping) else inputs

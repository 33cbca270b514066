"""The agent's state keys: what its nodes, hooks and flows read and write in the state.
Plain names that import only the lowest layer, so every module of the agent may use them."""

from __future__ import annotations

from ..messages import JUMP_TO, MESSAGES, REJECTED  # shared with the hooks

__all__ = [
    "JUMP_TO",
    "MESSAGES",
    "OFFERED",
    "OUTPUT_ATTEMPTS",
    "OUTPUT_FAILURE",
    "PRIVATE_KEYS",
    "REJECTED",
    "STRUCTURED",
]

OFFERED = "offered_tools"  # state key: the tools the model was offered for its tool calls
STRUCTURED = "structured_response"  # state key: the validated answer (with an output_type)
OUTPUT_ATTEMPTS = "output_attempts"  # state key: this run's rejected structured answers
OUTPUT_FAILURE = "output_failure"  # state key: why the run ends in OutputValidationError
# the agent's bookkeeping, kept from callers
PRIVATE_KEYS = (JUMP_TO, OFFERED, REJECTED, OUTPUT_ATTEMPTS, OUTPUT_FAILURE)

"""The agent's state keys: what its nodes, hooks and flows read and write in the state.
Plain names that import nothing, so every module of the agent may use them."""

from __future__ import annotations

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

MESSAGES = "messages"
JUMP_TO = "jump_to"
REJECTED = "rejected_tool_calls"
OFFERED = "offered_tools"  # state key: the tools the model was offered for its tool calls
STRUCTURED = "structured_response"  # state key: the validated answer (with an output_type)
OUTPUT_ATTEMPTS = "output_attempts"  # state key: this run's rejected structured answers
OUTPUT_FAILURE = "output_failure"  # state key: why the run ends in OutputValidationError
# the agent's bookkeeping, kept from callers
PRIVATE_KEYS = (JUMP_TO, OFFERED, REJECTED, OUTPUT_ATTEMPTS, OUTPUT_FAILURE)

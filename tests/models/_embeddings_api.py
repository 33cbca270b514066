"""OpenAI's ``POST /v1/embeddings`` as a request rule of the local HTTP server of
test_servers.py: its rules, deterministic vectors, failures on demand."""

from __future__ import annotations

import base64
import json
import struct
import threading
from typing import Any

from checkpoint.store import HashingEmbeddings

from .test_servers import KEY, Reply, Request

EMBEDDING_MODELS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072}
FIXED_SIZE_MODELS = {"text-embedding-ada-002": 1536}  # no 'dimensions'


def _invalid(message: str, param: str | None = None, code: str | None = None) -> Reply:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return Reply(json.dumps({"error": error}).encode(), "application/json", 400)


class EmbeddingsAPI:
    """A request rule that is OpenAI's ``POST /v1/embeddings``, as its docs and error answers
    show it: the Bearer ``key`` (a wrong one is quoted back whole, as some proxies do), a
    known model, ``input`` a non-empty string or a list of at most 2048 non-empty strings,
    ``dimensions`` a positive int (not for ada-002), ``encoding_format`` float or base64.
    The vectors are ``HashingEmbeddings``' (texts sharing words are close), listed last input
    first (each datum's ``index`` says which it is). ``failures`` are the answers of the
    next requests (a status, or a ``Reply``), before any rule."""

    def __init__(self, key: str | None = KEY) -> None:
        self.key = key
        self.failures: list[int | Reply] = []
        self.inputs: list[list[str]] = []  # the input of each request answered
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> Reply:
        with self.lock:
            failure = self.failures.pop(0) if self.failures else None
        if isinstance(failure, Reply):
            return failure
        if failure is not None:
            message = {"error": {"message": f"failed on demand ({failure})"}}
            return Reply(json.dumps(message).encode(), "application/json", failure)
        return self.answer(request)

    def answer(self, request: Request) -> Reply:
        if not request.path.partition("?")[0].endswith("/embeddings"):
            return Reply(b'{"error": {"message": "Not found"}}', "application/json", 404)
        sent = request.headers.get("Authorization")
        if self.key is not None and sent != f"Bearer {self.key}":
            if sent is None:
                message = "You didn't provide an API key."
            else:
                message = f"Incorrect API key provided: {sent.removeprefix('Bearer ')}."
            error = {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}
            return Reply(json.dumps({"error": error}).encode(), "application/json", 401)
        body = request.body
        model = body.get("model")
        size = EMBEDDING_MODELS.get(model) or FIXED_SIZE_MODELS.get(model)
        if size is None:
            message = f"The model `{model}` does not exist or you do not have access to it."
            error = {"message": message, "type": "invalid_request_error", "code": "model_not_found"}
            return Reply(json.dumps({"error": error}).encode(), "application/json", 404)
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if (
            not isinstance(texts, list)
            or not 1 <= len(texts) <= 2048
            or not all(isinstance(t, str) and t for t in texts)
        ):
            return _invalid(
                "'$.input' is invalid. Please check the API reference: "
                "https://platform.openai.com/docs/api-reference.",
                "input",
            )
        if "dimensions" in body:
            dims = body["dimensions"]
            if model in FIXED_SIZE_MODELS:
                return _invalid("This model does not support specifying dimensions.")
            if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= size:
                return _invalid(
                    f"Invalid value for 'dimensions' = {dims}. Must be between 1 and {size}.",
                    "dimensions",
                )
            size = dims
        encoding = body.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            return _invalid(f"Invalid value for 'encoding_format': {encoding!r}.")
        with self.lock:
            self.inputs.append(texts)
        vectors = HashingEmbeddings(max(size, 8)).embed_documents(texts)
        data = [
            {
                "object": "embedding",
                "index": index,
                "embedding": _encoded(vector[:size], encoding),
            }
            for index, vector in reversed(list(enumerate(vectors)))
        ]
        answer = {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
        }
        return Reply(json.dumps(answer).encode(), "application/json", piece=65536)


def _encoded(vector: list[float], encoding: str) -> Any:
    if encoding == "float":
        return vector
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()

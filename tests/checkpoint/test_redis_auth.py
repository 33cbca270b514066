"""A Redis that wants a password, and a saver that gives none or a wrong one: the
``CheckpointAuthError`` says which, in our words, with the fix; never Redis's own text
("HELLO must be called with the client already authenticated, otherwise the HELLO <proto>
AUTH <user> <pass> option can be used ...", "invalid username-password pair ...")."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from checkpoint import CheckpointAuthError, RedisSaver

from ..redis_servers import redis_server

PASSWORD = "auth-Pa55word"
REDIS_TEXTS = ("HELLO must be called", "Authentication required", "username-password pair")


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with redis_server(tmp_path_factory.mktemp("auth"), "--requirepass", PASSWORD) as port:
        yield port


def refused(url: str) -> str:
    with RedisSaver.from_url(url) as saver, pytest.raises(CheckpointAuthError) as caught:
        saver.get("t")
    return str(caught.value)


@pytest.mark.parametrize("query", ["", "?protocol=2"], ids=["resp3-hello", "resp2-noauth"])
def test_no_password_says_the_server_needs_one(port: int, query: str) -> None:
    text = refused(f"redis://127.0.0.1:{port}/0{query}")
    assert text.startswith(f"Redis at 127.0.0.1:{port}/0 refused the saver's credentials")
    assert "while reading thread 't': the server needs a password" in text
    assert "the saver sent none" in text and "redis://:PASSWORD@host:port/0" in text
    assert not any(raw in text for raw in REDIS_TEXTS), text


@pytest.mark.parametrize(
    "credentials", [":wrong-pw@", "default:wrong-pw@", "nobody:wrong-pw@"], ids=str
)
def test_a_wrong_password_or_user_says_they_do_not_match(port: int, credentials: str) -> None:
    text = refused(f"redis://{credentials}127.0.0.1:{port}/0")
    assert "the password, or the user and password, do not match" in text
    assert "requirepass" in text and "redis://:PASSWORD@host:port/0" in text
    assert "wrong-pw" not in text
    assert not any(raw in text for raw in REDIS_TEXTS), text


def test_async_says_it_too(port: int) -> None:
    async def main() -> str:
        async with RedisSaver.from_url(f"redis://127.0.0.1:{port}/0") as saver:
            with pytest.raises(CheckpointAuthError) as caught:
                await saver.aget("t")
        return str(caught.value)

    text = asyncio.run(main())
    assert "the server needs a password" in text and "HELLO must be called" not in text


def test_the_right_password_still_works(port: int) -> None:
    with RedisSaver.from_url(f"redis://:{PASSWORD}@127.0.0.1:{port}/0") as saver:
        assert saver.get("t") is None

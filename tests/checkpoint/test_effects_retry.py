"""The effect protocol's drivers and the shared retry loop (checkpoint.effects, .retry)."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import pytest

from checkpoint.effects import Effect, Sleep, aperform, perform
from checkpoint.retry import Backoff, retried


class Flaky(Effect):
    """Fails ``failures`` times, then returns ``value``; counts its calls."""

    def __init__(self, failures: int, value: str = "ok") -> None:
        self.failures = failures
        self.value = value
        self.calls = 0

    def run(self, context: Any) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"attempt {self.calls}")
        return f"{self.value}{'' if context is None else context}"

    async def arun(self, context: Any) -> str:
        return self.run(context)


def test_perform_and_aperform_send_results_and_return_the_value() -> None:
    def logic() -> Generator[Effect, Any, str]:
        first: str = yield Flaky(0, "a")
        second: str = yield Flaky(0, "b")
        return first + second

    assert perform(logic(), "!") == "a!b!"
    assert asyncio.run(aperform(logic(), "?")) == "a?b?"


def test_an_effects_error_is_thrown_into_the_logic_which_may_handle_it() -> None:
    def logic() -> Generator[Effect, Any, str]:
        try:
            yield Flaky(1)
        except ConnectionError as error:
            return f"handled {error}"
        return "not reached"

    assert perform(logic()) == "handled attempt 1"
    assert asyncio.run(aperform(logic())) == "handled attempt 1"


def test_an_uncaught_error_propagates_from_both_drivers() -> None:
    def logic() -> Generator[Effect, Any, None]:
        yield Flaky(1)

    with pytest.raises(ConnectionError):
        perform(logic())
    with pytest.raises(ConnectionError):
        asyncio.run(aperform(logic()))


def _retrying(effect: Flaky, pauses: list[float], give_up_after: int) -> Any:
    def attempt(n: int) -> Generator[Effect, Any, str]:
        return (yield effect)  # type: ignore[no-any-return]

    def pause_after(error: Exception, n: int) -> float | None:
        if n >= give_up_after:
            return None
        pauses.append(n / 100)
        return n / 100

    return retried(attempt, pause_after, sleep=pauses.append, asleep=_record(pauses))


def _record(pauses: list[float]) -> Any:
    async def asleep(seconds: float) -> None:
        pauses.append(-seconds)

    return asleep


def test_retried_runs_again_after_the_pause_it_was_told_sync_and_async() -> None:
    pauses: list[float] = []
    effect = Flaky(2)
    assert perform(_retrying(effect, pauses, give_up_after=5)) == "ok"
    assert effect.calls == 3
    assert pauses == [0.01, 0.01, 0.02, 0.02]  # decided, then slept (the injected sleep)

    pauses.clear()
    effect = Flaky(2)
    assert asyncio.run(aperform(_retrying(effect, pauses, give_up_after=5))) == "ok"
    assert pauses == [0.01, -0.01, 0.02, -0.02]


def test_retried_gives_up_with_the_error_itself() -> None:
    pauses: list[float] = []
    effect = Flaky(10)
    with pytest.raises(ConnectionError, match="attempt 2"):
        perform(_retrying(effect, pauses, give_up_after=2))
    assert effect.calls == 2


def test_retried_never_retries_a_base_exception() -> None:
    class Cancelled(Effect):
        def run(self, context: Any) -> None:
            raise KeyboardInterrupt

    asked: list[int] = []

    def attempt(n: int) -> Generator[Effect, Any, None]:
        yield Cancelled()

    def pause_after(error: Exception, n: int) -> float | None:
        asked.append(n)
        return 0.0

    with pytest.raises(KeyboardInterrupt):
        perform(retried(attempt, pause_after))
    assert asked == []


def test_sleep_uses_time_and_asyncio_sleep_by_default() -> None:
    def logic() -> Generator[Effect, Any, str]:
        yield Sleep(0.0)
        return "slept"

    assert perform(logic()) == "slept"
    assert asyncio.run(aperform(logic())) == "slept"


def test_backoff_is_capped_exponential_with_optional_jitter() -> None:
    plain = Backoff(initial=0.5, factor=2.0, maximum=3.0, jitter=False)
    assert [plain.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    jittered = Backoff(initial=1.0, factor=2.0, maximum=100.0)
    for n in (1, 2, 3):
        assert 0.5 * 2 ** (n - 1) <= jittered.delay(n) < 1.5 * 2 ** (n - 1)


@pytest.mark.parametrize("field", ["initial", "factor", "maximum"])
def test_backoff_refuses_a_negative_or_non_number(field: str) -> None:
    with pytest.raises(ValueError, match=f"Backoff.{field} must be a number >= 0"):
        Backoff(**{field: -1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"Backoff.{field}"):
        Backoff(**{field: "1"})  # type: ignore[arg-type]


def test_backoff_spread_sets_the_random_factors_range() -> None:
    narrow = Backoff(initial=2.0, factor=2.0, maximum=100.0, spread=(1.0, 1.25))
    for n in (1, 2, 3):
        assert 2.0 * 2 ** (n - 1) <= narrow.delay(n) < 2.5 * 2 ** (n - 1)
    with pytest.raises(ValueError, match=r"Backoff\.spread must be"):
        Backoff(spread=(1.5, 0.5))

"""``retrying``: retriable errors (and those named) are retried until the bound, any other is raised at once."""

from __future__ import annotations

import pytest

from broker.client.retrying import retrying
from broker.errors import HighwaterError, InvalidRequest
from broker.errors.groups import CoordinatorNotAvailable, StaleMemberEpoch


def attempts(*outcomes: HighwaterError | str):
    """An attempt that raises or returns each outcome in turn; ``calls`` counts them."""
    left = list(outcomes)

    async def attempt() -> str:
        attempt.calls += 1  # type: ignore[attr-defined]
        outcome = left.pop(0)
        if isinstance(outcome, HighwaterError):
            raise outcome
        return outcome

    attempt.calls = 0  # type: ignore[attr-defined]
    return attempt


async def test_retriable_and_named_errors_are_retried_and_each_is_heard() -> None:
    attempt = attempts(CoordinatorNotAvailable("moving"), StaleMemberEpoch("stale"), "done")
    heard: list[str] = []
    answer = await retrying(attempt, 10_000, 0, also_retry=(StaleMemberEpoch,), on_retry=lambda e: heard.append(e.name))
    assert (answer, attempt.calls, heard) == ("done", 3, ["COORDINATOR_NOT_AVAILABLE", "STALE_MEMBER_EPOCH"])


async def test_another_error_is_raised_at_once() -> None:
    attempt = attempts(InvalidRequest("bad"), "never")
    with pytest.raises(InvalidRequest):
        await retrying(attempt, 10_000, 0)
    assert attempt.calls == 1


async def test_the_last_retriable_error_is_raised_at_the_bound() -> None:
    attempt = attempts(*(CoordinatorNotAvailable(f"try {i}") for i in range(10)))
    with pytest.raises(CoordinatorNotAvailable, match="try 0"):
        await retrying(attempt, 5, 10)
    assert attempt.calls == 1, "a backoff past the bound leaves no time for another attempt"

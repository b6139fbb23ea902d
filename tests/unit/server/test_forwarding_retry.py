"""JSON reads forwarded to a leader wait out a leadership move, and only that.

Pins a race seen in the integration suite: a read through broker 2 was answered
NOT_LEADER_OR_FOLLOWER (or LEADER_NOT_AVAILABLE) while the election was a step ahead
of one broker's view; a JSON reader cannot re-route itself.
"""

from __future__ import annotations

import time

import pytest

from broker.errors import LeaderNotAvailable, NotLeaderOrFollower, OffsetOutOfRange
from broker.node.forwarding import retry_while_leadership_moves


class Attempts:
    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "read"


async def test_a_read_is_retried_until_the_new_leader_answers() -> None:
    attempts = Attempts(NotLeaderOrFollower("broker 2 is not the leader"), LeaderNotAvailable("no leader right now"))
    assert await retry_while_leadership_moves(attempts, settle_s=2.0) == "read"
    assert attempts.calls == 3


async def test_the_error_stands_once_the_settle_time_is_over() -> None:
    attempts = Attempts(*[LeaderNotAvailable("no leader right now")] * 100)
    started = time.monotonic()
    with pytest.raises(LeaderNotAvailable):
        await retry_while_leadership_moves(attempts, settle_s=0.35)
    assert 0.2 <= time.monotonic() - started < 1.0
    assert 2 <= attempts.calls <= 5


async def test_other_errors_are_answered_at_once() -> None:
    attempts = Attempts(OffsetOutOfRange("offset 99 is past the end"))
    with pytest.raises(OffsetOutOfRange):
        await retry_while_leadership_moves(attempts, settle_s=2.0)
    assert attempts.calls == 1

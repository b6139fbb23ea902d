"""``wait_event`` never loses a cancellation, which Python 3.11's ``asyncio.wait_for`` does; ``RetryDeadline`` ends at its deadline."""

from __future__ import annotations

import asyncio

import pytest

from broker.waiting import RetryDeadline, wait_event
from tests.support.virtual_time import VirtualTimeLoop, run_on_virtual_time


async def wait_in_a_loop(event: asyncio.Event, rounds: list[int]) -> None:
    """The shape of every waiting loop in the broker: wait, do the work, wait again."""
    while True:
        event.clear()
        await wait_event(event, 10.0)
        rounds.append(1)


async def test_a_cancel_that_meets_the_event_being_set_stops_the_waiting_task() -> None:
    event = asyncio.Event()
    rounds: list[int] = []
    task = asyncio.create_task(wait_in_a_loop(event, rounds))
    await asyncio.sleep(0)
    event.set()
    task.cancel()
    async with asyncio.timeout(2):
        with pytest.raises(asyncio.CancelledError):
            await task
    assert rounds == []


async def test_it_answers_whether_the_event_was_set() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    assert await wait_event(event, -1) is False
    event.set()
    assert await wait_event(event, None) is True


def test_a_retry_deadline_pauses_with_growing_back_offs_the_last_cut_to_the_deadline() -> None:
    """On simulated time the pauses are exact: 50, 100, 200 ms, then the 150 ms left of 0.5 s, then none."""

    async def pauses(loop: VirtualTimeLoop) -> list[tuple[bool, int]]:
        retry = RetryDeadline(0.5, 0.05, 0.4)
        return [(await retry.pause(), loop.clock_ms()) for _ in range(5)]

    assert run_on_virtual_time(pauses) == [(True, 50), (True, 150), (True, 350), (True, 500), (False, 500)]

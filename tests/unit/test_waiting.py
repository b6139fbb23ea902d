"""``wait_event`` never loses a cancellation, which Python 3.11's ``asyncio.wait_for`` does."""

from __future__ import annotations

import asyncio

import pytest

from broker.waiting import wait_event


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

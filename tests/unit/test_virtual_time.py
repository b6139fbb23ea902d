"""``VirtualTimeLoop``: the clock the simulation's brokers run on moves only as far as it is told, and never stalls."""

from __future__ import annotations

import asyncio

from broker.waiting import wait_event
from tests.support.virtual_time import VirtualTimeLoop


def test_run_until_runs_what_is_due_by_the_instant_and_stops_there_idle() -> None:
    loop = VirtualTimeLoop(start=5.0)
    fired: list[tuple[str, float]] = []
    try:
        loop.call_later(0.25, lambda: fired.append(("early", loop.time())))
        loop.call_later(0.5, lambda: fired.append(("at the instant", loop.time())))
        loop.call_later(0.75, lambda: fired.append(("late", loop.time())))
        loop.run_until(5.5)
        assert fired == [("early", 5.25), ("at the instant", 5.5)]
        assert loop.clock_ms() == 5_500
        loop.run_until(6.0)
        assert fired[-1] == ("late", 5.75) and loop.time() == 6.0
    finally:
        loop.close()


def test_a_wait_for_what_remains_until_a_deadline_ends_when_the_clock_stops_at_it() -> None:
    """The fetch handler's long poll waits ``deadline - loop.time()`` in a loop. 20.166 + 0.1 is
    20.266000000000002 in floats: on a float clock stopped at 20.266 the wait found a rounding
    error left, waited for it, was woken at the same instant, and spun for ever (found by the
    simulation). On the microsecond clock a wait always ends past its deadline."""
    loop = VirtualTimeLoop(start=20.166)
    try:

        async def long_poll() -> int:
            deadline = loop.time() + 0.1
            rounds = 0
            while (remaining := deadline - loop.time()) > 0:
                rounds += 1
                await wait_event(asyncio.Event(), remaining)
            return rounds

        task = loop.create_task(long_poll())
        loop.run_until(20.266)
        if not task.done():
            loop.run_until(20.267)
        assert task.done() and task.result() <= 2
    finally:
        loop.close()

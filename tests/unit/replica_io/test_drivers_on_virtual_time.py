"""The broker's own replica drivers on simulated time: a minute of broker time in milliseconds.

The leader's ``Partition`` and fetch handler and the follower's ``Partition`` and
``ReplicaFetcher`` run unchanged on a ``VirtualTimeLoop`` (their clock is the loop's,
their disk work inline, their fetches in process). Time moves only when every driver
waits, so the ISR-lag timer and an acks=all deadline fire at exactly their
broker-time instants, every run the same. This is how the seeded simulation is to run
the drivers rather than a copy of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from broker.acks import Acks
from broker.errors import HighwaterError
from broker.record.codec import encode_batch
from broker.replica_io.partition import Partition
from broker.replication import ProposeIsr
from broker.replication.isr_change import IsrChangeAnswer, IsrChangeRefused, decide_isr_change
from tests.support.virtual_time import VirtualTimeLoop, run_on_virtual_time
from tests.unit.replica_io.disk_partition import leadership
from tests.unit.replica_io.in_process import BROKER_EPOCH, InProcessTransport, fetching, leader_and_follower

LAG_MS = 10_000
"""``replica_lag_time_max_ms`` of the partitions ``partition_on_disk`` builds."""


class Controller:
    """Decides each ISR proposal by the broker's own rule, both brokers registered; notes the broker time of each."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self.loop = loop
        self.record = leadership(1, replicas=(1, 2))
        self.proposals: list[tuple[int, ProposeIsr]] = []

    async def propose(self, proposal: ProposeIsr) -> IsrChangeAnswer:
        self.proposals.append((self.loop.clock_ms(), proposal))
        answer = decide_isr_change(self.record, proposal, {1: BROKER_EPOCH, 2: BROKER_EPOCH})
        if not isinstance(answer, IsrChangeRefused):
            self.record = answer
        return answer


async def _until(loop: VirtualTimeLoop, condition: Callable[[], object], what: str, within_ms: int = 120_000) -> None:
    """Let broker time pass, 10 ms at a time, until ``condition()``; fail after ``within_ms`` of it."""
    deadline_ms = loop.clock_ms() + within_ms
    while not condition():
        assert loop.clock_ms() < deadline_ms, f"{what}: not within {within_ms} ms of broker time"
        await _sleep(loop, 0.01)


def _isr_expiration(loop: VirtualTimeLoop, partition: Partition) -> None:
    """The replica manager's ``isr-expiration`` task: tick the partition every lag time / 2."""
    partition.tick()
    loop.call_later(LAG_MS / 2000, _isr_expiration, loop, partition)


async def _sleep(loop: VirtualTimeLoop, seconds: float) -> None:
    future = loop.create_future()
    loop.call_later(seconds, future.set_result, None)
    await future


def test_a_follower_cut_off_leaves_the_isr_once_it_lags_for_the_lag_time_of_broker_time(tmp_path: Path) -> None:
    async def scenario(loop: VirtualTimeLoop) -> tuple[int, int, ProposeIsr]:
        """(ms from the cut to the shrink, the HW after it, the shrink)."""
        controller = Controller(loop)
        leader, follower = leader_and_follower(tmp_path, propose_isr=controller.propose, clock_ms=loop.clock_ms)
        transport = InProcessTransport(leader, clock_ms=loop.clock_ms)
        fetchers = fetching(follower, transport)
        _isr_expiration(loop, leader)
        try:
            await leader.append(encode_batch([(None, b"a"), (None, b"b")]), Acks.ALL, timeout_ms=30_000)
            await _until(loop, lambda: leader.high_watermark == 2, "the HW to reach the follower's copy")
            transport.down = True
            cut_ms = loop.clock_ms()
            await leader.append(encode_batch([(None, b"c")]), Acks.ONE, timeout_ms=30_000)
            await _until(loop, lambda: controller.proposals, "an ISR shrink")
            shrunk_ms, proposal = controller.proposals[0]
            return shrunk_ms - cut_ms, leader.high_watermark, proposal
        finally:
            await fetchers.close()

    shrunk_after_ms, high_watermark, proposal = run_on_virtual_time(scenario)
    assert (proposal.change, proposal.new_isr) == ("shrink", (1,))
    assert high_watermark == 3, (
        "with the ISR down to the leader (min ISR 1), the record appended after the cut is exposed"
    )
    assert LAG_MS < shrunk_after_ms <= LAG_MS * 3 // 2, "out of sync after the lag time, at the next check"


def test_a_follower_never_reached_leaves_the_isr_and_an_acks_all_write_below_min_isr_times_out_on_broker_time(
    tmp_path: Path,
) -> None:
    async def scenario(loop: VirtualTimeLoop) -> tuple[int, int, int, HighwaterError]:
        controller = Controller(loop)
        leader, follower = leader_and_follower(
            tmp_path, min_insync_replicas=2, propose_isr=controller.propose, clock_ms=loop.clock_ms
        )
        transport = InProcessTransport(leader, clock_ms=loop.clock_ms)
        transport.down = True
        fetchers = fetching(follower, transport)
        _isr_expiration(loop, leader)
        try:
            started_ms = loop.clock_ms()
            with pytest.raises(HighwaterError) as refused:
                await leader.append(encode_batch([(None, b"a")]), Acks.ALL, timeout_ms=30_000)
            return started_ms, loop.clock_ms(), controller.proposals[0][0], refused.value
        finally:
            await fetchers.close()

    started_ms, answered_ms, shrunk_ms, error = run_on_virtual_time(scenario)
    assert LAG_MS < shrunk_ms - started_ms <= LAG_MS * 3 // 2, "out of sync after the lag time, at the next check"
    assert (answered_ms - started_ms, error.name) == (30_000, "REQUEST_TIMED_OUT"), (
        "below min ISR 2 it waits out its deadline"
    )

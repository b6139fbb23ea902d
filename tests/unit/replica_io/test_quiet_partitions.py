"""Quiet partitions in a leader's fetch sessions: skipped while unchanged, never stale.

An idle follower's rounds used to record and re-check every partition of its session;
with 10 000 idle partitions that was 80 % of a broker's CPU. A partition found quiet
(repeated, recorded in O(1), at the log end, nothing new to tell) is now skipped while
its replica's generation is unchanged. These tests drive the real handler over a real
leader log and check what must still hold: an append, a HW moved by another follower, a
new incarnation of the follower and a refresh all reach the follower as before.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.acks import Acks
from broker.record.codec import encode_batch
from broker.replica_io.fetch_handler import serve_replica_fetch
from broker.replica_io.partition import Partition
from broker.replication import ProposeIsr
from broker.replication.fetch_session import LeaderSessions
from broker.replication.fetch_wire import FetchPartition, FetchRequest, FetchResponse
from broker.storage.log_config import FLUSH_INTERVAL
from tests.unit.replica_io.disk_partition import LEADER_EPOCH, TOPIC, leadership, partition_on_disk

BROKER_EPOCH = 5
SESSION_ID = 9
NEVER_S = 3600.0
"""A refresh interval no test reaches: every skip is the quiet rule's."""


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


class Follower:
    """One follower broker's session with the leader, its requests written out by hand."""

    def __init__(self, leader: Partition, replica_id: int, sessions: LeaderSessions) -> None:
        self.leader = leader
        self.replica_id = replica_id
        self.sessions = sessions
        self.epoch = 0
        self.registered_broker_epoch = BROKER_EPOCH
        self.broker_epoch = BROKER_EPOCH

    async def fetch(
        self, named_offset: int | None = None, *, max_wait_ms: int = 0, refresh_s: float = NEVER_S
    ) -> FetchResponse:
        """A full fetch first, then incremental ones naming the partition only with ``named_offset``."""
        partitions = []
        if named_offset is not None:
            partitions = [FetchPartition(TOPIC, 0, named_offset, LEADER_EPOCH, LEADER_EPOCH, 0)]
        request = FetchRequest(
            replica_id=self.replica_id,
            broker_epoch=self.broker_epoch,
            max_wait_ms=max_wait_ms,
            max_bytes=1 << 20,
            partitions=partitions,
            session_id=SESSION_ID if self.epoch else 0,
            session_epoch=self.epoch,
        )
        self.epoch += 1
        return await serve_replica_fetch(
            request,
            lambda topic, number: self.leader,
            lambda broker_id: self.registered_broker_epoch,
            self.sessions,
            quiet_refresh_s=refresh_s,
        )

    def caught_up_ms_ago(self) -> int:
        rows = self.leader.replicas_state() or []
        return next(row["caught_up_ms_ago"] for row in rows if row["broker_id"] == self.replica_id)


async def _leader_with_quiet_followers(tmp_path: Path, clock: Clock, replicas: tuple[int, ...]) -> list[Follower]:
    """A leader of ``replicas`` holding one record, every follower caught up and its partition quiet."""
    leader = partition_on_disk(tmp_path, broker_id=1, flush_policy=FLUSH_INTERVAL, clock_ms=clock)
    leader.apply_record(leadership(1, replicas=replicas), min_insync_replicas=1)
    await leader.append(encode_batch([(None, b"a")]), Acks.ONE, timeout_ms=1_000)
    followers = [
        Follower(leader, replica_id, LeaderSessions(new_session_id=lambda: SESSION_ID)) for replica_id in replicas[1:]
    ]
    for follower in followers:
        await follower.fetch(1)
    assert leader.high_watermark == 1
    for follower in followers:
        await follower.fetch()
        assert (await follower.fetch()).partitions == []
    return followers


async def test_an_unchanged_quiet_partition_is_skipped_until_the_refresh(tmp_path: Path) -> None:
    clock = Clock()
    (follower,) = await _leader_with_quiet_followers(tmp_path, clock, (1, 2))
    clock.now_ms += 3_000
    assert (await follower.fetch()).partitions == []
    assert follower.caught_up_ms_ago() == 3_000, "skipped: the fetch was not recorded again"
    assert (await follower.fetch(refresh_s=0.0)).partitions == []
    assert follower.caught_up_ms_ago() == 0, "a refresh round records every partition"


async def test_an_append_to_a_quiet_partition_wakes_the_parked_fetch_with_the_records(tmp_path: Path) -> None:
    clock = Clock()
    (follower,) = await _leader_with_quiet_followers(tmp_path, clock, (1, 2))
    parked = asyncio.create_task(follower.fetch(max_wait_ms=60_000))
    await asyncio.sleep(0.05)
    assert not parked.done(), "nothing new: the fetch long-polls"
    await follower.leader.append(encode_batch([(None, b"b")]), Acks.ONE, timeout_ms=1_000)
    async with asyncio.timeout(5):
        response = await parked
    assert [p.records != b"" for p in response.partitions] == [True]
    assert response.partitions[0].log_end_offset == 2


async def test_a_high_watermark_moved_by_another_follower_reaches_a_quiet_one(tmp_path: Path) -> None:
    clock = Clock()
    second, third = await _leader_with_quiet_followers(tmp_path, clock, (1, 2, 3))
    await second.leader.append(encode_batch([(None, b"b")]), Acks.ONE, timeout_ms=1_000)
    assert (await second.fetch()).partitions[0].records, "the append ends quiet: the record is sent"
    assert (await second.fetch(2)).partitions == [], "HW 1 (the third follower lags) and LEO 2 were sent"
    assert (await second.fetch()).partitions == [], "quiet again, at HW 1"
    await third.fetch()
    await third.fetch(2)
    assert second.leader.high_watermark == 2
    response = await second.fetch()
    assert [(p.high_watermark, p.records) for p in response.partitions] == [(2, b"")]


async def test_a_new_incarnation_of_the_follower_is_recorded_at_once(tmp_path: Path) -> None:
    clock = Clock()
    (follower,) = await _leader_with_quiet_followers(tmp_path, clock, (1, 2))
    follower.broker_epoch = follower.registered_broker_epoch = BROKER_EPOCH + 1
    await follower.fetch()
    rows = follower.leader.replicas_state() or []
    assert [row["broker_epoch"] for row in rows if row["broker_id"] == 2] == [BROKER_EPOCH + 1]


async def test_a_tick_that_asks_for_nothing_keeps_the_partition_quiet(tmp_path: Path) -> None:
    clock = Clock()
    (follower,) = await _leader_with_quiet_followers(tmp_path, clock, (1, 2))
    generation = follower.leader.generation
    clock.now_ms += 60_000
    follower.leader.tick()
    assert follower.leader.generation == generation, "the ISR check found the follower caught up: nothing changed"


async def test_a_partition_found_quiet_and_stirred_within_one_fetch_is_answered_once(tmp_path: Path) -> None:
    clock = Clock()
    leader = partition_on_disk(tmp_path, broker_id=1, flush_policy=FLUSH_INTERVAL, clock_ms=clock)
    leader.apply_record(leadership(1, replicas=(1, 2)), min_insync_replicas=1)
    await leader.append(encode_batch([(None, b"a")]), Acks.ONE, timeout_ms=1_000)
    follower = Follower(leader, 2, LeaderSessions(new_session_id=lambda: SESSION_ID))
    await follower.fetch(1)
    parked = asyncio.create_task(follower.fetch(max_wait_ms=60_000))
    await asyncio.sleep(0.05)
    assert not parked.done(), "the fetch found the partition quiet and parked"
    await leader.append(encode_batch([(None, b"b")]), Acks.ONE, timeout_ms=1_000)
    async with asyncio.timeout(5):
        response = await parked
    assert [(p.partition, p.log_end_offset) for p in response.partitions] == [(0, 2)]


async def test_a_fetch_parked_across_an_isr_shrink_does_not_put_the_follower_back(tmp_path: Path) -> None:
    """The controller takes a follower out of the ISR (its controlled shutdown) while the
    follower's last fetch is parked here: waking that fetch must not record it as a new
    one, or the leader would propose the follower back at once (KIP-841)."""
    proposals: list[ProposeIsr] = []

    async def remember(proposal: ProposeIsr) -> None:
        proposals.append(proposal)

    clock = Clock()
    leader = partition_on_disk(tmp_path, broker_id=1, flush_policy=FLUSH_INTERVAL, propose_isr=remember, clock_ms=clock)
    record = leadership(1, replicas=(1, 2, 3))
    leader.apply_record(record, min_insync_replicas=1)
    await leader.append(encode_batch([(None, b"a")]), Acks.ONE, timeout_ms=1_000)
    second, third = (Follower(leader, r, LeaderSessions(new_session_id=lambda: SESSION_ID)) for r in (2, 3))
    for follower in (second, third):
        await follower.fetch(1)
    for follower in (second, third):
        await follower.fetch()
        assert (await follower.fetch()).partitions == []
    parked = asyncio.create_task(second.fetch(max_wait_ms=300))
    await asyncio.sleep(0.05)
    leader.apply_record(record.model_copy(update={"isr": [1, 3], "partition_epoch": 8}), min_insync_replicas=1)
    async with asyncio.timeout(5):
        await parked
    await asyncio.sleep(0)
    assert proposals == []

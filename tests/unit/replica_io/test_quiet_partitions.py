"""Quiet partitions in a leader's fetch sessions: skipped while unchanged, never stale.

An idle follower's rounds used to record and re-check every partition of its session;
with 10 000 idle partitions that was 80 % of a broker's CPU, and a refresh of every quiet
partition every quarter lag time still 17 % of an idle broker's profile. A partition found
quiet (repeated, recorded in O(1), at the log end, nothing new to tell) is now skipped
while its replica's generation is unchanged, and its follower's state counts the
session's rounds as its fetches. These tests drive the real handler over a real leader
log and check what must still hold: an append, a HW moved by another follower and a new
incarnation of the follower reach the follower as before; the fetch times move with every
round and with no other, so a follower that stops fetching still leaves the ISR.
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
LAG_MS = 10_000
"""``partition_on_disk``'s ``replica_lag_time_max_ms``."""


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


class Follower:
    """One follower broker's session with the leader, its requests written out by hand."""

    def __init__(self, leader: Partition, replica_id: int, sessions: LeaderSessions, clock: Clock) -> None:
        self.leader = leader
        self.clock = clock
        self.replica_id = replica_id
        self.sessions = sessions
        self.epoch = 0
        self.registered_broker_epoch = BROKER_EPOCH
        self.broker_epoch = BROKER_EPOCH

    async def fetch(
        self, named_offset: int | None = None, *, max_wait_ms: int = 0, forget: bool = False
    ) -> FetchResponse:
        """A full fetch first, then incremental ones naming the partition only with ``named_offset``
        (or forgetting it, with ``forget``)."""
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
            forgotten=((TOPIC, 0),) if forget else (),
        )
        self.epoch += 1
        return await serve_replica_fetch(
            request,
            lambda topic, number: self.leader,
            lambda broker_id: self.registered_broker_epoch,
            self.sessions,
            clock_ms=self.clock,
        )

    def caught_up_ms_ago(self) -> int:
        rows = self.leader.replicas_state() or []
        return next(row["caught_up_ms_ago"] for row in rows if row["broker_id"] == self.replica_id)


async def _leader_with_quiet_followers(
    tmp_path: Path, clock: Clock, replicas: tuple[int, ...], proposals: list[ProposeIsr] | None = None
) -> list[Follower]:
    """A leader of ``replicas`` holding one record, every follower caught up and its partition
    quiet; the leader's ISR proposals go to ``proposals``."""

    async def remember(proposal: ProposeIsr) -> None:
        if proposals is not None:
            proposals.append(proposal)

    leader = partition_on_disk(tmp_path, broker_id=1, flush_policy=FLUSH_INTERVAL, propose_isr=remember, clock_ms=clock)
    leader.apply_record(leadership(1, replicas=replicas), min_insync_replicas=1)
    await leader.append(encode_batch([(None, b"a")]), Acks.ONE, timeout_ms=1_000)
    followers = [
        Follower(leader, replica_id, LeaderSessions(new_session_id=lambda: SESSION_ID), clock)
        for replica_id in replicas[1:]
    ]
    for follower in followers:
        await follower.fetch(1)
    assert leader.high_watermark == 1
    for follower in followers:
        await follower.fetch()
        assert (await follower.fetch()).partitions == []
    return followers


async def test_an_unchanged_quiet_partition_is_skipped_yet_every_round_counts_as_its_fetch(tmp_path: Path) -> None:
    clock = Clock()
    (follower,) = await _leader_with_quiet_followers(tmp_path, clock, (1, 2))
    clock.now_ms += 3_000
    assert (await follower.fetch()).partitions == []
    assert follower.sessions.by_replica[2].active == {}, "the round looked at no partition"
    assert follower.caught_up_ms_ago() == 0, "yet the round counts as the follower's fetch"
    clock.now_ms += 3_000
    assert follower.caught_up_ms_ago() == 3_000, "no round since: nothing counted"


async def test_a_quiet_follower_still_fetching_stays_in_the_isr_when_an_append_ends_the_quiet(tmp_path: Path) -> None:
    """Quiet for longer than the lag time, fetching all along: the append that stirs it must
    find it caught up as of its last round, not as of the fetch that found it quiet."""
    proposals: list[ProposeIsr] = []
    clock = Clock()
    (follower,) = await _leader_with_quiet_followers(tmp_path, clock, (1, 2), proposals)
    for _ in range(2 * LAG_MS // 1_000):
        clock.now_ms += 1_000
        assert (await follower.fetch()).partitions == []
    await follower.leader.append(encode_batch([(None, b"b")]), Acks.ONE, timeout_ms=1_000)
    clock.now_ms += 1
    follower.leader.tick()
    await asyncio.sleep(0)
    assert proposals == []
    assert follower.caught_up_ms_ago() == 1


async def test_a_quiet_follower_that_stops_fetching_leaves_the_isr_once_it_lags(tmp_path: Path) -> None:
    proposals: list[ProposeIsr] = []
    clock = Clock()
    (follower,) = await _leader_with_quiet_followers(tmp_path, clock, (1, 2), proposals)
    clock.now_ms += LAG_MS + 1
    await follower.leader.append(encode_batch([(None, b"b")]), Acks.ONE, timeout_ms=1_000)
    follower.leader.tick()
    await asyncio.sleep(0)
    assert [(p.change, p.new_isr) for p in proposals] == [("shrink", (1,))]


async def test_a_round_after_an_append_is_not_counted_as_a_fetch_at_the_new_end(tmp_path: Path) -> None:
    """The append stirs the partition and stops its follower counting rounds at once: the next
    round's stamp must not say the follower was caught up with a record it does not have."""
    proposals: list[ProposeIsr] = []
    clock = Clock()
    (follower,) = await _leader_with_quiet_followers(tmp_path, clock, (1, 2), proposals)
    await follower.leader.append(encode_batch([(None, b"b")]), Acks.ONE, timeout_ms=1_000)
    clock.now_ms += LAG_MS + 1
    await follower.fetch()
    follower.leader.tick()
    await asyncio.sleep(0)
    assert [(p.change, p.new_isr) for p in proposals] == [("shrink", (1,))], (
        "caught up last before the append, more than the lag time ago"
    )


async def test_a_forgotten_quiet_partition_counts_its_session_s_rounds_no_more(tmp_path: Path) -> None:
    clock = Clock()
    (follower,) = await _leader_with_quiet_followers(tmp_path, clock, (1, 2))
    assert (await follower.fetch(forget=True)).partitions == []
    clock.now_ms += 3_000
    assert (await follower.fetch()).partitions == []
    assert follower.caught_up_ms_ago() == 3_000, "the follower no longer fetches it: its rounds are not its fetches"


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
    follower = Follower(leader, 2, LeaderSessions(new_session_id=lambda: SESSION_ID), clock)
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
    second, third = (Follower(leader, r, LeaderSessions(new_session_id=lambda: SESSION_ID), clock) for r in (2, 3))
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

"""Leader epochs and truncation (KIP-101, KIP-279, KIP-320/595 truncation on fetch).

Two replicas, each with its own in-memory log and its own ``LeaderEpochCache``, wired
through the real leader and follower state machines: the follower builds its fetch,
the leader validates it, the follower applies the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.replication import (
    AppendRecords,
    DivergingEpoch,
    FollowerState,
    LocalLogView,
    PartitionFetchResponse,
    PartitionLeaderState,
    TruncateTo,
)
from broker.storage.epoch_cache import EpochEntry, LeaderEpochCache
from tests.unit.replication.factories import Incarnation, current_incarnation


@dataclass
class MemoryLog:
    """One replica's log: (leader epoch, value) per offset, plus its epoch cache."""

    records: list[tuple[int, str]] = field(default_factory=list)
    cache: LeaderEpochCache = field(default_factory=LeaderEpochCache)

    @property
    def log_end_offset(self) -> int:
        return len(self.records)

    def append(self, leader_epoch: int, value: str) -> None:
        self.cache.assign(leader_epoch, self.log_end_offset)
        self.records.append((leader_epoch, value))

    def truncate(self, offset: int) -> None:
        del self.records[offset:]
        self.cache.truncate_from_end(offset)

    def view(self) -> LocalLogView:
        return LocalLogView(0, self.log_end_offset, self.cache, self.log_end_offset)


def become_leader(
    broker_id: int,
    replicas: tuple[int, ...],
    log: MemoryLog,
    epoch: int,
    high_watermark: int,
) -> PartitionLeaderState:
    """A new leader records (epoch, LEO) in its cache before its first append (KIP-101)."""
    log.cache.assign(epoch, log.log_end_offset)
    return PartitionLeaderState(
        topic="orders",
        partition=0,
        local_broker_id=broker_id,
        leader_epoch=epoch,
        partition_epoch=epoch,
        replicas=replicas,
        isr=replicas,
        min_insync_replicas=1,
        log_start_offset=0,
        log_end_offset=log.log_end_offset,
        high_watermark=high_watermark,
        leader_epoch_start_offset=log.log_end_offset,
        replica_lag_time_max_ms=10_000,
        now_ms=0,
    )


def become_follower(broker_id: int, leader_id: int, epoch: int, high_watermark: int):
    return FollowerState(
        topic="orders",
        partition=0,
        local_broker_id=broker_id,
        leader_id=leader_id,
        leader_epoch=epoch,
        high_watermark=high_watermark,
    )


def fetch_once(
    leader: PartitionLeaderState,
    leader_log: MemoryLog,
    follower: FollowerState,
    follower_log: MemoryLog,
    now_ms: int,
):
    """One fetch round trip; returns the follower actions it performed."""
    request = follower.fetch_request(follower_log.view())
    outcome = leader.on_follower_fetch(
        request.replica_id,
        request.fetch_offset,
        now_ms,
        last_fetched_epoch=request.last_fetched_epoch,
        current_leader_epoch=request.current_leader_epoch,
        epoch_cache=leader_log.cache,
        **current_incarnation(request.replica_id),
    )
    batch = []
    if outcome.read_from_offset is not None:
        batch = leader_log.records[outcome.read_from_offset :]
    response = PartitionFetchResponse(
        high_watermark=outcome.high_watermark,
        log_start_offset=outcome.log_start_offset,
        log_end_offset=outcome.log_end_offset,
        error=outcome.error,
        diverging_epoch=outcome.diverging_epoch,
        records_last_offset=request.fetch_offset + len(batch) - 1 if batch else None,
    )
    actions = follower.on_fetch_response(response, follower_log.view())
    for action in actions:
        if isinstance(action, TruncateTo):
            follower_log.truncate(action.offset)
        elif isinstance(action, AppendRecords):
            for epoch, value in batch:
                follower_log.append(epoch, value)
    return actions


def replicate_until_quiet(leader, leader_log, follower, follower_log, now_ms=0, rounds=6):
    """Fetch a fixed number of times: the follower learns the HW one fetch after the
    leader does, so a quiet state can take two empty rounds; extra rounds are no-ops."""
    return [fetch_once(leader, leader_log, follower, follower_log, now_ms) for _ in range(rounds)]


def test_kip101_scenario_1_follower_restart_keeps_what_the_leader_hw_covers():
    """KIP-101 #1 (scenario 8): B has fetched m1 and A's HW covers it, but B's own HW
    does not yet. B restarts, then A dies at once. B must not truncate to its HW: it
    fetches from its LEO, and as the new leader it still holds m1."""
    a_log, b_log = MemoryLog(), MemoryLog()
    a = become_leader(1, (1, 2), a_log, epoch=1, high_watermark=0)
    b = become_follower(2, 1, 1, high_watermark=0)
    for value in ("m0", "m1"):
        a_log.append(1, value)
        a.on_leader_append(a_log.log_end_offset, now_ms=1)
    fetch_once(a, a_log, b, b_log, now_ms=2)  # B gets m0 and m1
    fetch_once(a, a_log, b, b_log, now_ms=3)  # A learns B's LEO 2: A's HW covers m1
    assert a.high_watermark == 2 and b.high_watermark == 0  # B learns it one fetch late

    restarted_b = become_follower(2, 1, 1, high_watermark=b.high_watermark)
    request = restarted_b.fetch_request(b_log.view())
    assert request.fetch_offset == 2 and request.last_fetched_epoch == 1
    # A dies before answering; B is elected (it is in the ISR) in epoch 2.
    new_leader = become_leader(2, (1, 2), b_log, epoch=2, high_watermark=restarted_b.high_watermark)
    assert b_log.records == [(1, "m0"), (1, "m1")]
    # A comes back as a follower: nothing diverges, and the HW reaches m1 again.
    a_follower = become_follower(1, 2, 2, high_watermark=a.high_watermark)
    history = replicate_until_quiet(new_leader, b_log, a_follower, a_log)
    assert not any(isinstance(x, TruncateTo) for actions in history for x in actions)
    assert new_leader.high_watermark == 2
    assert a_log.records == b_log.records


def test_kip101_scenario_2_replica_divergence_after_power_loss():
    """KIP-101 #2 (scenario 9): B loses m1, comes back first, leads epoch 2 and writes
    m2 at offset 1. A returns with m1 at offset 1: the leader answers a diverging epoch,
    A truncates to 1 (not to its HW 2), re-fetches, and the logs end identical."""
    a_log = MemoryLog()
    a_log.append(1, "m0")
    a_log.append(1, "m1")
    b_log = MemoryLog()
    b_log.append(1, "m0")  # m1 was never flushed on B
    b = become_leader(2, (1, 2), b_log, epoch=2, high_watermark=1)
    b_log.append(2, "m2")
    b.on_leader_append(b_log.log_end_offset, now_ms=1)

    a = become_follower(1, 2, 2, high_watermark=2)
    first = fetch_once(b, b_log, a, a_log, now_ms=2)
    assert first == [TruncateTo(1, 1)]
    replicate_until_quiet(b, b_log, a, a_log, now_ms=3)
    assert a_log.records == b_log.records == [(1, "m0"), (2, "m2")]
    assert a_log.cache.entries == b_log.cache.entries == [EpochEntry(1, 0), EpochEntry(2, 1)]
    assert b.high_watermark == 2 and a.high_watermark == 2


def test_diverging_epoch_the_follower_never_saw_takes_two_rounds():
    """KIP-279: the follower holds a zombie epoch (2) the leader never had. The leader
    answers epoch 1 ending at 8; the follower lacks epoch 1, so it first cuts to the end
    of its epoch 0 (5), then to where the leader's epoch 0 ends (3)."""
    leader_log = MemoryLog()
    for offset in range(8):
        leader_log.append(0 if offset < 3 else 1, f"L{offset}")
    leader = become_leader(1, (1, 2), leader_log, epoch=3, high_watermark=3)
    follower_log = MemoryLog()
    for offset in range(7):
        follower_log.append(0 if offset < 5 else 2, f"F{offset}" if offset >= 3 else f"L{offset}")
    follower = become_follower(2, 1, 3, high_watermark=3)

    assert fetch_once(leader, leader_log, follower, follower_log, 1) == [TruncateTo(5, 3)]
    assert fetch_once(leader, leader_log, follower, follower_log, 2) == [TruncateTo(3, 3)]
    replicate_until_quiet(leader, leader_log, follower, follower_log, now_ms=3)
    assert follower_log.records == leader_log.records


class FollowerFetchContext(Incarnation):
    """``on_follower_fetch``'s keyword arguments that do not change from fetch to fetch."""

    current_leader_epoch: int
    epoch_cache: LeaderEpochCache


def test_leader_reports_where_the_followers_last_epoch_ends():
    """Leader check: end epoch != last fetched epoch, or end offset < fetch offset."""
    leader_log = MemoryLog()
    leader_log.cache.assign(1, 0)
    leader_log.cache.assign(4, 10)
    leader_log.records = [(1, "x")] * 10 + [(4, "y")] * 5
    leader = become_leader(1, (1, 2), leader_log, epoch=6, high_watermark=0)
    common: FollowerFetchContext = {
        "current_leader_epoch": 6,
        "epoch_cache": leader_log.cache,
        **current_incarnation(2),
    }
    assert leader.on_follower_fetch(2, 12, 0, last_fetched_epoch=1, **common).diverging_epoch == (DivergingEpoch(1, 10))
    assert leader.on_follower_fetch(2, 10, 0, last_fetched_epoch=3, **common).diverging_epoch == (DivergingEpoch(1, 10))
    ok = leader.on_follower_fetch(2, 10, 0, last_fetched_epoch=1, **common)
    assert ok.diverging_epoch is None and ok.read_from_offset == 10

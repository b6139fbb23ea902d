"""Builders for the replication unit tests: real state machines, no mocks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from broker.replication import PartitionLeaderState
from broker.storage.epoch_cache import LeaderEpochCache

TOPIC = "orders"
PARTITION = 0
LEADER_ID = 1
LAG_MS = 10_000


def registered_broker_epoch(replica_id: int) -> int:
    """The broker epoch each follower broker is registered with in these tests."""
    return 100 * replica_id


class Incarnation(TypedDict):
    broker_epoch: int
    registered_broker_epoch: int


def current_incarnation(replica_id: int) -> Incarnation:
    """Broker-epoch arguments of a fetch from the registered incarnation of ``replica_id``."""
    epoch = registered_broker_epoch(replica_id)
    return {"broker_epoch": epoch, "registered_broker_epoch": epoch}


def make_leader(
    *,
    replicas: Sequence[int] = (1, 2, 3),
    isr: Sequence[int] | None = None,
    min_insync_replicas: int = 2,
    log_end_offset: int = 0,
    high_watermark: int = 0,
    log_start_offset: int = 0,
    leader_epoch: int = 5,
    partition_epoch: int = 10,
    leader_epoch_start_offset: int | None = None,
    now_ms: int = 0,
    flush_bounds_high_watermark: bool = False,
    flushed_offset: int = 0,
) -> PartitionLeaderState:
    """A leader for broker 1 that has just taken over ``orders-0`` in ``leader_epoch``."""
    return PartitionLeaderState(
        topic=TOPIC,
        partition=PARTITION,
        local_broker_id=LEADER_ID,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        replicas=replicas,
        isr=replicas if isr is None else isr,
        min_insync_replicas=min_insync_replicas,
        log_start_offset=log_start_offset,
        log_end_offset=log_end_offset,
        high_watermark=high_watermark,
        leader_epoch_start_offset=(log_end_offset if leader_epoch_start_offset is None else leader_epoch_start_offset),
        replica_lag_time_max_ms=LAG_MS,
        now_ms=now_ms,
        flush_bounds_high_watermark=flush_bounds_high_watermark,
        flushed_offset=flushed_offset,
    )


def leader_cache(leader: PartitionLeaderState) -> LeaderEpochCache:
    """The leader's epoch cache after it recorded (its epoch, its epoch start offset)."""
    cache = LeaderEpochCache()
    cache.assign(leader.leader_epoch, leader.leader_epoch_start_offset)
    return cache


def fetch(
    leader: PartitionLeaderState,
    replica_id: int,
    fetch_offset: int,
    now_ms: int,
    *,
    cache: LeaderEpochCache | None = None,
    broker_epoch: int | None = None,
    registered: int | None = None,
    log_start_offset: int | None = None,
):
    """A well-behaved follower fetch in the leader's current epoch, by default from the
    registered incarnation of the follower's broker."""
    return leader.on_follower_fetch(
        replica_id,
        fetch_offset,
        now_ms,
        last_fetched_epoch=leader.leader_epoch,
        current_leader_epoch=leader.leader_epoch,
        epoch_cache=cache if cache is not None else leader_cache(leader),
        broker_epoch=registered_broker_epoch(replica_id) if broker_epoch is None else broker_epoch,
        registered_broker_epoch=registered_broker_epoch(replica_id) if registered is None else registered,
        log_start_offset=log_start_offset,
    )

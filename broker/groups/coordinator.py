"""The group coordinator of one broker: the groups of the ``__consumer_offsets`` partitions it leads.

Placement. A group lives in partition ``abs(hashCode(group_id)) % n`` of
``__consumer_offsets`` (created on first use by the controller: ``n`` =
``offsets_topic_num_partitions``, replication factor min(3, live brokers), compacted).
Its coordinator is that partition's leader. ``route`` answers the local shard when this
broker leads the partition, else the leader's URL for the HTTP layer to forward to.

Loading. ``on_partition_role`` (called by the broker's replicas after every partition
record they apply) notices a new leadership of an offsets partition and replays the
partition from its log start into a fresh ``OffsetsShard``; requests for its groups wait
for the replay (``COORDINATOR_LOAD_IN_PROGRESS`` if it takes too long). A lost leadership drops
the shard at once, so a deposed coordinator never answers for a group again.

Writes. A commit is validated against the membership (fencing) and against each
partition's high watermark (``broker.groups.commit_bounds``), written as keyed
records with acks=all to the partition this broker leads, and applied to the shard
only once acknowledged. Membership (heartbeats, expulsions) is in memory.

Classic groups. Kafka clients' JoinGroup/SyncGroup groups (``broker.groups.classic``)
share the shards, the commits and the lag with the HTTP (KIP-848) groups. A group has
members of one protocol at a time: a classic JoinGroup for a group with HTTP members,
and an HTTP heartbeat, commit or delete for a group with classic members, are refused
with a message naming the other protocol. A JoinGroup, and a SyncGroup waiting for the
leader's assignments, wait here (``_await_classic``) for the change that answers them:
every change to a classic group wakes the waiters, which re-ask the pure state machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import structlog

from broker.acks import Acks
from broker.clock import wall_clock_ms
from broker.errors import InvalidRequest
from broker.errors.groups import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    NonEmptyGroup,
    NotCoordinator,
)
from broker.groups.assignors import TopicPartition
from broker.groups.classic import ClassicGroup, ClassicGroupError, JoinRequest, JoinResult
from broker.groups.commit_bounds import check_commit_offset
from broker.groups.internal_topic import InternalTopic, replay
from broker.groups.lag import LagRow, group_lag_rows
from broker.groups.membership import HeartbeatRequest, HeartbeatResponse
from broker.groups.offsets_records import OffsetKey, OffsetValue, partition_for_group
from broker.groups.rest_driver import RestInstanceDriver
from broker.groups.shard import CommittedOffset, GroupState, OffsetsShard
from broker.groups.sharded_coordinator import ShardedCoordinator
from broker.record.codec import Record, RecordInput, encode_batch
from broker.record.control import marker_of
from broker.record.header import BatchHeader
from broker.topics.policy import OFFSETS_TOPIC
from broker.waiting import RetryDeadline, wait_event

if TYPE_CHECKING:
    from broker.groups.host import GroupHost
    from broker.replica_io.partition import Partition

log = structlog.get_logger(__name__)
T = TypeVar("T")

OFFSETS_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": str(100 * 1024 * 1024),
    "retention.ms": "-1",
    "retention.bytes": "-1",
}
"""Compacted, never deleted by age or size, whatever the broker's topic defaults (``check_internal_configs``)."""
COMMIT_TIMEOUT_MS = 5000
ROUTE_WAIT_S = 5.0
ROUTE_RETRY_INITIAL_S = 0.05
ROUTE_RETRY_MAX_S = 0.4
EXPIRY_CHECK_INTERVAL_S = 0.1
LAG_METRICS_INTERVAL_S = 5.0
CLASSIC_WAIT_MARGIN_S = 5.0
"""How much longer than the rebalance timeout a JoinGroup or SyncGroup waits before answering
REBALANCE_IN_PROGRESS: the expiry loop ends every rebalance at its deadline, so this is a backstop."""


class ClassicGroupInUse(NonEmptyGroup):
    """An HTTP (KIP-848) request for a group whose members speak Kafka's classic protocol."""

    error_code = 40913


def _replay(partition: Partition, shard: OffsetsShard, start: int) -> int:
    """Every record from ``start`` to the log end as it is now, in order; returns where it stopped.

    A transaction's records (TxnOffsetCommit) are pending until their producer's marker,
    which applies (COMMIT) or drops (ABORT) them.
    """

    def apply(header: BatchHeader, records: list[Record]) -> None:
        if header.is_control:
            marker = marker_of(header, records[0].key, records[0].value)
            if marker is not None:
                shard.apply_marker(marker.producer_id, marker.committed)
            return
        producer_id = header.producer_id if header.is_transactional else None
        for record in records:
            shard.apply_record(record.offset, record.key, record.value, producer_id)

    return replay(partition.log, start, apply)


def _offset_records(
    group_id: str, offsets: Sequence[tuple[str, int, int | None, str]], timestamp_ms: int
) -> list[RecordInput]:
    """One ``__consumer_offsets`` record per (topic, partition, offset, metadata); offset None is a tombstone."""
    return [
        RecordInput(
            OffsetKey(group_id, topic, partition_id).encode(),
            None if offset is None else OffsetValue(offset, metadata, timestamp_ms).encode(),
            (),
            timestamp_ms,
        )
        for topic, partition_id, offset, metadata in offsets
    ]


class GroupCoordinator(ShardedCoordinator[OffsetsShard]):
    """See the module docstring. ``node.groups`` of every broker; ``host`` is that broker."""

    def __init__(self, host: GroupHost) -> None:
        super().__init__(OFFSETS_TOPIC)
        self.host = host
        self.lag_snapshot: list[tuple[str, LagRow]] = []
        self.offsets_topic = InternalTopic(
            host,
            OFFSETS_TOPIC,
            OFFSETS_TOPIC_CONFIGS,
            lambda: host.settings.offsets_topic_num_partitions,
            "groups/offsets-topic",
        )
        self._classic_changed = asyncio.Event()
        self.rest = RestInstanceDriver(self)
        """REST Proxy v2 consumer instances of the groups coordinated here (``broker.groups.rest_driver``)."""

    def start(self) -> None:
        self.run_loop(self._expiry_loop(), "group-expiry")
        self.run_loop(self._lag_metrics_loop(), "group-lag-metrics")

    # ------------------------------------------------------------ loading

    def _new_shard(self, partition_id: int, leader_epoch: int) -> OffsetsShard:
        return OffsetsShard(partition_id, leader_epoch)

    def _unloaded(self, shard: OffsetsShard) -> None:
        self._classic_notify()
        log.info("coordinator.unloaded", partition=shard.partition, leader_epoch=shard.leader_epoch)

    async def _load(self, partition: Partition, shard: OffsetsShard) -> None:
        """Replay in the executor, then the tail appended meanwhile on the loop: a transaction marker
        written while the replay ran is in that tail, and from ``loaded`` on the hook applies it."""
        started = time.monotonic()
        replayed = await asyncio.get_running_loop().run_in_executor(
            None, _replay, partition, shard, partition.log.log_start_offset
        )
        _replay(partition, shard, replayed)
        shard.touch_instances(wall_clock_ms())
        shard.loaded = True
        log.info(
            "coordinator.loaded",
            partition=shard.partition,
            leader_epoch=shard.leader_epoch,
            groups=len(shard.groups),
            records=shard.records_replayed,
            duration_ms=round((time.monotonic() - started) * 1000, 1),
        )

    def on_transaction_marker(self, partition: Partition, producer_id: int, committed: bool) -> None:
        """Hook: this broker's leader of ``partition`` wrote a transaction marker. In ``__consumer_offsets``
        it ends the offsets the transaction committed there (TxnOffsetCommit)."""
        if partition.topic != OFFSETS_TOPIC:
            return
        shard = self.shards.get(partition.partition)
        if shard is None or not shard.loaded or shard.leader_epoch != partition.leader_epoch:
            return
        applied = shard.apply_marker(producer_id, committed)
        log.info(
            "coordinator.transaction_offsets_ended",
            partition=partition.partition,
            producer_id=producer_id,
            committed=committed,
            offsets=len(applied),
        )
        if applied:
            self.spawn(self._sample_lag([(topic, number, sample) for _, (topic, number), sample in applied]))

    def led_partition(self, shard: OffsetsShard) -> Partition:
        partition = self.host.replicas.local_partition(OFFSETS_TOPIC, shard.partition)
        if partition is None or not partition.is_leader or partition.leader_epoch != shard.leader_epoch:
            self.shards.pop(shard.partition, None)
            raise NotCoordinator(f"broker {self.host.node_id} no longer coordinates this group; retry")
        return partition

    # ------------------------------------------------------------ topic and routing

    async def ensure_offsets_topic(self) -> None:
        await self.offsets_topic.ensure()

    async def route(self, group_id: str, *, forwarded: bool) -> OffsetsShard | str:
        """The loaded local shard of ``group_id``, or the coordinator's URL to forward to."""
        if not group_id:
            raise InvalidRequest("group id must not be empty")
        await self.ensure_offsets_topic()
        partition_id = partition_for_group(group_id, self.host.catalog.partition_count(OFFSETS_TOPIC))
        retry = RetryDeadline(ROUTE_WAIT_S, ROUTE_RETRY_INITIAL_S, ROUTE_RETRY_MAX_S)
        while True:
            record = self.host.view.partitions.get((OFFSETS_TOPIC, partition_id))
            shard = self.shards.get(partition_id)
            if shard is not None and shard.loaded:
                self.led_partition(shard)
                return shard
            leader = record.leader if record is not None else -1
            if leader >= 0 and leader != self.host.node_id:
                url = self.host.view.broker_url(leader)
                if forwarded:
                    raise NotCoordinator(
                        f"broker {self.host.node_id} does not coordinate group {group_id!r}; broker {leader} does",
                        coordinator_id=leader,
                        coordinator_url=url,
                    )
                if url is not None:
                    return url
            if not await retry.pause():
                if shard is not None:
                    raise CoordinatorLoadInProgress(f"the coordinator of group {group_id!r} is still loading")
                raise CoordinatorNotAvailable(f"no coordinator for group {group_id!r} right now; retry shortly")

    # ------------------------------------------------------------ membership

    def heartbeat(
        self, shard: OffsetsShard, group_id: str, request: HeartbeatRequest, assignor: str
    ) -> HeartbeatResponse:
        self.led_partition(shard)
        self.refuse_classic(shard, group_id)
        state = shard.group(group_id, assignor)
        counts = {name: topic.partitions_count for name, topic in self.host.view.topics.items() if not topic.internal}
        return state.membership.heartbeat(request, counts, wall_clock_ms())

    def leave(self, shard: OffsetsShard, group_id: str, member_id: str) -> None:
        self.led_partition(shard)
        shard.group(group_id).membership.remove_member(member_id, "left")

    async def _expiry_loop(self) -> None:
        """Expel silent members; forget groups left without members and commits."""
        while True:
            await asyncio.sleep(EXPIRY_CHECK_INTERVAL_S)
            now = wall_clock_ms()
            for shard in list(self.shards.values()):
                for group_id, state in list(shard.groups.items()):
                    self.rest.tick(shard, state, now)
                    if state.classic is not None and state.classic.expire(now):
                        self._classic_notify()
                    for member_id in state.membership.expire(now):
                        log.info(
                            "coordinator.member_expelled",
                            group_id=group_id,
                            member_id=member_id,
                            group_epoch=state.membership.group_epoch,
                        )
                    if state.is_empty:
                        del shard.groups[group_id]

    # ------------------------------------------------------------ offsets

    async def commit(
        self,
        shard: OffsetsShard,
        group_id: str,
        member_id: str | None,
        member_epoch: int | None,
        offsets: list[tuple[str, int, int, str]],
    ) -> None:
        """Validate (fencing), write with acks=all, then apply. ``offsets``: (topic, partition, offset, metadata)."""
        for topic, partition_id, _, _ in offsets:
            self.host.catalog.partition_record(topic, partition_id)
        self.refuse_classic(shard, group_id)
        state = shard.group(group_id)
        state.membership.validate_commit(member_id, member_epoch)
        await self._check_commit_bounds(offsets)
        await self._write_commits(shard, state, offsets)

    async def _check_commit_bounds(self, offsets: list[tuple[str, int, int, str]]) -> None:
        """``check_commit_offset`` against each partition's leader; an offset this broker's replica
        already holds below its HW needs no question (a follower's HW never passes its leader's)."""
        unsure: dict[str, list[tuple[int, int]]] = {}
        for topic, partition_id, offset, _ in offsets:
            local = self.host.replicas.local_partition(topic, partition_id)
            if local is None or offset > local.high_watermark:
                unsure.setdefault(topic, []).append((partition_id, offset))
        for topic, wanted in unsure.items():
            leaders = await self.host.describer.leader_descriptions(topic)
            for partition_id, offset in wanted:
                described = leaders.get(partition_id)
                if described is not None:
                    check_commit_offset(topic, partition_id, offset, described.high_watermark, described.log_end_offset)

    async def _write_commits(
        self, shard: OffsetsShard, state: GroupState, offsets: Sequence[tuple[str, int, int | None, str]]
    ) -> None:
        """``offset`` None writes a tombstone (the commit is deleted)."""
        if not offsets:
            return
        group_id = state.membership.group_id
        timestamp = wall_clock_ms()
        records = _offset_records(group_id, offsets, timestamp)
        outcome = await self.led_partition(shard).append(encode_batch(records), Acks.ALL, COMMIT_TIMEOUT_MS)
        state = shard.groups.setdefault(group_id, state)  # the expiry loop may have dropped it while empty
        sampled = []
        for index, (topic, partition_id, offset, metadata) in enumerate(offsets):
            record_offset = outcome.base_offset + index
            if offset is None:
                state.apply_delete((topic, partition_id), record_offset)
                continue
            sample = state.apply_commit(
                (topic, partition_id), CommittedOffset(offset, metadata, timestamp, record_offset)
            )
            if sample is not None:
                sampled.append((topic, partition_id, sample))
        log.info(
            "coordinator.committed",
            group_id=group_id,
            partitions=len(offsets),
            offsets_partition=shard.partition,
            record_offset=outcome.base_offset,
        )
        if sampled:
            self.spawn(self._sample_lag(sampled))

    async def _sample_lag(self, sampled: list) -> None:
        """Fill each new commit sample's lag from the high watermark now (Burrow's window input)."""
        high_watermarks: dict[tuple[str, int], int] = {}
        for topic in {topic for topic, _, _ in sampled}:
            with contextlib.suppress(Exception):
                for described in await self.host.describer.describe_partitions(topic):
                    high_watermarks[(topic, described.partition)] = described.high_watermark
        for topic, partition_id, sample in sampled:
            high_watermark = high_watermarks.get((topic, partition_id), -1)
            if high_watermark >= 0:
                sample.lag = max(0, high_watermark - sample.offset)

    async def delete_group(self, shard: OffsetsShard, group_id: str) -> int:
        """Kafka's DeleteGroups: only a group without members; tombstones for every committed offset and
        every REST Proxy v2 instance left in it (unsubscribed ones, which are no members), whose records
        would otherwise outlive the group and bring it back on the next load."""
        self.refuse_classic(shard, group_id)
        state = shard.group(group_id)
        state.membership.validate_commit(None, None)
        await self.rest.remove_all(shard, state, wall_clock_ms())
        offsets = [(topic, partition_id, None, "") for topic, partition_id in sorted(state.offsets)]
        await self._write_commits(shard, state, offsets)
        shard.groups.pop(group_id, None)
        return len(offsets)

    async def delete_offsets(self, shard: OffsetsShard, group_id: str, partitions: Sequence[TopicPartition]) -> int:
        """Kafka's OffsetDelete: tombstones for the commits of ``partitions`` the group has; how many.

        The caller leaves out the topics the group subscribes to while it has members
        (``GroupState.subscribes_to``): their offsets are the members' positions.
        """
        state = shard.group(group_id)
        offsets = [
            (topic, partition_id, None, "")
            for topic, partition_id in partitions
            if (topic, partition_id) in state.offsets
        ]
        await self._write_commits(shard, state, offsets)
        return len(offsets)

    # ------------------------------------------------------------ classic protocol

    def refuse_classic(self, shard: OffsetsShard, group_id: str) -> None:
        state = shard.groups.get(group_id)
        if state is not None and state.classic_members:
            raise ClassicGroupInUse(
                f"group {group_id!r} has {state.classic_members} member(s) using Kafka's classic group protocol "
                "(JoinGroup/SyncGroup over the Kafka listener); a group uses one protocol at a time: "
                "use another group id, or wait until those members leave"
            )

    def _classic(self, shard: OffsetsShard, group_id: str) -> ClassicGroup:
        """The group's classic state, created on first use; refused while it has HTTP (KIP-848) members."""
        self.led_partition(shard)
        state = shard.group(group_id)
        if state.membership.members:
            raise ClassicGroupError(
                "INCONSISTENT_GROUP_PROTOCOL",
                f"group {group_id!r} has {len(state.membership.members)} member(s) using the HTTP (KIP-848) "
                "consumer group protocol; a group uses one protocol at a time",
            )
        if state.classic is None:
            state.classic = ClassicGroup(group_id)
        return state.classic

    def _classic_notify(self) -> None:
        self._classic_changed.set()
        self._classic_changed = asyncio.Event()

    async def _await_classic(self, shard: OffsetsShard, answer: Callable[[], T | None], timeout_s: float) -> T:
        """``answer()`` once it is not None, re-asked after every classic change; NOT_COORDINATOR if deposed."""
        deadline = time.monotonic() + timeout_s
        while True:
            changed = self._classic_changed
            self.led_partition(shard)
            result = answer()
            if result is not None:
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ClassicGroupError("REBALANCE_IN_PROGRESS", "the rebalance did not complete in time; rejoin")
            await wait_event(changed, remaining)

    async def classic_join(self, shard: OffsetsShard, group_id: str, request: JoinRequest) -> JoinResult:
        group = self._classic(shard, group_id)
        member_id = group.join(request, wall_clock_ms())
        self._classic_notify()
        timeout_s = request.rebalance_timeout_ms / 1000 + CLASSIC_WAIT_MARGIN_S
        return await self._await_classic(shard, lambda: group.join_result(member_id), timeout_s)

    async def classic_sync(
        self, shard: OffsetsShard, group_id: str, member_id: str, generation: int, assignments: dict[str, bytes] | None
    ) -> bytes:
        group = self._classic(shard, group_id)
        assignment = group.sync(member_id, generation, assignments, wall_clock_ms())
        self._classic_notify()
        if assignment is not None:
            return assignment
        member = group.members[member_id]
        timeout_s = member.rebalance_timeout_ms / 1000 + CLASSIC_WAIT_MARGIN_S
        return await self._await_classic(
            shard, lambda: group.sync(member_id, generation, None, wall_clock_ms()), timeout_s
        )

    def classic_heartbeat(self, shard: OffsetsShard, group_id: str, member_id: str, generation: int) -> None:
        self._classic(shard, group_id).heartbeat(member_id, generation, wall_clock_ms())

    def classic_leave(self, shard: OffsetsShard, group_id: str, member_id: str) -> None:
        self._classic(shard, group_id).leave(member_id, wall_clock_ms())
        self._classic_notify()

    async def kafka_commit(
        self,
        shard: OffsetsShard,
        group_id: str,
        member_id: str,
        generation_or_member_epoch: int,
        offsets: list[tuple[str, int, int, str]],
    ) -> None:
        """A Kafka OffsetCommit, fenced as the group's members are: by member epoch while it has
        consumer-protocol (KIP-848) members, as ``commit`` is, else by classic generation; then
        bounded by the HW and written as ``commit`` is."""
        state = shard.groups.get(group_id)
        if state is not None and state.membership.members:
            await self.commit(shard, group_id, member_id or None, generation_or_member_epoch, offsets)
            return
        for topic, partition_id, _, _ in offsets:
            self.host.catalog.partition_record(topic, partition_id)
        self._classic(shard, group_id).validate_commit(member_id, generation_or_member_epoch, wall_clock_ms())
        await self._check_commit_bounds(offsets)
        await self._write_commits(shard, shard.group(group_id), offsets)

    async def transactional_commit(
        self,
        shard: OffsetsShard,
        group_id: str,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        generation: int,
        offsets: list[tuple[str, int, int, str]],
    ) -> None:
        """A Kafka TxnOffsetCommit (KIP-98, KIP-447): written as the transaction's records, applied at its COMMIT.

        A member and generation given (not -1) are checked, as Kafka fences a zombie
        consumer-producer (KIP-447): against the classic group's generation, or a consumer
        group member's epoch; without them the offsets are taken, as Kafka takes them from
        producers that do not name a member. The records are transactional, so the
        partition's leader (this broker) verifies them with the transaction coordinator first.
        """
        for topic, partition_id, _, _ in offsets:
            self.host.catalog.partition_record(topic, partition_id)
        state = shard.group(group_id)
        if generation >= 0 and state.classic is not None:
            state.classic.validate_commit(member_id, generation, wall_clock_ms())
        elif generation >= 0:
            state.membership.validate_commit(member_id, generation)
        await self._check_commit_bounds(offsets)
        timestamp = wall_clock_ms()
        records = _offset_records(group_id, offsets, timestamp)
        batch = encode_batch(records, producer_id=producer_id, producer_epoch=producer_epoch, is_transactional=True)
        outcome = await self.led_partition(shard).append(batch, Acks.ALL, COMMIT_TIMEOUT_MS, transactional_id)
        state = shard.groups.setdefault(group_id, state)
        pending = state.pending.setdefault(producer_id, {})
        for index, (topic, partition_id, offset, metadata) in enumerate(offsets):
            pending[(topic, partition_id)] = CommittedOffset(offset, metadata, timestamp, outcome.base_offset + index)
        log.info(
            "coordinator.transaction_offsets_written",
            group_id=group_id,
            transactional_id=transactional_id,
            producer_id=producer_id,
            partitions=len(offsets),
        )

    async def offsets_partition(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id`` (the topic created first if need be)."""
        if not group_id:
            raise InvalidRequest("group id must not be empty")
        await self.ensure_offsets_topic()
        if not self.offsets_topic.ready():  # still being created: Kafka clients retry this answer
            raise CoordinatorNotAvailable(f"{OFFSETS_TOPIC} is being created; retry shortly")
        return partition_for_group(group_id, self.host.catalog.partition_count(OFFSETS_TOPIC))

    async def coordinator_id(self, group_id: str) -> int:
        """The broker that coordinates ``group_id`` now (the leader of its offsets partition)."""
        partition_id = await self.offsets_partition(group_id)
        record = self.host.view.partitions.get((OFFSETS_TOPIC, partition_id))
        if record is None or record.leader < 0:
            raise CoordinatorNotAvailable(f"no coordinator for group {group_id!r} right now; retry shortly")
        return record.leader

    # ------------------------------------------------------------ lag

    async def lag_rows(self, shard: OffsetsShard, group_id: str) -> list[LagRow]:
        return await group_lag_rows(self.host, shard.group(group_id), wall_clock_ms())

    def local_groups(self) -> list[tuple[OffsetsShard, GroupState]]:
        return [
            (shard, state)
            for shard in list(self.shards.values())
            if shard.loaded
            for state in list(shard.groups.values())
            if not state.is_empty
        ]

    async def _lag_metrics_loop(self) -> None:
        """Refresh the lag gauges of the groups this broker coordinates (read at scrape time)."""
        while True:
            await asyncio.sleep(LAG_METRICS_INTERVAL_S)
            snapshot: list[tuple[str, LagRow]] = []
            for _, state in self.local_groups():
                try:
                    rows = await group_lag_rows(self.host, state, wall_clock_ms())
                except Exception as error:  # noqa: BLE001 - one group's failure must not stop the gauges
                    log.info("coordinator.lag_refresh_failed", group_id=state.membership.group_id, error=str(error))
                    continue
                snapshot.extend((state.membership.group_id, row) for row in rows)
            self.lag_snapshot = snapshot

"""Produce and read, answered by the local leader replica or forwarded to the partition's leader.

Invariants: only a leader replica appends or serves a client's read. A request is
forwarded at most once: forwarded requests arrive at the leader's binary endpoints,
which call with ``forward`` off, so a broker that has just stopped leading answers
``NotLeaderOrFollower`` instead of forwarding again. A produce is never retried here,
since retrying one whose outcome is unknown could append it twice.

Where the local leader appends a client's batch, ``traffic`` (``broker.console.activity``)
is bumped once per request: the offsets the append took, and the bytes; a forwarded
produce is counted by the leader that serves it, never here too. Reads are not counted
here: this is also the way the group coordinator reads a record to date a lag, which is
no client's read; the client-facing doors count theirs (see ``broker.console.activity``).
"""

from __future__ import annotations

import asyncio

from broker.acks import Acks
from broker.cluster.metadata_view import MetadataView
from broker.cluster.records import PartitionRecord
from broker.console.activity import TrafficCounters
from broker.descriptions import FetchResult, ProduceResult
from broker.errors import LeaderNotAvailable, NotLeaderOrFollower
from broker.isolation import Isolation
from broker.node.catalog import Catalog
from broker.node.forwarding import Forwarder, retry_while_leadership_moves
from broker.node.replicas import ReplicaManager
from broker.replica_io.partition import Partition
from broker.storage.log import CheckedBatches
from broker.topics.policy import check_client_append


class RequestRouter:
    """See the module docstring."""

    def __init__(
        self,
        node_id: int,
        catalog: Catalog,
        view: MetadataView,
        replicas: ReplicaManager,
        forwarder: Forwarder,
        traffic: TrafficCounters,
    ) -> None:
        self.node_id = node_id
        self.traffic = traffic
        self.catalog = catalog
        self.view = view
        self.replicas = replicas
        self.forwarder = forwarder

    def _leader_or_raise(self, topic: str, partition: int) -> tuple[Partition | None, PartitionRecord]:
        record = self.catalog.partition_record(topic, partition)
        local = self.replicas.local_partition(topic, partition)
        if local is not None and local.is_leader:
            return local, record
        if record.leader < 0:
            raise LeaderNotAvailable(
                f"{topic}-{partition} has no leader right now (no in-sync replica is alive)",
                topic_name=topic,
                partition_id=partition,
            )
        return None, record

    def _local_leader(self, topic: str, partition: int) -> Partition:
        """This broker's leader replica of the partition; ``NOT_LEADER_OR_FOLLOWER`` naming the leader when it has none."""
        local, record = self._leader_or_raise(topic, partition)
        if local is None:
            raise self._not_leader(record)
        return local

    def _not_leader(self, record: PartitionRecord) -> NotLeaderOrFollower:
        return NotLeaderOrFollower(
            f"broker {self.node_id} is not the leader of {record.topic}-{record.partition}; broker {record.leader} is",
            leader_id=record.leader,
            leader_url=self.view.broker_url(record.leader),
        )

    async def produce(
        self,
        topic: str,
        partition: int,
        batch: bytes | CheckedBatches,
        acks: Acks,
        timeout_ms: int,
        *,
        forward: bool = True,
        transactional_id: str | None = None,
    ) -> ProduceResult:
        """Append a client's batch; internal topics are refused here, whichever door the batch came through.

        A transactional batch carries its producer's ``transactional_id`` (the leader verifies it
        with the coordinator, KIP-890); such a produce is never forwarded.
        """
        check_client_append(topic)
        local, record = self._leader_or_raise(topic, partition)
        if local is not None:
            outcome = await local.append(batch, acks, timeout_ms, transactional_id)
            size = len(batch.data) if isinstance(batch, CheckedBatches) else len(batch)
            self.traffic.produced(topic, outcome.last_offset - outcome.base_offset + 1, size)
            return ProduceResult(outcome.base_offset, outcome.last_offset, outcome.log_append_time_ms)
        leader_url = self.view.inter_broker_url(record.leader)
        if not forward or transactional_id is not None or leader_url is None or record.leader == self.node_id:
            raise self._not_leader(record)
        data = batch.data if isinstance(batch, CheckedBatches) else batch
        reply = await self.forwarder.produce(leader_url, topic, partition, bytes(data), acks, timeout_ms)
        return ProduceResult(reply["base_offset"], reply["last_offset"], reply.get("log_append_time", -1))

    async def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        timeout_ms: int,
        *,
        forward: bool = True,
        isolation: Isolation = Isolation.READ_UNCOMMITTED,
    ) -> FetchResult:
        """Read from the leader; with ``forward`` (JSON readers) from any broker, waiting out a leader move."""
        if forward:
            return await retry_while_leadership_moves(
                lambda: self._fetch_once(topic, partition, offset, max_bytes, timeout_ms, True, isolation)
            )
        return await self._fetch_once(topic, partition, offset, max_bytes, timeout_ms, False, isolation)

    async def _fetch_once(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        timeout_ms: int,
        forward: bool,
        isolation: Isolation,
    ) -> FetchResult:
        local, record = self._leader_or_raise(topic, partition)
        if local is None:
            leader_url = self.view.inter_broker_url(record.leader)
            if not forward or leader_url is None or record.leader == self.node_id:
                raise self._not_leader(record)
            return await self.forwarder.fetch(leader_url, topic, partition, offset, max_bytes, timeout_ms, isolation)
        result = await local.read(offset, max_bytes, timeout_ms, isolation)
        aborted: tuple[tuple[int, int], ...] = ()
        if isolation.committed and result.data:
            found = local.log.aborted_between(offset, result.next_offset)
            aborted = tuple((txn.producer_id, txn.first_offset) for txn in found)
        return FetchResult(
            result.data,
            local.high_watermark,
            local.log_start_offset,
            local.log_end_offset,
            local.last_stable_offset,
            aborted,
        )

    async def max_timestamp_offset(self, topic: str, partition: int) -> tuple[int, int] | None:
        """(largest timestamp, its first offset) of the local leader's records below the high watermark;
        None when there is no record, or when that record is not below the HW yet (Kafka's filter)."""
        local = self._local_leader(topic, partition)
        found = await asyncio.get_running_loop().run_in_executor(None, local.log.max_timestamp_offset)
        return found if found is not None and found[1] < local.high_watermark else None

    async def delete_records(self, topic: str, partition: int, before_offset: int, timeout_ms: int) -> int:
        """DeleteRecords on the local leader (``Partition.delete_records``); the low watermark.

        Not forwarded: a Kafka client sends it to the leader, and the HTTP route passes
        it there itself. ``NOT_LEADER_OR_FOLLOWER`` here names the leader.
        """
        return await self._local_leader(topic, partition).delete_records(before_offset, timeout_ms)

    async def offset_for_timestamp(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        """First offset below the HW with a timestamp at or after ``timestamp_ms``; asked of the leader."""
        local, record = self._leader_or_raise(topic, partition)
        if local is None:
            leader_url = self.view.inter_broker_url(record.leader)
            if leader_url is None or record.leader == self.node_id:
                raise self._not_leader(record)
            return await self.forwarder.offset_for_timestamp(leader_url, topic, partition, timestamp_ms)
        offset = await asyncio.get_running_loop().run_in_executor(None, local.log.offset_for_timestamp, timestamp_ms)
        if offset is None or offset >= local.high_watermark:
            return None
        return offset

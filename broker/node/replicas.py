"""The local replicas of one broker: its ``Partition`` objects, their logs, fetchers and checkpoints.

Partition roles follow the partition records in the metadata store:
``apply_partition_record`` is the single place a local replica is created or given
its role, and the metadata view calls it for every record change in store order.

Invariants: ``partitions`` holds exactly the replicas that the applied records
assign to this broker; a replica leaves it (and its fetcher stops) before its log is
deleted; a leadership record naming an earlier incarnation of this broker (another
broker epoch) is never applied.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Callable
from dataclasses import replace

import aiohttp
import structlog

from broker.clock import wall_clock_ms
from broker.cluster.membership import BrokerMembership
from broker.cluster.metadata_view import MetadataView
from broker.cluster.records import PartitionRecord, TopicRecord
from broker.cluster.store import MetadataStore
from broker.node.isr_proposals import IsrProposals
from broker.node.log_dirs import LogDirUsage, log_dir_usage
from broker.record.control import TransactionMarker
from broker.replica_io import trace
from broker.replica_io.background import every, tick_led
from broker.replica_io.fetch_handler import serve_replica_fetch
from broker.replica_io.fetch_transport import FetchTransport, HttpFetchTransport
from broker.replica_io.fetcher import ReplicaFetcherManager
from broker.replica_io.partition import Partition
from broker.replica_io.replication_stream import StreamFetchTransport
from broker.replica_io.stream_socket import ServerStreams, stream_opener
from broker.replica_io.transactional import TransactionCalls
from broker.replication.broker_epoch import UNKNOWN_BROKER_EPOCH
from broker.replication.fetch_session import LeaderSessions
from broker.replication.fetch_wire import FetchRequest, FetchResponse
from broker.replication.throttle import ReplicationQuota
from broker.storage.cleaner import clean_if_compacted
from broker.storage.flusher import GroupCommitFlusher, IntervalFlusher
from broker.storage.log_manager import LogManager
from broker.topics.configs import TopicConfigs
from broker.topics.throttle_rates import FOLLOWER_RATE, LEADER_RATE, rate_in_force
from config.broker import UNLIMITED_RATE, BrokerSettings

log = structlog.get_logger(__name__)


def _limit(rate: int) -> int | None:
    """A configured rate as the quota takes it: Kafka's unlimited default is no limit at all."""
    return None if rate >= UNLIMITED_RATE else rate


class ReplicaManager:
    """See the module docstring. ``on_partition_role`` hears of every record applied to a replica."""

    def __init__(
        self,
        settings: BrokerSettings,
        store: MetadataStore,
        membership: BrokerMembership,
        view: MetadataView,
        session: aiohttp.ClientSession,
        topic_configs: TopicConfigs,
        on_partition_role: Callable[[Partition], None],
        transaction_calls: TransactionCalls | None = None,
        on_marker_written: Callable[[Partition, TransactionMarker], None] | None = None,
    ) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.membership = membership
        self.view = view
        self.session = session
        self.topic_configs = topic_configs
        self._on_partition_role = on_partition_role
        self._transaction_calls = transaction_calls
        self._on_marker_written = on_marker_written
        self.isr_proposals = IsrProposals(store)
        self.logs = LogManager(settings.data_dir, topic_configs.log_config({}))
        self.flusher = GroupCommitFlusher()
        self.interval_flusher = IntervalFlusher()
        self._checkpointed_hw: dict[tuple[str, int], int] = {}
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.follower_quota = ReplicationQuota(_limit(settings.follower_replication_throttled_rate))
        """What this broker fetches for the replicas a move is adding here (``broker.replication.throttle``)."""
        self.leader_quota = ReplicationQuota(_limit(settings.leader_replication_throttled_rate))
        """What this broker sends, as leader, to the replicas a move is adding elsewhere."""
        self.streams = ServerStreams()
        """The replication streams this broker answers as leader."""
        self._fetch_transport = self._new_fetch_transport()
        self.fetchers = ReplicaFetcherManager(
            local_broker_id=self.node_id,
            broker_epoch=lambda: self.membership.broker_epoch,
            transport=self._fetch_transport,
            max_wait_ms=settings.replica_fetch_wait_max_ms,
            max_bytes=settings.replica_fetch_max_bytes,
            quota=self.follower_quota,
        )
        self._tasks: list[asyncio.Task] = []
        self._log_deletions: set[asyncio.Future] = set()
        self._fetch_sessions = LeaderSessions(new_session_id=lambda: secrets.randbelow(2**31 - 1) + 1)

    def _new_fetch_transport(self) -> FetchTransport:
        """How this broker's fetches reach leaders, as ``replica_fetch_transport`` says."""
        leader_url = self.view.inter_broker_url
        if self.settings.replica_fetch_transport == "http":
            return HttpFetchTransport(self.session, leader_url)
        return StreamFetchTransport(
            stream_opener(self.session, leader_url), lambda broker_id: leader_url(broker_id) is not None
        )

    async def load_logs(self) -> None:
        """Load and recover every local log, and the high watermarks checkpointed at the last stop."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.logs.load_all)
        self._checkpointed_hw = self.logs.high_watermark_checkpoint.read()

    def start_background(self) -> None:
        self.interval_flusher.start()
        for name, coroutine in (
            (
                "hw-checkpoint",
                every(self.settings.replica_high_watermark_checkpoint_interval_ms / 1000, self._checkpoint),
            ),
            ("retention", self._retention_loop()),
            (
                "isr-shrink",
                every(self.settings.replica_lag_time_max_ms / 2000, lambda: tick_led(self.partitions.values())),
            ),
        ):
            self._tasks.append(asyncio.create_task(coroutine, name=name))

    async def delete_stray_logs(self) -> None:
        """Delete the local logs that no partition record assigns to this broker.

        Runs once the view has applied the store's full listing, which created a
        ``Partition`` for every record naming this broker. A broker that was down while
        a topic was deleted never saw the delete: without this its log would stay on
        disk for ever, and a topic created again under the same name would start from
        the old records and the old checkpointed HW. Kafka removes such stray logs at
        startup as well (KIP-516).
        """
        loop = asyncio.get_running_loop()
        for topic, partition in [key for key in self.logs.logs() if key not in self.partitions]:
            self._checkpointed_hw.pop((topic, partition), None)
            await loop.run_in_executor(None, self.logs.delete, topic, partition)
            log.info("partition.stray_log_deleted", topic=topic, partition=partition)

    def log_dir_usage(self) -> LogDirUsage:
        """The broker's log directory and the bytes of every replica in it (``broker.node.log_dirs``)."""
        return log_dir_usage(self.settings.data_dir, self.partitions)

    def local_partition(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def led_topics(self) -> list[str]:
        """The topics this broker leads at least one partition of, sorted."""
        return sorted({topic for (topic, _), partition in self.partitions.items() if partition.is_leader})

    # ------------------------------------------------------------ partition records

    def apply_partition_record(self, record: PartitionRecord) -> None:
        key = (record.topic, record.partition)
        partition = self.partitions.get(key)
        if self.node_id not in record.replicas:
            if partition is not None:
                self._drop_partition(key, delete_log=True)
            return
        topic = self.view.topics.get(record.topic)
        if topic is None:
            log.warning("partition.topic_unknown", topic=record.topic, partition=record.partition)
            return
        if partition is None:
            partition = self._create_partition(record, topic)
        if record.leader == self.node_id and record.leader_broker_epoch != self.membership.broker_epoch:
            log.info(
                "partition.stale_leadership_ignored",
                topic=record.topic,
                partition=record.partition,
                leader_epoch=record.leader_epoch,
                leader_broker_epoch=record.leader_broker_epoch,
                broker_epoch=self.membership.broker_epoch,
            )
            return
        partition.apply_record(record, self.topic_configs.parse(topic.configs).min_insync_replicas)
        self.fetchers.update(partition)
        self._on_partition_role(partition)

    def apply_topic_record(self, topic: TopicRecord) -> None:
        """Every local replica of ``topic`` takes the record's configs (an alter, or a relist after a gap).

        Only the topic's own partitions are looked up, so a change of the cluster-wide
        defaults, which applies every topic's record, costs one lookup per partition of
        the cluster (looping over every local replica per topic blocked the event loop
        for 0.3 s at 1 000 topics of 10 partitions).

        Each broker applies the record where its watch delivers it, so replicas of one
        partition switch at slightly different moments; every config is safe through
        such a window (a follower that fsyncs before the leader asks is only slower, a
        leader's min ISR is its own decision).
        """
        log_config = self.topic_configs.log_config(topic.configs)
        min_insync_replicas = self.topic_configs.parse(topic.configs).min_insync_replicas
        for partition_id in range(topic.partitions_count):
            partition = self.partitions.get((topic.name, partition_id))
            if partition is None:
                continue
            changed = partition.apply_topic_config(log_config, min_insync_replicas)
            self.interval_flusher.watch(partition.log)
            if changed:
                log.info(
                    "partition.topic_config_applied",
                    topic=topic.name,
                    partition=partition.partition,
                    min_insync_replicas=min_insync_replicas,
                    leader_epoch=partition.leader_epoch,
                    high_watermark=partition.high_watermark,
                )

    def _create_partition(self, record: PartitionRecord, topic: TopicRecord) -> Partition:
        key = (record.topic, record.partition)
        log_ = self.logs.get_or_create(record.topic, record.partition, self.topic_configs.log_config(topic.configs))
        partition = Partition(
            record.topic,
            record.partition,
            log_,
            self.flusher,
            local_broker_id=self.node_id,
            replica_lag_time_max_ms=self.settings.replica_lag_time_max_ms,
            propose_isr=self.isr_proposals.propose,
            high_watermark=self._checkpointed_hw.pop(key, 0),
            transaction_calls=self._transaction_calls,
            on_marker_written=self._on_marker_written,
            checkpoint_log_starts=self.logs.checkpoint_log_start_offsets,
        )
        self.partitions[key] = partition
        self.interval_flusher.watch(log_)
        return partition

    def apply_partition_deleted(self, topic: str, partition: int) -> None:
        if (topic, partition) in self.partitions:
            self._drop_partition((topic, partition), delete_log=True)

    def _drop_partition(self, key: tuple[str, int], delete_log: bool) -> None:
        partition = self.partitions.pop(key)
        partition.stop()
        self.fetchers.remove(partition)
        detached = self.logs.detach(*key) if delete_log else None
        if detached is not None:
            deletion = asyncio.get_running_loop().run_in_executor(None, self.logs.delete_detached, detached)
            self._log_deletions.add(deletion)
            deletion.add_done_callback(self._log_deletions.discard)
            log.info("partition.deleted", topic=key[0], partition=key[1])

    # ------------------------------------------------------------ followers' fetches

    async def serve_replica_fetch(self, request: FetchRequest) -> FetchResponse:
        """Answer a follower's fetch, over HTTP or a stream; the long poll is bounded by
        ``fetch_max_wait_ms`` whatever the request asks (int32 ms is 24 days)."""
        if request.max_wait_ms > self.settings.fetch_max_wait_ms:
            request = replace(request, max_wait_ms=self.settings.fetch_max_wait_ms)
        response = await serve_replica_fetch(
            request,
            self.local_partition,
            self._registered_broker_epoch,
            self._fetch_sessions,
            self.leader_quota,
        )
        trace.trace_fetched("leader.fetch_answered", response.partitions, replica_id=request.replica_id)
        return response

    def apply_throttle_rates(self) -> None:
        """Take the replication throttle rates in force now (``throttle_rates``: per-broker, cluster-wide, static)."""
        per_broker = self.view.broker_configs.get(self.node_id, {})
        cluster_wide = self.topic_configs.dynamic_defaults
        leader = _limit(rate_in_force(LEADER_RATE, self.settings, cluster_wide, per_broker))
        follower = _limit(rate_in_force(FOLLOWER_RATE, self.settings, cluster_wide, per_broker))
        if (leader, follower) != (self.leader_quota.rate, self.follower_quota.rate):
            self.leader_quota.rate, self.follower_quota.rate = leader, follower
            log.info("replication_throttle.rates", leader_rate=leader, follower_rate=follower)

    def _registered_broker_epoch(self, broker_id: int) -> int:
        """The broker epoch of ``broker_id``'s registration as this broker's watch last saw it."""
        registration = self.membership.live_brokers().get(broker_id)
        return registration.broker_epoch if registration is not None else UNKNOWN_BROKER_EPOCH

    # ------------------------------------------------------------ background

    def _write_checkpoints(self) -> None:
        """Runs in the executor; ``LogManager`` serialises it with every other checkpoint write."""
        self.logs.checkpoint_all({key: p.high_watermark for key, p in self.partitions.items()})

    async def _checkpoint(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self._write_checkpoints)

    async def _retention_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.settings.log_retention_check_interval_ms / 1000)
            for partition in list(self.partitions.values()):
                if await loop.run_in_executor(
                    None, clean_if_compacted, partition.log, wall_clock_ms(), partition.high_watermark
                ):
                    continue
                if not partition.is_leader:
                    await loop.run_in_executor(None, partition.log.delete_segments_below_log_start)
                    continue
                deleted = await loop.run_in_executor(
                    None, partition.log.delete_retained_segments, wall_clock_ms(), partition.high_watermark
                )
                if deleted:
                    partition.on_log_start_advanced()

    # ------------------------------------------------------------ stop

    def end_long_polls(self) -> None:
        """Every long poll on a local replica answers now, and none waits again: the broker is stopping."""
        for partition in self.partitions.values():
            partition.end_long_polls()

    async def end_streams(self) -> None:
        """Close every replication stream this broker answers (it is stopping)."""
        await self.streams.close_all()

    async def stop_fetching(self) -> None:
        await self.fetchers.close()
        await self._fetch_transport.close()

    async def close(self) -> None:
        """Stop the background work and the replicas, then flush and checkpoint every log and close it."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.interval_flusher.stop()
        for partition in self.partitions.values():
            partition.stop()
        await self.isr_proposals.close()
        await asyncio.gather(*self._log_deletions, return_exceptions=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._write_checkpoints)
        await loop.run_in_executor(None, self.logs.close_all)

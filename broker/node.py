"""A broker: its partitions, its metadata view, and what the HTTP layer asks of it.

``BrokerNode`` is the one object the HTTP handlers talk to. It owns the log manager,
the local ``Partition`` replicas, the group-commit flusher, the metadata store and
the background loops (HW checkpoint, retention). Partition state is driven by the
partition records in the metadata store: ``_apply_partition_record`` is the single
place a local replica is created or given its role.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

import structlog

from broker.cluster.records import (
    CLUSTER_ID_KEY,
    PARTITIONS_PREFIX,
    TOPICS_PREFIX,
    PartitionRecord,
    TopicRecord,
    partition_key,
    topic_key,
    validate_topic_name,
)
from broker.cluster.store import MetadataStore
from broker.cluster.store_url import open_store
from broker.errors import (
    InvalidPartitions,
    InvalidReplicationFactor,
    TopicAlreadyExists,
    UnknownPartition,
    UnknownTopic,
)
from broker.meta_properties import ensure_meta_properties, new_cluster_id, read_meta_properties
from broker.partition import Partition, now_ms
from broker.storage import GroupCommitFlusher, LogManager, OffsetCheckpointFile
from broker.topic_configs import TopicConfigs
from config.broker import BrokerSettings

log = structlog.get_logger(__name__)

HW_CHECKPOINT_FILE = "replication-offset-checkpoint"


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    url: str
    rack: str | None


@dataclass(frozen=True)
class PartitionDescription:
    topic: str
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    replicas_state: list[dict] | None


@dataclass(frozen=True)
class TopicDescription:
    name: str
    partitions: list[PartitionDescription]
    replication_factor: int
    configs: dict[str, str]
    internal: bool


@dataclass(frozen=True)
class ProduceResult:
    base_offset: int
    last_offset: int
    log_append_time_ms: int


@dataclass(frozen=True)
class FetchResult:
    data: bytes
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


class BrokerNode:
    """One broker process's state. Create with ``await BrokerNode.start(settings)``."""

    def __init__(self, settings: BrokerSettings, store: MetadataStore, cluster_id: str) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.cluster_id = cluster_id
        self.advertised_url = settings.advertised_url or f"http://{settings.host}:{settings.port}"
        self.store = store
        self.data_dir = Path(settings.data_dir)
        self.topic_configs = TopicConfigs(settings.topic_defaults)
        self.logs = LogManager(self.data_dir, self.topic_configs.log_config({}))
        self.flusher = GroupCommitFlusher()
        self.hw_checkpoint = OffsetCheckpointFile(self.data_dir / HW_CHECKPOINT_FILE)
        self.topics: dict[str, TopicRecord] = {}
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.partition_records: dict[tuple[str, int], PartitionRecord] = {}
        self._tasks: list[asyncio.Task] = []

    @classmethod
    async def start(cls, settings: BrokerSettings) -> BrokerNode:
        data_dir = Path(settings.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        store = await open_store(settings.metadata_store or f"sqlite://{(data_dir / 'metadata.db').resolve()}")
        cluster_id = await _ensure_cluster_id(store, data_dir, settings)
        node = cls(settings, store, cluster_id)
        await node._load()
        node._tasks.append(asyncio.create_task(node._checkpoint_loop(), name="hw-checkpoint"))
        node._tasks.append(asyncio.create_task(node._retention_loop(), name="retention"))
        log.info("broker.started", node_id=node.node_id, cluster_id=cluster_id, data_dir=str(data_dir))
        return node

    async def _load(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.logs.load_all)
        topics, _ = await self.store.list(TOPICS_PREFIX)
        for kv in topics:
            record = TopicRecord.model_validate_json(kv.value)
            self.topics[record.name] = record
        records, _ = await self.store.list(PARTITIONS_PREFIX)
        checkpointed = self.hw_checkpoint.read()
        for kv in records:
            record = PartitionRecord.model_validate_json(kv.value)
            self._apply_partition_record(record, checkpointed.get((record.topic, record.partition), 0))

    def _apply_partition_record(self, record: PartitionRecord, checkpointed_hw: int) -> None:
        """Create the local replica if this broker holds one, and give it its role."""
        key = (record.topic, record.partition)
        self.partition_records[key] = record
        if self.node_id not in record.replicas:
            return
        partition = self.partitions.get(key)
        if partition is None:
            topic = self.topics[record.topic]
            log_ = self.logs.get_or_create(record.topic, record.partition, self.topic_configs.log_config(topic.configs))
            partition = Partition(record.topic, record.partition, log_, self.flusher, local_broker_id=self.node_id)
            self.partitions[key] = partition
        if record.leader == self.node_id:
            partition.become_leader(record.leader_epoch, record.replicas, record.isr, checkpointed_hw)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await asyncio.get_running_loop().run_in_executor(None, self._close_logs)
        await self.store.close()
        log.info("broker.stopped", node_id=self.node_id)

    def _close_logs(self) -> None:
        self._write_hw_checkpoint()
        self.logs.close_all()

    def _write_hw_checkpoint(self) -> None:
        self.hw_checkpoint.write({key: p.high_watermark for key, p in self.partitions.items()})

    async def _checkpoint_loop(self) -> None:
        interval_s = self.settings.replica_high_watermark_checkpoint_interval_ms / 1000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval_s)
            await loop.run_in_executor(None, self._write_hw_checkpoint)

    async def _retention_loop(self) -> None:
        interval_s = self.settings.log_retention_check_interval_ms / 1000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval_s)
            for partition in list(self.partitions.values()):
                deleted = await loop.run_in_executor(
                    None, partition.log.delete_retained_segments, now_ms(), partition.high_watermark
                )
                if deleted:
                    log.info(
                        "retention.deleted_segments",
                        topic=partition.topic,
                        partition=partition.partition,
                        segments=deleted,
                        log_start_offset=partition.log_start_offset,
                    )

    # ---- what the HTTP layer asks -------------------------------------------------

    def controller_id(self) -> int:
        return self.node_id

    def brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo(self.node_id, self.advertised_url, self.settings.rack)]

    def list_topics(self) -> list[TopicDescription]:
        return [self.describe_topic(name) for name in sorted(self.topics)]

    def describe_topic(self, name: str) -> TopicDescription:
        topic = self._topic(name)
        partitions = [self.describe_partition(name, p) for p in range(topic.partitions_count)]
        configs = self.topic_configs.effective(topic.configs)
        return TopicDescription(name, partitions, topic.replication_factor, configs, topic.internal)

    def _topic(self, name: str) -> TopicRecord:
        topic = self.topics.get(name)
        if topic is None:
            raise UnknownTopic(f"topic '{name}' does not exist", topic_name=name)
        return topic

    def partition_count(self, topic: str) -> int:
        return self._topic(topic).partitions_count

    def max_message_bytes(self, topic: str) -> int:
        return self.topic_configs.parse(self._topic(topic).configs).max_message_bytes

    def _partition(self, topic: str, partition: int) -> Partition:
        count = self.partition_count(topic)
        local = self.partitions.get((topic, partition))
        if local is None:
            if not 0 <= partition < count:
                raise UnknownPartition(
                    f"topic '{topic}' has no partition {partition}; it has partitions 0..{count - 1}",
                    topic_name=topic,
                    partition_id=partition,
                )
            raise UnknownPartition(f"partition {topic}-{partition} has no replica on broker {self.node_id}")
        return local

    def describe_partition(self, topic: str, partition: int) -> PartitionDescription:
        local = self._partition(topic, partition)
        record = self.partition_records[(topic, partition)]
        return PartitionDescription(
            topic=topic,
            partition=partition,
            leader_id=record.leader,
            leader_epoch=record.leader_epoch,
            replicas=list(record.replicas),
            isr=list(record.isr),
            log_start_offset=local.log_start_offset,
            high_watermark=local.high_watermark,
            log_end_offset=local.log_end_offset,
            replicas_state=None,
        )

    def metrics(self) -> list[PartitionDescription]:
        return [self.describe_partition(t, p) for (t, p) in sorted(self.partitions)]

    async def create_topic(
        self, name: str, partitions_count: int, replication_factor: int, configs: dict[str, str]
    ) -> TopicDescription:
        validate_topic_name(name)
        if partitions_count < 1:
            raise InvalidPartitions(f"partitions_count must be at least 1 (got {partitions_count})")
        if replication_factor < 1:
            raise InvalidReplicationFactor(f"replication_factor must be at least 1 (got {replication_factor})")
        live = len(self.brokers())
        if replication_factor > live:
            raise InvalidReplicationFactor(
                f"replication_factor {replication_factor} is larger than the {live} live broker(s)"
            )
        self.topic_configs.parse(configs)
        record = TopicRecord(
            name=name, partitions_count=partitions_count, replication_factor=replication_factor, configs=configs
        )
        if await self.store.put_if(topic_key(name), record.model_dump_json().encode(), 0) is None:
            raise TopicAlreadyExists(f"topic '{name}' already exists", topic_name=name)
        self.topics[name] = record
        for p in range(partitions_count):
            partition_record = PartitionRecord(
                topic=name,
                partition=p,
                leader=self.node_id,
                leader_epoch=0,
                partition_epoch=0,
                replicas=[self.node_id],
                isr=[self.node_id],
            )
            await self.store.put(partition_key(name, p), partition_record.model_dump_json().encode())
            self._apply_partition_record(partition_record, 0)
        log.info("topic.created", topic=name, partitions=partitions_count, replication_factor=replication_factor)
        return self.describe_topic(name)

    async def delete_topic(self, name: str) -> None:
        topic = self._topic(name)
        loop = asyncio.get_running_loop()
        for p in range(topic.partitions_count):
            kv = await self.store.get(partition_key(name, p))
            if kv is not None:
                await self.store.delete_if(kv.key, kv.mod_revision)
            self.partition_records.pop((name, p), None)
            if self.partitions.pop((name, p), None) is not None:
                await loop.run_in_executor(None, self.logs.delete, name, p)
        kv = await self.store.get(topic_key(name))
        if kv is not None:
            await self.store.delete_if(kv.key, kv.mod_revision)
        self.topics.pop(name, None)
        log.info("topic.deleted", topic=name)

    async def produce(self, topic: str, partition: int, batch: bytes, acks: str, timeout_ms: int) -> ProduceResult:
        outcome = await self._partition(topic, partition).append(batch, acks, timeout_ms)
        return ProduceResult(outcome.base_offset, outcome.last_offset, outcome.log_append_time_ms)

    async def fetch(self, topic: str, partition: int, offset: int, max_bytes: int, timeout_ms: int) -> FetchResult:
        local = self._partition(topic, partition)
        result = await local.read(offset, max_bytes, timeout_ms)
        return FetchResult(result.data, local.high_watermark, local.log_start_offset, local.log_end_offset)

    async def offset_for_timestamp(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        local = self._partition(topic, partition)
        offset = await asyncio.get_running_loop().run_in_executor(
            None, local.log.offset_for_timestamp, timestamp_ms
        )
        if offset is None or offset >= local.high_watermark:
            return None
        return offset


async def _ensure_cluster_id(store: MetadataStore, data_dir: Path, settings: BrokerSettings) -> str:
    """The cluster id lives in the store; ``meta.properties`` pins this data dir to it."""
    kv = await store.get(CLUSTER_ID_KEY)
    if kv is None:
        existing = read_meta_properties(data_dir)
        proposed = settings.cluster_id or (existing.cluster_id if existing else new_cluster_id())
        await store.put_if(CLUSTER_ID_KEY, proposed.encode(), 0)
        kv = await store.get(CLUSTER_ID_KEY)
    cluster_id = kv.value.decode()
    ensure_meta_properties(data_dir, settings.node_id, cluster_id)
    return cluster_id

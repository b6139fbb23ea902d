"""A broker: its replicas, its place in the cluster, and what the HTTP layer asks of it.

``BrokerNode`` owns the log manager, the local ``Partition`` replicas, the replica
fetchers, the group-commit flusher, the broker's registration (membership), its
controller elector and its view of the metadata. Partition roles follow the
partition records in the metadata store: ``_on_partition_record`` is the single
place a local replica is created or given its role, and it runs for every record
change in store order.

Start: take the data directory's lock, open the store, load and recover the logs,
register, follow the metadata, campaign for controller. Stop (SIGTERM): ask the
controller to move this broker's leaderships away (controlled shutdown), stop
fetching, flush and checkpoint every log, then leave the cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from pathlib import Path

import aiohttp
import structlog

from broker.cluster.controller import Controller, ControllerSettings, NotController
from broker.cluster.membership import BrokerMembership
from broker.cluster.records import (
    PRODUCER_ID_KEY,
    BrokerRegistration,
    PartitionRecord,
    TopicRecord,
)
from broker.cluster.store import MetadataStore
from broker.cluster.store_url import open_store
from broker.descriptions import (
    BrokerInfo,
    FetchResult,
    PartitionDescription,
    ProduceResult,
    TopicDescription,
)
from broker.errors import (
    LeaderNotAvailable,
    NotLeaderOrFollower,
    ServiceUnavailable,
    UnknownPartition,
    UnknownTopic,
)
from broker.forwarding import Forwarder, retry_while_leadership_moves
from broker.groups.coordinator import GroupCoordinator
from broker.meta_properties import MetaProperties
from broker.metadata_view import MetadataView
from broker.node.identity import load_identity, lock_data_dir
from broker.node.isr_proposals import propose_isr
from broker.partition import Partition, now_ms
from broker.replication.broker_epoch import UNKNOWN_BROKER_EPOCH
from broker.replication.fetch_handler import serve_replica_fetch
from broker.replication.fetch_wire import FetchPartitionResponse, FetchRequest
from broker.replication.fetcher import ReplicaFetcherManager
from broker.storage import GroupCommitFlusher, IntervalFlusher, LogManager
from broker.storage.cleaner import clean_if_compacted
from broker.topic_configs import TopicConfigs
from broker.topic_policy import check_client_append, check_min_insync_replicas
from config.broker import BrokerSettings

log = structlog.get_logger(__name__)

CONTROLLED_SHUTDOWN_TIMEOUT_S = 15.0
METADATA_PROPAGATION_TIMEOUT_S = 10.0


class BrokerNode:
    """One broker process's state. Create with ``await BrokerNode.start(settings)``."""

    def __init__(self, settings: BrokerSettings, store: MetadataStore, meta: MetaProperties, lock_handle) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.cluster_id = meta.cluster_id
        self.advertised_url = settings.advertised_url or f"http://{settings.host}:{settings.port}"
        self.store = store
        self._lock_handle = lock_handle
        self.data_dir = Path(settings.data_dir)
        self.topic_configs = TopicConfigs(settings.topic_defaults)
        self.logs = LogManager(self.data_dir, self.topic_configs.log_config({}))
        self.flusher = GroupCommitFlusher()
        self.interval_flusher = IntervalFlusher(lambda: [p.log for p in self.partitions.values()])
        self._propose_isr = functools.partial(propose_isr, store)
        self._checkpointed_hw: dict[tuple[str, int], int] = {}
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256))
        self.forwarder = Forwarder(self.session, self.cluster_id)
        self.membership = BrokerMembership(
            store,
            BrokerRegistration(
                broker_id=self.node_id,
                url=self.advertised_url,
                inter_broker_url=settings.inter_broker_url,
                rack=settings.rack,
                directory_id=meta.directory_id,
            ),
            settings.broker_session_timeout_ms,
            settings.broker_heartbeat_interval_ms,
        )
        self.view = MetadataView(
            store, on_partition=self._on_partition_record, on_partition_deleted=self._on_partition_deleted
        )
        self.controller = Controller(
            store,
            self.membership,
            ControllerSettings(
                auto_leader_rebalance_enable=settings.auto_leader_rebalance_enable,
                leader_imbalance_check_interval_ms=settings.leader_imbalance_check_interval_ms,
                leader_imbalance_per_broker_percentage=settings.leader_imbalance_per_broker_percentage,
                unclean_leader_election_enable=settings.topic_defaults.unclean_leader_election_enable,
            ),
        )
        self.fetchers = ReplicaFetcherManager(
            local_broker_id=self.node_id,
            broker_epoch=lambda: self.membership.broker_epoch,
            leader_url=self.view.inter_broker_url,
            session=self.session,
            max_wait_ms=settings.replica_fetch_wait_max_ms,
            max_bytes=settings.replica_fetch_max_bytes,
        )
        self._tasks: list[asyncio.Task] = []
        self._log_deletions: set[asyncio.Future] = set()
        self.groups = GroupCoordinator(self)

    @classmethod
    async def start(cls, settings: BrokerSettings) -> BrokerNode:
        data_dir = Path(settings.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - once, before the broker serves anything
        lock_handle = lock_data_dir(data_dir)
        store = await open_store(settings.metadata_store or f"sqlite://{(data_dir / 'metadata.db').resolve()}")
        meta = await load_identity(store, data_dir, settings)
        node = cls(settings, store, meta, lock_handle)
        await node._start()
        return node

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.logs.load_all)
        self._checkpointed_hw = self.logs.high_watermark_checkpoint.read()
        await self.membership.register()
        await self.view.start()
        await self._delete_stray_logs()
        await self.controller.start()
        self.interval_flusher.start()
        self.groups.start()
        for name, coroutine in (
            ("hw-checkpoint", self._checkpoint_loop()),
            ("retention", self._retention_loop()),
            ("isr-shrink", self._isr_shrink_loop()),
        ):
            self._tasks.append(asyncio.create_task(coroutine, name=name))
        log.info(
            "broker.started",
            node_id=self.node_id,
            cluster_id=self.cluster_id,
            broker_epoch=self.membership.broker_epoch,
            data_dir=str(self.data_dir),
        )

    # ------------------------------------------------------------------ replicas

    async def _delete_stray_logs(self) -> None:
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

    def _on_partition_record(self, record: PartitionRecord) -> None:
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
        self.groups.on_partition_role(partition)

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
            propose_isr=self._propose_isr,
            high_watermark=self._checkpointed_hw.pop(key, 0),
        )
        self.partitions[key] = partition
        return partition

    def _on_partition_deleted(self, topic: str, partition: int) -> None:
        if (topic, partition) in self.partitions:
            self._drop_partition((topic, partition), delete_log=True)

    def _drop_partition(self, key: tuple[str, int], delete_log: bool) -> None:
        partition = self.partitions.pop(key)
        partition.stop()
        self.fetchers.remove(partition)
        if delete_log:
            deletion = asyncio.get_running_loop().run_in_executor(None, self.logs.delete, *key)
            self._log_deletions.add(deletion)
            deletion.add_done_callback(self._log_deletions.discard)
            log.info("partition.deleted", topic=key[0], partition=key[1])

    async def serve_replica_fetch(self, request: FetchRequest) -> list[FetchPartitionResponse]:
        return await serve_replica_fetch(request, self.local_partition, self._registered_broker_epoch)

    def local_partition(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def _registered_broker_epoch(self, broker_id: int) -> int:
        """The broker epoch of ``broker_id``'s registration as this broker's watch last saw it."""
        registration = self.membership.live_brokers().get(broker_id)
        return registration.broker_epoch if registration is not None else UNKNOWN_BROKER_EPOCH

    # ------------------------------------------------------------ background

    def _write_checkpoints(self) -> None:
        """Runs in the executor; ``LogManager`` serialises it with every other checkpoint write."""
        self.logs.checkpoint_all({key: p.high_watermark for key, p in self.partitions.items()})

    async def _checkpoint_loop(self) -> None:
        interval_s = self.settings.replica_high_watermark_checkpoint_interval_ms / 1000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval_s)
            await loop.run_in_executor(None, self._write_checkpoints)

    async def _isr_shrink_loop(self) -> None:
        """Kafka's ``isr-expiration`` task: every lag time / 2."""
        while True:
            await asyncio.sleep(self.settings.replica_lag_time_max_ms / 2000)
            for partition in list(self.partitions.values()):
                partition.maybe_shrink_isr()

    async def _retention_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.settings.log_retention_check_interval_ms / 1000)
            for partition in list(self.partitions.values()):
                if await loop.run_in_executor(
                    None, clean_if_compacted, partition.log, now_ms(), partition.high_watermark
                ):
                    continue
                if not partition.is_leader:
                    continue
                deleted = await loop.run_in_executor(
                    None, partition.log.delete_retained_segments, now_ms(), partition.high_watermark
                )
                if deleted and partition.leader_state is not None:
                    partition.leader_state.advance_log_start_offset(partition.log_start_offset)

    # ------------------------------------------------------------------ stop

    async def stop(self) -> None:
        """Controlled shutdown: leaderships move away first, then logs close cleanly.

        Fetching stops before the controller is asked, so a leader cannot put this
        broker back in an ISR the controller just removed it from (Kafka's KIP-841).
        """
        await self.fetchers.close()
        await self._controlled_shutdown()
        await self.controller.close()
        await self.view.close()
        await self.groups.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.interval_flusher.stop()
        for partition in self.partitions.values():
            partition.stop()
        await asyncio.gather(*self._log_deletions, return_exceptions=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._write_checkpoints)
        await loop.run_in_executor(None, self.logs.close_all)
        await self.membership.deregister()
        await self.session.close()
        await self.store.close()
        self._lock_handle.close()
        log.info("broker.stopped", node_id=self.node_id)

    async def _controlled_shutdown(self) -> None:
        others_alive = any(broker_id != self.node_id for broker_id in self.view.brokers)
        if not others_alive:
            return
        try:
            async with asyncio.timeout(CONTROLLED_SHUTDOWN_TIMEOUT_S):
                moved = await self.on_controller(
                    "POST",
                    f"controlled-shutdown/{self.node_id}",
                    None,
                    lambda c: self.controlled_shutdown_on_controller(self.node_id),
                )
            log.info("broker.controlled_shutdown", node_id=self.node_id, moved=len(moved["moved"]))
        except Exception as error:  # noqa: BLE001 - shutdown goes on without it, as an uncontrolled stop
            log.warning("broker.controlled_shutdown_failed", node_id=self.node_id, error=str(error))

    # ------------------------------------------------------------ controller

    async def on_controller(self, method: str, path: str, body: dict | None, local_call) -> dict:
        """Run ``local_call`` if this broker is the controller, else forward to the controller."""
        deadline = asyncio.get_running_loop().time() + METADATA_PROPAGATION_TIMEOUT_S
        while True:
            if self.controller.is_active:
                return await local_call(self.controller) or {}
            url = self.view.inter_broker_url(self.view.controller_id)
            if url is not None and self.view.controller_id != self.node_id:
                try:
                    return await self.forwarder.json_call(method, f"{url}/internal/controller/{path}", body)
                except (NotController, ServiceUnavailable):
                    pass
            if asyncio.get_running_loop().time() > deadline:
                raise ServiceUnavailable("no controller is available right now; retry shortly")
            await asyncio.sleep(0.1)

    async def create_topic_on_controller(self, name, partitions_count, replication_factor, configs) -> None:
        await self.controller.create_topic(name, partitions_count, replication_factor, configs)

    async def delete_topic_on_controller(self, name: str) -> None:
        await self.controller.delete_topic(name)

    async def controlled_shutdown_on_controller(self, broker_id: int) -> dict:
        moved = await self.controller.controlled_shutdown(broker_id)
        return {"moved": [record.model_dump() for record in moved]}

    async def elect_preferred_on_controller(self, topic: str | None) -> dict:
        elected = await self.controller.elect_preferred_leaders(topic)
        return {"elected": [record.model_dump() for record in elected]}

    # ------------------------------------------------------------ cluster views

    def controller_id(self) -> int:
        return self.view.controller_id

    def brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo(r.broker_id, r.url, r.rack) for _, r in sorted(self.view.brokers.items())]

    def _topic(self, name: str) -> TopicRecord:
        topic = self.view.topics.get(name)
        if topic is None:
            raise UnknownTopic(f"topic '{name}' does not exist", topic_name=name)
        return topic

    def partition_count(self, topic: str) -> int:
        return self._topic(topic).partitions_count

    def max_message_bytes(self, topic: str) -> int:
        return self.topic_configs.parse(self._topic(topic).configs).max_message_bytes

    def partition_record(self, topic: str, partition: int) -> PartitionRecord:
        count = self.partition_count(topic)
        record = self.view.partitions.get((topic, partition))
        if record is None and 0 <= partition < count:
            raise LeaderNotAvailable(
                f"{topic}-{partition} was just created and its state has not reached broker {self.node_id} yet; retry",
                topic_name=topic,
                partition_id=partition,
            )
        if record is None:
            raise UnknownPartition(
                f"topic '{topic}' has no partition {partition}; it has partitions 0..{count - 1}",
                topic_name=topic,
                partition_id=partition,
            )
        return record

    def _describe_local(self, record: PartitionRecord) -> PartitionDescription:
        local = self.partitions.get((record.topic, record.partition))
        return PartitionDescription(
            topic=record.topic,
            partition=record.partition,
            leader_id=record.leader,
            leader_epoch=record.leader_epoch,
            replicas=list(record.replicas),
            isr=list(record.isr),
            log_start_offset=local.log_start_offset if local else -1,
            high_watermark=local.high_watermark if local else -1,
            log_end_offset=local.log_end_offset if local else -1,
            replicas_state=local.replicas_state() if local else None,
        )

    def describe_led_partitions(self, topic: str) -> list[PartitionDescription]:
        return [
            self._describe_local(self.view.partitions[key])
            for key, p in sorted(self.partitions.items())
            if key[0] == topic and p.is_leader and key in self.view.partitions
        ]

    async def describe_partitions(self, topic: str) -> list[PartitionDescription]:
        """Every partition as its leader sees it: local ones directly, others asked per leader."""
        records = [self.partition_record(topic, p) for p in range(self.partition_count(topic))]
        remote_leaders = {r.leader for r in records if r.leader >= 0 and not self._leads(r)}
        answers: dict[int, PartitionDescription] = {}
        for leader_id in remote_leaders:
            answers.update(await self._ask_leader(leader_id, topic))
        return [answers.get(r.partition) or self._describe_local(r) for r in records]

    async def leader_descriptions(self, topic: str) -> dict[int, PartitionDescription]:
        """Each partition as its leader describes it; a partition whose leader did not answer is left out.

        A follower's high watermark trails its leader's, so only the leader's figures can
        tell that an offset lies beyond the high watermark. Only a leader reports
        ``replicas_state``, which is how its answers are told from the local fallback.
        """
        return {d.partition: d for d in await self.describe_partitions(topic) if d.replicas_state is not None}

    def _leads(self, record: PartitionRecord) -> bool:
        local = self.partitions.get((record.topic, record.partition))
        return local is not None and local.is_leader

    async def _ask_leader(self, leader_id: int, topic: str) -> dict[int, PartitionDescription]:
        url = self.view.inter_broker_url(leader_id)
        if url is None:
            return {}
        try:
            body = await self.forwarder.json_call("GET", f"{url}/internal/partitions/{topic}", timeout_s=5)
        except Exception as error:  # noqa: BLE001 - the description falls back to what this broker knows
            log.info("describe.leader_unreachable", leader_id=leader_id, topic=topic, error=str(error))
            return {}
        return {
            item["partition_id"]: PartitionDescription(
                topic=topic,
                partition=item["partition_id"],
                leader_id=item["leader_id"],
                leader_epoch=item["leader_epoch"],
                replicas=item["replicas"],
                isr=item["isr"],
                log_start_offset=item["log_start_offset"],
                high_watermark=item["high_watermark"],
                log_end_offset=item["log_end_offset"],
                replicas_state=item.get("replicas_state"),
            )
            for item in body.get("data", [])
        }

    async def describe_partition(self, topic: str, partition: int) -> PartitionDescription:
        record = self.partition_record(topic, partition)
        if record.leader >= 0 and not self._leads(record):
            remote = await self._ask_leader(record.leader, topic)
            if partition in remote:
                return remote[partition]
        return self._describe_local(record)

    async def describe_topic(self, name: str) -> TopicDescription:
        topic = self._topic(name)
        partitions = await self.describe_partitions(name)
        configs = self.topic_configs.effective(topic.configs)
        return TopicDescription(name, partitions, topic.replication_factor, configs, topic.internal)

    async def list_topics(self) -> list[TopicDescription]:
        return [await self.describe_topic(name) for name in sorted(self.view.topics)]

    def metrics(self) -> list[PartitionDescription]:
        return [
            self._describe_local(self.view.partitions[key])
            for key in sorted(self.partitions)
            if key in self.view.partitions
        ]

    # ------------------------------------------------------------ topics

    async def create_topic(
        self, name: str, partitions_count: int, replication_factor: int, configs: dict[str, str]
    ) -> TopicDescription:
        check_min_insync_replicas(configs, self.topic_configs.parse(configs), replication_factor)
        await self.on_controller(
            "POST",
            "topics",
            {
                "name": name,
                "partitions_count": partitions_count,
                "replication_factor": replication_factor,
                "configs": configs,
            },
            lambda c: c.create_topic(name, partitions_count, replication_factor, configs),
        )
        await self.view.wait_for(
            lambda: (
                all((name, p) in self.view.partitions for p in range(partitions_count)) and name in self.view.topics
            ),
            METADATA_PROPAGATION_TIMEOUT_S,
        )
        return await self.describe_topic(name)

    async def delete_topic(self, name: str) -> None:
        self._topic(name)
        await self.on_controller("DELETE", f"topics/{name}", None, lambda c: c.delete_topic(name))
        await self.view.wait_for(lambda: name not in self.view.topics, METADATA_PROPAGATION_TIMEOUT_S)

    async def elect_preferred_leaders(self, topic: str | None = None) -> dict:
        """Kafka's ``kafka-leader-election --election-type PREFERRED``, run on the controller:
        ``{"elected": [partition records whose leader moved back to replicas[0]]}``."""
        if topic is not None:
            self._topic(topic)
        return await self.on_controller(
            "POST", "elect-preferred", {"topic": topic}, lambda c: self.elect_preferred_on_controller(topic)
        )

    # ------------------------------------------------------------ produce, fetch

    async def allocate_producer_id(self) -> int:
        """A cluster-unique producer id: compare-and-set increment of ``/producer-ids/next``."""
        while True:
            current = await self.store.get(PRODUCER_ID_KEY)
            next_id = int(current.value) if current else 1000
            expected = current.mod_revision if current else 0
            if await self.store.put_if(PRODUCER_ID_KEY, str(next_id + 1).encode(), expected) is not None:
                return next_id

    def _leader_or_raise(self, topic: str, partition: int) -> tuple[Partition | None, PartitionRecord]:
        record = self.partition_record(topic, partition)
        local = self.partitions.get((topic, partition))
        if local is not None and local.is_leader:
            return local, record
        if record.leader < 0:
            raise LeaderNotAvailable(
                f"{topic}-{partition} has no leader right now (no in-sync replica is alive)",
                topic_name=topic,
                partition_id=partition,
            )
        return None, record

    def _not_leader(self, record: PartitionRecord) -> NotLeaderOrFollower:
        return NotLeaderOrFollower(
            f"broker {self.node_id} is not the leader of {record.topic}-{record.partition}; broker {record.leader} is",
            leader_id=record.leader,
            leader_url=self.view.broker_url(record.leader),
        )

    async def produce(
        self, topic: str, partition: int, batch: bytes, acks: str, timeout_ms: int, *, forward: bool = True
    ) -> ProduceResult:
        """Append a client's batch; internal topics are refused here, whichever door the batch came through."""
        check_client_append(topic)
        local, record = self._leader_or_raise(topic, partition)
        if local is not None:
            outcome = await local.append(batch, acks, timeout_ms)
            return ProduceResult(outcome.base_offset, outcome.last_offset, outcome.log_append_time_ms)
        leader_url = self.view.inter_broker_url(record.leader)
        if not forward or leader_url is None or record.leader == self.node_id:
            raise self._not_leader(record)
        reply = await self.forwarder.produce(leader_url, topic, partition, batch, acks, timeout_ms)
        return ProduceResult(reply["base_offset"], reply["last_offset"], reply.get("log_append_time", -1))

    async def fetch(
        self, topic: str, partition: int, offset: int, max_bytes: int, timeout_ms: int, *, forward: bool = True
    ) -> FetchResult:
        """Read from the leader; with ``forward`` (JSON readers) from any broker, waiting out a leader move."""
        if forward:
            return await retry_while_leadership_moves(
                lambda: self._fetch_once(topic, partition, offset, max_bytes, timeout_ms, forward=True)
            )
        return await self._fetch_once(topic, partition, offset, max_bytes, timeout_ms, forward=False)

    async def _fetch_once(
        self, topic: str, partition: int, offset: int, max_bytes: int, timeout_ms: int, *, forward: bool
    ) -> FetchResult:
        local, record = self._leader_or_raise(topic, partition)
        if local is not None:
            result = await local.read(offset, max_bytes, timeout_ms)
            return FetchResult(result.data, local.high_watermark, local.log_start_offset, local.log_end_offset)
        leader_url = self.view.inter_broker_url(record.leader)
        if not forward or leader_url is None or record.leader == self.node_id:
            raise self._not_leader(record)
        read = await self.forwarder.fetch(leader_url, topic, partition, offset, max_bytes, timeout_ms)
        return FetchResult(read.data, read.high_watermark, read.log_start_offset, read.log_end_offset)

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

"""This broker's view of the cluster metadata, kept current by one watch on the store.

The view lists everything once, then follows a single watch over the whole key
space from the listed revision + 1, so every change (topics, partition records,
broker registrations, the controller) is applied exactly once and in revision
order — the order the controller and the leaders wrote them. If the history was
compacted while the watch was down, it re-lists and reconciles: records that
vanished are reported deleted, the rest re-applied (appliers ignore what they
already have, by epoch).

Listeners are plain callbacks run on the event loop, in store order.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import structlog

from broker.backoff import Backoff
from broker.cluster.membership import registration_from
from broker.cluster.prefix_view import report_stopped_watch
from broker.cluster.records import (
    BROKER_CONFIGS_PREFIX,
    BROKERS_PREFIX,
    CLUSTER_CONFIGS_KEY,
    CONTROLLER_KEY,
    DRAINING_PREFIX,
    PARTITIONS_PREFIX,
    TOPICS_PREFIX,
    BrokerRegistration,
    ClusterConfigsRecord,
    PartitionRecord,
    TopicRecord,
    parse_partition_key,
    topic_key,
)
from broker.cluster.store import CompactedError, KeyValue, MetadataStore, StoreUnavailableError
from broker.waiting import wait_event

log = structlog.get_logger(__name__)

WATCH_RETRY_INITIAL_S = 0.1
WATCH_RETRY_MAX_S = 2.0
"""A store that cannot be watched or listed is asked again after 0.1 s, doubling to 2 s while it stays down."""
YIELD_EVERY_EVENTS = 50
"""The watch lets the event loop run after this many events applied in a row. A store hands
over many at once (sqlite up to ``WATCH_BATCH_ROWS``, 512; etcd a whole watch response), and
applying a new partition's record creates a replica, a few milliseconds each, so a batch of
new partitions held every request this broker serves for a second or more."""
CATCH_UP_TIMEOUT_S = 2.0
"""How long a request naming a topic this view has not seen yet waits for the watch."""


class MetadataView:
    """Topics, partition records (with their revisions), live brokers, drained brokers and the controller."""

    def __init__(
        self,
        store: MetadataStore,
        *,
        on_cluster_configs: Callable[[dict[str, str]], None],
        on_broker_configs: Callable[[], None],
        on_topic: Callable[[TopicRecord], None],
        on_partition: Callable[[PartitionRecord], None],
        on_partition_deleted: Callable[[str, int], None],
    ) -> None:
        self._store = store
        self._on_cluster_configs = on_cluster_configs
        self._on_broker_configs = on_broker_configs
        self._on_topic = on_topic
        self._on_partition = on_partition
        self._on_partition_deleted = on_partition_deleted
        self.topics: dict[str, TopicRecord] = {}
        self.partitions: dict[tuple[str, int], PartitionRecord] = {}
        self.partition_revisions: dict[tuple[str, int], int] = {}
        self.brokers: dict[int, BrokerRegistration] = {}
        self.draining: set[int] = set()
        """Brokers being drained (``/draining/<id>``): registered or not."""
        self.broker_configs: dict[int, dict[str, str]] = {}
        """Each broker's own dynamic configs (``/configs/brokers/<id>``), registered or not."""
        self.controller_id = -1
        self.revision = 0
        self.changed = asyncio.Event()
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        await self._relist()
        self._task = asyncio.create_task(self._follow(), name="metadata-watch")
        self._task.add_done_callback(report_stopped_watch)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task})  # a watch that stopped on an error was reported when it did

    def broker_url(self, broker_id: int) -> str | None:
        registration = self.brokers.get(broker_id)
        return registration.url if registration else None

    def inter_broker_url(self, broker_id: int) -> str | None:
        """Where this broker reaches ``broker_id`` (its ``inter_broker_url``, else its client ``url``)."""
        registration = self.brokers.get(broker_id)
        if registration is None:
            return None
        return registration.inter_broker_url or registration.url

    async def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds on this view (read-your-writes after a change)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not predicate():
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            self.changed.clear()
            await wait_event(self.changed, remaining)
        return True

    async def catch_up_with_topic(self, name: str, timeout_s: float = CATCH_UP_TIMEOUT_S) -> None:
        """Wait until this view holds what the store holds, if the store has topic ``name``.

        The watch trails the store by a poll or a hop, so a broker can be asked about a
        topic that was created a moment ago (through another broker) before its own view
        has it: a client that creates a topic on broker 1 and then produces to its leader,
        broker 3, must not hear UNKNOWN_TOPIC_OR_PARTITION. One store read tells whether
        the topic exists and at which revision the store stood; if it exists the view is
        given until it has applied that revision (every revision is a put or a delete the
        watch delivers). A topic the store does not have either is answered at once.
        """
        key = topic_key(name)
        values, revision = await self._store.list(key)
        if any(kv.key == key for kv in values):
            await self.wait_for(lambda: self.revision >= revision, timeout_s)

    async def _relist(self) -> None:
        """Apply a full listing; topics and the cluster-wide configs before partitions, whose
        replicas need their configs."""
        values, revision = await self._store.list("/")
        seen_partitions = set()
        self.topics.clear()
        self.brokers.clear()
        self.draining.clear()
        self.broker_configs.clear()
        self.controller_id = -1
        if not any(kv.key == CLUSTER_CONFIGS_KEY for kv in values):
            self._on_cluster_configs({})
        for kv in sorted(values, key=lambda kv: kv.key.startswith(PARTITIONS_PREFIX)):
            if kv.key.startswith(PARTITIONS_PREFIX):
                seen_partitions.add(parse_partition_key(kv.key))
            self._apply_put(kv.key, kv.value, kv.mod_revision)
        for key in set(self.partitions) - seen_partitions:
            self._apply_delete(f"{PARTITIONS_PREFIX}{key[0]}/{key[1]}")
        self._on_broker_configs()
        self.revision = revision
        self.changed.set()

    async def _follow(self) -> None:
        backoff = Backoff(WATCH_RETRY_INITIAL_S, WATCH_RETRY_MAX_S)
        while True:
            try:
                applied = 0
                async for event in self._store.watch("/", self.revision + 1):
                    backoff.reset()
                    if event.type == "put":
                        self._apply_put(event.key, event.value, event.mod_revision)
                    else:
                        self._apply_delete(event.key)
                    self.revision = event.mod_revision
                    self.changed.set()
                    applied += 1
                    if applied % YIELD_EVERY_EVENTS == 0:
                        await asyncio.sleep(0)
            except CompactedError:
                log.warning("metadata.watch_compacted", revision=self.revision)
                await self._relist_with_retry()
            except StoreUnavailableError as error:
                log.warning("metadata.watch_failed", revision=self.revision, error=str(error))
                await asyncio.sleep(backoff.next_delay())

    async def _relist_with_retry(self) -> None:
        backoff = Backoff(WATCH_RETRY_INITIAL_S, WATCH_RETRY_MAX_S)
        while True:
            try:
                await self._relist()
                return
            except StoreUnavailableError:
                await asyncio.sleep(backoff.next_delay())

    def _apply_put(self, key: str, value: bytes, mod_revision: int) -> None:
        if key.startswith(TOPICS_PREFIX):
            topic = TopicRecord.model_validate_json(value)
            self.topics[topic.name] = topic
            self._on_topic(topic)
        elif key.startswith(PARTITIONS_PREFIX):
            record = PartitionRecord.model_validate_json(value)
            partition = (record.topic, record.partition)
            self.partitions[partition] = record
            self.partition_revisions[partition] = mod_revision
            self._on_partition(record)
        elif key.startswith(BROKERS_PREFIX):
            registration = registration_from(KeyValue(key, value, mod_revision, mod_revision, None))
            self.brokers[registration.broker_id] = registration
        elif key.startswith(DRAINING_PREFIX):
            self.draining.add(int(key[len(DRAINING_PREFIX) :]))
        elif key == CONTROLLER_KEY:
            self.controller_id = int(json.loads(value)["broker_id"])
        elif key == CLUSTER_CONFIGS_KEY:
            self._on_cluster_configs(ClusterConfigsRecord.model_validate_json(value).configs)
        elif key.startswith(BROKER_CONFIGS_PREFIX):
            broker_id = int(key[len(BROKER_CONFIGS_PREFIX) :])
            self.broker_configs[broker_id] = ClusterConfigsRecord.model_validate_json(value).configs
            self._on_broker_configs()

    def _apply_delete(self, key: str) -> None:
        if key.startswith(TOPICS_PREFIX):
            self.topics.pop(key[len(TOPICS_PREFIX) :], None)
        elif key.startswith(PARTITIONS_PREFIX):
            topic, partition = parse_partition_key(key)
            self.partitions.pop((topic, partition), None)
            self.partition_revisions.pop((topic, partition), None)
            self._on_partition_deleted(topic, partition)
        elif key.startswith(BROKERS_PREFIX):
            self.brokers.pop(int(key[len(BROKERS_PREFIX) :]), None)
        elif key.startswith(DRAINING_PREFIX):
            self.draining.discard(int(key[len(DRAINING_PREFIX) :]))
        elif key == CONTROLLER_KEY:
            self.controller_id = -1
        elif key == CLUSTER_CONFIGS_KEY:
            self._on_cluster_configs({})
        elif key.startswith(BROKER_CONFIGS_PREFIX):
            self.broker_configs.pop(int(key[len(BROKER_CONFIGS_PREFIX) :]), None)
            self._on_broker_configs()

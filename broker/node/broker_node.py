"""A broker: the pieces of one broker process, wired together, and their start and stop.

``BrokerNode`` builds the pieces of ``broker.node`` around one metadata store, one
HTTP session and one metadata view, and owns the order of start and stop, which the
pieces rely on. It answers no request itself: each door sees it through its own
protocol naming the pieces it asks (``HttpHost`` for the HTTP routes, ``KafkaNode`` for
the Kafka listener, ``GroupHost`` for the group coordinator), and calls them directly:
``catalog`` (lookups), ``describer``, ``router`` (produce and read), ``leaders`` (the
Kafka listener's leader lookups), ``replicas``, ``controller_gateway`` (administration),
``forwarder``, ``security``, ``groups`` and ``console``.

Start: take the data directory's lock, open the store, read (or create) the cluster's
broker secret that signs broker-to-broker calls, follow the users, ACLs and quotas,
load and recover the logs, register (with the Kafka listener's address when the process
has one: ``broker.main`` binds it first and opens the listener once the node has
started), follow the metadata, campaign for controller. Stop (SIGTERM, after the doors
have closed): ask the controller to move this broker's leaderships away (controlled
shutdown), stop fetching, flush and checkpoint every log, then leave the cluster.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import IO

import aiohttp
import structlog

from broker.cluster.controller import Controller, ControllerSettings
from broker.cluster.membership import BrokerMembership
from broker.cluster.metadata_view import MetadataView
from broker.cluster.records import BrokerRegistration, PartitionRecord, TopicRecord
from broker.cluster.security_store import SecurityStore
from broker.cluster.store import MetadataStore
from broker.cluster.store_url import open_store
from broker.console.sampling import ConsoleData
from broker.errors import InvalidConfig
from broker.groups.coordinator import GroupCoordinator
from broker.node.catalog import Catalog
from broker.node.controller_gateway import ControllerGateway
from broker.node.describing import PartitionDescriber
from broker.node.forwarding import Forwarder
from broker.node.identity import load_identity, lock_data_dir
from broker.node.local_leaders import LocalLeaders
from broker.node.meta_properties import MetaProperties
from broker.node.replicas import ReplicaManager
from broker.node.routing import RequestRouter
from broker.node.security import NodeSecurity
from broker.node.transaction_calls import CoordinatorCalls
from broker.record.control import TransactionMarker
from broker.replica_io.partition import Partition
from broker.security.broker_token import broker_authorization
from broker.tls import default_advertised_url, inter_broker_ssl
from broker.topics.configs import TopicConfigs
from broker.transactions.coordinator import TransactionCoordinator
from config.broker import BrokerSettings

log = structlog.get_logger(__name__)

CONTROLLED_SHUTDOWN_TIMEOUT_S = 15.0


class BrokerNode:
    """One broker process's state. Create with ``await BrokerNode.start(settings)``."""

    def __init__(
        self,
        settings: BrokerSettings,
        store: MetadataStore,
        meta: MetaProperties,
        lock_handle: IO,
        broker_secret: bytes,
        kafka_address: str | None = None,
    ) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self.cluster_id = meta.cluster_id
        self.advertised_url = settings.advertised_url or default_advertised_url(settings)
        self.store = store
        self._lock_handle = lock_handle
        self._handed_over = False
        self.data_dir = Path(settings.data_dir)
        self.topic_configs = TopicConfigs(settings.topic_defaults)
        self.broker_secret = broker_secret
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=256, ssl=inter_broker_ssl(settings) or True),
            headers={"Authorization": broker_authorization(self.node_id, broker_secret)},
        )
        self.security = NodeSecurity(settings.security, store)
        self.forwarder = Forwarder(self.session, self.cluster_id)
        self.membership = BrokerMembership(
            store,
            BrokerRegistration(
                broker_id=self.node_id,
                url=self.advertised_url,
                inter_broker_url=settings.inter_broker_url,
                rack=settings.rack,
                directory_id=meta.directory_id,
                kafka_address=kafka_address,
            ),
            settings.broker_session_timeout_ms,
            settings.broker_heartbeat_interval_ms,
        )
        # The view and the replicas need each other: the view reports records to the
        # replicas, which read topics from it. The hooks look ``self.replicas`` (and
        # ``self.console``) up when called, and the view reports nothing before start().
        self.view = MetadataView(
            store,
            on_cluster_configs=self._apply_cluster_configs,
            on_broker_configs=self._apply_broker_configs,
            on_topic=self._apply_topic_record,
            on_partition=self._apply_partition_record,
            on_partition_deleted=self._apply_partition_deleted,
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
            self.topic_configs,
        )
        self.groups = GroupCoordinator(self)
        self.transactions = TransactionCoordinator(self)
        self.console = ConsoleData(settings.console, self.groups)
        self.replicas = ReplicaManager(
            settings,
            store,
            self.membership,
            self.view,
            self.session,
            self.topic_configs,
            self._on_partition_role,
            CoordinatorCalls(self.node_id, self.transactions, self.view, self.forwarder),
            self._on_marker_written,
        )
        self.catalog = Catalog(self.node_id, self.view, self.topic_configs)
        self.describer = PartitionDescriber(self.catalog, self.view, self.replicas, self.forwarder)
        self.router = RequestRouter(
            self.node_id, self.catalog, self.view, self.replicas, self.forwarder, self.console.traffic
        )
        self.leaders = LocalLeaders(self.node_id, self.catalog, self.view, self.replicas)
        self.controller_gateway = ControllerGateway(
            self.node_id, store, self.controller, self.view, self.catalog, self.forwarder
        )

    @classmethod
    async def start(cls, settings: BrokerSettings, kafka_address: str | None = None) -> BrokerNode:
        """Start a broker; ``kafka_address`` is what it registers for Kafka clients (None: no Kafka listener)."""
        data_dir = Path(settings.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - once, before the broker serves anything
        lock_handle = lock_data_dir(data_dir)
        store = await open_store(settings.metadata_store or f"sqlite://{(data_dir / 'metadata.db').resolve()}")
        meta = await load_identity(store, data_dir, settings)
        broker_secret = await SecurityStore(store).broker_secret()
        node = cls(settings, store, meta, lock_handle, broker_secret, kafka_address)
        try:
            await node._start()
        except BaseException:
            await node._release_after_failed_start()
            raise
        return node

    async def _release_after_failed_start(self) -> None:
        """A broker that cannot start (its id held by a live broker, say) gives back what it took:
        the security watch, the logs it opened, its HTTP session, the store and the data dir's lock."""
        await self.security.close()
        await self.replicas.close()
        await self.session.close()
        await self.store.close()
        self._lock_handle.close()

    async def _start(self) -> None:
        await self.security.start()
        await self.replicas.load_logs()
        await self.membership.register()
        await self.view.start()
        await self.replicas.delete_stray_logs()
        await self.controller.start()
        self.replicas.start_background()
        self.groups.start()
        self.transactions.start()
        self.console.start()
        log.info(
            "broker.started",
            node_id=self.node_id,
            cluster_id=self.cluster_id,
            broker_epoch=self.membership.broker_epoch,
            data_dir=str(self.data_dir),
        )

    async def hand_over(self) -> None:
        """The first half of a stop: leaderships move to other brokers (controlled shutdown).

        Run while the doors are still open, as Kafka's controlled shutdown runs before its
        socket server stops: the followers keep fetching from this broker until its
        partitions have new leaders, and a produce waiting here for acks=all is answered
        (not leader any more) at once. With the doors closed first, every such produce
        waited out its timeout, and the partitions led here took no write meanwhile (3 s
        without an acknowledged write in each step of a rolling restart on three hosts).

        Fetching stops before the controller is asked, so a leader cannot put this
        broker back in an ISR the controller just removed it from (Kafka's KIP-841).
        """
        if self._handed_over:
            return
        self._handed_over = True
        await self.replicas.stop_fetching()
        await self._controlled_shutdown()

    async def stop(self) -> None:
        """Controlled shutdown (``hand_over``, unless done already), then logs close cleanly."""
        await self.hand_over()
        await self.controller.close()
        await self.view.close()
        await self.security.close()
        await self.console.stop()
        await self.groups.stop()
        await self.transactions.stop()
        await self.replicas.close()
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
                moved = await self.controller_gateway.controlled_shutdown(self.node_id)
            log.info("broker.controlled_shutdown", node_id=self.node_id, moved=len(moved["moved"]))
        except Exception as error:  # noqa: BLE001 - shutdown goes on without it, as an uncontrolled stop
            log.warning("broker.controlled_shutdown_failed", node_id=self.node_id, error=str(error))

    # ------------------------------------------------------------ the view's hooks

    def _apply_cluster_configs(self, configs: dict[str, str]) -> None:
        """The view's hook: new cluster-wide defaults reach every local replica of a topic that does not override them."""
        if configs == self.topic_configs.dynamic_defaults:
            return
        try:
            self.topic_configs.apply_cluster_configs(configs)
        except InvalidConfig as error:
            log.error("cluster_configs.not_applied", configs=configs, error=error.message)
            return
        log.info("cluster_configs.applied", configs=configs)
        self.replicas.apply_throttle_rates()
        for topic in list(self.view.topics.values()):
            self.replicas.apply_topic_record(topic)

    def _apply_broker_configs(self) -> None:
        """The view's hook: a broker's own dynamic configs changed; only the throttle rates read them."""
        self.replicas.apply_throttle_rates()

    def _apply_topic_record(self, topic: TopicRecord) -> None:
        self.replicas.apply_topic_record(topic)

    def _apply_partition_record(self, record: PartitionRecord) -> None:
        """The view's hook: the replicas act on the record first; the console only notes it afterwards."""
        self.replicas.apply_partition_record(record)
        self.console.on_partition_record(record)

    def _on_partition_role(self, partition: Partition) -> None:
        """The replicas' hook after every partition record: the coordinators load or drop what they lead."""
        self.groups.on_partition_role(partition)
        self.transactions.on_partition_role(partition)

    def _on_marker_written(self, partition: Partition, marker: TransactionMarker) -> None:
        """The replicas' hook after a leader wrote a transaction marker: offsets committed in the
        transaction (``__consumer_offsets``) apply or go."""
        self.groups.on_transaction_marker(partition, marker.producer_id, marker.committed)

    def _apply_partition_deleted(self, topic: str, partition: int) -> None:
        self.replicas.apply_partition_deleted(topic, partition)
        self.console.on_partition_deleted(topic, partition)

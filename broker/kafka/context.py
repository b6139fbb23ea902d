"""What a handler of one Kafka request is given: the node it translates to, and the version table.

``KafkaNode`` is the part of ``BrokerNode`` the listener uses, written down: the node's
pieces it asks (its catalog, its leader replicas, the request router, the controller
gateway), each seen through a protocol naming only the calls the listener makes. Every
Kafka request becomes calls to these and nothing else, so the listener cannot grow a
second copy of a node operation (and does not import the node, which starts it).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from broker.acks import Acks
from broker.cluster.reassignment import PartitionMove
from broker.cluster.records import PartitionRecord, TopicRecord
from broker.console.sampling import ConsoleData
from broker.descriptions import BrokerInfo, FetchResult, LeaderState, ProduceResult
from broker.groups.coordinator import GroupCoordinator
from broker.isolation import Isolation
from broker.kafka.codec import DecodedRequest
from broker.kafka.fetch_sessions import ClientFetchSessions
from broker.node.log_dirs import LogDirUsage
from broker.node.security import NodeSecurity
from broker.replica_io.partition import ActiveProducer
from broker.topics.configs import TopicConfigs
from broker.topics.new_topic import NewTopic
from broker.transactions.coordinator import TransactionCoordinator
from config.broker import BrokerSettings


class KafkaCatalog(Protocol):
    """Topics, partitions and brokers as the broker's metadata knows them (``broker.node.catalog.Catalog``)."""

    def brokers(self) -> list[BrokerInfo]: ...
    def controller_id(self) -> int: ...
    def topic_names(self) -> list[str]: ...
    def topic(self, name: str) -> TopicRecord: ...
    def topic_names_by_id(self) -> dict[uuid.UUID, str]: ...
    def known_topic(self, name: str) -> TopicRecord | None: ...
    def partition_count(self, topic: str) -> int: ...
    def partition_record(self, topic: str, partition: int) -> PartitionRecord: ...
    def broker_configs(self, broker_id: int) -> dict[str, str]: ...


class KafkaLeaders(Protocol):
    """This broker's leader replicas' epochs and offsets (``broker.node.local_leaders.LocalLeaders``)."""

    def leader_state(self, topic: str, partition: int) -> LeaderState: ...
    def log_start_offset(self, topic: str, partition: int) -> int: ...
    def end_offset_for_epoch(self, topic: str, partition: int, leader_epoch: int) -> tuple[int, int]: ...
    async def active_producers(self, topic: str, partition: int) -> list[ActiveProducer]: ...


class KafkaReplicas(Protocol):
    """This broker's replicas as a whole (``broker.node.replicas.ReplicaManager``)."""

    def log_dir_usage(self) -> LogDirUsage: ...


class KafkaRecords(Protocol):
    """Produce, read and delete records at the leader (``broker.node.routing.RequestRouter``); the Kafka door never forwards."""

    async def produce(
        self,
        topic: str,
        partition: int,
        batch: bytes,
        acks: Acks,
        timeout_ms: int,
        *,
        forward: bool = True,
        transactional_id: str | None = None,
    ) -> ProduceResult: ...

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
    ) -> FetchResult: ...

    async def offset_for_timestamp(self, topic: str, partition: int, timestamp_ms: int) -> int | None: ...

    async def delete_records(self, topic: str, partition: int, before_offset: int, timeout_ms: int) -> int: ...

    async def max_timestamp_offset(self, topic: str, partition: int) -> tuple[int, int] | None: ...


class KafkaAdmin(Protocol):
    """What the admin APIs ask of the controller (``broker.node.controller_gateway.ControllerGateway``), the
    same calls the HTTP routes make: producer ids, topic creation and deletion, the one alter of topic
    configs and of the cluster-wide broker configs, and partition moves."""

    async def allocate_producer_id(self) -> int: ...
    def check_new_topic(self, topic: NewTopic) -> None: ...
    async def create_topic(self, topic: NewTopic) -> None: ...
    async def delete_topic(self, name: str) -> None: ...
    def check_new_partitions(self, name: str, partitions_count: int) -> None: ...
    async def create_partitions(self, name: str, partitions_count: int) -> None: ...
    async def elect_preferred_leaders(self, topic: str | None = None) -> dict: ...
    async def elect_preferred_partitions(self, partitions: list[tuple[str, int]]) -> dict: ...

    async def alter_topic_configs(
        self, name: str, changes: dict[str, str | None], *, validate_only: bool = False
    ) -> dict[str, str]: ...

    async def alter_cluster_configs(
        self, changes: dict[str, str | None], *, validate_only: bool = False
    ) -> dict[str, str]: ...

    async def alter_broker_configs(
        self, broker_id: int, changes: dict[str, str | None], *, validate_only: bool = False
    ) -> dict[str, str]: ...

    async def alter_reassignments(self, moves: Sequence[PartitionMove]) -> list[PartitionRecord]: ...


class KafkaNode(Protocol):
    """The broker as the listener sees it: the pieces it asks, each through its own protocol."""

    settings: BrokerSettings
    cluster_id: str
    # SASL, ACLs and quotas step: the one credential store, authorizer and quota meters
    security: NodeSecurity
    # the console's traffic counters, which count the records a Fetch answers
    console: ConsoleData
    # topic configs resolved against the broker's defaults, static and cluster-wide dynamic
    topic_configs: TopicConfigs
    # consumer groups (classic protocol): the coordinator the HTTP groups use
    groups: GroupCoordinator
    # transactions (KIP-98, KIP-890): the transactional ids this broker coordinates
    transactions: TransactionCoordinator

    @property
    def catalog(self) -> KafkaCatalog: ...
    @property
    def leaders(self) -> KafkaLeaders: ...
    @property
    def replicas(self) -> KafkaReplicas: ...
    @property
    def router(self) -> KafkaRecords: ...
    @property
    def controller_gateway(self) -> KafkaAdmin: ...


@dataclass(frozen=True)
class VersionRange:
    min_version: int
    max_version: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min_version <= version <= self.max_version


@dataclass(frozen=True)
class RequestContext:
    node: KafkaNode
    supported: Mapping[int, VersionRange]
    """api_key -> the versions this listener serves (what ApiVersions advertises)."""
    fetch_sessions: ClientFetchSessions
    """The listener's client fetch sessions (KIP-227), shared by its connections."""


class CloseConnection(Exception):
    """A handler's way to end the connection after a request, as Kafka does after a failed acks=0 produce."""


Handler = Callable[[RequestContext, DecodedRequest], Awaitable[Any | None]]
"""Answers one request with a kio response of the request's version, or None for no response at all."""

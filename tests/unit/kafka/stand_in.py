"""A node with fixed answers for the handlers' tests: the handlers only translate, so what
they are given back is known and what they pass on is recorded. The stand-in plays each
piece the listener asks (catalog, leaders, router) itself."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from broker.acks import Acks
from broker.cluster.records import PartitionRecord, TopicRecord
from broker.descriptions import BrokerInfo, FetchResult, LeaderState, ProduceResult
from broker.errors import UnknownTopic
from broker.isolation import Isolation
from broker.node.security import AUTHORIZATION_OFF
from broker.security.authorizer import Decision
from config.broker import BrokerSettings

TOPIC = "orders"
TOPIC_ID = uuid.UUID("0b6f4c1e-8f3a-4d2b-9c5e-1a2b3c4d5e6f")
BATCH = b"\x00record-batch-bytes-as-stored\xff"
APPEND_TIME_MS = 1_764_080_536_983
LEADER_EPOCH = 7
LOG_START = 2
HIGH_WATERMARK = 13
LAST_STABLE_OFFSET = 11
ABORTED = ((7001, LOG_START),)
"""What a read_committed fetch is answered: an open transaction at 11, one aborted from the log start."""
OFFSET_AT_TIMESTAMP = 9
LAST_TIMESTAMP = 1_500
"""A timestamp after it is found nowhere below the HW."""
EPOCH_END = (6, 11)


class OpenSecurity:
    """``authentication = "none"``: every decision allows and no quota is set, as ``NodeSecurity`` then answers."""

    view = SimpleNamespace(snapshot=SimpleNamespace(quotas={}))

    def decide(self, principal: object, host: str, operation: object, resource: object) -> Decision:
        return AUTHORIZATION_OFF

    def allows_any(self, principal: object, host: str, operation: object, resource_type: object) -> bool:
        return True


@dataclass
class CountedFetches:
    """The console's traffic counters as the Fetch handler uses them: each count it makes, recorded."""

    counted: list[tuple[str, int, bytes]] = field(default_factory=list)

    def fetched_batches(self, topic: str, offset: int, data: bytes) -> None:
        self.counted.append((topic, offset, data))


@dataclass
class StandInNode:
    settings: BrokerSettings = field(default_factory=BrokerSettings)
    security: Any = field(default_factory=OpenSecurity)
    console: Any = field(default_factory=lambda: SimpleNamespace(traffic=CountedFetches()))
    cluster_id: str = "stand-in-cluster"
    produced: list[tuple[str, int, bytes, Acks, int]] = field(default_factory=list)
    fetched: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    latest_offset_available: bool = True
    own_configs: dict[str, str] = field(default_factory=dict)
    """This broker's own dynamic configs (the throttle rates)."""

    @property
    def catalog(self) -> StandInNode:
        return self

    @property
    def leaders(self) -> StandInNode:
        return self

    @property
    def router(self) -> StandInNode:
        return self

    def brokers(self) -> list[BrokerInfo]:
        return [
            BrokerInfo(1, "http://127.0.0.1:8081", "rack-a", "127.0.0.1:19092"),
            BrokerInfo(2, "http://127.0.0.1:8082", None, None),
        ]

    def controller_id(self) -> int:
        return 2

    def broker_configs(self, broker_id: int) -> dict[str, str]:
        return dict(self.own_configs) if broker_id == self.settings.node_id else {}

    def topic_names(self) -> list[str]:
        return [TOPIC]

    def _known(self, topic: str) -> None:
        if topic != TOPIC:
            raise UnknownTopic(f"topic '{topic}' does not exist", topic_name=topic)

    def partition_count(self, topic: str) -> int:
        self._known(topic)
        return 1

    def topic(self, name: str) -> TopicRecord:
        self._known(name)
        return TopicRecord(name=name, topic_id=TOPIC_ID, partitions_count=1, replication_factor=3)

    def known_topic(self, name: str) -> TopicRecord | None:
        return self.topic(name) if name == TOPIC else None

    def topic_names_by_id(self) -> dict[uuid.UUID, str]:
        return {TOPIC_ID: TOPIC}

    def partition_record(self, topic: str, partition: int) -> PartitionRecord:
        self._known(topic)
        return PartitionRecord(
            topic=topic,
            partition=partition,
            leader=1,
            leader_epoch=LEADER_EPOCH,
            partition_epoch=3,
            replicas=[1, 2, 3],
            isr=[1, 2],
        )

    def leader_state(self, topic: str, partition: int) -> LeaderState:
        self._known(topic)
        return LeaderState(LEADER_EPOCH, LOG_START, HIGH_WATERMARK, self.latest_offset_available, LAST_STABLE_OFFSET)

    def log_start_offset(self, topic: str, partition: int) -> int:
        return LOG_START

    def end_offset_for_epoch(self, topic: str, partition: int, leader_epoch: int) -> tuple[int, int]:
        self._known(topic)
        return EPOCH_END

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
    ) -> ProduceResult:
        assert not forward, "the Kafka door never forwards: clients go to the leader"
        self._known(topic)
        self.produced.append((topic, partition, batch, acks, timeout_ms))
        return ProduceResult(10, 12, APPEND_TIME_MS)

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
        assert not forward, "the Kafka door never forwards: clients go to the leader"
        self._known(topic)
        self.fetched.append((topic, partition, offset, max_bytes, timeout_ms))
        if isolation.committed:
            return FetchResult(BATCH, HIGH_WATERMARK, LOG_START, HIGH_WATERMARK + 2, LAST_STABLE_OFFSET, ABORTED)
        return FetchResult(BATCH, HIGH_WATERMARK, LOG_START, HIGH_WATERMARK + 2, HIGH_WATERMARK)

    async def offset_for_timestamp(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        self._known(topic)
        return OFFSET_AT_TIMESTAMP if timestamp_ms <= LAST_TIMESTAMP else None

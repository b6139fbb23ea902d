"""The records kept in the metadata store, their keys, and topic-name rules.

Layout (every value is JSON):

- ``/cluster/id`` — the cluster id, created once by the first broker.
- ``/topics/<name>`` — ``TopicRecord``: partition count, replication factor, configs.
- ``/partitions/<name>/<p>`` — ``PartitionRecord``: ``{leader, leader_epoch,
  partition_epoch, replicas, isr}``; changed only by compare-and-set on the key's
  revision, and ``partition_epoch`` increases with every change (KIP-497's fencing
  of stale ISR updates).
- ``/brokers/<id>`` — ``BrokerRegistration`` bound to the broker's lease.
- ``/controller`` — the controller's id, bound to its lease; its revision is the
  controller epoch.
- ``/producer-ids/next`` — the next idempotent producer id to hand out.
- ``/configs/brokers`` — ``ClusterConfigsRecord``: the cluster-wide dynamic broker
  configs (Kafka's ``DYNAMIC_DEFAULT_BROKER_CONFIG``), written by the controller.
- ``/configs/brokers/<id>`` — ``ClusterConfigsRecord`` too: one broker's dynamic configs
  (Kafka's ``DYNAMIC_BROKER_CONFIG``; only the replication throttle rates), written by
  the controller, not bound to a lease (they outlive the broker's restarts).
- ``/draining/<id>`` — ``DrainingRecord``: the broker is being emptied, so the controller
  places no new replica on it; written and removed by the controller, not bound to a
  lease (a drain outlives the broker's restarts).
"""

from __future__ import annotations

import base64
import re
import uuid
from typing import Any

from pydantic import BaseModel, Field, model_validator

from broker.errors import InvalidTopic

CLUSTER_ID_KEY = "/cluster/id"
TOPICS_PREFIX = "/topics/"
PARTITIONS_PREFIX = "/partitions/"
BROKERS_PREFIX = "/brokers/"
CONTROLLER_KEY = "/controller"
PRODUCER_ID_KEY = "/producer-ids/next"
CLUSTER_CONFIGS_KEY = "/configs/brokers"
BROKER_CONFIGS_PREFIX = "/configs/brokers/"
DRAINING_PREFIX = "/draining/"
NO_LEADER = -1

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: legal characters, at most 249 of them, not ``.``/``..``."""
    if not name:
        raise InvalidTopic("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopic(f"topic name cannot be '{name}'")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopic(f"topic name is {len(name)} characters long; the limit is {MAX_TOPIC_NAME_LENGTH}")
    if not _LEGAL_TOPIC_NAME.match(name):
        raise InvalidTopic(
            f"topic name '{name}' is illegal: it may contain only ASCII letters, digits, '.', '_' and '-'"
        )


def topic_key(name: str) -> str:
    return f"{TOPICS_PREFIX}{name}"


def partition_key(topic: str, partition: int) -> str:
    return f"{PARTITIONS_PREFIX}{topic}/{partition}"


def broker_key(broker_id: int) -> str:
    return f"{BROKERS_PREFIX}{broker_id}"


def broker_configs_key(broker_id: int) -> str:
    return f"{BROKER_CONFIGS_PREFIX}{broker_id}"


def draining_key(broker_id: int) -> str:
    return f"{DRAINING_PREFIX}{broker_id}"


def parse_partition_key(key: str) -> tuple[str, int]:
    topic, _, partition = key[len(PARTITIONS_PREFIX) :].rpartition("/")
    return topic, int(partition)


class DrainingRecord(BaseModel):
    """A broker being drained, since when (wall clock ms)."""

    broker_id: int
    since_ms: int


class ClusterConfigsRecord(BaseModel):
    """Broker config name (Kafka's, e.g. ``log.retention.ms``) -> value, set at runtime cluster-wide or for one broker."""

    configs: dict[str, str] = Field(default_factory=dict)


class TopicRecord(BaseModel):
    """A topic; the commit point of its creation (its partition records follow it).

    ``replication_factor`` is the replica count of the topic's partitions. A reassignment
    may change one partition's count (``broker.cluster.reassignment``); once every
    partition has settled on one count (none missing, none moving), the controller writes
    that count here, right after the partition write that settled it. While the counts
    differ the record keeps its last value (Kafka, lacking a topic-wide figure, reports
    partition 0's). Placement of added partitions takes partition 0's count, so a topic
    grows like its first partition either way.

    ``replica_assignment`` is the creator's manual assignment (replica lists indexed by
    partition, ``broker.cluster.replica_assignment``), None when the controller placed the
    replicas itself. It is kept so that a controller completing a creation its predecessor
    left half done writes the partitions the creator asked for, not a placement of its own.

    ``topic_id`` is Kafka's topic id: random at creation (``new_topic_id``), so a topic
    deleted and created again under its name is another topic to a client that holds ids
    (KIP-516). A record written before topic ids existed reads as one derived from its
    name (``legacy_topic_id``), the same on every broker and after every restart.
    """

    name: str
    topic_id: uuid.UUID
    partitions_count: int = Field(ge=1)
    replication_factor: int = Field(ge=1)
    configs: dict[str, str] = Field(default_factory=dict)
    internal: bool = False
    replica_assignment: list[list[int]] | None = None

    @model_validator(mode="before")
    @classmethod
    def _id_of_a_record_without_one(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("topic_id") is None and isinstance(data.get("name"), str):
            return {**data, "topic_id": legacy_topic_id(data["name"])}
        return data


TOPIC_ID_NAMESPACE = uuid.UUID("6f1b6f0e-2b7c-5c1e-9a53-3c0d8a1f4e27")
"""The namespace of ``legacy_topic_id``'s name-based ids (fixed: every broker derives the same)."""


def new_topic_id() -> uuid.UUID:
    """A fresh topic id; never Kafka's reserved zero UUID or metadata topic id (a version-4 UUID is neither)."""
    return uuid.uuid4()


def kafka_uuid_text(value: uuid.UUID) -> str:
    """A UUID as Kafka prints one (``Uuid.toString``, what ``kafka-topics --describe`` shows): URL-safe
    base64 of its 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def legacy_topic_id(name: str) -> uuid.UUID:
    """The id of a topic whose record predates topic ids."""
    return uuid.uuid5(TOPIC_ID_NAMESPACE, name)


class PartitionRecord(BaseModel):
    """Who leads a partition and who is in sync, fenced by ``partition_epoch``.

    ``leader_broker_epoch`` is the broker epoch (registration revision) of the leader
    when it was elected. A broker that restarted since has a new broker epoch, so a
    record naming it leader with an old one is stale: the broker does not act on it,
    and the controller elects again with a higher leader epoch (Kafka fences a
    re-registering broker the same way). A restarted leader never keeps leading the
    epoch whose unflushed tail it may have lost.

    While the partition moves (``broker.cluster.reassignment``), ``replicas`` is the
    target followed by the original replicas the target leaves out, ``adding_replicas``
    the target's replicas the original did not have and ``removing_replicas`` the
    original's the target leaves out (Kafka's ``PartitionRegistration``); both are empty
    when nothing moves, and records written before they existed read so.

    Invariants: ``isr ⊆ replicas``; ``leader ∈ isr`` unless ``leader == -1``;
    ``leader_epoch`` and ``partition_epoch`` never decrease; ``adding_replicas`` and
    ``removing_replicas`` are disjoint subsets of ``replicas``.
    """

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: list[int]
    isr: list[int]
    leader_broker_epoch: int = -1
    adding_replicas: list[int] = []
    removing_replicas: list[int] = []


class BrokerRegistration(BaseModel):
    """``directory_id`` names the data directory the broker serves (from ``meta.properties``).

    ``url`` is for clients; ``inter_broker_url`` (None = ``url``) is what other brokers
    use, so broker-to-broker traffic can take another route (a proxy, another network).
    ``kafka_address`` is the ``host:port`` Kafka-protocol clients use, None when the
    broker runs no Kafka listener; records written before it existed read as None.
    """

    broker_id: int
    url: str
    inter_broker_url: str | None = None
    rack: str | None = None
    broker_epoch: int = 0
    directory_id: str | None = None
    kafka_address: str | None = None

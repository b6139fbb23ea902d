"""What may be done to a topic, decided from names and configs alone (Kafka's topic policies).

Every door (HTTP, the controller's internal routes, the Kafka listener) reaches these
checks through the node and the controller, so a rule is written once:

* **Internal topics** (``__consumer_offsets``, ``__transaction_state``) are the broker's
  own: it creates them with the configs it needs and writes them through the group and
  transaction coordinators. Clients may
  not create one under its reserved name, append to one (Kafka's ReplicaManager:
  "Cannot append to internal topic"), or delete one — deleting ``__consumer_offsets``
  loses every group's committed offsets.
* An internal topic keeps everything it is given: ``cleanup.policy=compact`` (the
  latest commit of every key survives for ever) and no retention by time or size. A
  config that would let the log delete records is refused with ``INVALID_CONFIG``
  naming it, at creation and at any later change of configs.
* **min.insync.replicas** given for a topic may not exceed its replication factor: such
  a topic could never accept an ``acks=all`` write as its creator meant, so it is
  refused with ``INVALID_CONFIG`` naming both numbers rather than silently capped. A
  broker-wide default above a topic's replication factor, which the creator did not
  ask for, counts as the replication factor (Kafka's KIP-966 ``effectiveMinIsr``). A
  reassignment may not take a partition below it either (``min_reassigned_replicas``).

Pure: no asyncio, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from broker.errors import InvalidConfig, InvalidTopic
from config.topic import TOPIC_CONFIG_NAMES, TopicConfig

OFFSETS_TOPIC = "__consumer_offsets"
"""The group coordinator's internal topic (``broker.groups.offsets_records`` says what it holds)."""

TRANSACTION_STATE_TOPIC = "__transaction_state"
"""The transaction coordinator's internal topic (``broker.transactions.metadata`` says what it holds)."""

INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})
MIN_INSYNC_REPLICAS = "min.insync.replicas"


def is_internal_topic(name: str) -> bool:
    """Kafka's ``Topic.isInternal``: by name, so a topic created under the name before this rule is covered too."""
    return name in INTERNAL_TOPICS


def check_create_name(name: str, *, internal: bool) -> None:
    """Only the broker creates a topic under an internal name."""
    if is_internal_topic(name) and not internal:
        raise InvalidTopic(
            f"topic name '{name}' is reserved for the broker's internal topic; it is created automatically",
            topic_name=name,
        )


def check_client_append(name: str) -> None:
    if is_internal_topic(name):
        raise InvalidTopic(f"cannot append to internal topic '{name}': only the broker writes it", topic_name=name)


def check_delete_records(name: str) -> None:
    """DeleteRecords on an internal topic is refused, as Kafka refuses it to clients: only the broker trims them."""
    if is_internal_topic(name):
        raise InvalidTopic(
            f"cannot delete records of internal topic '{name}': only the broker writes it", topic_name=name
        )


def check_delete(name: str) -> None:
    if is_internal_topic(name):
        raise InvalidTopic(
            f"cannot delete internal topic '{name}': it holds every consumer group's committed offsets "
            "or every transaction's state",
            topic_name=name,
        )


def check_internal_configs(name: str, config: TopicConfig) -> None:
    """An internal topic's resolved configs may not let its log delete a record (see the module docstring)."""
    if config.cleanup_policy != "compact":
        raise _keeps_everything(name, "cleanup.policy", config.cleanup_policy, "compact")
    if config.retention_ms != -1:
        raise _keeps_everything(name, "retention.ms", config.retention_ms, "-1")
    if config.retention_bytes != -1:
        raise _keeps_everything(name, "retention.bytes", config.retention_bytes, "-1")


def _keeps_everything(name: str, config: str, value: object, required: str) -> InvalidConfig:
    return InvalidConfig(
        f"invalid config {config}={value} for internal topic '{name}': it must stay {required} "
        "so that no committed offset is ever deleted",
        config=config,
    )


def _gives_min_insync_replicas(configs: Mapping[str, str]) -> bool:
    """Whether the topic's own configs set ``min.insync.replicas`` (under either spelling)."""
    return any(TOPIC_CONFIG_NAMES.get(name, name) == "min_insync_replicas" for name in configs)


def check_min_insync_replicas(configs: Mapping[str, str], config: TopicConfig, replication_factor: int) -> None:
    """Refuse a ``min.insync.replicas`` given in ``configs`` (resolved into ``config``) above the replication factor."""
    if _gives_min_insync_replicas(configs) and config.min_insync_replicas > replication_factor:
        raise InvalidConfig(
            f"invalid config {MIN_INSYNC_REPLICAS}: {config.min_insync_replicas} is greater than the "
            f"replication factor {replication_factor}: a topic never has more replicas in sync than it has replicas",
            config=MIN_INSYNC_REPLICAS,
            min_insync_replicas=config.min_insync_replicas,
            replication_factor=replication_factor,
        )


def min_reassigned_replicas(configs: Mapping[str, str], config: TopicConfig, current_replicas: int) -> int:
    """The fewest replicas a partition now holding ``current_replicas`` may be reassigned to.

    The topic's own ``min.insync.replicas`` (given in ``configs``, resolved into ``config``)
    when it sets one, as creation holds it: fewer replicas could never hold an acks=all
    write on as many as the topic asks for. A broker-wide default counts at most as the
    partition's current count, as it does at creation (KIP-966's ``effectiveMinIsr``): a
    partition created below the default keeps moving at its size, but none shrinks below it.
    """
    if _gives_min_insync_replicas(configs):
        return config.min_insync_replicas
    return min(config.min_insync_replicas, current_replicas)

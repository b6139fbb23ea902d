"""REST Proxy v2 consumer instances: their state and rules, pure and synchronous.

An instance is what Confluent's REST Proxy keeps as a ``KafkaConsumer`` in one proxy's
memory. Here it lives in its group's ``GroupState`` on the group's coordinator, so any
broker can serve it (every v2 call is forwarded to the coordinator) and it survives the
broker that created it:

* what must survive a coordinator failover (the config, the subscription or the manual
  assignment) is written to ``__consumer_offsets`` as an ``InstanceKey`` record (a
  tombstone when the instance is deleted or expires) and replayed by the new coordinator;
* positions are not written: after a failover a partition is read from its committed
  offset (or ``auto.offset.reset`` without one), so no record past the committed offset
  is skipped and none before it is returned again;
* ``last_used_ms`` is not written either: a new coordinator starts every instance's idle
  clock at the time it loaded it, so a failover can lengthen an instance's life by at
  most one timeout, never shorten it.

Errors are ``RestInstanceError`` with Confluent's v2 ``error_code`` and HTTP status; the
v2 routes answer them as ``{"error_code", "message"}``.

Invariant: an instance has a subscription or a manual assignment, never both
(Kafka's ``IllegalStateException``, v2 error 40903), and positions only for partitions
it owns now (``retain_positions``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from broker.groups.assignors import TopicPartition
from broker.groups.membership import Subscription
from broker.isolation import Isolation

RESET_POLICIES = ("earliest", "latest", "none")
FORMATS = ("json", "binary")
INSTANCE_KEY_VERSION = 1

ResetPolicy = Literal["earliest", "latest", "none"]


class RestInstanceError(Exception):
    """A refusal in Confluent's v2 terms: ``http_status`` and ``error_code`` (``Errors.java``'s codes)."""

    def __init__(self, http_status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.error_code = error_code
        self.message = message


def instance_not_found(group_id: str, name: str) -> RestInstanceError:
    return RestInstanceError(404, 40403, f"consumer instance {name!r} not found in group {group_id!r}")


def illegal_state(message: str) -> RestInstanceError:
    return RestInstanceError(409, 40903, message)


@dataclass(frozen=True, slots=True)
class InstanceConfig:
    """What a create request fixes for the instance's life."""

    format: str = "binary"
    auto_offset_reset: ResetPolicy = "latest"
    auto_commit: bool = True
    fetch_min_bytes: int = -1
    request_timeout_ms: int = 1000
    instance_timeout_ms: int = 300_000
    isolation: Isolation = Isolation.READ_UNCOMMITTED
    """Confluent's ``isolation.level``: ``read_committed`` reads stop at the last stable offset
    and never hold an aborted transaction's record."""

    def to_document(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "auto.offset.reset": self.auto_offset_reset,
            "auto.commit.enable": self.auto_commit,
            "fetch.min.bytes": self.fetch_min_bytes,
            "consumer.request.timeout.ms": self.request_timeout_ms,
            "consumer.instance.timeout.ms": self.instance_timeout_ms,
            "isolation.level": self.isolation.value,
        }

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> InstanceConfig:
        return cls(
            str(document["format"]),
            document["auto.offset.reset"],
            bool(document["auto.commit.enable"]),
            int(document["fetch.min.bytes"]),
            int(document["consumer.request.timeout.ms"]),
            int(document["consumer.instance.timeout.ms"]),
            Isolation(document.get("isolation.level", Isolation.READ_UNCOMMITTED.value)),
        )


@dataclass(frozen=True, slots=True)
class InstanceKey:
    """The ``__consumer_offsets`` key of an instance record; distinct from ``OffsetKey`` (no ``v`` field)."""

    group_id: str
    name: str

    def encode(self) -> bytes:
        document = {"rest_v2_instance": INSTANCE_KEY_VERSION, "group": self.group_id, "instance": self.name}
        return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> InstanceKey | None:
        """None for any other key (offset commits, other versions): replay skips it here."""
        try:
            document = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(document, dict) or document.get("rest_v2_instance") != INSTANCE_KEY_VERSION:
            return None
        return cls(str(document["group"]), str(document["instance"]))


@dataclass(slots=True)
class RestInstance:
    """One v2 consumer instance. Its member id in the group is its name (``member_id``)."""

    group_id: str
    name: str
    config: InstanceConfig
    last_used_ms: int
    subscription: Subscription | None = None
    assignment: frozenset[TopicPartition] | None = None
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    """The next offset to read per owned partition; absent: from the committed offset or the reset policy."""

    @property
    def member_id(self) -> str:
        return self.name

    def touch(self, now_ms: int) -> None:
        self.last_used_ms = max(self.last_used_ms, now_ms)

    def is_idle(self, now_ms: int) -> bool:
        """Idle past ``consumer.instance.timeout.ms`` since its last call: the coordinator removes it."""
        return now_ms - self.last_used_ms > self.config.instance_timeout_ms

    # ------------------------------------------------------------ subscription and assignment

    def subscribe(self, topics: list[str] | None, pattern: str | None) -> None:
        """Replace the subscription (Kafka's ``subscribe`` replaces too); refused with a manual assignment."""
        if self.assignment is not None:
            raise illegal_state("subscription to topics, partitions and pattern are mutually exclusive")
        if (topics is None) == (pattern is None):
            raise RestInstanceError(400, 40001, "give exactly one of topics and topic_pattern")
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as error:
                raise RestInstanceError(400, 40001, f"topic_pattern is not a valid regex: {error}") from None
            self.subscription = Subscription(regex=pattern)
        else:
            self.subscription = Subscription(topics=frozenset(topics or ()))

    def unsubscribe(self) -> None:
        """Drop the subscription and the manual assignment, and every position with them."""
        self.subscription = None
        self.assignment = None
        self.positions.clear()

    def assign(self, partitions: frozenset[TopicPartition]) -> None:
        if self.subscription is not None:
            raise illegal_state("subscription to topics, partitions and pattern are mutually exclusive")
        self.assignment = partitions
        self.retain_positions(partitions)

    def retain_positions(self, owned: frozenset[TopicPartition] | set[TopicPartition]) -> None:
        """Forget positions of partitions no longer owned (revoked, unassigned): a partition that
        comes back is read from its committed offset, as a Kafka consumer does after a rebalance."""
        for tp in [tp for tp in self.positions if tp not in owned]:
            del self.positions[tp]

    # ------------------------------------------------------------ positions

    def seek(self, owned: frozenset[TopicPartition], tp: TopicPartition, offset: int) -> None:
        """Kafka's ``seek``: only on an owned partition (``IllegalStateException`` otherwise)."""
        if tp not in owned:
            raise illegal_state(f"no current assignment for partition {tp[0]}-{tp[1]}")
        self.positions[tp] = offset

    def advance(self, tp: TopicPartition, read_from: int, next_offset: int) -> bool:
        """Move the position of ``tp`` from ``read_from`` to ``next_offset``, only if it still is
        ``read_from`` (a seek meanwhile wins) and only forwards; True when it moved."""
        if self.positions.get(tp, read_from) != read_from or next_offset < read_from:
            return False
        self.positions[tp] = next_offset
        return True

    def commit_offsets(self, consumed: list[tuple[str, int, int, str]] | None) -> list[tuple[str, int, int, str]]:
        """What a v2 commit writes, as (topic, partition, next offset, metadata).

        ``consumed`` names the last record consumed per partition, so ``offset + 1`` is
        committed (Confluent's v2 commits ``offset + 1`` too); without it every position is
        committed as it stands, the offset after the last record read (Kafka's ``commitSync()``).
        """
        if consumed is None:
            return [(topic, partition, offset, "") for (topic, partition), offset in sorted(self.positions.items())]
        return [(topic, partition, offset + 1, metadata) for topic, partition, offset, metadata in consumed]

    # ------------------------------------------------------------ persistence

    def record_value(self) -> bytes:
        document: dict[str, Any] = {"config": self.config.to_document()}
        if self.subscription is not None:
            document["topics"] = sorted(self.subscription.topics) if self.subscription.topics is not None else None
            document["topic_pattern"] = self.subscription.regex
        if self.assignment is not None:
            document["assignment"] = [[topic, partition] for topic, partition in sorted(self.assignment)]
        return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_record(cls, key: InstanceKey, value: bytes, loaded_at_ms: int) -> RestInstance:
        document = json.loads(value)
        instance = cls(key.group_id, key.name, InstanceConfig.from_document(document["config"]), loaded_at_ms)
        if "topic_pattern" in document or "topics" in document:
            pattern = document.get("topic_pattern")
            topics = document.get("topics")
            instance.subscription = (
                Subscription(regex=pattern) if pattern is not None else Subscription(frozenset(topics))
            )
        if "assignment" in document:
            instance.assignment = frozenset((str(t), int(p)) for t, p in document["assignment"])
        return instance


def start_offset(
    position: int | None, committed: int | None, log_start_offset: int, high_watermark: int, reset: ResetPolicy
) -> int:
    """Where a read of a partition starts: the position, else the committed offset, else the reset policy.

    A position or commit outside ``[log_start_offset, high_watermark]`` (retention deleted
    it, or it was sought past the end) is out of range: the reset policy applies, as in
    Kafka's consumer; with ``none`` it is refused (Kafka's ``NoOffsetForPartitionException``
    or ``OffsetOutOfRangeException``).
    """
    for candidate in (position, committed):
        if candidate is not None:
            if log_start_offset <= candidate <= high_watermark:
                return candidate
            break
    if reset == "earliest":
        return log_start_offset
    if reset == "latest":
        return high_watermark
    raise illegal_state(
        f"no valid offset to read from (position {position}, committed {committed}, log "
        f"{log_start_offset}..{high_watermark}) and auto.offset.reset is none"
    )

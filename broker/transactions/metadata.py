"""A transactional id's state, and its record on ``__transaction_state``.

A transactional id lives in partition ``abs(hashCode(transactional_id)) % n`` of
``__transaction_state`` (as Kafka places it; the same hash as groups), and its
coordinator is that partition's leader. One record per change: the key names the
transactional id (so compaction keeps the latest), the value is the whole state as
compact JSON. A coordinator rebuilds its transactions by replaying its partitions.

``serial`` counts the transactions of the id: it moves each time a transaction
begins (the first partition added after the previous one completed). A partition
leader learns it when it verifies a transactional write and a marker carries it, so a
marker delayed past the end of its transaction can never close the next one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from enum import Enum

from broker.groups.offsets_records import java_string_hashcode, kafka_abs

KEY_VERSION = 1
NO_START = -1
MAX_PRODUCER_EPOCH = (1 << 15) - 1
"""Epochs are int16; an id whose epoch would pass this gets a new producer id at epoch 0 (as Kafka)."""

TopicPartition = tuple[str, int]


class TxnState(Enum):
    EMPTY = "Empty"
    """Initialised, no transaction open."""
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    """The decision is durable; COMMIT markers are being written."""
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    """Every marker is written; a new transaction may begin."""
    COMPLETE_ABORT = "CompleteAbort"

    @property
    def preparing(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def complete(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


def partition_for_transactional_id(transactional_id: str, partitions_count: int) -> int:
    return kafka_abs(java_string_hashcode(transactional_id)) % partitions_count


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    """Invariants: ``partitions`` is empty unless the state is ongoing or preparing; ``started_ms``
    is ``NO_START`` exactly when no transaction is open or ending."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    serial: int = 0
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    started_ms: int = NO_START
    updated_ms: int = 0

    def moved(self, **changes) -> TransactionMetadata:
        return replace(self, **changes)

    def key(self) -> bytes:
        return encode_key(self.transactional_id)

    def value(self) -> bytes:
        document = {
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "timeout_ms": self.timeout_ms,
            "state": self.state.value,
            "serial": self.serial,
            "partitions": sorted([topic, partition] for topic, partition in self.partitions),
            "started_ms": self.started_ms,
            "updated_ms": self.updated_ms,
        }
        return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, transactional_id: str, raw: bytes) -> TransactionMetadata:
        document = json.loads(raw)
        return cls(
            transactional_id=transactional_id,
            producer_id=int(document["producer_id"]),
            producer_epoch=int(document["producer_epoch"]),
            timeout_ms=int(document["timeout_ms"]),
            state=TxnState(document["state"]),
            serial=int(document["serial"]),
            partitions=frozenset((str(topic), int(partition)) for topic, partition in document["partitions"]),
            started_ms=int(document["started_ms"]),
            updated_ms=int(document["updated_ms"]),
        )


def encode_key(transactional_id: str) -> bytes:
    return json.dumps({"v": KEY_VERSION, "txn": transactional_id}, sort_keys=True, separators=(",", ":")).encode()


def decode_key(raw: bytes) -> str | None:
    """The transactional id of a ``__transaction_state`` key; None for another record type or version."""
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(document, dict) or document.get("v") != KEY_VERSION or "txn" not in document:
        return None
    return str(document["txn"])

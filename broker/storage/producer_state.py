"""Idempotent-producer state of one partition: who wrote what, so a retry is never appended twice.

Kafka's ``ProducerStateManager`` (KIP-98). Per producer id the partition remembers
its epoch and the last ``MAX_REMEMBERED_BATCHES`` (5, as Kafka) batches it appended:
first and last sequence, first and last offset. A batch is checked before append:

- an older epoch than known -> ``INVALID_PRODUCER_EPOCH``;
- a newer epoch must start at sequence 0 -> else ``OUT_OF_ORDER_SEQUENCE_NUMBER``;
- same epoch, and equal (same first and last sequence) to a remembered batch -> a
  duplicate: answered with the *original* offsets and not appended (answering it
  with an error instead made clients bump the epoch and write the duplicate — a known
  bug elsewhere);
- same epoch, otherwise the first sequence must be the last one + 1 (wrapping at
  2^31) -> else ``OUT_OF_ORDER_SEQUENCE_NUMBER``;
- a producer this partition does not know is accepted at any sequence, as Kafka's
  ``ProducerAppendInfo.checkSequence`` does since 2.x: its state may have been removed
  (retention deleted every batch it wrote, then the state was rebuilt from the log
  after a failover or restart), and refusing it would fail that producer for ever.
  Duplicates stay out: while any batch of a producer is in the log, the producer is
  known here (the state is rebuilt from the whole log), so only a retry of a batch
  the log no longer holds could be appended twice — as in Kafka.

The state is rebuilt from the log's batch headers (``load``), so a new leader after a
failover, or a restarted broker, dedupes retries exactly as the old leader would.
Pure: the caller feeds it headers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.errors import InvalidProducerEpoch, OutOfOrderSequence
from broker.record.header import NO_PRODUCER_ID, NO_SEQUENCE, BatchHeader

MAX_REMEMBERED_BATCHES = 5
SEQUENCE_WRAP = 1 << 31


@dataclass(frozen=True, slots=True)
class RememberedBatch:
    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[RememberedBatch] = field(default_factory=lambda: deque(maxlen=MAX_REMEMBERED_BATCHES))

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else NO_SEQUENCE


def is_idempotent(header: BatchHeader) -> bool:
    return header.producer_id != NO_PRODUCER_ID and header.base_sequence != NO_SEQUENCE


class ProducerStateManager:
    """Producer id -> epoch and last batches, for one partition."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self._producers: dict[int, ProducerEntry] = {}

    def load(self, headers: Iterable[BatchHeader]) -> None:
        """Replay the log: every idempotent batch in offset order."""
        for header in headers:
            if is_idempotent(header):
                self.record(header)

    def find_duplicate(self, header: BatchHeader) -> RememberedBatch | None:
        """Check ``header`` before it is appended: the original batch if it is a retry.

        Raises ``InvalidProducerEpoch`` or ``OutOfOrderSequence`` when it can never be
        appended; returns None when it is new and in order.
        """
        entry = self._producers.get(header.producer_id)
        where = f"{self.topic}-{self.partition}"
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise InvalidProducerEpoch(
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than {entry.epoch} on {where}"
            )
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise OutOfOrderSequence(
                    f"producer {header.producer_id} started epoch {header.producer_epoch} at sequence "
                    f"{header.base_sequence} on {where}; a new epoch starts at 0"
                )
            return None
        for batch in entry.batches:
            if batch.first_sequence == header.base_sequence and batch.last_sequence == header.last_sequence:
                return batch
        expected = (entry.last_sequence + 1) % SEQUENCE_WRAP
        if header.base_sequence != expected:
            raise OutOfOrderSequence(
                f"producer {header.producer_id} sent sequence {header.base_sequence} to {where}; expected {expected}"
            )
        return None

    def producers(self) -> list[tuple[int, int, int]]:
        """(producer id, epoch, last sequence) of every producer known here, by producer id."""
        return sorted((pid, entry.epoch, entry.last_sequence) for pid, entry in self._producers.items())

    def record(self, header: BatchHeader) -> None:
        """Remember an appended batch (``header`` carries its assigned offsets)."""
        entry = self._producers.get(header.producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = self._producers[header.producer_id] = ProducerEntry(header.producer_epoch)
        entry.batches.append(
            RememberedBatch(header.base_sequence, header.last_sequence, header.base_offset, header.last_offset)
        )

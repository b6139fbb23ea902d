"""The transactions of one partition replica: open, aborted, and where the decided part of the log ends.

Kafka's ``ProducerStateManager`` keeps this beside the idempotent producer state
(KIP-98). Every replica, leader or follower, feeds it every batch it appends in
offset order (``apply``), so a follower that becomes leader knows the open
transactions at once. Pure: the log hands it headers and decoded markers.

- A transactional data batch of a producer with no open transaction here opens one at
  the batch's base offset; later batches of that producer belong to it.
- A COMMIT or ABORT marker (a control batch, ``broker.record.control``) closes the
  producer's open transaction. An aborted one is handed back to the log with its first
  offset, its marker's offset and the last stable offset right after it, for the
  segment's transaction index (``broker.storage.transaction_index``): a
  ``read_committed`` reader is told which producers' records to drop in a range.
- A closed transaction counts as undecided until the high watermark passes its
  marker (Kafka's "unreplicated transactions"): a leader that fails before its followers
  hold the marker leaves a log where the transaction is open, and a reader must not
  have been shown its outcome.

Invariants:
- ``last_stable_offset(hw) = min(hw, first offset of every open or unreplicated
  transaction)``: everything below it is decided on every in-sync replica, and it never
  exceeds the high watermark;
- aborted transactions come out in marker order, and each one's ``last_stable_offset``
  is at most the first offset of any transaction closed after it (a transaction open
  when it closed started at or above the first unstable offset then; one opened later
  starts above its marker): the index's search relies on it.

Memory: open and unreplicated transactions only; the aborted ones live in the indexes.

Truncation is not undone here: the log replays its batches into a new instance.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from broker.record.control import TransactionMarker
from broker.record.header import BatchHeader


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    producer_id: int
    producer_epoch: int
    first_offset: int
    started_ms: int
    """The first batch's timestamp: how old the transaction is, as the console shows it."""


@dataclass(frozen=True, slots=True)
class ClosedTransaction:
    """A transaction whose marker is in the log, not yet known to be below the high watermark."""

    producer_id: int
    first_offset: int
    last_offset: int
    """The offset of its marker."""


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """Kafka's ``AbortedTxn``: what a ``read_committed`` reader must drop, and how far the search must go."""

    producer_id: int
    first_offset: int
    last_offset: int
    """The offset of the ABORT marker."""
    last_stable_offset: int
    """The partition's first unstable offset right after the marker (the marker's next offset if none is open)."""


class PartitionTransactions:
    """Open and unreplicated transactions of one partition replica, in the order its log holds them.

    Threads: ``apply`` runs under the log's lock, on the event loop or in an executor;
    readers (the queries, ``on_high_watermark``) run anywhere without it. So the dict of
    open transactions is replaced on every change, and the list is appended to or
    replaced, never cut in place: a reader always walks a whole object.
    """

    def __init__(self) -> None:
        self._open: dict[int, OpenTransaction] = {}
        self._unreplicated: list[ClosedTransaction] = []
        self._high_watermark = 0
        """The latest high watermark heard of: unreplicated transactions below it are dropped at the next close."""

    @classmethod
    def restored(
        cls, open_transactions: list[OpenTransaction], unreplicated: list[ClosedTransaction]
    ) -> PartitionTransactions:
        """The state a snapshot recorded (``broker.storage.transaction_snapshot``)."""
        transactions = cls()
        transactions._open = {txn.producer_id: txn for txn in open_transactions}
        transactions._unreplicated = sorted(unreplicated, key=lambda txn: txn.last_offset)
        return transactions

    @property
    def open_transactions(self) -> list[OpenTransaction]:
        """Open transactions, oldest first."""
        return sorted(self._open.values(), key=lambda txn: txn.first_offset)

    @property
    def unreplicated(self) -> tuple[ClosedTransaction, ...]:
        return tuple(self._unreplicated)

    def open_transaction(self, producer_id: int) -> OpenTransaction | None:
        return self._open.get(producer_id)

    def apply(self, header: BatchHeader, marker: TransactionMarker | None) -> AbortedTransaction | None:
        """One appended batch (``header`` carries its assigned offsets; ``marker`` is its decoded control record).

        Returns the transaction an ABORT marker closed, for the segment's index.
        """
        if not header.is_transactional:
            return None
        producer_id = header.producer_id
        if not header.is_control:
            if producer_id not in self._open:
                opened = OpenTransaction(producer_id, header.producer_epoch, header.base_offset, header.max_timestamp)
                self._open = {**self._open, producer_id: opened}
            return None
        if marker is None or producer_id not in self._open:
            return None
        remaining = dict(self._open)
        opened = remaining.pop(producer_id)
        self._open = remaining
        unreplicated = self._unreplicated
        if unreplicated and unreplicated[0].last_offset < self._high_watermark:
            unreplicated = self._unreplicated = unreplicated[_first_at_or_above(unreplicated, self._high_watermark) :]
        unreplicated.append(ClosedTransaction(producer_id, opened.first_offset, header.base_offset))
        if marker.committed:
            return None
        first_open = min((txn.first_offset for txn in remaining.values()), default=header.next_offset)
        return AbortedTransaction(producer_id, opened.first_offset, header.base_offset, first_open)

    def on_high_watermark(self, high_watermark: int) -> None:
        """Transactions whose marker is below ``high_watermark`` are decided on every in-sync replica.

        Only noted here (any thread may call it); ``last_stable_offset`` takes the high
        watermark it is asked about, and the next close drops what is below this one.
        """
        self._high_watermark = high_watermark

    def last_stable_offset(self, high_watermark: int) -> int:
        """Below it every transaction is decided and its marker is below ``high_watermark``; at most ``high_watermark``."""
        stable = high_watermark
        for txn in self._open.values():
            stable = min(stable, txn.first_offset)
        unreplicated = self._unreplicated
        for closed in unreplicated[_first_at_or_above(unreplicated, high_watermark) :]:
            stable = min(stable, closed.first_offset)
        return stable


def _first_at_or_above(transactions: list[ClosedTransaction], offset: int) -> int:
    """Index of the first transaction (in marker order) whose marker is at or above ``offset``."""
    return bisect.bisect_left(transactions, offset, key=lambda txn: txn.last_offset)

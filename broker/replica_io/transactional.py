"""A leader's transactional writes: the KIP-890 guard driven, asking the coordinator when it says so.

``TransactionGuard`` (pure, ``broker.replication.txn_guard``) decides; this driver asks
the transaction coordinator (through ``TransactionCalls``: locally or over the
internal API) when a decision needs it, and hands ``Partition`` a check to run under
its log lock, right before the append, so a marker written while a write waited for
its verification sends that write back to be verified again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from broker.errors import InvalidRequest
from broker.errors.transactions import InvalidRecord, InvalidTxnState
from broker.record.control import TransactionMarker
from broker.replication.txn_guard import Admission, MarkerCheck, TransactionGuard
from broker.storage.log import CheckedBatches, PartitionLog


class TransactionCalls(Protocol):
    """The transaction coordinator as a partition leader asks it (``broker.node.transaction_calls``)."""

    async def verify(
        self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str, partition: int
    ) -> int:
        """The serial of the producer's open transaction holding the partition; raises when there is none."""

    async def confirm_marker(self, transactional_id: str, producer_id: int, serial: int) -> bool:
        """Whether transaction ``serial`` of the producer is the one its coordinator is ending now."""


class TransactionalWrites:
    """The guard of one leader replica and the calls behind it; ``reset`` at every role change."""

    def __init__(self, topic: str, partition: int, log_: PartitionLog, calls: TransactionCalls | None) -> None:
        self.topic = topic
        self.partition = partition
        self.log = log_
        self.calls = calls
        self.guard = TransactionGuard(topic, partition)

    def _opened_epoch(self, producer_id: int) -> int | None:
        opened = self.log.transactions.open_transaction(producer_id)
        return None if opened is None else opened.producer_epoch

    def reset(self) -> None:
        """A new leadership (or none): what the last one verified is forgotten."""
        self.guard = TransactionGuard(self.topic, self.partition)

    async def admit(self, batch: CheckedBatches, transactional_id: str | None) -> Callable[[], None] | None:
        """Refuse what a producer may never write; verify a transactional batch. Returns the check to run
        under the log lock (None for a batch that is not transactional)."""
        where = f"{self.topic}-{self.partition}"
        if any(header.is_control for header in batch.headers):
            raise InvalidRecord(
                f"a produce to {where} carries a control batch; only a partition leader writes transaction markers"
            )
        if not any(header.is_transactional for header in batch.headers):
            return None
        if len(batch.headers) != 1:
            raise InvalidRequest("a transactional produce carries exactly one record batch per partition")
        header = batch.headers[0]
        producer_id, epoch = header.producer_id, header.producer_epoch
        if transactional_id is None:
            raise InvalidTxnState(
                f"a transactional batch of producer {producer_id} to {where} came without its transactional id"
            )
        guard = self.guard
        if guard.admit(header, self._opened_epoch(producer_id)) is Admission.VERIFY:
            if self.calls is None:
                raise InvalidTxnState(f"{where} has no transaction coordinator to verify producer {producer_id} with")
            serial = await self.calls.verify(transactional_id, producer_id, epoch, self.topic, self.partition)
            guard.on_verified(producer_id, epoch, serial)
        verified = guard.verified(producer_id)
        assert verified is not None

        def still_verified() -> None:
            if self.guard is not guard or not guard.still_verified(producer_id, epoch, verified.serial):
                raise InvalidTxnState(
                    f"the transaction of producer {producer_id} ended in {where} while this write was verified"
                )

        return still_verified

    async def check_marker(self, marker: TransactionMarker, serial: int, transactional_id: str) -> Callable[[], None]:
        """Refuse a stale marker (asking the coordinator when this leader cannot tell); the check to run under
        the log lock, which also ends the producer's verified transaction here."""
        producer_id = marker.producer_id
        guard = self.guard
        if guard.check_marker(producer_id, marker.producer_epoch, serial, self._opened_epoch(producer_id)) is (
            MarkerCheck.CONFIRM
        ):
            confirmed = self.calls is not None and await self.calls.confirm_marker(
                transactional_id, producer_id, serial
            )
            if not confirmed:
                raise InvalidTxnState(
                    f"marker of transaction {serial} of producer {producer_id} is not the transaction its "
                    f"coordinator is ending; not written to {self.topic}-{self.partition}"
                )

        def before_marker() -> None:
            guard.check_marker(producer_id, marker.producer_epoch, serial, None)
            guard.on_marker_written(producer_id)

        return before_marker

"""``TransactionManager``: a transactional producer's side of the transaction protocol (KIP-98, aiokafka's shape).

States and what moves them:

* ``READY`` — no transaction open; ``begin`` opens one (``IN_TRANSACTION``), locally:
  the coordinator hears of it with the first partition added.
* ``IN_TRANSACTION`` — records may be sent. A partition's first batch waits until the
  coordinator has added the partition (``may_send`` asks for it, the sender is woken
  when it is done); the partition leader refuses a transactional batch for a
  partition the coordinator does not hold (KIP-890).
* ``ABORTABLE`` — a batch or a coordinator call failed: only ``abort`` is allowed, as
  librdkafka's "abortable error".
* ``FATAL`` — fenced by a newer incarnation (``PRODUCER_FENCED``, ``INVALID_PRODUCER_EPOCH``)
  or a producer id the coordinator does not know: every call raises; the application
  closes the producer (a new one with the same transactional id takes over).

``commit`` and ``abort`` end the transaction at the coordinator only when it heard of
it (a partition or a group was added); a transaction that sent nothing ends locally.
Coordinator calls are retried on retriable answers (no coordinator yet, coordinator
moving or loading, the previous transaction still completing) with ``retry_backoff_ms``
until ``max_block_ms`` has passed, Kafka's bound on these calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from enum import Enum
from typing import TypeVar

from broker.client.errors import IllegalTransactionState
from broker.client.groups import GroupClient
from broker.client.library_log import library_logger
from broker.client.retrying import retrying
from broker.client.transactions import ProducerIdentity, TransactionClient
from broker.client.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from broker.errors import HighwaterError, InvalidProducerEpoch
from broker.errors.transactions import InvalidProducerIdMapping, ProducerFenced

log = library_logger(__name__)

Result = TypeVar("Result")
FATAL_ERRORS = (ProducerFenced, InvalidProducerEpoch, InvalidProducerIdMapping)


class TxnPhase(Enum):
    READY = "ready"
    IN_TRANSACTION = "in_transaction"
    ABORTABLE = "abortable"
    FATAL = "fatal"


class TransactionManager:
    def __init__(
        self,
        calls: TransactionClient,
        transaction_timeout_ms: int,
        retry_backoff_ms: int,
        max_block_ms: int,
        wakeup: Callable[[], None],
    ) -> None:
        self._calls = calls
        self._timeout_ms = transaction_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._max_block_ms = max_block_ms
        self._wakeup = wakeup
        self.phase = TxnPhase.READY
        self.producer: ProducerIdentity | None = None
        self._added: set[TopicPartition] = set()
        self._adding: asyncio.Task[None] | None = None
        self._heard = False
        """Whether the coordinator knows of the open transaction (a partition or a group was added)."""
        self._error: HighwaterError | None = None

    @property
    def transactional_id(self) -> str:
        return self._calls.transactional_id

    async def initialize(self) -> ProducerIdentity:
        """The producer's identity from the coordinator (``init_transactions``)."""
        self.producer = await self._retrying("init", lambda: self._calls.init_producer(self._timeout_ms))
        log.debug(
            "transactions_initialized transactional_id=%s producer_id=%d producer_epoch=%d",
            self.transactional_id,
            *self.producer,
        )
        return self.producer

    def begin(self) -> None:
        self._require(TxnPhase.READY, "begin a transaction")
        self.phase = TxnPhase.IN_TRANSACTION
        self._added.clear()
        self._heard = False
        self._error = None

    def require_open(self) -> None:
        """``send`` is allowed inside a transaction only."""
        self._require(TxnPhase.IN_TRANSACTION, "send")

    def may_send(self, tp: TopicPartition) -> bool:
        """Whether ``tp``'s batches may go now; if not, ``tp`` is being added and the sender will be woken."""
        if tp in self._added:
            return True
        if self.phase is TxnPhase.IN_TRANSACTION and self._adding is None:
            self._adding = asyncio.get_running_loop().create_task(self._add(tp))
        return False

    async def _add(self, tp: TopicPartition) -> None:
        try:
            producer = self._identity()
            await self._retrying("add_partitions", lambda: self._calls.add_partitions(producer, [tp]))
            self._heard = True
            self._added.add(tp)
        except HighwaterError as error:
            self.fail(error)
        finally:
            self._adding = None
            self._wakeup()

    def fail(self, error: HighwaterError) -> None:
        """A batch of the transaction or a call for it failed: it can only be aborted (or the producer is done)."""
        if self.phase is TxnPhase.FATAL:
            return
        self._error = self._error or error
        self.phase = TxnPhase.FATAL if isinstance(error, FATAL_ERRORS) else TxnPhase.ABORTABLE
        log.warning(
            "transaction_failed transactional_id=%s phase=%s error=%s message=%s",
            self.transactional_id,
            self.phase.value,
            error.name,
            error.message,
        )

    @property
    def error(self) -> HighwaterError | None:
        return self._error

    async def send_offsets(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        group_id: str,
        groups: GroupClient,
        member: ConsumerGroupMetadata | None = None,
    ) -> None:
        """Commit ``offsets`` for ``group_id`` inside the transaction: they apply when it commits."""
        self._require(TxnPhase.IN_TRANSACTION, "send offsets")
        producer = self._identity()
        try:
            await self._retrying("add_group", lambda: self._calls.add_group(producer, group_id))
            self._heard = True
            fields = self._calls.offsets_fields(producer)
            member_id, member_epoch = (member.member_id, member.member_epoch) if member else (None, None)
            await self._retrying(
                "txn_offset_commit",
                lambda: groups.commit(group_id, offsets, member_id, member_epoch, transaction=fields),
            )
        except HighwaterError as error:
            self.fail(error)
            raise

    async def commit(self) -> None:
        """End the transaction with COMMIT once every batch of it is acknowledged (the caller flushed)."""
        self.require_committable()
        await self._end(commit=True)

    def require_committable(self) -> None:
        """A transaction is open and nothing of it failed."""
        if self.phase is TxnPhase.ABORTABLE:
            assert self._error is not None
            raise IllegalTransactionState(
                f"transaction of {self.transactional_id!r} failed ({self._error.name}: {self._error.message}); "
                "abort it",
                transactional_id=self.transactional_id,
            )
        self._require(TxnPhase.IN_TRANSACTION, "commit")

    async def abort(self, reinitialize: Callable[[], Awaitable[None]] | None = None) -> None:
        """End the transaction with ABORT; or, given ``reinitialize`` (a batch failed for good and left a gap
        in its partition's sequence), by a new incarnation, which aborts it at the coordinator and starts
        every sequence again (KIP-360's epoch bump)."""
        if self.phase not in (TxnPhase.IN_TRANSACTION, TxnPhase.ABORTABLE):
            self._require(TxnPhase.IN_TRANSACTION, "abort")
        await self._end(commit=False, reinitialize=reinitialize)

    async def _end(self, commit: bool, reinitialize: Callable[[], Awaitable[None]] | None = None) -> None:
        while self._adding is not None:
            await asyncio.shield(self._adding)
        if reinitialize is not None:
            try:
                await reinitialize()
            except HighwaterError as error:
                self.fail(error)
                raise
        elif self._heard:
            producer = self._identity()
            try:
                await self._retrying("end", lambda: self._calls.end(producer, commit))
            except HighwaterError as error:
                self.fail(error)
                raise
        self.phase = TxnPhase.READY
        self._added.clear()
        self._error = None
        log.debug("transaction_ended transactional_id=%s committed=%s", self.transactional_id, commit)

    def _identity(self) -> ProducerIdentity:
        assert self.producer is not None, "initialize() comes first"
        return self.producer

    def _require(self, phase: TxnPhase, action: str) -> None:
        if self.phase is TxnPhase.FATAL:
            assert self._error is not None
            raise IllegalTransactionState(
                f"cannot {action}: the producer of {self.transactional_id!r} is fenced or failed for good "
                f"({self._error.name}: {self._error.message}); close it",
                transactional_id=self.transactional_id,
            )
        if self.phase is not phase:
            raise IllegalTransactionState(
                f"cannot {action}: the producer of {self.transactional_id!r} is {self.phase.value}",
                transactional_id=self.transactional_id,
            )

    async def _retrying(self, action: str, attempt: Callable[[], Awaitable[Result]]) -> Result:
        def note(error: HighwaterError) -> None:
            log.debug(
                "transaction_call_retry transactional_id=%s action=%s error=%s",
                self.transactional_id,
                action,
                error.name,
            )

        return await retrying(attempt, self._max_block_ms, self._retry_backoff_ms, on_retry=note)

"""The coordinator's decisions on each request, as pure functions of a transactional id's state.

Kafka's ``TransactionCoordinator`` rules, with KIP-890's server-side defense built in:

- ``init_producer_id`` gives a new id (epoch 0) or bumps the epoch of the known one,
  fencing every older incarnation (``PRODUCER_FENCED`` from then on). If a transaction
  is open, it is aborted at the bumped epoch first and the caller retries
  (``CONCURRENT_TRANSACTIONS``) until the abort is complete;
- ``add_partitions`` opens a transaction (a new ``serial``) or extends the open one;
- ``verify_partition`` answers a partition leader asked to take a transactional write
  (KIP-890): only a partition of the producer's open transaction, at its epoch;
- ``end_transaction`` moves an open transaction to ``PrepareCommit``/``PrepareAbort``:
  from then on the outcome is decided, and markers are written; ``complete`` ends it
  once every partition holds its marker. A retried EndTxn of the same outcome is answered
  again, the other outcome is ``INVALID_TXN_STATE``;
- ``expire`` aborts a transaction open longer than its timeout, at a bumped epoch, so the
  producer that abandoned it is fenced.

Every function takes the current state (None for an unknown id) and returns a ``Step``:
the state to write with acks=all before answering (None: nothing changes) and the
error to answer after that write. Errors that change nothing are raised.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from broker.errors import HighwaterError
from broker.errors.transactions import (
    ConcurrentTransactions,
    InvalidProducerIdMapping,
    InvalidTransactionTimeout,
    InvalidTxnState,
    ProducerFenced,
)
from broker.transactions.metadata import (
    MAX_PRODUCER_EPOCH,
    NO_START,
    TopicPartition,
    TransactionMetadata,
    TxnState,
)


@dataclass(frozen=True, slots=True)
class Step:
    write: TransactionMetadata | None = None
    """The new state, to be written to ``__transaction_state`` (acks=all) before the answer."""
    error: HighwaterError | None = None
    """Answered once ``write`` is durable (the request changed something, yet must be retried)."""


def needs_producer_id(current: TransactionMetadata | None) -> bool:
    """Whether ``init_producer_id`` will need a freshly allocated producer id."""
    return current is None or (current.state.complete and current.producer_epoch >= MAX_PRODUCER_EPOCH - 1)


def init_producer_id(
    current: TransactionMetadata | None,
    transactional_id: str,
    timeout_ms: int,
    *,
    max_timeout_ms: int,
    now_ms: int,
    new_producer_id: int | None,
    expected: tuple[int, int] | None = None,
) -> Step:
    """``expected``: the (producer id, epoch) a producer recovering from an error sends (KIP-360)."""
    if not 1 <= timeout_ms <= max_timeout_ms:
        raise InvalidTransactionTimeout(
            f"transaction timeout {timeout_ms} ms of {transactional_id!r} is outside 1..{max_timeout_ms} ms "
            "(transaction_max_timeout_ms)"
        )
    if current is None:
        assert new_producer_id is not None, "needs_producer_id said so"
        return Step(
            TransactionMetadata(transactional_id, new_producer_id, 0, timeout_ms, TxnState.EMPTY, updated_ms=now_ms)
        )
    if expected is not None and expected != (current.producer_id, current.producer_epoch):
        raise ProducerFenced(
            f"producer {expected[0]} epoch {expected[1]} of {transactional_id!r} was replaced by producer "
            f"{current.producer_id} epoch {current.producer_epoch}"
        )
    if current.state.preparing:
        raise ConcurrentTransactions(f"the last transaction of {transactional_id!r} is still completing; retry")
    if current.state is TxnState.ONGOING:
        return Step(
            _abort_fenced(current, now_ms),
            ConcurrentTransactions(f"the open transaction of {transactional_id!r} is being aborted; retry"),
        )
    if needs_producer_id(current):
        assert new_producer_id is not None, "needs_producer_id said so"
        producer_id, epoch = new_producer_id, 0
    else:
        producer_id, epoch = current.producer_id, current.producer_epoch + 1
    return Step(
        current.moved(
            producer_id=producer_id,
            producer_epoch=epoch,
            timeout_ms=timeout_ms,
            state=TxnState.EMPTY,
            partitions=frozenset(),
            started_ms=NO_START,
            updated_ms=now_ms,
        )
    )


def check_producer(
    current: TransactionMetadata | None, transactional_id: str, producer_id: int, producer_epoch: int
) -> TransactionMetadata:
    """The state, if ``producer_id`` at ``producer_epoch`` is the current incarnation of the id."""
    if current is None:
        raise InvalidProducerIdMapping(f"no producer was initialised with transactional id {transactional_id!r}")
    if current.producer_id != producer_id:
        raise InvalidProducerIdMapping(
            f"transactional id {transactional_id!r} belongs to producer {current.producer_id}, not {producer_id}"
        )
    if current.producer_epoch != producer_epoch:
        raise ProducerFenced(
            f"producer {producer_id} epoch {producer_epoch} of {transactional_id!r} is fenced: "
            f"the current epoch is {current.producer_epoch}"
        )
    return current


def add_partitions(
    current: TransactionMetadata | None,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    partitions: Iterable[TopicPartition],
    now_ms: int,
) -> Step:
    state = check_producer(current, transactional_id, producer_id, producer_epoch)
    added = frozenset(partitions)
    if state.state.preparing:
        raise ConcurrentTransactions(f"the last transaction of {transactional_id!r} is still completing; retry")
    if state.state is TxnState.ONGOING:
        if added <= state.partitions:
            return Step()
        return Step(state.moved(partitions=state.partitions | added, updated_ms=now_ms))
    return Step(
        state.moved(
            state=TxnState.ONGOING,
            serial=state.serial + 1,
            partitions=added,
            started_ms=now_ms,
            updated_ms=now_ms,
        )
    )


def verify_partition(
    current: TransactionMetadata | None,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    partition: TopicPartition,
) -> int:
    """The open transaction's ``serial``, if it holds ``partition``; ``INVALID_TXN_STATE`` otherwise."""
    state = check_producer(current, transactional_id, producer_id, producer_epoch)
    if state.state is not TxnState.ONGOING or partition not in state.partitions:
        topic, number = partition
        raise InvalidTxnState(
            f"{topic}-{number} is not in an open transaction of {transactional_id!r} "
            f"(state {state.state.value}); add it to the transaction first"
        )
    return state.serial


def end_transaction(
    current: TransactionMetadata | None,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    now_ms: int,
) -> Step:
    state = check_producer(current, transactional_id, producer_id, producer_epoch)
    prepare, done = (
        (TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT)
        if commit
        else (TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT)
    )
    if state.state is TxnState.ONGOING:
        return Step(state.moved(state=prepare, updated_ms=now_ms))
    if state.state is done:
        return Step()
    if state.state is prepare:
        raise ConcurrentTransactions(f"the transaction of {transactional_id!r} is still completing; retry")
    outcome = "commit" if commit else "abort"
    if state.state is TxnState.EMPTY:
        raise InvalidTxnState(f"cannot {outcome}: no transaction of {transactional_id!r} was begun")
    raise InvalidTxnState(f"cannot {outcome} the transaction of {transactional_id!r}: it is {state.state.value}")


def complete(current: TransactionMetadata, now_ms: int) -> TransactionMetadata:
    """Every marker of a preparing transaction is written: it is complete, and a new one may begin."""
    assert current.state.preparing, current.state
    done = TxnState.COMPLETE_COMMIT if current.state is TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
    return current.moved(state=done, partitions=frozenset(), started_ms=NO_START, updated_ms=now_ms)


def expire(current: TransactionMetadata, now_ms: int) -> Step | None:
    """Abort (fencing its producer) a transaction open past its timeout; None while it is not."""
    if current.state is not TxnState.ONGOING or now_ms - current.started_ms < current.timeout_ms:
        return None
    return Step(_abort_fenced(current, now_ms))


def _abort_fenced(current: TransactionMetadata, now_ms: int) -> TransactionMetadata:
    """Abort the open transaction at a bumped epoch: the producer that holds the old one is fenced."""
    epoch = min(current.producer_epoch + 1, MAX_PRODUCER_EPOCH)
    return current.moved(producer_epoch=epoch, state=TxnState.PREPARE_ABORT, updated_ms=now_ms)

"""The transaction coordinator's decisions, request by request (pure: no broker, no store)."""

from __future__ import annotations

import pytest

from broker.errors.transactions import (
    ConcurrentTransactions,
    InvalidProducerIdMapping,
    InvalidTransactionTimeout,
    InvalidTxnState,
    ProducerFenced,
)
from broker.transactions.metadata import MAX_PRODUCER_EPOCH, NO_START, TransactionMetadata, TxnState
from broker.transactions.transitions import (
    add_partitions,
    complete,
    end_transaction,
    expire,
    init_producer_id,
    needs_producer_id,
    verify_partition,
)

TXN = "orders-writer"
PID = 4000
MAX_TIMEOUT_MS = 900_000
NOW = 1_000_000
A, B = ("orders", 0), ("orders", 1)


def initialised(current: TransactionMetadata | None = None, *, timeout_ms: int = 60_000) -> TransactionMetadata:
    step = init_producer_id(current, TXN, timeout_ms, max_timeout_ms=MAX_TIMEOUT_MS, now_ms=NOW, new_producer_id=PID)
    assert step.write is not None and step.error is None
    return step.write


def ongoing(*partitions: tuple[str, int]) -> TransactionMetadata:
    state = initialised()
    step = add_partitions(state, TXN, state.producer_id, state.producer_epoch, partitions or (A,), NOW)
    assert step.write is not None
    return step.write


def ended(state: TransactionMetadata, *, commit: bool) -> TransactionMetadata:
    step = end_transaction(state, TXN, state.producer_id, state.producer_epoch, commit, NOW)
    assert step.write is not None
    return complete(step.write, NOW)


def test_a_new_transactional_id_gets_the_new_producer_id_at_epoch_0() -> None:
    assert needs_producer_id(None)
    state = initialised()
    assert (state.producer_id, state.producer_epoch, state.state, state.serial) == (PID, 0, TxnState.EMPTY, 0)


def test_initialising_again_bumps_the_epoch_and_fences_the_older_incarnation() -> None:
    first = initialised()
    second = initialised(first)
    assert (second.producer_id, second.producer_epoch) == (PID, 1)
    with pytest.raises(ProducerFenced, match="epoch 0"):
        add_partitions(second, TXN, PID, 0, [A], NOW)


def test_initialising_over_an_open_transaction_aborts_it_at_a_bumped_epoch_and_asks_for_a_retry() -> None:
    state = ongoing(A, B)
    step = init_producer_id(state, TXN, 60_000, max_timeout_ms=MAX_TIMEOUT_MS, now_ms=NOW + 5, new_producer_id=None)
    assert isinstance(step.error, ConcurrentTransactions)
    assert step.write is not None
    assert (step.write.state, step.write.producer_epoch, step.write.partitions) == (
        TxnState.PREPARE_ABORT,
        1,
        frozenset({A, B}),
    )
    with pytest.raises(ConcurrentTransactions):
        init_producer_id(step.write, TXN, 60_000, max_timeout_ms=MAX_TIMEOUT_MS, now_ms=NOW, new_producer_id=None)
    retried = initialised(complete(step.write, NOW))
    assert (retried.producer_epoch, retried.state) == (2, TxnState.EMPTY)


def test_an_exhausted_epoch_moves_to_a_new_producer_id() -> None:
    worn = initialised().moved(producer_epoch=MAX_PRODUCER_EPOCH - 1)
    assert needs_producer_id(worn)
    step = init_producer_id(worn, TXN, 60_000, max_timeout_ms=MAX_TIMEOUT_MS, now_ms=NOW, new_producer_id=PID + 1)
    assert step.write is not None and (step.write.producer_id, step.write.producer_epoch) == (PID + 1, 0)


@pytest.mark.parametrize("timeout_ms", [0, -1, MAX_TIMEOUT_MS + 1])
def test_a_timeout_outside_the_bounds_is_refused(timeout_ms: int) -> None:
    with pytest.raises(InvalidTransactionTimeout, match="transaction_max_timeout_ms"):
        init_producer_id(None, TXN, timeout_ms, max_timeout_ms=MAX_TIMEOUT_MS, now_ms=NOW, new_producer_id=PID)


def test_a_recovering_producer_that_is_not_the_current_incarnation_is_fenced() -> None:
    state = initialised(initialised())
    with pytest.raises(ProducerFenced):
        init_producer_id(
            state, TXN, 60_000, max_timeout_ms=MAX_TIMEOUT_MS, now_ms=NOW, new_producer_id=None, expected=(PID, 0)
        )
    step = init_producer_id(
        state, TXN, 60_000, max_timeout_ms=MAX_TIMEOUT_MS, now_ms=NOW, new_producer_id=None, expected=(PID, 1)
    )
    assert step.write is not None and step.write.producer_epoch == 2


def test_adding_partitions_begins_a_transaction_then_extends_it() -> None:
    state = initialised()
    begun = add_partitions(state, TXN, PID, 0, [A], NOW + 1).write
    assert begun is not None
    assert (begun.state, begun.serial, begun.partitions, begun.started_ms) == (
        TxnState.ONGOING,
        1,
        frozenset({A}),
        NOW + 1,
    )
    assert add_partitions(begun, TXN, PID, 0, [A], NOW + 2).write is None, "already in: nothing to write"
    extended = add_partitions(begun, TXN, PID, 0, [B], NOW + 3).write
    assert extended is not None and extended.partitions == {A, B} and extended.started_ms == NOW + 1


def test_a_partition_is_verified_only_inside_its_open_transaction() -> None:
    state = ongoing(A)
    assert verify_partition(state, TXN, PID, 0, A) == 1
    with pytest.raises(InvalidTxnState, match="orders-1 is not in an open transaction"):
        verify_partition(state, TXN, PID, 0, B)
    with pytest.raises(ProducerFenced):
        verify_partition(state, TXN, PID, 1, A)
    with pytest.raises(InvalidTxnState):
        verify_partition(ended(state, commit=True), TXN, PID, 0, A)


def test_ending_prepares_the_outcome_and_a_retry_of_it_is_answered_again() -> None:
    state = ongoing(A)
    prepared = end_transaction(state, TXN, PID, 0, True, NOW).write
    assert prepared is not None and prepared.state is TxnState.PREPARE_COMMIT
    with pytest.raises(ConcurrentTransactions):
        end_transaction(prepared, TXN, PID, 0, True, NOW)
    with pytest.raises(ConcurrentTransactions):
        add_partitions(prepared, TXN, PID, 0, [B], NOW)
    done = complete(prepared, NOW)
    assert (done.state, done.partitions, done.started_ms) == (TxnState.COMPLETE_COMMIT, frozenset(), NO_START)
    assert end_transaction(done, TXN, PID, 0, True, NOW).write is None
    with pytest.raises(InvalidTxnState, match="cannot abort"):
        end_transaction(done, TXN, PID, 0, False, NOW)
    again = add_partitions(done, TXN, PID, 0, [B], NOW).write
    assert again is not None and again.serial == 2


def test_ending_what_was_never_begun_or_is_not_yours_is_refused() -> None:
    with pytest.raises(InvalidTxnState, match=r"no transaction .* was begun"):
        end_transaction(initialised(), TXN, PID, 0, True, NOW)
    with pytest.raises(InvalidProducerIdMapping, match="no producer was initialised"):
        end_transaction(None, TXN, PID, 0, True, NOW)
    with pytest.raises(InvalidProducerIdMapping, match=f"belongs to producer {PID}"):
        end_transaction(ongoing(A), TXN, PID + 7, 0, False, NOW)
    with pytest.raises(ProducerFenced):
        end_transaction(ongoing(A), TXN, PID, 3, False, NOW)


def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced() -> None:
    state = ongoing(A)
    assert expire(state, NOW + state.timeout_ms - 1) is None
    step = expire(state, NOW + state.timeout_ms)
    assert step is not None and step.write is not None
    assert (step.write.state, step.write.producer_epoch) == (TxnState.PREPARE_ABORT, 1)
    with pytest.raises(ProducerFenced):
        end_transaction(step.write, TXN, PID, 0, True, NOW)
    assert expire(initialised(), NOW + 10**9) is None, "nothing open, nothing to abort"

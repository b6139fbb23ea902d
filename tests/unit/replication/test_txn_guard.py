"""A leader's KIP-890 guard: which transactional writes it takes unverified, and which markers it refuses.

Pins the Bufstream/Jepsen scenario: the marker of transaction 1, delayed until after
transaction 2 began here, must not end transaction 2.
"""

from __future__ import annotations

import dataclasses

import pytest

from broker.errors import InvalidProducerEpoch
from broker.errors.transactions import InvalidTxnState
from broker.record.codec import RecordInput, encode_batch
from broker.record.header import BatchHeader, read_header
from broker.replication.txn_guard import Admission, MarkerCheck, TransactionGuard

PID = 4000


def batch(epoch: int = 0) -> BatchHeader:
    data = encode_batch(
        [RecordInput(None, b"v", (), 1)], producer_id=PID, producer_epoch=epoch, base_sequence=0, is_transactional=True
    )
    return dataclasses.replace(read_header(data), base_offset=10)


def test_a_first_write_is_verified_then_later_ones_are_taken() -> None:
    guard = TransactionGuard("orders", 0)
    assert guard.admit(batch(), None) is Admission.VERIFY
    guard.on_verified(PID, 0, serial=1)
    assert guard.admit(batch(), 0) is Admission.TAKE
    assert guard.admit(batch(epoch=1), 0) is Admission.VERIFY, "a newer epoch is another incarnation: ask again"


def test_a_write_older_than_the_open_transaction_is_refused() -> None:
    guard = TransactionGuard("orders", 0)
    with pytest.raises(InvalidProducerEpoch, match="epoch 0 is older than the epoch 1"):
        guard.admit(batch(epoch=0), 1)


def test_a_marker_ends_the_verification_so_a_late_write_is_verified_again() -> None:
    guard = TransactionGuard("orders", 0)
    guard.on_verified(PID, 0, serial=1)
    assert guard.check_marker(PID, 0, 1, 0) is MarkerCheck.WRITE
    guard.on_marker_written(PID)
    assert not guard.still_verified(PID, 0, 1)
    assert guard.admit(batch(), None) is Admission.VERIFY


def test_a_delayed_marker_of_the_previous_transaction_is_refused() -> None:
    """Transaction 1 ended here; transaction 2 began (verified); transaction 1's marker arrives again."""
    guard = TransactionGuard("orders", 0)
    guard.on_verified(PID, 0, serial=1)
    guard.on_marker_written(PID)
    guard.on_verified(PID, 0, serial=2)
    with pytest.raises(InvalidTxnState, match=r"marker of transaction 1 .* is stale: transaction 2"):
        guard.check_marker(PID, 0, 1, 0)
    assert guard.check_marker(PID, 0, 2, 0) is MarkerCheck.WRITE


def test_an_open_transaction_this_leader_did_not_verify_needs_the_coordinator_to_confirm() -> None:
    """After a failover the new leader knows the transaction is open, not which one it is."""
    guard = TransactionGuard("orders", 0)
    assert guard.check_marker(PID, 0, 7, 0) is MarkerCheck.CONFIRM
    assert guard.check_marker(PID, 0, 7, None) is MarkerCheck.WRITE, "nothing open: the marker changes nothing"


def test_a_marker_older_than_the_open_transaction_is_refused() -> None:
    guard = TransactionGuard("orders", 0)
    with pytest.raises(InvalidProducerEpoch):
        guard.check_marker(PID, 2, 1, 3)

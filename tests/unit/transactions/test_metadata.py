"""A transactional id's record on ``__transaction_state``, and where the id lives."""

from __future__ import annotations

from broker.groups.offsets_records import OffsetKey, partition_for_group
from broker.transactions.metadata import (
    TransactionMetadata,
    TxnState,
    decode_key,
    encode_key,
    partition_for_transactional_id,
)


def test_a_record_round_trips_every_field() -> None:
    state = TransactionMetadata(
        "payments", 77, 3, 60_000, TxnState.PREPARE_COMMIT, 9, frozenset({("a", 1), ("b", 0)}), 100, 250
    )
    assert decode_key(state.key()) == "payments"
    assert TransactionMetadata.decode("payments", state.value()) == state


def test_keys_of_other_records_are_not_transactional_ids() -> None:
    assert decode_key(OffsetKey("g", "t", 0).encode()) is None
    assert decode_key(b"\xff\x00") is None
    assert decode_key(encode_key("x")) == "x"


def test_an_id_lands_where_kafka_puts_it() -> None:
    """Java's ``"hello".hashCode()`` is 99162322: partition 22 of 50, as for a group of that name."""
    assert partition_for_transactional_id("hello", 50) == 22 == partition_for_group("hello", 50)

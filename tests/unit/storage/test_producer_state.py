"""Idempotent producer state (KIP-98): duplicates, sequence gaps, epochs, rebuild from the log."""

from __future__ import annotations

import dataclasses

import pytest

from broker.errors import InvalidProducerEpoch, OutOfOrderSequence
from broker.record.codec import RecordInput, encode_batch
from broker.record.header import read_header
from broker.storage.producer_state import ProducerStateManager


def header(producer_id: int, epoch: int, base_sequence: int, count: int = 2, base_offset: int = 0):
    batch = encode_batch(
        [RecordInput(None, b"v")] * count,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=base_sequence,
        base_offset=base_offset,
    )
    return read_header(batch)


def test_a_retried_batch_is_recognised_with_its_original_offsets() -> None:
    state = ProducerStateManager("t", 0)
    first = header(7, 0, 0, base_offset=10)
    assert state.find_duplicate(first) is None
    state.record(first)
    retry = dataclasses.replace(first, base_offset=99)
    original = state.find_duplicate(retry)
    assert original is not None
    assert (original.base_offset, original.last_offset) == (10, 11)


def test_only_the_last_five_batches_are_remembered() -> None:
    state = ProducerStateManager("t", 0)
    for i in range(6):
        h = header(7, 0, 2 * i, base_offset=2 * i)
        assert state.find_duplicate(h) is None
        state.record(h)
    with pytest.raises(OutOfOrderSequence):
        state.find_duplicate(header(7, 0, 0))
    duplicate = state.find_duplicate(header(7, 0, 2))
    assert duplicate is not None and duplicate.base_offset == 2


def test_a_sequence_gap_is_out_of_order() -> None:
    state = ProducerStateManager("t", 0)
    state.record(header(7, 0, 0))
    with pytest.raises(OutOfOrderSequence, match="expected 2"):
        state.find_duplicate(header(7, 0, 3))


def test_an_unknown_producer_is_accepted_at_any_sequence() -> None:
    """Its state may have been removed (retention, then a rebuild from the log): Kafka accepts it."""
    state = ProducerStateManager("t", 0)
    assert state.find_duplicate(header(8, 0, 5)) is None
    assert state.find_duplicate(header(8, 3, 2_000_000_000)) is None


def test_a_producer_accepted_mid_sequence_is_then_held_to_its_sequence() -> None:
    state = ProducerStateManager("t", 0)
    first = header(8, 0, 40, base_offset=100)
    assert state.find_duplicate(first) is None
    state.record(first)
    duplicate = state.find_duplicate(dataclasses.replace(first, base_offset=7))
    assert duplicate is not None and duplicate.base_offset == 100
    with pytest.raises(OutOfOrderSequence, match="expected 42"):
        state.find_duplicate(header(8, 0, 0))
    with pytest.raises(OutOfOrderSequence, match="expected 42"):
        state.find_duplicate(header(8, 0, 43))
    assert state.find_duplicate(header(8, 0, 42)) is None


def test_a_producer_whose_batches_left_the_log_is_accepted_again_after_a_rebuild() -> None:
    """Retention deleted every batch of producer 7: the rebuilt state no longer knows it."""
    rebuilt = ProducerStateManager("t", 0)
    rebuilt.load([header(9, 0, 0, base_offset=30)])
    assert rebuilt.find_duplicate(header(7, 0, 12)) is None
    with pytest.raises(OutOfOrderSequence):
        rebuilt.find_duplicate(header(9, 0, 12))


def test_epochs_fence_old_producers_and_restart_sequences() -> None:
    state = ProducerStateManager("t", 0)
    state.record(header(7, 1, 0))
    with pytest.raises(InvalidProducerEpoch):
        state.find_duplicate(header(7, 0, 2))
    with pytest.raises(OutOfOrderSequence, match="new epoch starts at 0"):
        state.find_duplicate(header(7, 2, 2))
    assert state.find_duplicate(header(7, 2, 0)) is None


def test_state_rebuilt_from_the_log_dedupes_like_the_original() -> None:
    headers = [header(7, 0, 0, base_offset=0), header(9, 0, 0, base_offset=2), header(7, 0, 2, base_offset=4)]
    rebuilt = ProducerStateManager("t", 0)
    rebuilt.load(headers)
    duplicate = rebuilt.find_duplicate(header(7, 0, 2))
    assert duplicate is not None and duplicate.base_offset == 4
    assert rebuilt.find_duplicate(header(9, 0, 2)) is None

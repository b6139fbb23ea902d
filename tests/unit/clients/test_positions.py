"""SubscriptionState: positions, resets, generations, leader-epoch validation."""

from __future__ import annotations

import pytest

from broker.client.types import TopicPartition
from consumer.positions import SubscriptionState

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def test_new_assignments_wait_for_a_reset_and_kept_ones_keep_their_position() -> None:
    state = SubscriptionState("earliest")
    state.assign([TP0])
    assert state.position(TP0) is None and state.needs_reset(TP0) == "earliest"
    assert not state.fetchable(TP0)
    state.seek(TP0, 42)
    state.assign([TP0, TP1])
    assert state.position(TP0) == 42 and state.needs_reset(TP1) == "earliest"
    state.assign([TP1])
    with pytest.raises(ValueError, match="not assigned"):
        state.position(TP0)


def test_a_reset_is_ignored_when_a_seek_happened_while_it_was_looked_up() -> None:
    state = SubscriptionState("latest")
    state.assign([TP0])
    generation = state.state(TP0).generation
    state.seek(TP0, 7)
    assert not state.complete_reset(TP0, 100, generation)
    assert state.position(TP0) == 7
    state.request_reset(TP0, "earliest")
    assert state.complete_reset(TP0, 3, state.state(TP0).generation)
    assert state.position(TP0) == 3 and state.needs_reset(TP0) is None


def test_advance_moves_forward_only_and_remembers_the_leader_epoch() -> None:
    state = SubscriptionState("earliest")
    state.assign([TP0])
    state.seek(TP0, 10)
    state.advance(TP0, 15, leader_epoch=3)
    assert state.position(TP0) == 15 and state.state(TP0).last_leader_epoch == 3
    with pytest.raises(ValueError):
        state.advance(TP0, 12, leader_epoch=3)
    state.skip_to(TP0, 14)
    assert state.position(TP0) == 15
    state.skip_to(TP0, 20)
    assert state.position(TP0) == 20


def test_seek_forgets_the_epoch_and_bumps_the_generation() -> None:
    state = SubscriptionState("earliest")
    state.assign([TP0])
    state.seek(TP0, 0)
    state.advance(TP0, 5, leader_epoch=2)
    before = state.state(TP0).generation
    state.seek(TP0, 1)
    assert state.state(TP0).last_leader_epoch is None and state.state(TP0).generation == before + 1
    with pytest.raises(ValueError):
        state.seek(TP0, -1)


def test_a_newer_leader_epoch_requires_validation_only_after_consuming() -> None:
    state = SubscriptionState("none")
    state.assign([TP0])
    state.seek(TP0, 0)
    assert not state.observe_leader_epoch(TP0, 1)
    assert not state.observe_leader_epoch(TP0, 2), "nothing consumed yet: nothing to validate"
    state.advance(TP0, 4, leader_epoch=2)
    assert not state.observe_leader_epoch(TP0, 2)
    assert state.observe_leader_epoch(TP0, 3)
    assert not state.fetchable(TP0)
    state.validated(TP0)
    assert state.fetchable(TP0)


def test_unknown_reset_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="auto_offset_reset"):
        SubscriptionState("smallest")  # type: ignore[arg-type]

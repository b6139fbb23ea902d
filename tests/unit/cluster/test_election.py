"""Leader election and ISR changes (Kafka's PartitionChangeBuilder rules)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.cluster.election import (
    controlled_shutdown_move,
    elect_leader,
    preferred_leader_election,
    reconcile,
    remove_from_isr,
)
from broker.cluster.records import NO_LEADER, PartitionRecord


def record(leader: int, isr: list[int], replicas: list[int] | None = None, leader_epoch: int = 4) -> PartitionRecord:
    return PartitionRecord(
        topic="t",
        partition=0,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=10,
        replicas=replicas or [1, 2, 3],
        isr=isr,
    )


def test_live_in_sync_leader_is_kept_without_any_change() -> None:
    assert elect_leader(record(2, [1, 2, 3]), {1, 2, 3}, False) is None


def test_dead_leader_is_replaced_by_first_live_isr_member_in_assignment_order() -> None:
    change = elect_leader(record(1, [3, 1, 2], replicas=[1, 2, 3]), {2, 3}, False)
    assert change is not None and not change.unclean and change.leader_changed
    assert change.record.leader == 2
    assert (change.record.leader_epoch, change.record.partition_epoch) == (5, 11)


def test_no_live_isr_member_leaves_partition_leaderless_with_isr_kept() -> None:
    change = elect_leader(record(1, [1]), {2, 3}, False)
    assert change is not None
    assert change.record.leader == NO_LEADER and change.record.isr == [1]
    assert change.record.leader_epoch == 5


def test_leaderless_partition_stays_unchanged_while_its_isr_is_dead() -> None:
    assert elect_leader(record(NO_LEADER, [1]), {2, 3}, False) is None


def test_returning_isr_member_leads_again() -> None:
    change = elect_leader(record(NO_LEADER, [1]), {1, 2, 3}, False)
    assert change is not None and change.record.leader == 1 and change.record.isr == [1]


def test_unclean_election_picks_first_live_replica_and_is_flagged() -> None:
    change = elect_leader(record(NO_LEADER, [1]), {3, 2}, True)
    assert change is not None and change.unclean
    assert change.record.leader == 2 and change.record.isr == [2]


def test_unclean_enabled_still_prefers_a_clean_leader() -> None:
    change = elect_leader(record(1, [1, 3]), {2, 3}, True)
    assert change is not None and not change.unclean and change.record.leader == 3


def test_remove_follower_from_isr_keeps_leader_and_leader_epoch() -> None:
    change = remove_from_isr(record(1, [1, 2, 3]), 2)
    assert change is not None
    assert change.record.isr == [1, 3] and change.record.leader == 1
    assert (change.record.leader_epoch, change.record.partition_epoch) == (4, 11)


def test_remove_last_isr_member_keeps_it_and_drops_leadership() -> None:
    change = remove_from_isr(record(1, [1]), 1)
    assert change is not None and change.record.isr == [1] and change.record.leader == NO_LEADER


def test_remove_non_member_changes_nothing() -> None:
    assert remove_from_isr(record(1, [1, 2]), 3) is None


def test_remove_leader_from_isr_leaves_partition_leaderless() -> None:
    change = remove_from_isr(record(1, [1, 2]), 1)
    assert change is not None and change.record.leader == NO_LEADER and change.record.isr == [2]


def test_reconcile_moves_leadership_and_drops_dead_broker_from_isr() -> None:
    change = reconcile(record(1, [1, 2, 3]), {2, 3}, False)
    assert change is not None
    assert change.record.leader == 2 and change.record.isr == [2, 3]
    assert (change.record.leader_epoch, change.record.partition_epoch) == (5, 11)


def test_reconcile_keeps_the_last_leader_when_the_whole_isr_died() -> None:
    change = reconcile(record(2, [1, 2]), {3}, False)
    assert change is not None and change.record.isr == [2] and change.record.leader == NO_LEADER


def test_reconcile_is_idempotent() -> None:
    first = reconcile(record(1, [1, 2, 3]), {3}, False)
    assert first is not None
    assert reconcile(first.record, {3}, False) is None


def test_preferred_leader_restored_when_in_isr_and_alive() -> None:
    change = preferred_leader_election(record(2, [1, 2, 3]), {1, 2, 3})
    assert change is not None and change.record.leader == 1 and change.record.leader_epoch == 5


def test_preferred_leader_not_restored_when_out_of_isr_or_dead() -> None:
    assert preferred_leader_election(record(2, [2, 3]), {1, 2, 3}) is None
    assert preferred_leader_election(record(2, [1, 2, 3]), {2, 3}) is None
    assert preferred_leader_election(record(1, [1, 2]), {1, 2}) is None


def test_controlled_shutdown_moves_leadership_and_leaves_isr() -> None:
    change = controlled_shutdown_move(record(1, [1, 2, 3]), 1, {1, 2, 3})
    assert change is not None
    assert change.record.leader == 2 and change.record.isr == [2, 3]


def test_controlled_shutdown_of_a_follower_only_leaves_the_isr() -> None:
    change = controlled_shutdown_move(record(1, [1, 2, 3]), 3, {1, 2, 3})
    assert change is not None and change.record.leader == 1 and change.record.isr == [1, 2]
    assert change.record.leader_epoch == 4


def test_controlled_shutdown_of_the_sole_isr_member_leaves_no_leader() -> None:
    change = controlled_shutdown_move(record(1, [1]), 1, {1, 2, 3})
    assert change is not None and change.record.leader == NO_LEADER and change.record.isr == [1]


def test_controlled_shutdown_skips_dead_isr_members() -> None:
    change = controlled_shutdown_move(record(1, [1, 2, 3]), 1, {1, 3})
    assert change is not None and change.record.leader == 3


def test_controlled_shutdown_of_a_non_replica_changes_nothing() -> None:
    assert controlled_shutdown_move(record(1, [1, 2]), 4, {1, 2, 4}) is None


@st.composite
def partition_records(draw: st.DrawFn) -> PartitionRecord:
    replicas = draw(st.permutations([1, 2, 3, 4]).map(lambda p: list(p[: draw(st.integers(1, 4))])))
    isr = [b for b in replicas if draw(st.booleans())] or replicas[:1]
    leader = draw(st.sampled_from([*isr, NO_LEADER]))
    return record(leader, isr, replicas=replicas)


@given(partition_records(), st.sets(st.integers(1, 4)), st.booleans())
def test_invariants_hold_after_every_reconcile(before: PartitionRecord, live: set[int], unclean: bool) -> None:
    change = reconcile(before, live, unclean)
    after = change.record if change else before
    assert after.isr and set(after.isr) <= set(after.replicas)
    assert after.leader == NO_LEADER or (after.leader in after.isr and after.leader in live)
    assert after.leader_epoch >= before.leader_epoch and after.partition_epoch >= before.partition_epoch
    if change:
        assert after.partition_epoch == before.partition_epoch + 1
        assert (after.leader_epoch > before.leader_epoch) == (after.leader != before.leader)
        assert change.unclean or set(after.isr) <= set(before.isr)

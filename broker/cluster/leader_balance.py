"""Which partitions the automatic preferred-leader rebalance moves (Kafka's
``auto.leader.rebalance.enable``, ``checkAndTriggerAutoLeaderRebalance``), as a pure
function of the partition records, the live brokers and the threshold.

Kafka's rule, per broker ``b``: its imbalance ratio is the number of partitions whose
preferred replica (``replicas[0]``) is ``b`` but whose leader is not, over the number
of partitions whose preferred replica is ``b``. When the ratio exceeds
``leader_imbalance_per_broker_percentage`` / 100, every partition preferring ``b`` that
can take ``b`` as leader gets it back; below the threshold a few strays are tolerated,
so a single transient move does not bump epochs cluster-wide.

Invariant: a partition is chosen only when ``preferred_leader_election`` would move its
leadership, i.e. its preferred replica is alive, in the ISR and not already leading; the
controller applies exactly that function (the same one ``partitions:elect-preferred``
uses), so an automatic move is never less safe than a manual one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable

from broker.cluster.election import preferred_leader_election
from broker.cluster.records import PartitionRecord


def imbalanced_brokers(
    records: Iterable[PartitionRecord], live_broker_ids: Collection[int], imbalance_percentage: int
) -> set[int]:
    """Live brokers whose share of preferred-but-not-led partitions exceeds the threshold."""
    preferred: Counter[int] = Counter()
    not_led: Counter[int] = Counter()
    for record in records:
        preferred[record.replicas[0]] += 1
        if record.leader != record.replicas[0]:
            not_led[record.replicas[0]] += 1
    return {
        broker_id
        for broker_id in live_broker_ids
        if preferred[broker_id] and not_led[broker_id] * 100 > imbalance_percentage * preferred[broker_id]
    }


def partitions_to_rebalance(
    records: Iterable[PartitionRecord], live_broker_ids: Collection[int], imbalance_percentage: int
) -> list[tuple[str, int]]:
    """``(topic, partition)`` of every partition to hand back to its preferred replica, in
    record order; empty when no live broker is over the threshold."""
    records = list(records)
    imbalanced = imbalanced_brokers(records, live_broker_ids, imbalance_percentage)
    return [
        (record.topic, record.partition)
        for record in records
        if record.replicas[0] in imbalanced and preferred_leader_election(record, live_broker_ids) is not None
    ]

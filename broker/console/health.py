"""Cluster-wide partition health from the metadata every broker holds (no broker is asked).

* ``offline_partitions``: no leader (``leader == -1``): nothing can be read or written;
* ``under_replicated_partitions``: a leader, and fewer in-sync replicas than replicas;
* ``under_min_isr_partitions``: a leader, and an ISR below ``min(min.insync.replicas,
  replication factor)`` (Kafka's effective min ISR): acks=all produces are refused.

An offline partition is counted only as offline, as Kafka's leaders report
under-replication only for partitions they lead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from broker.cluster.records import PartitionRecord


def partition_health(records: Iterable[PartitionRecord], min_insync_replicas: Callable[[str], int]) -> dict[str, int]:
    """``min_insync_replicas(topic)`` is the topic's configured ``min.insync.replicas``."""
    offline = under_replicated = under_min_isr = 0
    for record in records:
        if record.leader < 0:
            offline += 1
            continue
        if len(record.isr) < len(record.replicas):
            under_replicated += 1
        if len(record.isr) < min(min_insync_replicas(record.topic), len(record.replicas)):
            under_min_isr += 1
    return {
        "under_replicated_partitions": under_replicated,
        "under_min_isr_partitions": under_min_isr,
        "offline_partitions": offline,
    }

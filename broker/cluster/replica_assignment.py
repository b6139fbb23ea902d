"""Manual replica assignments for new topics: Apache Kafka's rules, written once for every door.

A creator may name each partition's replicas itself instead of giving a partition
count and a replication factor (the REST Proxy's ``replicas_assignments``, Kafka's
CreateTopics ``assignments``). Kafka's controller (``ReplicationControlManager.createTopic``)
accepts one only when:

* it is instead of the counts, never with them (``check_exclusive``): the assignment
  already says how many partitions and replicas there are, and two answers to one
  question would leave one of them silently ignored;
* the partition ids are ``0..n-1``, each once: partition ids are positions, a gap
  would be a partition nobody hosts (``ordered_assignment``);
* every partition has the same, non-zero number of replicas (the topic has one
  replication factor) and names no broker twice (a broker holds one replica of a
  partition) (``ordered_assignment``);
* every broker it names is registered (``check_brokers``), and every partition has at
  least one live replica (not in controlled shutdown) to lead it.

The first replica of each list is the preferred leader, as in Kafka. A new partition
starts with the live replicas, in assignment order, as its ISR and the first of them as
its leader (``initial_isr``): it is empty, so every live replica already holds all of it.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from broker.cluster.placement import MAX_PARTITIONS_PER_TOPIC
from broker.errors import InvalidPartitions, InvalidReplicaAssignment, InvalidRequest


def check_exclusive(partitions_count: int | None, replication_factor: int | None) -> None:
    """Refuse counts given alongside an assignment (None: not given); ``InvalidRequest`` names them."""
    given = [
        f"{name} ({value})"
        for name, value in (("partitions_count", partitions_count), ("replication_factor", replication_factor))
        if value is not None
    ]
    if given:
        raise InvalidRequest(
            f"a replica assignment cannot be combined with {' and '.join(given)}: the assignment sets the "
            "partition count and the replication factor itself"
        )


def ordered_assignment(assignments: Iterable[tuple[int, Sequence[int]]]) -> list[list[int]]:
    """``(partition_id, broker_ids)`` pairs as replica lists indexed by partition id.

    Raises ``InvalidReplicaAssignment`` naming the first partition that breaks a rule of
    the module docstring (ids, replica counts, repeated brokers), ``InvalidPartitions``
    above ``MAX_PARTITIONS_PER_TOPIC`` partitions.
    """
    by_partition: dict[int, list[int]] = {}
    for partition, brokers in assignments:
        if partition in by_partition:
            raise InvalidReplicaAssignment(f"partition {partition} is assigned more than once")
        by_partition[partition] = list(brokers)
    count = len(by_partition)
    if count == 0:
        raise InvalidReplicaAssignment("a replica assignment needs at least one partition")
    if count > MAX_PARTITIONS_PER_TOPIC:
        raise InvalidPartitions(f"a replica assignment may name at most {MAX_PARTITIONS_PER_TOPIC} partitions")
    outside = sorted(p for p in by_partition if not 0 <= p < count)
    if outside:
        missing = sorted(set(range(count)) - set(by_partition))
        raise InvalidReplicaAssignment(
            f"partition ids must be 0 to {count - 1} for {count} partitions: got {outside[0]}, "
            f"partition {missing[0]} is missing"
        )
    ordered = [by_partition[p] for p in range(count)]
    for partition, replicas in enumerate(ordered):
        _check_replicas(partition, replicas, len(ordered[0]))
    return ordered


def _check_replicas(partition: int, replicas: list[int], replication_factor: int) -> None:
    if not replicas:
        raise InvalidReplicaAssignment(f"partition {partition} has no replicas: every partition needs at least one")
    if len(replicas) != replication_factor:
        raise InvalidReplicaAssignment(
            f"partition {partition} has {len(replicas)} replica(s) but partition 0 has {replication_factor}: "
            "every partition of a topic has the same number of replicas"
        )
    repeated = sorted({b for b in replicas if replicas.count(b) > 1})
    if repeated:
        raise InvalidReplicaAssignment(f"partition {partition} names broker {repeated[0]} more than once")


def check_brokers(assignment: Sequence[Sequence[int]], registered: Collection[int], live: Collection[int]) -> None:
    """Every broker of ``assignment`` is ``registered``, and every partition has a ``live`` replica.

    ``live`` is the registered brokers not in controlled shutdown; a view that cannot
    tell the two apart passes the same set twice.
    """
    for partition, replicas in enumerate(assignment):
        unknown = [b for b in replicas if b not in registered]
        if unknown:
            known = ", ".join(map(str, sorted(registered))) or "none"
            raise InvalidReplicaAssignment(
                f"partition {partition} names broker {unknown[0]}, which is not a registered broker "
                f"(registered: {known})"
            )
        if not any(b in live for b in replicas):
            raise InvalidReplicaAssignment(
                f"every broker of partition {partition} ({', '.join(map(str, replicas))}) is in controlled shutdown: "
                "nobody could lead it"
            )


def initial_isr(replicas: Sequence[int], live: Collection[int]) -> list[int]:
    """A new partition's ISR: its live replicas in assignment order (the leader is the first).

    When none is live (it went away after the assignment was checked) the ISR is every
    replica, as automatic placement writes it: the controller's next reconciliation
    elects from it as for any partition whose leader died.
    """
    return [b for b in replicas if b in live] or list(replicas)

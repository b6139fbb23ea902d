"""Replica placement for new topics: Apache Kafka's ``AdminUtils`` round robin.

Without racks (``assignReplicasToBrokersRackUnaware``): brokers sorted by id; the
first replica (the preferred leader) of partition ``p`` is broker
``(p + start_index) % n``, so leaderships rotate over every broker and spread evenly;
the followers sit at a shift from the leader that grows by one after every ``n``
partitions, so the followers of one broker's leaderships are spread too.

With racks (``assignReplicasToBrokersRackAware``): the same rotation over a broker list
that alternates racks (``getRackAlternatedBrokerList``: rack a's first broker, rack b's
first broker, ..., rack a's second broker, ...), and a follower candidate is skipped
while a rack without a replica, or a broker without one, remains. Every partition
therefore lands on ``min(replication_factor, racks)`` racks. Brokers without a rack
count as one unnamed rack when other brokers have racks (Kafka refuses such a mix;
we prefer placing replicas to failing a topic creation).

Kafka picks ``start_index`` at random. We choose it from ``existing_leader_counts``
instead: the rotation starts at the broker leading the fewest partitions (lowest id on
a tie), so topics created one after another keep the cluster's leaders balanced, and
placement stays deterministic and testable.

Adding partitions (``assign_added_partitions``) follows Kafka's ``AdminZkClient.addPartitions``:
the rotation starts where partition 0's preferred leader sits in the broker order, and the new
partitions take the places the same rotation gives partitions ``existing..wanted-1``, so a topic
grown from 3 to 6 partitions is placed as one created with 6 would have been from that start.

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from broker.errors import InvalidPartitions, InvalidReplicationFactor

UNNAMED_RACK = ""
"""Rack of brokers that have none, when other brokers do have racks."""


def assign_replicas(
    partitions_count: int,
    replication_factor: int,
    brokers: Sequence[tuple[int, str | None]],
    existing_leader_counts: Mapping[int, int] | None = None,
    start_index: int | None = None,
) -> list[list[int]]:
    """Replica lists, one per partition; ``[p][0]`` is partition ``p``'s preferred leader.

    ``brokers`` are the live ``(broker_id, rack)`` pairs. Raises
    ``InvalidReplicationFactor`` when ``replication_factor`` is below 1 or above the
    number of live brokers, ``InvalidPartitions`` when ``partitions_count`` is below 1.
    """
    _validate(partitions_count, replication_factor, len(brokers))
    rack_aware = any(rack is not None for _, rack in brokers)
    racks = {broker_id: rack if rack is not None else UNNAMED_RACK for broker_id, rack in brokers}
    ordered = rack_alternated_brokers(racks) if rack_aware else sorted(racks)
    first = start_index if start_index is not None else _least_loaded_index(ordered, existing_leader_counts or {})
    if rack_aware:
        return _assign_rack_aware(partitions_count, replication_factor, ordered, racks, first)
    return _assign_rack_unaware(partitions_count, replication_factor, ordered, first)


def assign_added_partitions(
    existing: Sequence[Sequence[int]],
    partitions_count: int,
    brokers: Sequence[tuple[int, str | None]],
) -> list[list[int]]:
    """Replica lists for partitions ``len(existing)..partitions_count-1`` of a topic placed as ``existing``.

    The replication factor is the topic's (``len(existing[0])``). Raises
    ``InvalidPartitions`` unless ``partitions_count`` grows the topic (Kafka's
    InvalidPartitionsException: a topic's partitions are never removed, since the
    records keyed to them would move) and ``InvalidReplicationFactor`` when fewer
    brokers are live than the topic has replicas.
    """
    current = len(existing)
    if partitions_count <= current:
        raise InvalidPartitions(
            f"topic already has {current} partitions; partitions_count must be larger to add any, got {partitions_count}"
        )
    replication_factor = len(existing[0])
    _validate(partitions_count, replication_factor, len(brokers))
    rack_aware = any(rack is not None for _, rack in brokers)
    racks = {broker_id: rack if rack is not None else UNNAMED_RACK for broker_id, rack in brokers}
    ordered = rack_alternated_brokers(racks) if rack_aware else sorted(racks)
    first_leader = existing[0][0]
    start_index = ordered.index(first_leader) if first_leader in ordered else 0
    return assign_replicas(partitions_count, replication_factor, brokers, start_index=start_index)[current:]


def rack_alternated_brokers(rack_of_broker: Mapping[int, str]) -> list[int]:
    """Kafka's ``getRackAlternatedBrokerList``: take one broker per rack in turn (racks
    and the brokers of each rack in sorted order) until every broker is listed."""
    by_rack: dict[str, list[int]] = {}
    for broker_id in sorted(rack_of_broker):
        by_rack.setdefault(rack_of_broker[broker_id], []).append(broker_id)
    queues = [by_rack[rack] for rack in sorted(by_rack)]
    ordered: list[int] = []
    depth = 0
    while len(ordered) < len(rack_of_broker):
        ordered.extend(queue[depth] for queue in queues if depth < len(queue))
        depth += 1
    return ordered


MAX_PARTITIONS_PER_TOPIC = 10_000
"""Each partition is a directory, open segment files and a task per replica: a request for
a million partitions is a mistake to refuse, not a workload to attempt."""


def _validate(partitions_count: int, replication_factor: int, live_brokers: int) -> None:
    if partitions_count < 1:
        raise InvalidPartitions(f"partitions_count must be at least 1, got {partitions_count}")
    if partitions_count > MAX_PARTITIONS_PER_TOPIC:
        raise InvalidPartitions(f"partitions_count must be at most {MAX_PARTITIONS_PER_TOPIC}, got {partitions_count}")
    if replication_factor < 1:
        raise InvalidReplicationFactor(f"replication factor must be at least 1, got {replication_factor}")
    if replication_factor > live_brokers:
        noun = "live broker" if live_brokers == 1 else "live brokers"
        raise InvalidReplicationFactor(
            f"replication factor {replication_factor} is larger than the {live_brokers} {noun}"
        )


def _least_loaded_index(ordered: list[int], existing_leader_counts: Mapping[int, int]) -> int:
    loads = [(existing_leader_counts.get(broker_id, 0), broker_id, index) for index, broker_id in enumerate(ordered)]
    return min(loads)[2]


def _follower_index(first_replica_index: int, replica_shift: int, replica_number: int, brokers_count: int) -> int:
    """Kafka's ``replicaIndex``: never ``first_replica_index`` itself (shift in 1..n-1)."""
    shift = 1 + (replica_shift + replica_number) % (brokers_count - 1)
    return (first_replica_index + shift) % brokers_count


def _assign_rack_unaware(
    partitions_count: int, replication_factor: int, ordered: list[int], start_index: int
) -> list[list[int]]:
    brokers_count = len(ordered)
    replica_shift = start_index
    assignment: list[list[int]] = []
    for partition in range(partitions_count):
        if partition > 0 and partition % brokers_count == 0:
            replica_shift += 1
        first_index = (partition + start_index) % brokers_count
        replicas = [ordered[first_index]]
        replicas += [
            ordered[_follower_index(first_index, replica_shift, j, brokers_count)]
            for j in range(replication_factor - 1)
        ]
        assignment.append(replicas)
    return assignment


def _assign_rack_aware(
    partitions_count: int,
    replication_factor: int,
    ordered: list[int],
    racks: Mapping[int, str],
    start_index: int,
) -> list[list[int]]:
    brokers_count = len(ordered)
    racks_count = len(set(racks.values()))
    replica_shift = start_index
    assignment: list[list[int]] = []
    for partition in range(partitions_count):
        if partition > 0 and partition % brokers_count == 0:
            replica_shift += 1
        first_index = (partition + start_index) % brokers_count
        assignment.append(
            _rack_aware_replicas(ordered, racks, racks_count, first_index, replica_shift, replication_factor)
        )
    return assignment


def _rack_aware_replicas(
    ordered: list[int],
    racks: Mapping[int, str],
    racks_count: int,
    first_index: int,
    replica_shift: int,
    replication_factor: int,
) -> list[int]:
    """Kafka's skip rule: take a candidate only if its rack has no replica yet (or
    every rack has one) and it has no replica yet (or every broker has one)."""
    brokers_count = len(ordered)
    leader = ordered[first_index]
    replicas = [leader]
    racks_with_replica = {racks[leader]}
    candidate_number = 0
    while len(replicas) < replication_factor:
        index = _follower_index(first_index, replica_shift * racks_count, candidate_number, brokers_count)
        candidate = ordered[index]
        candidate_number += 1
        rack_ok = racks[candidate] not in racks_with_replica or len(racks_with_replica) == racks_count
        if rack_ok and candidate not in replicas:
            replicas.append(candidate)
            racks_with_replica.add(racks[candidate])
    return replicas

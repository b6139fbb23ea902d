"""Server-side partition assignors (KIP-848): ``uniform`` (sticky) and ``range``.

An assignor maps each member's resolved subscription to a *target assignment*. It is a
pure function of the members' subscriptions, the partition counts and (for stickiness)
the previous target; the coordinator then moves members towards the target, revoking
before it reassigns (``broker.groups.membership``).

Invariants of every result: each partition of a subscribed topic is assigned to
exactly one member subscribed to its topic (none when no member subscribes), and no
partition appears twice.

``uniform``: balanced within one partition between any two members that could take
the same partition, and sticky — a partition stays with its previous owner unless that
owner no longer subscribes to the topic or holds more than its share.
``range``: per topic, members sorted by id take contiguous ranges, the first
``partitions % members`` one partition more (Kafka's RangeAssignor), so members with
the same subscriptions get co-partitioned ranges.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

TopicPartition = tuple[str, int]
Assignment = dict[str, set[TopicPartition]]


def grouped_by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partition numbers by topic, both in order: how every door lists an assignment (KIP-848's TopicPartitions)."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        grouped.setdefault(topic, []).append(partition)
    return grouped


UNIFORM = "uniform"
RANGE = "range"
ASSIGNORS = (UNIFORM, RANGE)


def _all_partitions(subscriptions: Mapping[str, frozenset[str]], partition_counts: Mapping[str, int]):
    topics = sorted({topic for topics in subscriptions.values() for topic in topics if topic in partition_counts})
    return [(topic, partition) for topic in topics for partition in range(partition_counts[topic])]


def range_assign(subscriptions: Mapping[str, frozenset[str]], partition_counts: Mapping[str, int]) -> Assignment:
    assignment: Assignment = {member: set() for member in subscriptions}
    topics = sorted({topic for topics in subscriptions.values() for topic in topics if topic in partition_counts})
    for topic in topics:
        members = sorted(member for member, topics_ in subscriptions.items() if topic in topics_)
        count = partition_counts[topic]
        share, extra = divmod(count, len(members))
        start = 0
        for index, member in enumerate(members):
            size = share + (1 if index < extra else 0)
            assignment[member].update((topic, partition) for partition in range(start, start + size))
            start += size
    return assignment


def uniform_assign(
    subscriptions: Mapping[str, frozenset[str]],
    partition_counts: Mapping[str, int],
    previous: Mapping[str, set[TopicPartition]] | None = None,
) -> Assignment:
    """Sticky balanced assignment; see the module docstring.

    1. keep each partition with its previous owner if that owner still subscribes;
    2. give every unassigned partition to the least-loaded subscribed member;
    3. while some partition could move from an owner with load L to an eligible
       member with load <= L - 2, move it (each move strictly lowers the sum of
       squared loads, so this terminates).
    """
    assignment: Assignment = {member: set() for member in subscriptions}
    owner: dict[TopicPartition, str] = {}
    partitions = _all_partitions(subscriptions, partition_counts)
    wanted = set(partitions)
    for member, owned in (previous or {}).items():
        if member not in subscriptions:
            continue
        for tp in sorted(owned):
            if tp in wanted and tp not in owner and tp[0] in subscriptions[member]:
                owner[tp] = member
                assignment[member].add(tp)
    eligible = {tp: sorted(m for m, topics in subscriptions.items() if tp[0] in topics) for tp in partitions}
    for tp in partitions:
        if tp not in owner:
            chosen = min(eligible[tp], key=lambda m: (len(assignment[m]), m))
            owner[tp] = chosen
            assignment[chosen].add(tp)
    _balance(assignment, owner, eligible)
    return assignment


def _balance(
    assignment: Assignment, owner: dict[TopicPartition, str], eligible: dict[TopicPartition, list[str]]
) -> None:
    moved = True
    while moved:
        moved = False
        for member in sorted(assignment, key=lambda m: (-len(assignment[m]), m)):
            for tp in sorted(assignment[member]):
                target = min(eligible[tp], key=lambda m: (len(assignment[m]), m))
                if len(assignment[target]) <= len(assignment[member]) - 2:
                    assignment[member].discard(tp)
                    assignment[target].add(tp)
                    owner[tp] = target
                    moved = True
                    break
            if moved:
                break


def assign(
    assignor: str,
    subscriptions: Mapping[str, frozenset[str]],
    partition_counts: Mapping[str, int],
    previous: Mapping[str, set[TopicPartition]] | None = None,
) -> Assignment:
    if assignor == RANGE:
        return range_assign(subscriptions, partition_counts)
    return uniform_assign(subscriptions, partition_counts, previous)

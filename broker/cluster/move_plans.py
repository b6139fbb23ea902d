"""Which partitions to move where: draining a broker, balancing replicas over brokers, a fresh plan.

A plan maps ``(topic, partition)`` to the partition's target replicas; it is handed to a
reassignment (``broker.cluster.reassignment``), which moves data safely, so a plan only
decides placement. Every plan keeps a partition's replicas on distinct racks whenever
the racks allow it, and says where they cannot (``MovePlan.rack_warnings``): a rack
shared by two replicas of a partition is a partition one rack failure can take offline.

- ``drain``: every replica on the draining broker moves, in place (the replacement takes
  its position in the list, so a drained preferred leader's partition gets a new
  preferred leader), to the eligible broker holding the fewest replicas, preferring a rack
  the partition does not use yet.
- ``balance``: over the brokers of ``racks`` only (a broker left out, being drained or
  gone, is neither a source nor a destination): while some broker holds more than
  ``mean × (1 + tolerance)`` replicas (or
  fewer than ``mean × (1 - tolerance)``), one replica moves from the most loaded broker to
  the least loaded one that can take it, at most ``max_moves`` moves per plan, so a cluster
  is balanced in bounded steps; adding an empty broker and balancing spreads load onto it.
- ``even_leaders``: while some broker is the preferred leader (first replica) of more than
  ``mean × (1 + tolerance)`` partitions, one of its partitions puts first the replica whose
  broker is preferred by fewest: a reorder, which moves no data and which the controller
  follows with a preferred election. A drain hands the drained broker's preferred
  leaderships to its replacements; this spreads them again.
- ``generate``: Kafka's ``--generate``: every partition of the given topics placed afresh
  over the given brokers by the creation placement (``placement.assign_replicas``), each
  with as many replicas as it has now (a reassignment may have changed one partition's).

Every plan keeps each partition's replica count: changing it is the user's explicit move.

Counts are replicas (each replica of a partition weighs the same); the broker with the
lowest id wins a tie, so a plan is deterministic. Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from broker.cluster.placement import UNNAMED_RACK, assign_replicas
from broker.errors import InvalidReplicaAssignment

Partition = tuple[str, int]
Assignment = Mapping[Partition, Sequence[int]]


@dataclass
class MovePlan:
    """The targets of the partitions that move (those that stay are left out) and the rack compromises made."""

    moves: dict[Partition, list[int]] = field(default_factory=dict)
    rack_warnings: list[str] = field(default_factory=list)


def replica_counts(assignment: Assignment, brokers: Collection[int]) -> Counter[int]:
    """Replicas each broker holds (every broker of ``brokers`` present, with 0 if it holds none)."""
    counts: Counter[int] = Counter(dict.fromkeys(brokers, 0))
    for replicas in assignment.values():
        counts.update(replicas)
    return counts


def drain(assignment: Assignment, draining: int, racks: Mapping[int, str | None]) -> MovePlan:
    """Move every replica off ``draining`` onto the other brokers of ``racks`` (the eligible ones).

    ``InvalidReplicaAssignment`` when a partition has nowhere to go (every other broker holds it).
    """
    eligible = {broker for broker in racks if broker != draining}
    counts = replica_counts(assignment, eligible)
    plan = MovePlan()
    for key in sorted(assignment):
        replicas = list(assignment[key])
        if draining not in replicas:
            continue
        others = [replica for replica in replicas if replica != draining]
        replacement = _least_loaded_taker(others, eligible, counts, racks)
        if replacement is None:
            raise InvalidReplicaAssignment(
                f"{key[0]}-{key[1]} cannot leave broker {draining}: every other broker already holds a replica "
                f"({sorted(replicas)}); add a broker first",
                topic_name=key[0],
                partition_id=key[1],
            )
        target = [replacement if replica == draining else replica for replica in replicas]
        counts[replacement] += 1
        plan.moves[key] = target
        _warn_shared_rack(plan, key, target, racks)
    return plan


def balance(
    assignment: Assignment, racks: Mapping[int, str | None], tolerance: float = 0.1, max_moves: int = 10
) -> MovePlan:
    """Up to ``max_moves`` single-replica moves from the most to the least loaded brokers (see the module docstring)."""
    current = {key: list(replicas) for key, replicas in assignment.items()}
    counts = Counter({broker: count for broker, count in replica_counts(current, racks).items() if broker in racks})
    plan = MovePlan()
    mean = sum(counts.values()) / len(counts) if counts else 0.0
    for _ in range(max_moves):
        if _within(counts, mean, tolerance):
            break
        move = _one_move(current, counts, racks)
        if move is None:
            break
        key, source, destination = move
        current[key] = [destination if replica == source else replica for replica in current[key]]
        counts[source] -= 1
        counts[destination] += 1
        plan.moves[key] = current[key]
    for key, target in sorted(plan.moves.items()):
        _warn_shared_rack(plan, key, target, racks)
    return plan


def even_leaders(
    assignment: Assignment, racks: Mapping[int, str | None], tolerance: float = 0.1, max_moves: int = 10
) -> MovePlan:
    """Up to ``max_moves`` reorders spreading preferred leaders over the brokers of ``racks`` (see the
    module docstring); replicas stay where they are, so racks stay as they were."""
    current = {key: list(replicas) for key, replicas in assignment.items() if replicas}
    counts: Counter[int] = Counter(dict.fromkeys(racks, 0))
    counts.update(replicas[0] for replicas in current.values() if replicas[0] in racks)
    mean = sum(counts.values()) / len(counts) if counts else 0.0
    plan = MovePlan()
    for _ in range(max_moves):
        if _within(counts, mean, tolerance):
            break
        source = max(counts, key=lambda broker: (counts[broker], -broker))
        move = _leader_taker(current, counts, source)
        if move is None:
            break
        key, destination = move
        current[key] = [destination, *(replica for replica in current[key] if replica != destination)]
        counts[source] -= 1
        counts[destination] += 1
        plan.moves[key] = current[key]
    return plan


def _leader_taker(
    current: Mapping[Partition, list[int]], counts: Counter[int], source: int
) -> tuple[Partition, int] | None:
    """A partition ``source`` is preferred for and the replica of it preferred for fewest, at least two fewer."""
    takers = [
        (counts[candidate], candidate, key)
        for key in sorted(current)
        if current[key][0] == source
        for candidate in current[key][1:]
        if candidate in counts and counts[source] - counts[candidate] >= 2
    ]
    if not takers:
        return None
    _, candidate, key = min(takers)
    return key, candidate


def generate(assignment: Assignment, racks: Mapping[int, str | None], topics: Collection[str]) -> MovePlan:
    """Every partition of ``topics`` placed afresh over the brokers of ``racks`` (Kafka's ``--generate``);
    only the partitions whose replicas change are in the plan.

    Each partition keeps its replica count: it takes its position in the creation placement
    made at that count, so a topic of one count is placed as at creation, and one whose
    counts differ (a reassignment changed some) is not brought to partition 0's.
    """
    plan = MovePlan()
    brokers = sorted(racks.items())
    for topic in sorted(topics):
        keys = sorted(key for key in assignment if key[0] == topic)
        placements = {
            count: assign_replicas(len(keys), count, brokers, start_index=0)
            for count in {len(assignment[key]) for key in keys}
        }
        for index, key in enumerate(keys):
            target = placements[len(assignment[key])][index]
            if list(assignment[key]) != target:
                plan.moves[key] = target
                _warn_shared_rack(plan, key, target, racks)
    return plan


def _within(counts: Counter[int], mean: float, tolerance: float) -> bool:
    return all(mean * (1 - tolerance) <= count <= mean * (1 + tolerance) for count in counts.values())


def _one_move(
    current: Mapping[Partition, list[int]], counts: Counter[int], racks: Mapping[int, str | None]
) -> tuple[Partition, int, int] | None:
    """The replica to move: from the most loaded broker to the least loaded one that may take it, the one
    that narrows their gap; a move that would keep distinct racks first."""
    by_load = sorted(counts, key=lambda broker: (-counts[broker], broker))
    for source in by_load:
        for destination in reversed(by_load):
            if counts[source] - counts[destination] < 2:
                break
            move = _movable(current, source, destination, racks)
            if move is not None:
                return move, source, destination
    return None


def _movable(
    current: Mapping[Partition, list[int]], source: int, destination: int, racks: Mapping[int, str | None]
) -> Partition | None:
    """A partition on ``source`` and not on ``destination``, rack-distinct after the move if any can be."""
    candidates = [key for key in sorted(current) if source in current[key] and destination not in current[key]]
    for key in candidates:
        others = [replica for replica in current[key] if replica != source]
        if _rack(racks, destination) not in {_rack(racks, other) for other in others}:
            return key
    return candidates[0] if candidates else None


def _least_loaded_taker(
    others: Sequence[int], eligible: Collection[int], counts: Counter[int], racks: Mapping[int, str | None]
) -> int | None:
    used_racks = {_rack(racks, other) for other in others}
    takers = sorted((broker for broker in eligible if broker not in others), key=lambda b: (counts[b], b))
    fresh_rack = [broker for broker in takers if _rack(racks, broker) not in used_racks]
    chosen = fresh_rack or takers
    return chosen[0] if chosen else None


def _warn_shared_rack(plan: MovePlan, key: Partition, target: Sequence[int], racks: Mapping[int, str | None]) -> None:
    if not any(rack is not None for rack in racks.values()):
        return
    target_racks = [_rack(racks, broker) for broker in target]
    all_racks = {_rack(racks, broker) for broker in racks}
    if len(set(target_racks)) < min(len(target), len(all_racks)):
        plan.rack_warnings.append(
            f"{key[0]}-{key[1]}: replicas {list(target)} share a rack ({', '.join(map(repr, target_racks))}); "
            "no broker on another rack could take one"
        )


def _rack(racks: Mapping[int, str | None], broker: int) -> str:
    rack = racks.get(broker)
    return UNNAMED_RACK if rack is None else rack

"""Partition reassignment (Kafka's KIP-455) as pure functions from a ``PartitionRecord`` to its successor.

While a partition moves, its replica set is the target followed by the original
replicas the target leaves out (target ∪ original, in Kafka's order): a new replica
starts empty, fetches from the leader like any follower and joins the ISR once it has
caught up; acks=all waits on the whole ISR, original and new members alike, and
``min.insync.replicas`` counts that ISR. ``adding_replicas`` are the target's replicas
the original did not have, ``removing_replicas`` the original's the target leaves out.

The move completes once every target replica is in the ISR (Kafka's
``isReassignmentComplete``): the replica set becomes the target, the ISR keeps only
target members, and a leader that is leaving hands over to the first target replica
that is in the ISR and alive, in the target's order (its preferred replica first).
The removed replicas then see a record that no longer names them and delete their logs.

A new target while a move is under way replaces it, measured from the original
replicas; the original replicas as target cancel the move (the copies made so far are
dropped). As in Kafka, the record keeps the original replicas' set, not their order:
``original_replicas`` lists them in the moving record's order (the target's first), so a
cancelled move may leave another preferred leader, which a move to the old order restores. A change that would leave no in-sync replica is refused: it would lose the
only replicas known to hold every acknowledged record.

A target may name more or fewer replicas than the original (a change of the
partition's replication factor, as ``kafka-reassign-partitions`` allows), by the same
rules: a target holding every original replica only adds replicas and completes once
they are in sync; a target within the original only removes replicas, so it completes
as soon as every replica it keeps is in the ISR (at once when they already are) and a
removed leader hands over then; any other both adds and removes. ``check_target``
refuses a target with fewer replicas than the topic needs in sync for acks=all. Once
every partition of a topic has settled on one replica count (``settled_replica_count``),
the controller writes it as the topic record's ``replication_factor``.

Every function returns ``None`` when nothing would change, so nothing is written and
no epoch moves for nothing; a written change bumps ``partition_epoch``, and
``leader_epoch`` when the leader changes, like every other change of the record.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from broker.cluster.election import PartitionChange, changed, choose_leader
from broker.cluster.records import PartitionRecord
from broker.errors import InvalidReplicaAssignment


class PartitionMove(BaseModel):
    """One partition's move as a request names it: its target replicas, or None to cancel its move.
    Also the body item of the controller's internal route, validated strictly."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    topic: str
    partition: int
    replicas: list[int] | None


class StartedMoves(BaseModel):
    """The records of the partitions a plan (a drain, a balancing step) set moving, and the rack
    compromises the plan made; also the body the controller's internal routes answer."""

    records: list[PartitionRecord]
    rack_warnings: list[str]


def original_replicas(record: PartitionRecord) -> list[int]:
    """The replicas before the move (all of them when nothing moves)."""
    return [replica for replica in record.replicas if replica not in record.adding_replicas]


def target_replicas(record: PartitionRecord) -> list[int]:
    """The replicas after the move (all of them when nothing moves)."""
    return [replica for replica in record.replicas if replica not in record.removing_replicas]


def is_moving(record: PartitionRecord) -> bool:
    return bool(record.adding_replicas or record.removing_replicas)


def reassign(record: PartitionRecord, target: Sequence[int], live: Collection[int]) -> PartitionChange | None:
    """Start moving the partition to ``target`` (or replace the move under way; the original cancels it).

    Completes at once when every target replica is already in the ISR (a move that only
    removes replicas, or reorders them). ``InvalidReplicaAssignment`` when no in-sync
    replica would be left.
    """
    original = original_replicas(record)
    target = list(target)
    replicas = target + [replica for replica in original if replica not in target]
    isr = [member for member in record.isr if member in replicas]
    if not isr:
        raise InvalidReplicaAssignment(
            f"{record.topic}-{record.partition}: its in-sync replicas {record.isr} are all left out of "
            f"{target} and {original}; wait until one of those is in sync",
            topic_name=record.topic,
            partition_id=record.partition,
        )
    moved = record.model_copy(
        update={
            "replicas": replicas,
            "isr": isr,
            "adding_replicas": [replica for replica in target if replica not in original],
            "removing_replicas": [replica for replica in original if replica not in target],
        }
    )
    completed = complete(moved, live)
    return changed(record, completed.record if completed is not None else _with_leader(moved, live))


def complete(record: PartitionRecord, live: Collection[int]) -> PartitionChange | None:
    """Finish the move if every target replica is in the ISR, else ``None`` (nothing moves, or not yet)."""
    target = target_replicas(record)
    if not is_moving(record) or not set(target) <= set(record.isr):
        return None
    done = record.model_copy(
        update={
            "replicas": target,
            "isr": [member for member in record.isr if member in target],
            "adding_replicas": [],
            "removing_replicas": [],
        }
    )
    return changed(record, _with_leader(done, live))


def _with_leader(record: PartitionRecord, live: Collection[int]) -> PartitionRecord:
    """The record with a leader that is one of its ISR: the current one if it still is and is alive,
    else the first replica in order that is in the ISR and alive (never unclean), else none."""
    leader, isr, _ = choose_leader(record, record.isr, live, False)
    return record.model_copy(update={"leader": leader, "isr": isr})


def check_target(record: PartitionRecord, target: Sequence[int], min_replicas: int, live: Collection[int]) -> None:
    """Refuse a target naming no broker, a broker twice, a new replica on a broker that is not alive
    (or is shutting down), or fewer than ``min_replicas`` brokers; ``InvalidReplicaAssignment`` names it.

    A replica the partition already has may stay in the target while its broker is down:
    nothing moves to it, and the move completes once it is back in the ISR, as Kafka's
    does. So a broker can be drained while another replica of its partitions is down
    (the copies to the new brokers go on), where refusing would stop the whole drain.

    ``min_replicas`` is the caller's to resolve: the controller passes the topic's effective
    ``min.insync.replicas`` (``policy.min_reassigned_replicas``), below which acks=all could
    never again be held by as many in-sync replicas as the topic asks for. Any other count
    is a change of the partition's replication factor, which is allowed.
    """
    where = f"{record.topic}-{record.partition}"
    details = {"topic_name": record.topic, "partition_id": record.partition}
    if not target:
        raise InvalidReplicaAssignment(f"{where}: the target names no broker", **details)
    repeated = sorted({broker for broker in target if list(target).count(broker) > 1})
    if repeated:
        raise InvalidReplicaAssignment(f"{where}: the target names broker {repeated[0]} more than once", **details)
    dead = [broker for broker in target if broker not in live and broker not in record.replicas]
    if dead:
        alive = ", ".join(map(str, sorted(live))) or "none"
        raise InvalidReplicaAssignment(
            f"{where}: broker {dead[0]} is not a live broker (live: {alive}); a replica can only move to one",
            **details,
        )
    if len(target) < min_replicas:
        raise InvalidReplicaAssignment(
            f"{where}: the target names {len(target)} broker(s) but topic '{record.topic}' needs {min_replicas} "
            f"in sync for acks=all (its min.insync.replicas); name at least {min_replicas} or lower "
            "min.insync.replicas first",
            **details,
        )


def settled_replica_count(partitions_count: int, records: Iterable[PartitionRecord]) -> int | None:
    """The replica count every one of a topic's ``partitions_count`` partitions has settled on, which the
    topic record's ``replication_factor`` then states; ``None`` while a partition is missing (a creation
    or growth under way) or moving, or while their counts differ (the record then keeps its value).
    """
    by_partition = {record.partition: record for record in records}
    partitions = [by_partition.get(partition) for partition in range(partitions_count)]
    if any(record is None or is_moving(record) for record in partitions):
        return None
    counts = {len(record.replicas) for record in partitions if record is not None}
    return counts.pop() if len(counts) == 1 else None


def moves_to_check(
    moving: Mapping[str, int], seen: Mapping[str, PartitionRecord | None]
) -> tuple[list[str], list[str]]:
    """Which of the moves the controller started (key -> partition epoch it wrote) to try to complete, and
    which to forget, given the records its view holds now (``seen``; None: the partition is gone).

    A record older than the write that started the move says nothing about the move: the
    controller's view may not hold its own write yet, and forgetting the move then would
    leave it unfinished for ever (found by the integration tests: a drain that never
    ended). A record that is not moving any more (completed, cancelled) is forgotten.
    """
    check: list[str] = []
    forget: list[str] = []
    for key, written_epoch in sorted(moving.items()):
        record = seen.get(key)
        if record is None:
            forget.append(key)
        elif record.partition_epoch < written_epoch:
            continue
        elif is_moving(record):
            check.append(key)
        else:
            forget.append(key)
    return check, forget

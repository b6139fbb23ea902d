"""Leader-epoch fencing of replication and offset requests (KIP-320).

Kafka's ``Partition.localLogWithEpochOrThrow`` / ``checkCurrentLeaderEpoch``
(core/src/main/scala/kafka/cluster/Partition.scala). A request names the leader epoch
its sender believes current:

- older than ours: the sender acts on stale metadata (a zombie, or a follower that
  missed a leader change) -> ``FENCED_LEADER_EPOCH``, not retriable as is;
- newer than ours: *we* are behind on metadata -> ``UNKNOWN_LEADER_EPOCH``, retriable;
- ``NO_LEADER_EPOCH`` (-1): the sender did not say; no check (Kafka does the same).
"""

from __future__ import annotations

from broker.errors import FencedLeaderEpoch, HighwaterError, UnknownLeaderEpoch

NO_LEADER_EPOCH = -1


def check_leader_epoch(
    topic: str, partition: int, local_leader_epoch: int, request_leader_epoch: int
) -> HighwaterError | None:
    """The error a request carrying ``request_leader_epoch`` must get, or ``None``."""
    if request_leader_epoch in (NO_LEADER_EPOCH, local_leader_epoch):
        return None
    details = {
        "topic": topic,
        "partition": partition,
        "leader_epoch": local_leader_epoch,
        "request_leader_epoch": request_leader_epoch,
    }
    if request_leader_epoch < local_leader_epoch:
        return FencedLeaderEpoch(
            f"leader epoch {request_leader_epoch} of {topic}-{partition} is fenced: "
            f"the current leader epoch is {local_leader_epoch}",
            **details,
        )
    return UnknownLeaderEpoch(
        f"leader epoch {request_leader_epoch} of {topic}-{partition} is newer than "
        f"this broker's {local_leader_epoch}; its metadata is behind, retry",
        **details,
    )

"""The leader-epoch check of a client's Fetch, ListOffsets and OffsetForLeaderEpoch (KIP-320).

The rule is the replication core's (``broker.replication.fencing.check_leader_epoch``),
the one followers meet: an older epoch than the partition's is ``FENCED_LEADER_EPOCH``,
a newer one ``UNKNOWN_LEADER_EPOCH``, -1 is no check. This door only raises its error,
which each handler answers per partition as Kafka's code (``errors.kafka_error_code``).
"""

from __future__ import annotations

from broker.replication.fencing import NO_LEADER_EPOCH, check_leader_epoch

NO_EPOCH = NO_LEADER_EPOCH


def require_leader_epoch(topic: str, partition: int, requested_epoch: int, leader_epoch: int) -> None:
    """Raise the core's fencing error when ``requested_epoch`` is not the partition's ``leader_epoch``."""
    error = check_leader_epoch(topic, partition, leader_epoch, requested_epoch)
    if error is not None:
        raise error

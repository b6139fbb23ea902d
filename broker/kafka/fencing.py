"""The leader-epoch check Kafka makes on a client's Fetch, ListOffsets and OffsetForLeaderEpoch (pure).

A client that sends ``current_leader_epoch`` (KIP-320) says which leader it thinks it
is talking to. An older epoch than the partition's means the client's metadata is
stale (``FENCED_LEADER_EPOCH``: refresh and retry); a newer one means this broker has
not caught up yet (``UNKNOWN_LEADER_EPOCH``: retry). -1 means the client did not say.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

NO_EPOCH = -1


def check_leader_epoch(requested_epoch: int, leader_epoch: int) -> ErrorCode:
    if requested_epoch in (NO_EPOCH, leader_epoch):
        return ErrorCode.none
    if requested_epoch < leader_epoch:
        return ErrorCode.fenced_leader_epoch
    return ErrorCode.unknown_leader_epoch

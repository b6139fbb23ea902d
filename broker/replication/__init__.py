"""Replication: pure per-partition state machines (leader side, follower side).

Everything exported here is pure — no asyncio, no I/O, no clock (time enters as
``now_ms``) — and is owned by the single task that owns the partition. Calls return
the actions to perform (``broker.replication.actions``); the async drivers perform them.
"""

from broker.replication.actions import (
    AppendRecords,
    AwaitLeaderChange,
    DivergingEpoch,
    FetchOutcome,
    FollowerAction,
    HwUpdate,
    ProposeIsr,
    RetryAfterBackoff,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateFollowerOffsets,
)
from broker.replication.fencing import NO_LEADER_EPOCH, check_leader_epoch
from broker.replication.fetch_validation import check_fetch_position
from broker.replication.follower import (
    FetchRequestFields,
    FollowerState,
    LocalLogView,
    PartitionFetchResponse,
)
from broker.replication.isr import IsrState, PendingIsrChange
from broker.replication.leader import PartitionLeaderState
from broker.replication.purgatory import DelayedProducePurgatory, ProduceCompletion
from broker.replication.replica_state import UNKNOWN_OFFSET, ReplicaState

__all__ = [
    "NO_LEADER_EPOCH",
    "UNKNOWN_OFFSET",
    "AppendRecords",
    "AwaitLeaderChange",
    "DelayedProducePurgatory",
    "DivergingEpoch",
    "FetchOutcome",
    "FetchRequestFields",
    "FollowerAction",
    "FollowerState",
    "HwUpdate",
    "IsrState",
    "LocalLogView",
    "PartitionFetchResponse",
    "PartitionLeaderState",
    "PendingIsrChange",
    "ProduceCompletion",
    "ProposeIsr",
    "ReplicaState",
    "RetryAfterBackoff",
    "TruncateFullyAndStartAt",
    "TruncateTo",
    "UpdateFollowerOffsets",
    "check_fetch_position",
    "check_leader_epoch",
]

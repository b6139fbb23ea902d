"""Replication: pure per-partition state machines (leader side, follower side).

Everything here is pure — no asyncio, no I/O, no clock (time enters as ``now_ms``)
— and is owned by the single task that owns the partition. ``PartitionReplica``
(``replica.py``) is the one object per partition replica that both drivers run: the
broker's asyncio ``broker.replica_io`` and the seeded simulation's synchronous one.
Each event returns a ``Ready`` (``ready.py``) listing what the driver must perform.
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
    fetched_last_offset,
)
from broker.replication.isr import IsrState, PendingIsrChange
from broker.replication.leader import PartitionLeaderState
from broker.replication.purgatory import DelayedProducePurgatory, ProduceCompletion
from broker.replication.ready import NOTHING, Ready
from broker.replication.replica import PartitionReplica
from broker.replication.replica_state import UNKNOWN_OFFSET, ReplicaState

__all__ = [
    "NOTHING",
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
    "PartitionReplica",
    "PendingIsrChange",
    "ProduceCompletion",
    "ProposeIsr",
    "Ready",
    "ReplicaState",
    "RetryAfterBackoff",
    "TruncateFullyAndStartAt",
    "TruncateTo",
    "UpdateFollowerOffsets",
    "check_fetch_position",
    "check_leader_epoch",
    "fetched_last_offset",
]

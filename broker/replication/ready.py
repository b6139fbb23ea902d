"""``Ready``: everything one event asks of a partition replica's driver, in one value.

etcd-io/raft's ``Ready`` and h11's events in one idea: the pure ``PartitionReplica``
(``replica.py``) never performs anything. Each event it takes returns a ``Ready``;
the driver — the broker's asyncio ``broker.replica_io`` or the simulation's synchronous
one — performs its parts in this order:

1. ``assign_epoch``: record ``(leader epoch, start offset)`` in the log's epoch cache
   before anything else is appended (KIP-101);
2. ``log_actions``: append / truncate / restart the local log, in order, reporting a
   truncation back with ``PartitionReplica.on_log_truncated``;
3. ``flush``: fsync what the log holds before answering or fetching again;
   ``start_flush`` (a leader under the ``fsync`` policy whose HW waits only for its own
   unflushed tail): start a group-committed fsync without waiting for it, and report
   the offset it made durable with ``PartitionReplica.on_flushed``;
   ``flush_before_acknowledging`` (only from ``on_appended`` of an acks=all produce,
   under the ``fsync`` policy): the produce request that appended awaits an fsync
   before it waits for the followers, and reports it with ``on_flushed`` too;
4. ``completions``: answer these acks=all produces (an error or success);
5. ``propose_isr``: send this ISR change to the controller as a compare-and-set and
   report the answer with ``PartitionReplica.on_isr_result``;
6. ``high_watermark_moved`` / ``role_changed``: wake readers (long polls, consumers)
   and, on a role change, move the partition between replica fetchers;
7. ``backoff``: wait the fetch back-off before this partition's next fetch;
8. ``next_deadline_ms``: call ``PartitionReplica.tick`` no later than this.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.replication.actions import FollowerAction, ProposeIsr
from broker.replication.purgatory import ProduceCompletion


@dataclass(frozen=True, slots=True)
class Ready:
    assign_epoch: tuple[int, int] | None = None
    log_actions: tuple[FollowerAction, ...] = ()
    flush: bool = False
    start_flush: bool = False
    flush_before_acknowledging: bool = False
    completions: tuple[ProduceCompletion, ...] = ()
    propose_isr: ProposeIsr | None = None
    high_watermark_moved: bool = False
    role_changed: bool = False
    backoff: bool = False
    next_deadline_ms: int | None = None


NOTHING = Ready()
"""The answer to an event that asks for nothing."""

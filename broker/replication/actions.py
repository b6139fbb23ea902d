"""What the pure replication state machines ask their driver to do.

The leader and follower state machines (``leader.py``, ``follower.py``) never touch a
file, a socket or a clock. Each call returns one of these frozen values describing
*what should happen*; the async driver that owns the partition performs it (append
the bytes, truncate the log, send the ISR proposal to the metadata store, answer the
waiting produces, checkpoint the high watermark) and reports back.

Every offset here is a Kafka offset: ``log_end_offset`` is the next offset a replica
will write, ``high_watermark`` the first offset not yet known to be on every in-sync
replica.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from broker.errors import HighwaterError


@dataclass(frozen=True, slots=True)
class HwUpdate:
    """The leader's high watermark rose from ``old_high_watermark`` to ``new_high_watermark``.

    Invariant: ``new_high_watermark > old_high_watermark`` — a leader's HW never moves
    back. The driver checkpoints it and wakes the acks=all produces and long-poll
    fetches waiting on it.
    """

    old_high_watermark: int
    new_high_watermark: int


@dataclass(frozen=True, slots=True)
class ProposeIsr:
    """Send an ISR change to the controller as a compare-and-set (KIP-497 AlterPartition).

    The write must succeed only if the partition record still carries
    ``leader_epoch`` and ``partition_epoch`` (the epoch the change was based on);
    otherwise the driver reports ``on_isr_change_rejected`` and re-reads the metadata.
    ``new_isr`` is in replica assignment order and always holds the leader.

    ``joining_broker_epochs`` holds (broker id, broker epoch) for each replica an
    expansion adds, the epoch being that of the incarnation whose fetches qualified it.
    The write must also be refused unless each is still the registered epoch of that
    broker (Kafka's AlterPartition ``NewIsrWithEpochs``, KIP-903): the leader's view of
    the registrations may lag a restart.
    """

    topic: str
    partition: int
    leader_id: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    change: Literal["expand", "shrink"]
    joining_broker_epochs: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class DivergingEpoch:
    """The leader's answer when a follower's log diverges (KIP-320/KIP-595 fetch validation).

    ``epoch`` is the largest leader epoch <= the follower's ``last_fetched_epoch`` that
    the leader knows, ``end_offset`` where that epoch ends in the leader's log.
    """

    epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    """How the leader answers one partition of a follower fetch.

    - ``high_watermark`` is the leader HW *before* this fetch was processed, which is
      what Kafka puts in the response (the read happens before the follower's state
      is updated), so a follower never learns an HW that its own fetch produced;
    - exactly one of ``error``, ``diverging_epoch`` or ``read_from_offset`` is set:
      refuse, tell the follower where to truncate, or send records from that offset;
    - ``hw_update`` / ``propose_isr`` are the side effects this fetch caused.
    """

    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    error: HighwaterError | None = None
    diverging_epoch: DivergingEpoch | None = None
    read_from_offset: int | None = None
    hw_update: HwUpdate | None = None
    propose_isr: ProposeIsr | None = None


@dataclass(frozen=True, slots=True)
class TruncateTo:
    """Cut the local log (and its leader-epoch cache) so it ends at ``offset``.

    ``high_watermark`` is the follower HW after the cut (min of the old HW and
    ``offset``), to be checkpointed.
    """

    offset: int
    high_watermark: int


@dataclass(frozen=True, slots=True)
class TruncateFullyAndStartAt:
    """Delete the whole local log and restart it empty at ``offset`` (new log start offset)."""

    offset: int


@dataclass(frozen=True, slots=True)
class AppendRecords:
    """Append the fetched batches as they are; they must start at ``expected_base_offset``.

    The driver records each batch's leader epoch in the epoch cache as it appends.
    """

    expected_base_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class UpdateFollowerOffsets:
    """New follower ``high_watermark`` and ``log_start_offset`` learned from the leader."""

    high_watermark: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class RetryAfterBackoff:
    """A retriable refusal (unknown leader epoch, not leader yet), or an answer that cannot be applied: fetch again later."""

    error: HighwaterError


@dataclass(frozen=True, slots=True)
class AwaitLeaderChange:
    """This follower is fenced (its leader epoch is stale): stop fetching until new metadata."""

    error: HighwaterError


FollowerAction = (
    TruncateTo | TruncateFullyAndStartAt | AppendRecords | UpdateFollowerOffsets | RetryAfterBackoff | AwaitLeaderChange
)

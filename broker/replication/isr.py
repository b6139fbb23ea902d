"""The committed ISR, at most one pending change, and the maximal ISR (KIP-497).

Kafka's ``CommittedPartitionState`` / ``PendingExpandIsr`` / ``PendingShrinkIsr`` in
core/src/main/scala/kafka/cluster/Partition.scala.

The leader cannot change the ISR by itself: it proposes the new ISR to the controller
as a compare-and-set on the partition record, guarded by ``partition_epoch``. While
that proposal is in flight the leader must be safe whichever way it goes, so it
advances the high watermark against the *maximal* ISR = committed ∪ proposed:

- an expansion counts at once (waiting for one more replica is always safe);
- a removal counts only once committed (until then the replica might still be in
  the ISR the controller holds, and a new leader could be elected from it).

Only one change may be in flight per partition; a newer partition record (higher
``partition_epoch``) replaces the committed state and drops the pending change.

Invariants: the committed ISR is never empty; the pending ISR is never empty.
Owned by the single task that owns the partition.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PendingIsrChange:
    """A proposed ISR, and the partition epoch of the record it was computed from."""

    new_isr: frozenset[int]
    based_on_partition_epoch: int


class IsrState:
    """Committed ISR + partition epoch + at most one in-flight change."""

    def __init__(self, isr: frozenset[int], partition_epoch: int) -> None:
        if not isr:
            raise ValueError("the ISR is never empty")
        self._committed = isr
        self._partition_epoch = partition_epoch
        self._pending: PendingIsrChange | None = None

    @property
    def committed(self) -> frozenset[int]:
        return self._committed

    @property
    def partition_epoch(self) -> int:
        return self._partition_epoch

    @property
    def pending(self) -> PendingIsrChange | None:
        return self._pending

    @property
    def maximal(self) -> frozenset[int]:
        """Committed ∪ pending: additions count at once, removals only once committed."""
        if self._pending is None:
            return self._committed
        return self._committed | self._pending.new_isr

    def propose(self, new_isr: frozenset[int]) -> PendingIsrChange:
        """Start an ISR change; only one may be in flight."""
        if self._pending is not None:
            raise ValueError("an ISR change is already in flight")
        if not new_isr:
            raise ValueError("the ISR is never empty")
        self._pending = PendingIsrChange(new_isr, self._partition_epoch)
        return self._pending

    def commit(self, new_isr: frozenset[int], new_partition_epoch: int) -> bool:
        """Adopt a committed partition record; ignore it unless its epoch is newer.

        Whatever change was pending is resolved by this record (it either is the
        change, or the change's compare-and-set will fail against it).
        """
        if new_partition_epoch <= self._partition_epoch:
            return False
        if not new_isr:
            raise ValueError("the ISR is never empty")
        self._committed = new_isr
        self._partition_epoch = new_partition_epoch
        self._pending = None
        return True

    def reject(self, based_on_partition_epoch: int) -> bool:
        """The compare-and-set failed: drop the pending change it was for, if still pending."""
        pending = self._pending
        if pending is None or pending.based_on_partition_epoch != based_on_partition_epoch:
            return False
        self._pending = None
        return True

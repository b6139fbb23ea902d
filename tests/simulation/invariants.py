"""What must hold after every step of the simulation (REPLICATION-REFERENCE, "Invariants").

``History`` is the checker's memory: one value per offset ever exposed (``committed``),
what acks=all acknowledged, what readers saw, each leader's HW per epoch. Each check
raises ``InvariantViolation`` naming the rule; the simulation adds the seed and a trace.

Rules checked:

1. One value per offset: every replica's records below its own HW, every acks=all
   acknowledged record and every record a reader saw agree with ``committed`` (the
   first value anyone exposed at that offset). A follower may still hold an
   unreplicated, divergent tail above its HW until it truncates; that is allowed.
2. ``log_start_offset <= high_watermark <= log_end_offset`` on every running replica;
   offsets dense (checked as the decoded copy is kept in step, ``storage.SimDisk``).
3. The leader HW never decreases within a leader epoch; a reader is never served an
   offset at or above the serving leader's HW and its position never goes back.
5/6. Every acknowledged (acks=all) record and every record a reader saw is on the
   current leader at its offset.
7. Leader epochs strictly increase with every leader change; the ISR is a non-empty
   subset of the replicas and holds the leader.
8. Every value is written once: a value exposed at two offsets is a retry appended twice
   (the idempotent producer's retries must be answered with the original offsets).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from broker.cluster.records import PartitionRecord
from tests.simulation.replica import SimBroker
from tests.simulation.storage import RecordView


class InvariantViolation(AssertionError):
    pass


@dataclass
class History:
    committed: dict[int, RecordView] = field(default_factory=dict)
    acked_all: dict[int, RecordView] = field(default_factory=dict)
    leader_high_watermarks: dict[tuple[int, int], int] = field(default_factory=dict)
    verified: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Per broker: (disk generation, offset) up to which its records matched ``committed``."""
    max_committed_offset: int = -1
    offsets_by_value: dict[bytes, int] = field(default_factory=dict)

    def expose(self, offset: int, view: RecordView, who: str) -> None:
        """Someone exposed ``view`` at ``offset``; it must be the only value ever exposed there."""
        self.max_committed_offset = max(self.max_committed_offset, offset)
        known = self.committed.setdefault(offset, view)
        if known != view:
            raise InvariantViolation(f"offset {offset}: {who} exposes {view!r} but {known!r} was exposed there before")
        first_offset = self.offsets_by_value.setdefault(view[0], offset)
        if first_offset != offset:
            raise InvariantViolation(
                f"{view[0]!r} is written twice: at {first_offset} and, exposed by {who}, at {offset}"
            )

    def acknowledge(self, offset: int, view: RecordView) -> None:
        self.expose(offset, view, "an acks=all acknowledgement")
        self.acked_all[offset] = view


def check_replica(history: History, broker: SimBroker) -> None:
    """Rules 1 and 2 for one running replica; rule 3's HW half when it leads."""
    log = broker.disk.opened_log
    disk = broker.disk
    high_watermark = broker.high_watermark
    if not log.log_start_offset <= high_watermark <= log.log_end_offset:
        raise InvariantViolation(
            f"b{broker.broker_id}: log_start {log.log_start_offset} <= HW {high_watermark} "
            f"<= LEO {log.log_end_offset} broken"
        )
    if len(disk.records) != log.log_end_offset - disk.records_base_offset:
        raise InvariantViolation(f"b{broker.broker_id}: decoded records do not cover the log densely")
    generation, verified = history.verified.get(broker.broker_id, (-1, 0))
    if generation != disk.generation:
        verified = disk.records_base_offset
    for offset in range(max(verified, disk.records_base_offset), high_watermark):
        view = disk.record_at(offset)
        assert view is not None, "the loop stays within the log"
        history.expose(offset, view, f"b{broker.broker_id} below its HW")
    history.verified[broker.broker_id] = (disk.generation, max(verified, high_watermark))
    state = broker.leader_state
    if state is not None:
        key = (broker.broker_id, state.leader_epoch)
        previous = history.leader_high_watermarks.get(key, -1)
        if state.high_watermark < previous:
            raise InvariantViolation(
                f"b{broker.broker_id}: leader HW fell from {previous} to {state.high_watermark} in epoch {state.leader_epoch}"
            )
        history.leader_high_watermarks[key] = state.high_watermark


def check_current_leader(history: History, broker: SimBroker) -> None:
    """Rules 5/6: the leader holds every record ever exposed, at its offset."""
    disk = broker.disk
    log = disk.opened_log
    assert broker.leader_state is not None
    top = history.max_committed_offset
    if top >= log.log_end_offset:
        raise InvariantViolation(
            f"b{broker.broker_id} leads epoch {broker.leader_state.leader_epoch} with LEO "
            f"{log.log_end_offset} but offset {top} was exposed or acknowledged"
        )
    for offset in range(max(broker.high_watermark, disk.records_base_offset), top + 1):
        known = history.committed.get(offset)
        held = disk.record_at(offset)
        if known is not None and held != known:
            raise InvariantViolation(
                f"b{broker.broker_id} (leader) holds {held!r} at {offset}, where {known!r} was exposed or acknowledged"
            )


def check_records(records: list[PartitionRecord]) -> None:
    """Rule 7 over the controller's record history."""
    for previous, record in pairwise(records):
        if record.partition_epoch <= previous.partition_epoch:
            raise InvariantViolation(f"partition epoch did not increase: {previous} -> {record}")
        if record.leader != previous.leader and record.leader_epoch <= previous.leader_epoch:
            raise InvariantViolation(f"leader changed without a new leader epoch: {previous} -> {record}")
    last = records[-1]
    if not last.isr or not set(last.isr) <= set(last.replicas):
        raise InvariantViolation(f"ISR {last.isr} is empty or not within the replicas {last.replicas}")
    if last.leader != -1 and last.leader not in last.isr:
        raise InvariantViolation(f"leader {last.leader} is not in the ISR {last.isr}")

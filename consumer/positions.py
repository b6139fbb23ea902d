"""Where the consumer stands in each assigned partition. Pure: no I/O, no clock.

Per partition (Kafka's ``SubscriptionState``):

* ``position``: the offset of the next record to hand to the application, ``None``
  until it is set by ``seek`` or by a reset (``auto_offset_reset`` or
  ``seek_to_beginning``/``seek_to_end``). Records are handed out in offset order and
  ``position`` only moves forward except through an explicit seek or reset.
* ``last_leader_epoch``: the leader epoch of the batch of the last record handed out
  (``None`` after a seek or reset: nothing consumed since). With it a consumer can
  tell after a leader change whether the log it was reading still exists (KIP-320).
* ``generation``: bumped on every seek and reset, so fetches started for an older
  position are recognised and dropped instead of handing out the wrong records.
* ``awaiting_validation``: set when metadata shows a newer leader epoch than the one
  the partition was read under, after something was consumed; no fetch happens until
  the new leader's log has been checked against ``last_leader_epoch``.

* ``from_committed``: a partition assigned to a consumer with a ``group_id`` starts
  from the group's committed offset; only without one does ``auto_offset_reset``
  apply. Cleared once looked up, by a seek, and by any later reset (an out-of-range
  position must not fall back to the commit that may have caused it).

Group membership changes the assignment through ``assign`` exactly as a manual
``Consumer.assign`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from broker.client.types import TopicPartition

ResetStrategy = Literal["earliest", "latest", "none"]
RESET_STRATEGIES = ("earliest", "latest", "none")


@dataclass
class PartitionPosition:
    position: int | None = None
    pending_reset: ResetStrategy | None = None
    last_leader_epoch: int | None = None
    leader_epoch_seen: int | None = None
    awaiting_validation: bool = False
    high_watermark: int | None = None
    log_start_offset: int | None = None
    generation: int = 0
    from_committed: bool = False


class SubscriptionState:
    def __init__(self, auto_offset_reset: ResetStrategy) -> None:
        if auto_offset_reset not in RESET_STRATEGIES:
            raise ValueError(f"auto_offset_reset must be one of {RESET_STRATEGIES}, got {auto_offset_reset!r}")
        self.auto_offset_reset: ResetStrategy = auto_offset_reset
        self._partitions: dict[TopicPartition, PartitionPosition] = {}

    def assign(self, partitions: Iterable[TopicPartition], *, from_committed: bool = False) -> None:
        """Replace the assignment; partitions kept keep their positions, new ones await a reset.

        ``from_committed``: new partitions look up the group's committed offset first.
        """
        wanted = list(dict.fromkeys(partitions))
        self._partitions = {
            tp: self._partitions.get(tp)
            or PartitionPosition(pending_reset=self.auto_offset_reset, from_committed=from_committed)
            for tp in wanted
        }

    def assigned(self) -> list[TopicPartition]:
        return list(self._partitions)

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._partitions

    def state(self, tp: TopicPartition) -> PartitionPosition:
        try:
            return self._partitions[tp]
        except KeyError:
            raise ValueError(f"{tp.topic}-{tp.partition} is not assigned to this consumer") from None

    def position(self, tp: TopicPartition) -> int | None:
        return self.state(tp).position

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if offset < 0:
            raise ValueError(f"cannot seek to a negative offset ({offset})")
        state = self.state(tp)
        state.position = offset
        state.pending_reset = None
        self._forget_reading(state)

    def request_reset(self, tp: TopicPartition, strategy: ResetStrategy) -> None:
        """Forget the position; it is set again from the log's start or end (``strategy``)."""
        state = self.state(tp)
        state.position = None
        state.pending_reset = strategy
        self._forget_reading(state)

    def no_committed_offset(self, tp: TopicPartition) -> None:
        """The group has no commit for ``tp``: the pending reset follows ``auto_offset_reset``."""
        self.state(tp).from_committed = False

    @staticmethod
    def _forget_reading(state: PartitionPosition) -> None:
        state.from_committed = False
        state.last_leader_epoch = None
        state.awaiting_validation = False
        state.generation += 1

    def complete_reset(self, tp: TopicPartition, offset: int, generation: int) -> bool:
        """Set the position a reset looked up; ignored (False) if a seek happened meanwhile."""
        state = self.state(tp)
        if state.generation != generation or state.pending_reset is None:
            return False
        state.position = offset
        state.pending_reset = None
        state.from_committed = False
        return True

    def needs_reset(self, tp: TopicPartition) -> ResetStrategy | None:
        return self.state(tp).pending_reset

    def advance(self, tp: TopicPartition, next_offset: int, leader_epoch: int | None) -> None:
        """Records below ``next_offset`` were handed out; the last came from a batch of ``leader_epoch``."""
        state = self.state(tp)
        if state.position is None or next_offset < state.position:
            raise ValueError(f"{tp.topic}-{tp.partition}: position {state.position} cannot move to {next_offset}")
        state.position = next_offset
        if leader_epoch is not None and leader_epoch >= 0:
            state.last_leader_epoch = leader_epoch

    def skip_to(self, tp: TopicPartition, next_offset: int) -> None:
        """Move past offsets that hold no record for the application (control batches, compacted gaps)."""
        state = self.state(tp)
        if state.position is not None and next_offset > state.position:
            state.position = next_offset

    def observe_leader_epoch(self, tp: TopicPartition, leader_epoch: int) -> bool:
        """Note the leader epoch metadata reports; True if the partition must now be validated."""
        state = self.state(tp)
        changed = state.leader_epoch_seen is not None and leader_epoch > state.leader_epoch_seen
        if state.leader_epoch_seen is None or leader_epoch > state.leader_epoch_seen:
            state.leader_epoch_seen = leader_epoch
        if changed and state.last_leader_epoch is not None:
            state.awaiting_validation = True
        return state.awaiting_validation

    def validated(self, tp: TopicPartition) -> None:
        self.state(tp).awaiting_validation = False

    def update_offsets(self, tp: TopicPartition, high_watermark: int, log_start_offset: int) -> None:
        state = self.state(tp)
        state.high_watermark = high_watermark
        state.log_start_offset = log_start_offset

    def fetchable(self, tp: TopicPartition) -> bool:
        state = self.state(tp)
        return state.position is not None and not state.awaiting_validation

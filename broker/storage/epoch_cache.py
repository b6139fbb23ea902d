"""The leader-epoch cache: leader epoch -> the first offset written in that epoch.

Kafka's ``LeaderEpochFileCache`` (KIP-101, KIP-279). Every replica keeps it; a new
leader records ``(epoch, log_end_offset)`` before its first append, and a follower
records the epoch of every batch it appends. It answers the one question that lets a
follower truncate safely without trusting its own high watermark: *where does my log
stop agreeing with the leader's?* (``end_offset_for``).

Invariants, checked on every change:
- epochs strictly increase along the list;
- start offsets never decrease along the list.

Pure: the caller persists ``entries`` (``broker.storage.checkpoint``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Ordered (epoch, start_offset) entries with Kafka's lookup and truncation rules."""

    def __init__(self, entries: list[EpochEntry] | None = None) -> None:
        self._entries: list[EpochEntry] = []
        for entry in entries or []:
            self.assign(entry.epoch, entry.start_offset)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def start_offset_of(self, epoch: int) -> int | None:
        for entry in self._entries:
            if entry.epoch == epoch:
                return entry.start_offset
        return None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; return whether the cache changed.

        An epoch at or below the latest is ignored (Kafka keeps the first start offset
        seen for an epoch). Entries whose start offset is at or after the new one are
        dropped first, so start offsets stay non-decreasing even after a truncation the
        cache did not hear about.
        """
        if epoch < 0:
            return False
        if self._entries and epoch <= self._entries[-1].epoch:
            return False
        while self._entries and self._entries[-1].start_offset > start_offset:
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's ``endOffsetFor``: the largest epoch <= requested and the offset it ends at.

        - requested is the latest epoch: it ends at the log end offset;
        - otherwise it ends where the next higher epoch starts, and the epoch returned is
          the largest one <= requested that this cache knows (or requested itself when the
          cache starts after it);
        - requested is above every known epoch, or undefined: (UNDEFINED, UNDEFINED).
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, log_end_offset
        epochs = [entry.epoch for entry in self._entries]
        higher = bisect.bisect_right(epochs, requested_epoch)
        if higher == len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        higher_start = self._entries[higher].start_offset
        if higher == 0:
            return requested_epoch, higher_start
        return self._entries[higher - 1].epoch, higher_start

    def truncate_from_end(self, end_offset: int) -> bool:
        """Forget epochs starting at or after ``end_offset`` (the log was cut there)."""
        before = len(self._entries)
        while self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries.pop()
        return len(self._entries) != before

    def truncate_from_start(self, start_offset: int) -> bool:
        """Drop epochs wholly below ``start_offset``; the one holding it starts there."""
        changed = False
        while len(self._entries) > 1 and self._entries[1].start_offset <= start_offset:
            self._entries.pop(0)
            changed = True
        if self._entries and self._entries[0].start_offset < start_offset:
            self._entries[0] = EpochEntry(self._entries[0].epoch, start_offset)
            changed = True
        return changed

    def clear(self) -> None:
        self._entries.clear()

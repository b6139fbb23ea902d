"""Whether a follower's fsync may run on its event loop: the disk is judged on its average.

A follower fsyncs a small lone fetch answer on the loop (``partition.INLINE_FLUSH_MAX_BYTES``):
on a fast disk the executor's hop costs more than the fsync. A slow disk must not stall the
loop on every answer, so a disk that is slow *on average* (a moving average of the inline
fsyncs' durations above ``SLOW_MS``) or one fsync that stalls past ``STALL_MS`` sends the
replica's fsyncs to the executor for ``PAUSE_MS``.

One slow fsync among fast ones is not a slow disk. On the shared 2-core dev host an fsync of
2-4 ms comes every few seconds among ~0.3 ms ones; the earlier rule paused on any fsync over
2 ms (and timed it with the loop's millisecond clock), so in a 13-second run of lone acks=all
writes two of three followers spent most of it fsyncing through the executor.

Pure: durations and the clock come from the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

SLOW_MS = 2.0
"""Average inline fsync above which the disk counts as slow."""
STALL_MS = 20.0
"""One inline fsync this long pauses at once: the loop stood still for it."""
WEIGHT = 0.2
"""Weight of the newest fsync in the average: a lone outlier must exceed ~9 ms (from 0.3 ms) to
tip it, four fsyncs of 4 ms in a row do."""
PAUSE_MS = 10_000
"""How long a slow disk's fsyncs go to the executor before the loop tries again."""


@dataclass(slots=True)
class InlineFsyncGuard:
    average_ms: float = 0.0
    paused_until_ms: int = 0

    def allows(self, now_ms: int) -> bool:
        """Whether an fsync may run on the loop now."""
        return now_ms >= self.paused_until_ms

    def record(self, held_ms: float, now_ms: int) -> float | None:
        """Note how long an inline fsync held the loop; the average that started a pause, or None.

        After a pause the average restarts at ``SLOW_MS``: the first fsync back on the loop
        decides, one more slow one pauses again, fast ones bring the average down.
        """
        average_ms = self.average_ms + WEIGHT * (held_ms - self.average_ms)
        if average_ms <= SLOW_MS and held_ms <= STALL_MS:
            self.average_ms = average_ms
            return None
        self.paused_until_ms = now_ms + PAUSE_MS
        self.average_ms = SLOW_MS
        return average_ms

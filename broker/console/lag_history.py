"""Consumer lag over time: one bounded ring of samples per group this broker coordinates.

A sample holds, for every partition the group has committed to, the committed offset,
the high watermark, the lag in records (``high_watermark - committed_offset``) and in
time (``lag_ms``: the age of the oldest unconsumed record, 0 when the lag is 0; None
when it could not be read), as ``broker.groups.lag`` computes them. Partitions without
a commit or whose leader did not answer are left out of that sample rather than
guessed at.

Samples keep every partition; the principal's view is cut at read time (``body``), and
the totals are computed over what it may see, so a hidden topic's lag never leaks
through ``total_lag`` or ``max_lag_ms``.

Invariant: a group keeps at most ``capacity`` samples, oldest dropped first, and only
groups this broker coordinated at the last sample keep any (``retain``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PartitionLag:
    topic_name: str
    partition_id: int
    committed_offset: int
    high_watermark: int
    lag: int
    lag_ms: int | None

    def to_body(self) -> dict[str, Any]:
        return {
            "topic_name": self.topic_name,
            "partition_id": self.partition_id,
            "committed_offset": self.committed_offset,
            "high_watermark": self.high_watermark,
            "lag": self.lag,
            "lag_ms": self.lag_ms,
        }


@dataclass(frozen=True, slots=True)
class LagSample:
    time_ms: int
    partitions: tuple[PartitionLag, ...]

    def body(self, visible: Callable[[str], bool]) -> dict[str, Any]:
        """The sample as the principal may see it; a committed offset beyond the HW adds no lag."""
        shown = [partition for partition in self.partitions if visible(partition.topic_name)]
        return {
            "time_ms": self.time_ms,
            "total_lag": sum(max(0, partition.lag) for partition in shown),
            "max_lag_ms": max((partition.lag_ms or 0 for partition in shown), default=0),
            "partitions": [partition.to_body() for partition in shown],
        }


class LagHistory:
    """See the module docstring."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._groups: dict[str, deque[LagSample]] = {}

    def record(self, group_id: str, sample: LagSample) -> None:
        ring = self._groups.get(group_id) or self._groups.setdefault(group_id, deque(maxlen=self.capacity))
        ring.append(sample)

    def retain(self, group_ids: Iterable[str]) -> None:
        """Forget the groups not named: this broker no longer coordinates them, or they are gone."""
        keep = set(group_ids)
        for group_id in self._groups.keys() - keep:
            del self._groups[group_id]

    def samples(self, group_id: str) -> list[LagSample]:
        """Oldest first."""
        return list(self._groups.get(group_id, ()))

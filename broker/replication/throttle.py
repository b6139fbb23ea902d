"""Replication throttling: which replicas are throttled, and the byte-rate quota they share. Pure.

Why: a partition that moves (``broker.cluster.reassignment``) starts its new replicas
empty, and each copies the whole log from the leader. Unthrottled, those copies take
the disks and the network from producers and consumers. Kafka throttles them with
two per-broker byte rates, ``follower.replication.throttled.rate`` (what a broker
fetches for its throttled replicas) and ``leader.replication.throttled.rate`` (what a
leader sends to them); this module is both sides' rule.

**Which replicas**: a replica is throttled while the partition moves, it is one the
move adds, and it is not in the ISR (``is_throttled``). Kafka's reassignment tool
lists exactly the adding replicas in ``follower.replication.throttled.replicas``; a
caught-up follower is in the ISR and never throttled, so the throttle cannot slow
acks=all or the HW once a copy has caught up.

**The quota** is a token bucket that may go into debt (``ReplicationQuota``): a fetch
is never cut in the middle of a batch, so a round may take more than the bucket holds;
the debt is then paid by leaving the throttled partitions out until the bucket refills.
Over any span the bytes moved are at most ``rate × span + BURST_S × rate + one
round``, and a copy that is always ready to fetch moves at the rate. The bucket holds
at most ``BURST_S`` of the rate, and ``round_bytes`` caps what one round asks for, so
the excess over a whole move is bounded by a fraction of a second's worth.

Invariant: a quota without a rate (``None``: Kafka's default, ``Long.MAX_VALUE``, as
the drivers give it) throttles nothing and records nothing.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

BURST_S = 0.1
"""The most a quiet quota saves up, in seconds of its rate."""

ROUND_S = 0.1
"""The most one fetch round asks for while throttled partitions are in it, in seconds of the rate."""

MIN_ROUND_BYTES = 16 * 1024
"""A round never asks for less (the leader sends at least one whole batch anyway)."""


def is_throttled(replica_id: int, adding_replicas: Collection[int], isr: Collection[int]) -> bool:
    """Whether ``replica_id``'s copy of a partition is throttled: it is being added by a move and is not in sync."""
    return replica_id in adding_replicas and replica_id not in isr


@dataclass(slots=True)
class ReplicationQuota:
    """One broker's byte rate for its throttled replicas (one per side: follower, leader).

    ``rate`` is bytes per second (None: no limit) and may change at any time (a config
    alter); times are seconds on any monotonic clock the caller owns.
    """

    rate: int | None = None
    _tokens: float = 0.0
    _at: float | None = None

    @property
    def limited(self) -> bool:
        return self.rate is not None

    def record(self, nbytes: int, now: float) -> None:
        """Count ``nbytes`` moved for throttled replicas at ``now``."""
        if self.rate is not None:
            self._refill(self.rate, now)
            self._tokens -= nbytes

    def wait_s(self, now: float) -> float:
        """How long until the debt is paid (0 when there is none, or no limit)."""
        if self.rate is None:
            return 0.0
        self._refill(self.rate, now)
        return max(0.0, -self._tokens / self.rate) if self.rate > 0 else float("inf")

    def round_bytes(self, max_bytes: int) -> int:
        """What one fetch round that carries throttled partitions may ask for, at most ``max_bytes``."""
        if self.rate is None:
            return max_bytes
        return min(max_bytes, max(MIN_ROUND_BYTES, int(self.rate * ROUND_S)))

    def _refill(self, rate: int, now: float) -> None:
        if self._at is not None and now > self._at:
            self._tokens = min(rate * BURST_S, self._tokens + rate * (now - self._at))
        self._at = now if self._at is None else max(self._at, now)

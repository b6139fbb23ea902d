"""Which partition a record goes to: murmur2 for keys, sticky for records without one.

* A keyed record goes where Kafka's Java client would put it:
  ``toPositive(murmur2(key)) % partitions`` (``broker.partitioner``), over *all*
  partitions, available or not, so a key never moves while a leader is down.
* Unkeyed records stick to one partition until a batch of it is sent, then switch to
  another available one at random (Kafka's sticky partitioner, KIP-480). Sticking fills
  batches instead of sending one tiny batch per partition per linger period; switching
  on send spreads the load. A switch never picks the partition just left when another
  is available.

Pure: randomness comes from the ``random.Random`` passed in.
"""

from __future__ import annotations

import random

from broker.partitioner import partition_for_key


class StickyPartitioner:
    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, partition_count: int, available: list[int]) -> int:
        """The partition of a record with ``key`` among ``partition_count`` (``available``: partitions with a leader)."""
        if key is not None:
            return partition_for_key(key, partition_count)
        current = self._sticky.get(topic)
        if current is None or current >= partition_count:
            current = self._pick(available or list(range(partition_count)), exclude=None)
            self._sticky[topic] = current
        return current

    def current(self, topic: str, partition_count: int) -> int | None:
        """The partition unkeyed records of ``topic`` stick to, if still valid: the per-record fast path,
        which needs no list of available partitions."""
        current = self._sticky.get(topic)
        return current if current is not None and current < partition_count else None

    def on_batch_sent(self, topic: str, partition: int, available: list[int]) -> None:
        """A batch of ``partition`` left: unkeyed records of ``topic`` move on if they were sticking to it."""
        if self._sticky.get(topic) == partition and available:
            self._sticky[topic] = self._pick(available, exclude=partition)

    def _pick(self, candidates: list[int], exclude: int | None) -> int:
        others = [p for p in candidates if p != exclude]
        return self._rng.choice(others or candidates)

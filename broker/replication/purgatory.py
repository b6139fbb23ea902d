"""acks=all produces of one partition waiting for the high watermark (Kafka's DelayedProduce).

Kafka's ``DelayedProduce`` (core/src/main/scala/kafka/server/DelayedProduce.scala) and
``Partition.checkEnoughReplicasReachOffset``. A produce appended on the leader at
offsets ``[base, last]`` waits for ``required_offset = last + 1``. It completes when:

- the HW reaches ``required_offset``: success if the *maximal* ISR still holds
  ``min_insync_replicas`` members, else ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``
  (the records are on the leader and every in-sync replica, but fewer than asked);
- its deadline passes first: ``REQUEST_TIMED_OUT``;
- the broker stops leading the partition: ``NOT_LEADER_OR_FOLLOWER``.

Nothing is rolled back: the last three errors mean *outcome unknown* and say so.
Invariant (success rule): a success is returned only for ``high_watermark >=
required_offset`` with ``maximal_isr_size >= min_insync_replicas``.

Pure and clock-free; owned by the task that owns the partition. The driver calls
``on_high_watermark`` after every HW rise and right after ``add`` (the HW may already
be past the batch, e.g. when the ISR is the leader alone), and ``expire`` from a timer
set to ``next_deadline_ms``.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from dataclasses import dataclass
from typing import NamedTuple

from broker.errors import (
    OUTCOME_UNKNOWN,
    HighwaterError,
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
    RequestTimedOut,
)


class ProduceCompletion(NamedTuple):
    """A finished wait: ``error`` is ``None`` on success."""

    request_id: Hashable
    error: HighwaterError | None


@dataclass(frozen=True, slots=True)
class _Waiter:
    request_id: Hashable
    required_offset: int
    deadline_ms: int
    sequence: int


class DelayedProducePurgatory:
    """Waiting acks=all produces of one partition, by required offset and by deadline."""

    def __init__(self, topic: str, partition: int) -> None:
        self._topic = topic
        self._partition = partition
        self._waiters: dict[Hashable, _Waiter] = {}
        self._by_offset: list[tuple[int, int, Hashable]] = []
        self._by_deadline: list[tuple[int, int, Hashable]] = []
        self._sequence = 0

    def __len__(self) -> int:
        return len(self._waiters)

    def add(self, request_id: Hashable, required_offset: int, deadline_ms: int) -> None:
        """Wait until the HW reaches ``required_offset`` (= the batch's last offset + 1)."""
        if request_id in self._waiters:
            raise ValueError(f"produce {request_id!r} is already waiting")
        self._sequence += 1
        self._waiters[request_id] = _Waiter(request_id, required_offset, deadline_ms, self._sequence)
        heapq.heappush(self._by_offset, (required_offset, self._sequence, request_id))
        heapq.heappush(self._by_deadline, (deadline_ms, self._sequence, request_id))

    def on_high_watermark(
        self, high_watermark: int, maximal_isr_size: int, min_insync_replicas: int
    ) -> list[ProduceCompletion]:
        """Complete every produce whose required offset the HW has reached."""
        completions: list[ProduceCompletion] = []
        while self._by_offset and self._by_offset[0][0] <= high_watermark:
            _, sequence, request_id = heapq.heappop(self._by_offset)
            if not self._take(request_id, sequence):
                continue
            error = None
            if maximal_isr_size < min_insync_replicas:
                error = NotEnoughReplicasAfterAppend(
                    f"{self._topic}-{self._partition}: the in-sync replicas "
                    f"({maximal_isr_size}) fell below min.insync.replicas "
                    f"({min_insync_replicas}) after the append. {OUTCOME_UNKNOWN}",
                    topic=self._topic,
                    partition=self._partition,
                )
            completions.append(ProduceCompletion(request_id, error))
        return completions

    def expire(self, now_ms: int) -> list[ProduceCompletion]:
        """Time out every produce whose deadline is at or before ``now_ms``."""
        completions: list[ProduceCompletion] = []
        while self._by_deadline and self._by_deadline[0][0] <= now_ms:
            _, sequence, request_id = heapq.heappop(self._by_deadline)
            if not self._take(request_id, sequence):
                continue
            error = RequestTimedOut(
                f"{self._topic}-{self._partition}: the in-sync replicas did not "
                f"acknowledge the records in time. {OUTCOME_UNKNOWN}",
                topic=self._topic,
                partition=self._partition,
            )
            completions.append(ProduceCompletion(request_id, error))
        return completions

    def fail_all_not_leader(self, leader_id: int | None = None) -> list[ProduceCompletion]:
        """Leadership was lost: every waiting produce gets ``NOT_LEADER_OR_FOLLOWER``."""
        completions = [
            ProduceCompletion(
                waiter.request_id,
                NotLeaderOrFollower(
                    f"{self._topic}-{self._partition}: this broker stopped leading the "
                    f"partition while the produce waited. {OUTCOME_UNKNOWN}",
                    topic=self._topic,
                    partition=self._partition,
                    leader_id=leader_id,
                ),
            )
            for waiter in self._waiters.values()
        ]
        self._waiters.clear()
        self._by_offset.clear()
        self._by_deadline.clear()
        return completions

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline still waiting, for the driver's timer."""
        while self._by_deadline and not self._is_waiting(*self._by_deadline[0][1:]):
            heapq.heappop(self._by_deadline)
        return self._by_deadline[0][0] if self._by_deadline else None

    def _is_waiting(self, sequence: int, request_id: Hashable) -> bool:
        """Whether a heap entry is still live (each wait leaves one entry in both heaps)."""
        waiter = self._waiters.get(request_id)
        return waiter is not None and waiter.sequence == sequence

    def _take(self, request_id: Hashable, sequence: int) -> bool:
        if not self._is_waiting(sequence, request_id):
            return False
        del self._waiters[request_id]
        return True

"""Per-partition send ordering, and idempotence sequence numbers. Pure: no I/O, no clock.

``PartitionPipeline`` is the state machine behind "at most N requests in flight per
partition, order kept across retries" (N = ``max_in_flight_requests_per_connection``,
5 by default, the most the broker's idempotence window remembers):

* new batches go out in creation order while fewer than N are in flight;
* a batch failing with a retriable error leaves the flight and waits in the retry
  queue, ordered by creation; from then on no *new* batch is sent;
* retries start only when nothing is in flight any more (every batch sent after the
  failed one has answered, and those that failed too are queued behind it in order);
  they are then resent one at a time, oldest first, after ``retry_backoff_ms``;
* new batches resume once no retried batch is queued or in flight;
* until the partition's current leader has acknowledged a batch of this producer
  identity, one batch at a time: a leader that does not know the producer accepts
  its first batch at any sequence (Kafka's rule, so a producer whose state retention
  removed is not refused for ever), and a second batch reaching it first would be
  appended ahead of the first one.

So batches are appended in creation order whenever the broker refuses everything
after a failed batch. With idempotence it does exactly that (a later sequence after a
gap is ``OUT_OF_ORDER_SEQUENCE_NUMBER``); without idempotence the producer keeps one
request in flight per partition, since separate HTTP requests may reach the broker in
any order.

``SequenceNumbers`` hands out Kafka's per-partition sequences: the first batch of a
partition under a producer id/epoch starts at 0, each batch advances by its record
count, wrapping from 2**31 - 1 to 0 as Kafka's ``DefaultRecordBatch.incrementSequence``.
"""

from __future__ import annotations

import bisect

from broker.client.types import TopicPartition
from producer.batch import ProducerBatch

MAX_SEQUENCE = 2**31 - 1


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment``, wrapping past ``MAX_SEQUENCE`` to 0 (Kafka's rule)."""
    if sequence > MAX_SEQUENCE - increment:
        return increment - (MAX_SEQUENCE - sequence) - 1
    return sequence + increment


class SequenceNumbers:
    def __init__(self) -> None:
        self._next: dict[TopicPartition, int] = {}

    def next_base_sequence(self, tp: TopicPartition, record_count: int) -> int:
        """The base sequence of the partition's next batch of ``record_count`` records."""
        base = self._next.get(tp, 0)
        self._next[tp] = increment_sequence(base, record_count)
        return base

    def reset(self) -> None:
        """A new producer id or epoch: every partition starts again at sequence 0."""
        self._next.clear()


class PartitionPipeline:
    def __init__(self, max_in_flight: int) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.max_in_flight = max_in_flight
        self.in_flight: list[ProducerBatch] = []
        self.retry_queue: list[ProducerBatch] = []
        self.backoff_until_ms = 0
        self.sequence_leader: str | None = None
        """The leader that acknowledged a batch of this producer identity, so knows its sequence."""

    @property
    def idle(self) -> bool:
        return not self.in_flight and not self.retry_queue

    def _recovering(self) -> bool:
        return bool(self.retry_queue) or any(batch.attempts > 1 for batch in self.in_flight)

    def can_send_new(self, now_ms: int, leader_url: str) -> bool:
        """May a batch not sent before go out now to ``leader_url``?"""
        limit = self.max_in_flight if leader_url == self.sequence_leader else 1
        return not self._recovering() and len(self.in_flight) < limit and now_ms >= self.backoff_until_ms

    def next_retry(self, now_ms: int) -> ProducerBatch | None:
        """The oldest failed batch, once nothing is in flight and the backoff has passed."""
        if self.retry_queue and not self.in_flight and now_ms >= self.backoff_until_ms:
            return self.retry_queue.pop(0)
        return None

    def on_sent(self, batch: ProducerBatch) -> None:
        batch.attempts += 1
        batch.overtook = self._older_unanswered(batch)
        self.in_flight.append(batch)

    def _older_unanswered(self, batch: ProducerBatch) -> bool:
        return any(other.order < batch.order for other in self.retry_queue + self.in_flight if other is not batch)

    def on_acknowledged(self, batch: ProducerBatch, leader_url: str) -> None:
        self.in_flight.remove(batch)
        self.sequence_leader = leader_url

    def forget_sequence_leader(self) -> None:
        """A new producer identity: no leader knows its sequences yet."""
        self.sequence_leader = None

    def on_retriable_failure(self, batch: ProducerBatch, now_ms: int, backoff_ms: int) -> None:
        self.in_flight.remove(batch)
        bisect.insort(self.retry_queue, batch, key=lambda queued: queued.order)
        self.backoff_until_ms = max(self.backoff_until_ms, now_ms + backoff_ms)

    def on_terminal_failure(self, batch: ProducerBatch) -> None:
        if batch in self.in_flight:
            self.in_flight.remove(batch)
        if batch in self.retry_queue:
            self.retry_queue.remove(batch)

    def follows_a_failure(self, batch: ProducerBatch) -> bool:
        """Is an older batch of this partition failed or unanswered, or was one when ``batch`` was
        sent? Then an out-of-order refusal of ``batch`` is that failure's echo, or ``batch`` reached
        the broker first (separate HTTP requests arrive in any order, and the older one may have been
        acknowledged since): ``batch`` is retried, not failed."""
        return batch.overtook or self._older_unanswered(batch)

    def expire_retries(self, now_ms: int) -> list[ProducerBatch]:
        """Failed batches whose ``delivery_timeout_ms`` has passed: they are not retried again."""
        expired = [batch for batch in self.retry_queue if batch.deadline_ms <= now_ms]
        for batch in expired:
            self.retry_queue.remove(batch)
        return expired

"""Per-partition send ordering with retries, and idempotence sequence numbers.

The simulation at the end runs ``PartitionPipeline`` against a model of the broker's
idempotence check (append only the next expected sequence, answer a duplicate with
success, refuse a gap) with transient failures before and after the append and
answers arriving in random order, and checks that the log ends up holding every
batch exactly once, in creation order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from broker.client.types import TopicPartition
from producer.batch import ProducerBatch
from producer.pipeline import (
    MAX_SEQUENCE,
    PartitionPipeline,
    SequenceNumbers,
    increment_sequence,
)

TP = TopicPartition("t", 0)
LEADER = "http://leader:1"


def _batch(order: int, records: int = 1) -> ProducerBatch:
    batch = ProducerBatch(TP, order, created_ms=0, deadline_ms=1_000_000)
    batch.records = [None] * records
    return batch


def test_sequences_advance_by_record_count_per_partition() -> None:
    sequences = SequenceNumbers()
    other = TopicPartition("t", 1)
    assert sequences.next_base_sequence(TP, 5) == 0
    assert sequences.next_base_sequence(TP, 3) == 5
    assert sequences.next_base_sequence(other, 2) == 0
    assert sequences.next_base_sequence(TP, 1) == 8
    sequences.reset()
    assert sequences.next_base_sequence(TP, 1) == 0


def test_sequence_wraps_to_zero_after_max_like_kafka() -> None:
    assert increment_sequence(MAX_SEQUENCE, 1) == 0
    assert increment_sequence(MAX_SEQUENCE - 1, 3) == 1
    assert increment_sequence(10, 5) == 15


def test_at_most_max_in_flight_new_batches() -> None:
    pipeline = PartitionPipeline(max_in_flight=2)
    first = _batch(1)
    pipeline.on_sent(first)
    pipeline.on_acknowledged(first, LEADER)
    pipeline.on_sent(_batch(2))
    assert pipeline.can_send_new(now_ms=0, leader_url=LEADER)
    pipeline.on_sent(_batch(3))
    assert not pipeline.can_send_new(now_ms=0, leader_url=LEADER)


def test_one_batch_at_a_time_until_the_leader_has_acknowledged_one_of_this_identity() -> None:
    """A leader that does not know the producer accepts its first batch at any sequence:
    a second batch overtaking the first would be appended ahead of it."""
    pipeline = PartitionPipeline(max_in_flight=5)
    first = _batch(1)
    pipeline.on_sent(first)
    assert not pipeline.can_send_new(now_ms=0, leader_url=LEADER)
    pipeline.on_acknowledged(first, LEADER)
    assert pipeline.can_send_new(now_ms=0, leader_url=LEADER)
    assert pipeline.can_send_new(now_ms=0, leader_url="http://new-leader:2")
    pipeline.on_sent(_batch(2))
    assert not pipeline.can_send_new(now_ms=0, leader_url="http://new-leader:2"), "a new leader starts at one"
    assert pipeline.can_send_new(now_ms=0, leader_url=LEADER)
    pipeline.forget_sequence_leader()
    assert not pipeline.can_send_new(now_ms=0, leader_url=LEADER), "a new identity starts at one"


def test_retries_wait_for_the_flight_to_land_then_go_oldest_first_one_at_a_time() -> None:
    pipeline = PartitionPipeline(max_in_flight=5)
    b1, b2, b3 = _batch(1), _batch(2), _batch(3)
    for batch in (b1, b2, b3):
        pipeline.on_sent(batch)
    pipeline.on_retriable_failure(b2, now_ms=0, backoff_ms=100)
    assert not pipeline.can_send_new(now_ms=500, leader_url=LEADER), "no new batch may overtake a failed one"
    assert pipeline.next_retry(now_ms=500) is None, "b1 and b3 are still in flight"
    pipeline.on_retriable_failure(b3, now_ms=10, backoff_ms=100)
    pipeline.on_retriable_failure(b1, now_ms=20, backoff_ms=100)
    assert pipeline.next_retry(now_ms=50) is None, "backoff not over"
    first = pipeline.next_retry(now_ms=120)
    assert first is b1
    pipeline.on_sent(b1)
    assert pipeline.next_retry(now_ms=200) is None and not pipeline.can_send_new(now_ms=200, leader_url=LEADER)
    pipeline.on_acknowledged(b1, LEADER)
    assert pipeline.next_retry(now_ms=200) is b2
    pipeline.on_sent(b2)
    pipeline.on_acknowledged(b2, LEADER)
    assert pipeline.next_retry(now_ms=200) is b3
    pipeline.on_sent(b3)
    assert not pipeline.can_send_new(now_ms=200, leader_url=LEADER), "a retried batch in flight holds new ones back"
    pipeline.on_acknowledged(b3, LEADER)
    assert pipeline.can_send_new(now_ms=200, leader_url=LEADER) and pipeline.idle


def test_an_out_of_order_refusal_after_a_failure_is_an_echo() -> None:
    pipeline = PartitionPipeline(max_in_flight=5)
    b1, b2 = _batch(1), _batch(2)
    pipeline.on_sent(b1)
    pipeline.on_sent(b2)
    assert pipeline.follows_a_failure(b2), "b1 unanswered: b2's gap may be b1's"
    assert not pipeline.follows_a_failure(b1)
    pipeline.on_acknowledged(b1, LEADER)
    assert pipeline.follows_a_failure(b2), "b2 may have reached the broker before b1, acknowledged since"
    b3 = _batch(3)
    pipeline.on_acknowledged(b2, LEADER)
    pipeline.on_sent(b3)
    assert not pipeline.follows_a_failure(b3), "nothing older was unanswered: a real gap"


def test_failed_retries_expire_at_their_delivery_deadline() -> None:
    pipeline = PartitionPipeline(max_in_flight=5)
    batch = _batch(1)
    batch.deadline_ms = 1000
    pipeline.on_sent(batch)
    pipeline.on_retriable_failure(batch, now_ms=0, backoff_ms=10)
    assert pipeline.expire_retries(now_ms=999) == []
    assert pipeline.expire_retries(now_ms=1000) == [batch]
    assert pipeline.idle


@dataclass
class IdempotentLog:
    """The broker's rule for one producer and partition: a producer it does not know yet is
    accepted at any sequence (Kafka's rule); a known one only at its next expected sequence."""

    next_sequence: int | None = None
    appended: list[int] = field(default_factory=list)

    def append(self, batch: ProducerBatch) -> str:
        if self.next_sequence is not None and batch.base_sequence < self.next_sequence:
            return "duplicate"
        if self.next_sequence is not None and batch.base_sequence > self.next_sequence:
            return "out_of_order"
        self.appended.append(batch.order)
        self.next_sequence = batch.base_sequence + batch.record_count
        return "appended"


@pytest.mark.parametrize("seed", range(40))
def test_simulated_retries_keep_order_and_never_duplicate(seed: int) -> None:
    """Requests reach the broker, and answers reach the producer, in random order."""
    rng = random.Random(seed)
    pipeline = PartitionPipeline(max_in_flight=5)
    sequences = SequenceNumbers()
    broker = IdempotentLog()
    waiting = [_batch(order, records=rng.randint(1, 4)) for order in range(1, 31)]
    requests: list[tuple[ProducerBatch, float]] = []
    answers: list[tuple[ProducerBatch, str]] = []
    acknowledged: list[int] = []
    now_ms = 0
    for _ in range(20_000):
        if len(acknowledged) == 30:
            break
        now_ms += 10
        batch = pipeline.next_retry(now_ms)
        if batch is None and waiting and pipeline.can_send_new(now_ms, LEADER):
            batch = waiting.pop(0)
            batch.base_sequence = sequences.next_base_sequence(TP, batch.record_count)
        if batch is not None:
            pipeline.on_sent(batch)
            requests.append((batch, rng.random()))
        if requests and rng.random() < 0.5:
            sent, fault = requests.pop(rng.randrange(len(requests)))
            if fault < 0.15:
                answers.append((sent, "not_leader"))
            else:
                outcome = broker.append(sent)
                answers.append((sent, "timed_out_after_append" if fault < 0.3 and outcome == "appended" else outcome))
        if answers and (batch is None or rng.random() < 0.5):
            answered, outcome = answers.pop(rng.randrange(len(answers)))
            if outcome in ("appended", "duplicate"):
                pipeline.on_acknowledged(answered, LEADER)
                acknowledged.append(answered.order)
            elif outcome == "out_of_order":
                assert pipeline.follows_a_failure(answered), f"seed {seed}: a gap without an earlier failure"
                pipeline.on_retriable_failure(answered, now_ms, backoff_ms=20)
            else:
                pipeline.on_retriable_failure(answered, now_ms, backoff_ms=20)
    assert broker.appended == list(range(1, 31)), f"seed {seed}"
    assert sorted(acknowledged) == list(range(1, 31)), f"seed {seed}"

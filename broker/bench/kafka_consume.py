"""``bench consume --load kafka``: librdkafka consumers (confluent-kafka) reading the topic from offset 0.

Each process is one confluent-kafka ``Consumer`` that ``assign``s its share of the
partitions at the beginning (no group membership, no commits: a read of the log, as the
library consumers of ``workloads._consume`` do) and counts records and value bytes until
the processes together have the expected records. Every record's value is taken from the
message, as a real consumer would. A consumer error (``Message.error``) fails the run, and
so does a stall of ``workloads.STALL_TIMEOUT_S`` while records are still expected.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from broker.bench.kafka_load import kafka_bootstrap
from broker.bench.workloads import STALL_TIMEOUT_S, ConsumerReport, report_from_process

BATCH_MESSAGES = 10_000
"""Messages one ``consume`` call returns at most."""
POLL_TIMEOUT_S = 0.2


def consumer_config(bootstrap: str) -> dict[str, Any]:
    """A reader of the log: a throwaway group id (librdkafka wants one) that never joins or commits."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{uuid.uuid4().hex[:10]}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
    }


def count_messages(messages: list[Any]) -> tuple[int, int]:
    """(records, value bytes) of one ``consume`` answer; ``RuntimeError`` naming the first error in it."""
    value_bytes = 0
    for message in messages:
        error = message.error()
        if error is not None:
            raise RuntimeError(f"--load kafka consumer: partition {message.partition()}: {error}")
        value_bytes += len(message.value() or b"")
    return len(messages), value_bytes


async def _consume_kafka(
    urls: list[str], topic: str, partitions: list[int], expected: Any, barrier: Any, progress: Any
) -> ConsumerReport:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(consumer_config(await kafka_bootstrap(urls)))
    try:
        consumer.list_topics(topic, timeout=30)
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING) for partition in partitions])
        barrier.wait()
        started_ns = last_data_ns = time.monotonic_ns()
        records = value_bytes = 0
        while not 0 <= expected.value <= progress.value:
            messages = consumer.consume(BATCH_MESSAGES, POLL_TIMEOUT_S)
            now_ns = time.monotonic_ns()
            if not messages:
                if now_ns - last_data_ns > STALL_TIMEOUT_S * 1e9:
                    raise RuntimeError(f"no record for {STALL_TIMEOUT_S} s after {progress.value} of {expected.value}")
                continue
            count, size = count_messages(messages)
            records += count
            value_bytes += size
            last_data_ns = now_ns
            with progress.get_lock():
                progress.value += count
        return ConsumerReport(records, value_bytes, started_ns, last_data_ns)
    finally:
        consumer.close()


def kafka_consume_process(
    urls: list[str],
    topic: str,
    partitions: list[int],
    process_index: int,
    expected: Any,
    barrier: Any,
    progress: Any,
    results: Any,
) -> None:
    """The body of one Kafka consumer process; ``workloads.consume_process`` without sampling or security
    (the Kafka load runs no e2e and connects without security, ``cli.check_kafka_load``)."""
    work = _consume_kafka(urls, topic, partitions, expected, barrier, progress)
    report_from_process("consumer", process_index, barrier, results, work)

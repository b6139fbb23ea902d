"""``bench consume --load kafka``: what a librdkafka reader of the log is configured as, and how it counts."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Message

from broker.bench.kafka_consume import consumer_config, count_messages
from broker.bench.spec import WorkloadSpec


def test_the_reader_never_commits_and_starts_at_the_beginning() -> None:
    config = consumer_config("127.0.0.1:19092")
    assert config["bootstrap.servers"] == "127.0.0.1:19092"
    assert config["enable.auto.commit"] is False
    assert config["auto.offset.reset"] == "earliest"
    assert config["group.id"] != consumer_config("127.0.0.1:19092")["group.id"], "a fresh group id per reader"


def test_records_and_value_bytes_are_counted_from_the_messages() -> None:
    messages = [Message(topic="t", partition=0, offset=i, value=b"x" * 100) for i in range(3)]
    messages.append(Message(topic="t", partition=1, offset=0, value=None))
    assert count_messages(messages) == (4, 300)


def test_an_error_message_fails_the_run_naming_its_partition() -> None:
    messages = [
        Message(topic="t", partition=0, offset=0, value=b"x"),
        Message(topic="t", partition=5, error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)),
    ]
    with pytest.raises(RuntimeError, match=r"partition 5: .*Unknown topic or partition"):
        count_messages(messages)


def test_consume_takes_the_kafka_load() -> None:
    spec = WorkloadSpec(kind="consume", load="kafka")
    assert spec.validate() is spec

"""Client fetch sessions (KIP-227) against a real 3-broker RF 3 cluster: on the wire, and from kafka-python,
whose consumer fetches in incremental sessions by default."""

from __future__ import annotations

import dataclasses
import logging
from contextlib import closing

import pytest
from kafka import KafkaConsumer  # type: ignore[import-untyped]
from kio.schema.errors import ErrorCode

from tests.integration.kafka.conftest import MIN_ISR_2
from tests.integration.kafka.test_kafka_groups import produce
from tests.integration.kafka.wire import Connection
from tests.support.cluster import Cluster
from tests.support.waiting import wait_until
from tests.unit.kafka import requests

pytestmark = pytest.mark.integration

VERSION = 12


def test_an_incremental_fetch_answers_only_partitions_with_news(kafka_cluster: Cluster) -> None:
    topic = "sessions-wire"
    kafka_cluster.create_topic(topic, partitions=2, replication_factor=1, configs={})
    states = kafka_cluster.partitions(topic)
    leader = states[0].leader_id
    kafka_cluster.wait_until(lambda: kafka_cluster.partitions(topic)[1].leader_id >= 0, "partition 1 led")
    produce(kafka_cluster, topic, 4, 1)
    hw = kafka_cluster.wait_until(lambda: kafka_cluster.partitions(topic)[0].high_watermark == 4 or None, "4 records")
    assert hw
    with closing(Connection(kafka_cluster.kafka_addresses[leader])) as wire:
        opened = wire.call(requests.fetch(VERSION, topic, 0, session_epoch=0))
        assert opened.error_code == ErrorCode.none and opened.session_id != 0
        [[first]] = [t.partitions for t in opened.responses]
        assert (first.high_watermark, bool(first.records)) == (4, True)
        quiet = wire.call(requests.fetch(VERSION, topic, 4, session_id=opened.session_id, session_epoch=1))
        assert [p for t in quiet.responses for p in t.partitions] == [], "the new position is news to no one"
        nothing = wire.call(_unnamed(topic, opened.session_id, 2))
        assert (nothing.error_code, nothing.responses) == (ErrorCode.none, ())
        produce(kafka_cluster, topic, 2, 1)
        kafka_cluster.wait_until(lambda: kafka_cluster.partitions(topic)[0].high_watermark == 6, "6 records")
        news = wire.call(_unnamed(topic, opened.session_id, 3))
        [[moved]] = [t.partitions for t in news.responses]
        assert (moved.partition_index, moved.high_watermark, bool(moved.records)) == (0, 6, True)
        replayed = wire.call(_unnamed(topic, opened.session_id, 3))
        assert replayed.error_code == ErrorCode.invalid_fetch_session_epoch


def _unnamed(topic: str, session_id: int, epoch: int) -> object:
    """An incremental fetch naming no partition: the session's are read as they stand."""
    return dataclasses.replace(requests.fetch(VERSION, topic, 0, session_id=session_id, session_epoch=epoch), topics=())


def test_kafka_python_reads_every_record_in_order_through_incremental_sessions(
    kafka_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="kafka.consumer.fetcher")
    topic = "sessions-kafka-python"
    kafka_cluster.create_topic(topic, partitions=6, configs=MIN_ISR_2)
    produce(kafka_cluster, topic, 60, 6)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka_cluster.bootstrap(),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    seen: list[tuple[int, int, bytes]] = []
    try:

        def read(count: int) -> bool:
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend((r.partition, r.offset, r.value) for r in records)
            return len(seen) >= count

        wait_until(lambda: read(60), "the first 60 records", 30)
        produce(kafka_cluster, topic, 60, 6)
        wait_until(lambda: read(120), "the next 60 records", 30)
    finally:
        consumer.close()
    assert len(seen) == 120
    incremental = [r for r in caplog.records if r.getMessage().startswith("Built incremental fetch")]
    assert incremental, "kafka-python fetched in sessions the brokers opened"
    for partition in range(6):
        offsets = [offset for p, offset, _ in seen if p == partition]
        assert offsets == list(range(20)), f"partition {partition} read in order, each record once"

"""What counts as a client's fetch in the console's traffic: the records an answer moves a
reader past, once per answer, read from the batch headers (pure counters, real batches), and
the Kafka listener's Fetch counting its answer once however many passes its long poll made."""

from __future__ import annotations

import dataclasses

from broker.console.activity import Traffic, TrafficCounters
from broker.descriptions import FetchResult
from broker.isolation import Isolation
from broker.record.codec import RecordInput, encode_batch
from tests.unit.kafka import requests
from tests.unit.kafka.stand_in import BATCH, HIGH_WATERMARK, LOG_START, TOPIC, StandInNode
from tests.unit.kafka.test_round_trips import exchange


def batch(base_offset: int, count: int) -> bytes:
    return encode_batch([RecordInput(b"k", b"v" * 10, (), 1_700_000_000_000)] * count, base_offset=base_offset)


def test_a_read_counts_the_offsets_from_where_the_reader_stands_to_the_end_of_the_last_batch() -> None:
    counters = TrafficCounters()
    data = batch(10, 3) + batch(13, 2)
    counters.fetched_batches("orders", 11, data)
    assert counters.topics["orders"] == Traffic(fetch_records=4, fetch_bytes=len(data))
    counters.fetched_batches("orders", 15, batch(15, 1))
    assert counters.topics["orders"].fetch_records == 5


def test_an_empty_answer_counts_nothing_and_names_no_topic() -> None:
    counters = TrafficCounters()
    counters.fetched_batches("orders", 7, b"")
    assert counters.topics == {}


def test_a_kafka_fetch_counts_its_answer_once() -> None:
    node = StandInNode()
    exchange(node, 1, 12, requests.fetch(12, TOPIC, 5))
    assert node.console.traffic.counted == [(TOPIC, 5, BATCH)]


@dataclasses.dataclass
class EmptyUntilPolled(StandInNode):
    """Nothing on the first pass; data for the long poll and the pass after it."""

    def __post_init__(self) -> None:
        self.reads = 0

    async def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        timeout_ms: int,
        *,
        forward: bool = True,
        isolation: Isolation = Isolation.READ_UNCOMMITTED,
    ) -> FetchResult:
        self.reads += 1
        await super().fetch(topic, partition, offset, max_bytes, timeout_ms, forward=forward, isolation=isolation)
        return FetchResult(b"" if self.reads == 1 else BATCH, HIGH_WATERMARK, LOG_START, HIGH_WATERMARK, HIGH_WATERMARK)


def test_a_long_polled_kafka_fetch_counts_the_records_it_answers_not_each_pass() -> None:
    node = EmptyUntilPolled()
    waiting = dataclasses.replace(requests.fetch(12, TOPIC, 5), max_wait=requests.millis(500), min_bytes=1)
    response = exchange(node, 1, 12, waiting)
    assert response.responses[0].partitions[0].records == BATCH
    assert node.reads == 3, "first pass, long poll, last pass"
    assert node.console.traffic.counted == [(TOPIC, 5, BATCH)]

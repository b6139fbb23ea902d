"""``Producer`` on a real event loop with the network replaced by an in-test broker stand-in.

The stand-in keeps a log per partition and, like the broker, answers a batch it has
already appended (same producer id, epoch and base sequence) with the offsets it gave
the first time. Requests can be held (``gate``) or refused once after appending
(``fail_after_append``), which a real broker cannot be made to do on demand.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from broker.client.errors import BufferExhausted
from broker.client.types import BrokerInfo, PartitionInfo, ProduceAck, TopicPartition
from broker.clock import monotonic_ms
from broker.errors import CorruptRecord, ServiceUnavailable
from broker.record.decode import decode_batch
from producer import Producer
from producer.batch import estimate_record_bytes
from producer.records import SendManyResult


class Broker:
    def __init__(self) -> None:
        self.logs: dict[int, list[bytes | None]] = {}
        self.appended: dict[tuple[int, int, int, int], int] = {}
        self.requests: list[bytes] = []
        self.gate: asyncio.Event | None = None
        self.fail_after_append = 0
        self.refuse: Exception | None = None

    async def produce(
        self,
        leader_url: str,
        tp: TopicPartition,
        batch: bytes,
        acks: object,
        timeout_ms: int,
        transactional_id: str | None = None,
    ) -> ProduceAck:
        self.requests.append(batch)
        if self.gate is not None:
            await self.gate.wait()
        if self.refuse is not None:
            raise self.refuse
        header, records = decode_batch(batch)
        identity = (tp.partition, header.producer_id, header.producer_epoch, header.base_sequence)
        base = self.appended.get(identity)
        if base is None:
            log = self.logs.setdefault(tp.partition, [])
            base = self.appended[identity] = len(log)
            log.extend(record.value for record in records)
        if self.fail_after_append:
            self.fail_after_append -= 1
            raise ServiceUnavailable("appended, but the answer was lost")
        return ProduceAck(tp.partition, base, base + len(records) - 1, -1)


@pytest.fixture
async def broker() -> Broker:
    return Broker()


async def _producer(broker: Broker, partitions: int = 3, **settings: object) -> Producer:
    producer = Producer("http://stand-in:1", retry_backoff_ms=0, **settings)
    client = producer.client

    async def cluster_id() -> str:
        client.metadata.cluster_id = "c"
        return "c"

    async def init_producer_id() -> tuple[int, int]:
        return (42, 0)

    client.cluster_id = cluster_id  # type: ignore[method-assign]
    client.init_producer_id = init_producer_id  # type: ignore[method-assign]
    client.produce = broker.produce  # type: ignore[method-assign]
    client.metadata.update_brokers([BrokerInfo(1, "http://stand-in:1")])
    client.metadata.update_topic(
        "t", [PartitionInfo("t", p, 1, 0, (1,), (1,), 0, 0, 0) for p in range(partitions)], monotonic_ms()
    )
    await producer.start()
    return producer


@pytest.fixture
async def producer(broker: Broker) -> AsyncIterator[Producer]:
    producer = await _producer(broker, linger_ms=0, batch_size=2_000)
    yield producer
    await producer.close(timeout_ms=1_000)


async def test_send_many_reports_every_records_offset_across_batches(producer: Producer, broker: Broker) -> None:
    values = [f"value-{index}".encode() for index in range(1_000)]
    result = await (await producer.send_many("t", values, partition=1))
    assert isinstance(result, SendManyResult) and len(result) == 1_000
    assert len(result.segments) > 5, "a call larger than batch_size fills several batches"
    assert broker.logs[1] == values
    assert result.offsets() == list(range(1_000))
    assert result[737].offset == 737 and result[737].partition == 1


async def test_keyed_send_many_keeps_order_per_partition(producer: Producer, broker: Broker) -> None:
    from broker.partitioner import partition_for_key

    keys = [f"k{index % 7}".encode() for index in range(300)]
    values = [f"v{index}".encode() for index in range(300)]
    result = await (await producer.send_many("t", values, keys=keys))
    for index in range(300):
        metadata = result[index]
        assert metadata.partition == partition_for_key(keys[index], 3)
        assert broker.logs[metadata.partition][metadata.offset] == values[index]
    for partition, log in broker.logs.items():
        assert log == [v for v, k in zip(values, keys, strict=True) if partition_for_key(k, 3) == partition]


async def test_a_retried_batch_is_the_same_bytes_so_it_is_not_appended_twice(broker: Broker) -> None:
    producer = await _producer(broker, linger_ms=0, batch_size=100_000)
    try:
        broker.fail_after_append = 1
        values = [f"r{index}".encode() for index in range(50)]
        result = await (await producer.send_many("t", values, partition=0))
        assert len(broker.requests) == 2 and broker.requests[0] == broker.requests[1]
        assert broker.logs[0] == values, "the broker recognised the retry: every record once"
        assert result.offsets() == list(range(50))
    finally:
        await producer.close(timeout_ms=1_000)


async def test_a_lone_send_with_linger_0_is_on_the_wire_one_loop_turn_later(producer: Producer, broker: Broker) -> None:
    future = await producer.send("t", b"alone", partition=2)
    assert not broker.requests
    await asyncio.sleep(0)
    assert len(broker.requests) == 1, "send() hands the batch to a request task itself, no sender turn in between"
    assert (await future).offset == 0


async def test_sends_without_a_future_are_flushed_and_their_failures_counted(
    producer: Producer, broker: Broker
) -> None:
    for index in range(100):
        # the value typed as absent is the point: ``want_future=False`` returns None
        assert await producer.send("t", str(index).encode(), partition=0, want_future=False) is None  # type: ignore[func-returns-value]
    await producer.flush()
    assert broker.logs[0] == [str(index).encode() for index in range(100)]
    assert producer.failed_records == 0
    broker.refuse = CorruptRecord("refused for good")
    await producer.send("t", b"doomed", partition=0, want_future=False)
    await producer.flush()
    assert producer.failed_records == 1


async def test_send_waits_while_its_partitions_oldest_unacknowledged_batch_is_older_than_max_queue_ms(
    broker: Broker,
) -> None:
    producer = await _producer(broker, linger_ms=0, max_queue_ms=0, max_block_ms=60_000)
    try:
        broker.gate = asyncio.Event()
        first = await producer.send("t", b"first", partition=0)
        second = asyncio.create_task(producer.send("t", b"second", partition=0))
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(broker.requests) == 1 and not second.done(), "held back while 'first' is unacknowledged"
        elsewhere = await producer.send("t", b"elsewhere", partition=1)
        assert not elsewhere.done(), "another partition is not held back"
        broker.gate.set()
        assert (await first).offset == 0
        assert (await (await second)).offset == 1
    finally:
        await producer.close(timeout_ms=1_000)


async def test_send_gives_up_after_max_block_ms_when_the_queue_stays_old(broker: Broker) -> None:
    producer = await _producer(broker, linger_ms=0, max_queue_ms=0, max_block_ms=50)
    try:
        broker.gate = asyncio.Event()
        await producer.send("t", b"stuck", partition=0, want_future=False)
        with pytest.raises(BufferExhausted, match="max_queue_ms"):
            await producer.send_many("t", [b"a", b"b"], partition=0)
        broker.gate.set()
        await producer.flush()
        assert broker.logs[0] == [b"stuck"], "nothing of the refused call was queued"
    finally:
        await producer.close(timeout_ms=1_000)


def test_max_queue_ms_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from config.client import ProducerSettings

    assert ProducerSettings().max_queue_ms == 100
    monkeypatch.setenv("HIGHWATER_PRODUCER_MAX_QUEUE_MS", "40")
    assert ProducerSettings().max_queue_ms == 40
    with pytest.raises(ValueError, match="max_queue_ms"):
        ProducerSettings(max_queue_ms=-1)


async def test_a_send_many_larger_than_buffer_memory_goes_in_parts_and_says_so_if_it_stops(broker: Broker) -> None:
    producer = await _producer(broker, linger_ms=0, buffer_memory=300, max_queue_ms=None, max_block_ms=50)
    try:
        values = [bytes([index]) * 100 for index in range(5)]
        result = await (await producer.send_many("t", values, partition=0))
        assert broker.logs[0] == values and result.offsets() == list(range(5))
        assert len(broker.requests) >= 3, "at most two records fit buffer_memory at once"
        broker.gate = asyncio.Event()
        with pytest.raises(BufferExhausted, match="part of this send_many was queued"):
            await producer.send_many("t", values, partition=0)
        broker.gate.set()
        await producer.flush()
        queued = broker.logs[0][5:]
        assert 0 < len(queued) < 5 and queued == values[: len(queued)]
    finally:
        await producer.close(timeout_ms=1_000)


class PacedBroker(Broker):
    """Serves one request at a time at ``bytes_per_ms``: a cluster at its throughput limit."""

    def __init__(self, bytes_per_ms: int) -> None:
        super().__init__()
        self.bytes_per_ms = bytes_per_ms
        self._server = asyncio.Lock()

    async def produce(
        self,
        leader_url: str,
        tp: TopicPartition,
        batch: bytes,
        acks: object,
        timeout_ms: int,
        transactional_id: str | None = None,
    ) -> ProduceAck:
        async with self._server:
            await asyncio.sleep(len(batch) / self.bytes_per_ms / 1000)
            return await super().produce(leader_url, tp, batch, acks, timeout_ms)


async def _send_round_robin(producer: Producer, total_bytes: int, value_bytes: int, partitions: int) -> list[float]:
    """Send ``total_bytes`` of records round-robin over ``partitions``, all acknowledged on return.

    Returns, for every ``send`` after a rate was known, the unacknowledged bytes it left minus
    the bound in force: what back-pressure holds at or below one record's size."""
    overshoots: list[float] = []
    futures = []
    value = b"v" * value_bytes
    for index in range(total_bytes // value_bytes):
        futures.append(await producer.send("t", value, partition=index % partitions))
        limit = producer._queue_limit_bytes
        if limit != float("inf"):
            overshoots.append(producer._accumulator.buffered_bytes - limit)
    await asyncio.gather(*futures)
    return overshoots


async def test_at_a_fixed_service_rate_the_queue_is_what_drains_in_max_queue_ms_not_the_in_flight_window() -> None:
    """The oldest batch's age alone would let 6 partitions x 5 requests in flight be ahead of
    each record; once acknowledgements give a rate, ``send`` holds the unacknowledged bytes to
    what drains in ``max_queue_ms``. Asserted on the producer's state, not on timings: every
    send leaves at most one record above the bound, and the bound is far below the window."""
    broker = PacedBroker(bytes_per_ms=1_000)
    producer = await _producer(
        broker,
        partitions=6,
        linger_ms=0,
        batch_size=8_192,
        buffer_memory=300_000,
        max_queue_ms=60,
        max_block_ms=60_000,
    )
    try:
        in_flight_window_bytes = 6 * 5 * 8_192
        overshoots = await _send_round_robin(producer, 1_000_000, 500, 6)
        assert sum(len(log) for log in broker.logs.values()) == 2_000, "every record acknowledged: no deadlock"
        assert overshoots, "acknowledgements gave a rate during the run"
        record_bytes = estimate_record_bytes(None, b"v" * 500, [])
        assert max(overshoots) <= record_bytes, "a send leaves at most its own record (as buffered) above the bound"
        assert producer._queue_limit_bytes < in_flight_window_bytes / 2
    finally:
        await producer.close(timeout_ms=1_000)


async def test_a_record_larger_than_the_bound_goes_when_nothing_is_unacknowledged() -> None:
    broker = PacedBroker(bytes_per_ms=100)
    producer = await _producer(
        broker,
        linger_ms=0,
        batch_size=1_024,
        max_in_flight_requests_per_connection=1,
        max_queue_ms=1,
        max_block_ms=60_000,
    )
    try:
        await _send_round_robin(producer, 20_000, 500, 3)
        assert producer._queue_limit_bytes < 20_000, "a rate was measured: the bound is far below the record"
        assert (await (await producer.send("t", b"x" * 20_000, partition=0))).partition == 0
    finally:
        await producer.close(timeout_ms=1_000)

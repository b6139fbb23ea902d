"""The ``kafka`` produce load: librdkafka (through confluent-kafka) over the brokers' Kafka listeners.

It measures the broker's capacity through a client whose per-record cost is C, not
Python: each load process runs one confluent-kafka ``Producer`` (librdkafka batches,
compresses and keeps requests in flight on its own threads) and one Python thread that
only calls ``produce`` and ``poll``. The process sends the sum of its tasks' shares of
``--count`` (``spec.records_for_task``), or sends until ``--duration-s`` is up;
``--producers`` does not add producers here, librdkafka already multiplexes every
partition over one connection per broker.

The bootstrap servers come from the brokers list (``GET /v3/clusters/{id}/brokers``,
``kafka_address``), so ``--server URL`` and ``--spawn N`` find the Kafka listeners alike.

Counting and sampling: every record has a delivery callback. Unsampled records share the
configured ``on_delivery`` (``Deliveries.record``, a counter); every ``sample_every``-th
record carries its send time (``spec.STAMP``, flag 1) and its own callback, which also
takes the acknowledgement time. Callbacks run inside ``poll``/``flush``, so an ack time
is late by at most the gap between two polls (``POLL_EVERY`` records). A record is
counted acknowledged only when librdkafka reports it delivered; any delivery error, or
any fatal client error, fails the run with the first error named. Records are never
retried silently beyond librdkafka's own retries, bounded by ``message.timeout.ms``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from broker.bench.spec import STAMP, WorkloadSpec
from broker.bench.workloads import AckSample, ProducerReport, report_from_process
from broker.client.http import ClusterClient

POLL_EVERY = 1_000
"""Records between two ``poll(0)`` calls: delivery callbacks (and ack times) wait at most this long."""
FULL_QUEUE_POLL_S = 0.05
"""How long ``produce`` backs off (serving callbacks) when librdkafka's queue is full."""
FLUSH_TIMEOUT_S = 120.0
MESSAGE_TIMEOUT_MS = 30_000
"""librdkafka fails a record not acknowledged within this (retries included): a stuck run ends, named."""
QUEUE_MAX_MESSAGES = 100_000
QUEUE_MAX_KBYTES = 128 * 1024
"""librdkafka's queue of unacknowledged records: enough for many full batches per partition in flight,
yet bounded, so an ack time measures the broker and not seconds of queueing in the client (a queue of
a million records made the 100 B ack p50 2.7 s at the same throughput)."""
MAX_BATCH_MESSAGES = 1_000_000
"""librdkafka's upper bound of ``batch.num.messages``."""


def producer_config(spec: WorkloadSpec, bootstrap: str) -> dict[str, Any]:
    """The librdkafka settings of the load, from the bench options.

    ``acks`` and ``compression.type`` take the options' values as they are (librdkafka
    spells them the same way); a batch is bounded by ``--batch-size`` bytes and by as many
    records as fit in it, so neither bound stops a batch before the other; ``linger.ms`` is
    ``--linger-ms``. Idempotence stays at librdkafka's default (off in 2.x), as a user's
    producer would have it.
    """
    return {
        "bootstrap.servers": bootstrap,
        "acks": spec.acks.value,
        "linger.ms": spec.linger_ms,
        "batch.size": spec.batch_size_bytes,
        "batch.num.messages": min(max(spec.batch_size_bytes // spec.record_size_bytes, 1), MAX_BATCH_MESSAGES),
        "queue.buffering.max.messages": QUEUE_MAX_MESSAGES,
        "queue.buffering.max.kbytes": QUEUE_MAX_KBYTES,
        "compression.type": spec.compression,
        "message.timeout.ms": MESSAGE_TIMEOUT_MS,
    }


def process_records(spec: WorkloadSpec, process_index: int) -> int | None:
    """This process's records: its tasks' shares of ``--count`` together; ``None`` in duration mode."""
    if spec.count is None:
        return None
    return sum(spec.records_for_task(process_index, task) or 0 for task in range(spec.producers))


def bootstrap_from(brokers_body: dict[str, Any]) -> str:
    """``bootstrap.servers`` from a brokers list answer; ``RuntimeError`` if no broker has a Kafka listener."""
    addresses = [broker["kafka_address"] for broker in brokers_body.get("data", []) if broker.get("kafka_address")]
    if not addresses:
        raise RuntimeError("no broker has a Kafka listener: set kafka_listener (HIGHWATER_KAFKA_LISTENER)")
    return ",".join(addresses)


async def kafka_bootstrap(urls: list[str]) -> str:
    """The Kafka addresses the brokers registered, read from the brokers list of the first URL."""
    client = ClusterClient(urls)
    try:
        clusters = await client.json_call("GET", f"{urls[0]}/v3/clusters")
        cluster_id = clusters["data"][0]["cluster_id"]
        return bootstrap_from(await client.json_call("GET", f"{urls[0]}/v3/clusters/{cluster_id}/brokers"))
    finally:
        await client.close()


@dataclass
class Deliveries:
    """What the delivery callbacks heard: records acknowledged, ack-time samples, the first errors."""

    acknowledged: int = 0
    samples: list[AckSample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def record(self, error: Any, message: Any) -> None:
        """The callback of unsampled records: count it, or keep the error."""
        if error is None:
            self.acknowledged += 1
        elif len(self.errors) < 5:
            self.errors.append(f"partition {message.partition()}: {error}")

    def sampled(self, send_ns: int, error: Any, message: Any) -> None:
        """The callback of a sampled record: as ``record``, plus (partition, offset, send, ack) when delivered."""
        ack_ns = time.monotonic_ns()
        self.record(error, message)
        if error is None:
            self.samples.append((message.partition(), message.offset(), send_ns, ack_ns))

    def client_error(self, error: Any) -> None:
        """librdkafka's ``error_cb``: a fatal error ends the run; others (a broker reconnect) it retries itself."""
        if error.fatal():
            self.errors.append(f"fatal client error: {error}")

    def check(self) -> None:
        if self.errors:
            raise RuntimeError(f"--load kafka: records were not delivered: {'; '.join(self.errors)}")


def _send(producer: Any, topic: str, value: bytes, deliveries: Deliveries, send_ns: int | None) -> None:
    """``produce`` one record, serving callbacks while librdkafka's queue is full."""
    callback = None if send_ns is None else partial(deliveries.sampled, send_ns)
    while True:
        try:
            producer.produce(topic, value, on_delivery=callback)
            return
        except BufferError:
            producer.poll(FULL_QUEUE_POLL_S)
            deliveries.check()


def send_records(
    producer: Any,
    deliveries: Deliveries,
    spec: WorkloadSpec,
    topic: str,
    records: int | None,
    deadline_ns: int,
    progress: Any,
) -> int:
    """Produce ``records`` (or until the deadline) and flush; the records sent, every one acknowledged.

    ``deliveries`` must be the producer's ``on_delivery``: unsampled records are counted there.
    """
    filler = b"v" * (spec.record_size_bytes - STAMP.size)
    plain = STAMP.pack(0, 0) + filler
    sent = 0
    while sent < records if records is not None else time.monotonic_ns() < deadline_ns:
        if sent % spec.sample_every == 0:
            send_ns = time.monotonic_ns()
            _send(producer, topic, STAMP.pack(send_ns, 1) + filler, deliveries, send_ns)
        else:
            _send(producer, topic, plain, deliveries, None)
        sent += 1
        if sent % POLL_EVERY == 0:
            producer.poll(0)
            deliveries.check()
            _add(progress, POLL_EVERY)
    left = producer.flush(FLUSH_TIMEOUT_S)
    _add(progress, sent % POLL_EVERY)
    deliveries.check()
    if left or deliveries.acknowledged != sent:
        raise RuntimeError(
            f"--load kafka: {deliveries.acknowledged} of {sent} records acknowledged after {FLUSH_TIMEOUT_S} s"
        )
    return sent


def new_producer(spec: WorkloadSpec, bootstrap: str, deliveries: Deliveries) -> Any:
    """A confluent-kafka ``Producer`` whose delivery and error callbacks report to ``deliveries``."""
    from confluent_kafka import Producer

    return Producer(
        {**producer_config(spec, bootstrap), "on_delivery": deliveries.record, "error_cb": deliveries.client_error}
    )


async def _produce_kafka(
    spec: WorkloadSpec, urls: list[str], topic: str, process_index: int, barrier: Any, progress: Any
) -> ProducerReport:
    """Connect and learn the topic's leaders before the barrier, then produce (blocking this process's loop,
    which has nothing else to run)."""
    deliveries = Deliveries()
    producer = new_producer(spec, await kafka_bootstrap(urls), deliveries)
    producer.list_topics(topic, timeout=30)
    barrier.wait()
    started_ns = time.monotonic_ns()
    started_cpu_ns = time.process_time_ns()
    deadline_ns = started_ns + int((spec.duration_s or 0) * 1e9)
    sent = send_records(producer, deliveries, spec, topic, process_records(spec, process_index), deadline_ns, progress)
    return ProducerReport(
        sent,
        started_ns,
        time.monotonic_ns(),
        deliveries.samples,
        0,
        time.process_time_ns() - started_cpu_ns,
    )


def kafka_produce_process(
    spec: WorkloadSpec, urls: list[str], topic: str, process_index: int, barrier: Any, progress: Any, results: Any
) -> None:
    """The body of one Kafka load-generator process; the same contract as ``workloads.produce_process``."""
    work = _produce_kafka(spec, urls, topic, process_index, barrier, progress)
    report_from_process("producer", process_index, barrier, results, work)


def _add(counter: Any, amount: int) -> None:
    with counter.get_lock():
        counter.value += amount

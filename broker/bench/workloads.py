"""The load generator: producer and consumer loops, each process with its own event loop.

Every function named ``*_process`` is the body of one ``multiprocessing`` process
(spawned, so each starts clean). It connects, then waits at the shared barrier so
that connection set-up is never measured, runs, and puts one report on the results
queue: ``(role, index, report)`` or ``("error", index, text)``. Clocks are
``time.monotonic_ns``, one clock for every process on the host, so a send time
written into a value by one process can be compared with a receive time in another.

Latencies are sampled: every ``sample_every``-th record of a task carries its send
time (``spec.STAMP``, flag 1) and gets a done-callback at its acknowledgement; the
other records carry flag 0, are sent without a future and cost nothing extra. A paced
task (``--target-rate``) sleeps only when ``MIN_PACE_SLEEP_NS`` ahead of its rate. A task
yields to the loop every ``YIELD_EVERY`` records (every chunk, with ``--load many``) so
the producer's sender task runs while the task keeps appending; the producer's own
back-pressure (``buffer_memory``, ``max_queue_ms``) bounds what is outstanding.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import structlog

from broker.bench.spec import STAMP, WorkloadSpec
from broker.client.security import ClientSecurity
from broker.client.types import TopicPartition
from consumer import Consumer
from producer import Producer

MANY_CHUNK = 1_000
"""Values per ``send_many`` call of the ``many`` load."""
YIELD_EVERY = 64
MIN_PACE_SLEEP_NS = 2_000_000
"""A paced task sleeps only when this far ahead of its rate (Kafka's perf tool's ``MIN_SLEEP_NS``)."""
PROGRESS_EVERY = 1_000
STALL_TIMEOUT_S = 30.0
"""A consumer that receives nothing for this long while records are still expected fails the run."""
MAX_POLL_RECORDS = 20_000

AckSample = tuple[int, int, int, int]
"""(partition, offset, send_ns, ack_ns) of one sampled record."""
SeenSample = tuple[int, int, int, int]
"""(partition, offset, send_ns, seen_ns) of one sampled record, as a consumer received it."""


@dataclass
class ProducerReport:
    records: int
    started_ns: int
    finished_ns: int
    samples: list[AckSample] = field(default_factory=list)
    requests: int = 0
    """Produce requests sent (one per batch attempt): records/requests is the batching achieved."""
    cpu_ns: int = 0
    """CPU time (user + system) of the whole load-generator process over the run: the client's cost per record."""


@dataclass
class ConsumerReport:
    records: int
    value_bytes: int
    started_ns: int
    finished_ns: int
    samples: list[SeenSample] = field(default_factory=list)


def quiet_logging() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def run_loop(coroutine: Any) -> Any:
    """Run on uvloop when installed (as the broker does), else on asyncio's default loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


def _on_ack(samples: list[AckSample], send_ns: int, delivery: asyncio.Future) -> None:
    if not delivery.cancelled() and delivery.exception() is None:
        metadata = delivery.result()
        samples.append((metadata.partition, metadata.offset, send_ns, time.monotonic_ns()))


def _on_many_ack(samples: list[AckSample], send_ns: int, stamped: range, delivery: asyncio.Future) -> None:
    """A bulk send's sampled records (call positions ``stamped``) are acknowledged when its future resolves."""
    if not delivery.cancelled() and delivery.exception() is None:
        ack_ns = time.monotonic_ns()
        result = delivery.result()
        for index in stamped:
            metadata = result[index]
            samples.append((metadata.partition, metadata.offset, send_ns, ack_ns))


async def _paced(started_ns: int, sent: int, interval_ns: float) -> bool:
    """Sleep if the task is at least ``MIN_PACE_SLEEP_NS`` ahead of its rate; whether it slept.

    As Kafka's own producer performance tool throttles: a task ahead by less sends on, so a
    paced run costs one timer per ~2 ms, not one per record. At 190 000 records/s over
    eight tasks, a timer per record cost ~0.4 µs of the ~3.7 µs of client CPU per record.
    """
    delay_ns = started_ns + sent * interval_ns - time.monotonic_ns()
    if delay_ns < MIN_PACE_SLEEP_NS:
        return False
    await asyncio.sleep(delay_ns / 1e9)
    return True


async def _send_task(
    producer: Producer,
    spec: WorkloadSpec,
    topic: str,
    records: int | None,
    deadline_ns: int,
    samples: list[AckSample],
    progress: Any,
) -> int:
    """Send this task's records (or until the deadline); the number sent, all acknowledged on return.

    Only sampled records ask for a future; the others are sent with ``want_future=False``
    and their failures counted by the producer, checked once at the end (``_produce``).
    """
    filler = b"v" * (spec.record_size_bytes - STAMP.size)
    plain = STAMP.pack(0, 0) + filler
    rate = spec.rate_per_task()
    interval_ns = 1e9 / rate if rate else 0.0
    started_ns = time.monotonic_ns()
    sent = 0
    while sent < records if records is not None else time.monotonic_ns() < deadline_ns:
        if not (interval_ns and await _paced(started_ns, sent, interval_ns)) and sent % YIELD_EVERY == 0:
            await asyncio.sleep(0)
        if sent % spec.sample_every == 0:
            send_ns = time.monotonic_ns()
            delivery = await producer.send(topic, STAMP.pack(send_ns, 1) + filler)
            delivery.add_done_callback(partial(_on_ack, samples, send_ns))
        else:
            await producer.send(topic, plain, want_future=False)
        sent += 1
        if sent % PROGRESS_EVERY == 0:
            _add(progress, PROGRESS_EVERY)
    await producer.flush()
    _add(progress, sent % PROGRESS_EVERY)
    return sent


async def _send_many_task(
    producer: Producer,
    spec: WorkloadSpec,
    topic: str,
    records: int | None,
    deadline_ns: int,
    samples: list[AckSample],
    progress: Any,
) -> int:
    """``_send_task`` through ``Producer.send_many``, ``MANY_CHUNK`` values per call.

    Sampling is the same: the task's every ``sample_every``-th record carries the chunk's
    send time, and its acknowledgement time is when the chunk's future resolves.
    """
    filler = b"v" * (spec.record_size_bytes - STAMP.size)
    plain = STAMP.pack(0, 0) + filler
    rate = spec.rate_per_task()
    interval_ns = 1e9 / rate if rate else 0.0
    started_ns = time.monotonic_ns()
    sent = 0
    while sent < records if records is not None else time.monotonic_ns() < deadline_ns:
        if not (interval_ns and await _paced(started_ns, sent, interval_ns)):
            await asyncio.sleep(0)
        size = MANY_CHUNK if records is None else min(MANY_CHUNK, records - sent)
        send_ns = time.monotonic_ns()
        stamped_value = STAMP.pack(send_ns, 1) + filler
        values = [plain] * size
        first = -sent % spec.sample_every
        stamped = range(first, size, spec.sample_every)
        for index in stamped:
            values[index] = stamped_value
        delivery = await producer.send_many(topic, values)
        if stamped:
            delivery.add_done_callback(partial(_on_many_ack, samples, send_ns, stamped))
        sent += size
        _add(progress, size)
    await producer.flush()
    return sent


def _add(counter: Any, amount: int) -> None:
    with counter.get_lock():
        counter.value += amount


async def _produce(
    spec: WorkloadSpec, urls: list[str], topic: str, process_index: int, barrier: Any, progress: Any
) -> ProducerReport:
    settings = {
        "acks": spec.acks.value,
        "linger_ms": spec.linger_ms,
        "batch_size": spec.batch_size_bytes,
        "compression": spec.compression,
        "max_request_size": max(spec.batch_size_bytes * 2, 1 << 20),
    }
    async with Producer(urls, **settings, **spec.security.client_options()) as producer:
        await producer.client.ensure_topic(topic)
        barrier.wait()
        started_ns = time.monotonic_ns()
        started_cpu_ns = time.process_time_ns()
        deadline_ns = started_ns + int((spec.duration_s or 0) * 1e9)
        samples: list[AckSample] = []
        task_body = _send_many_task if spec.load == "many" else _send_task
        counts = await asyncio.gather(
            *(
                task_body(
                    producer, spec, topic, spec.records_for_task(process_index, task), deadline_ns, samples, progress
                )
                for task in range(spec.producers)
            )
        )
        if producer.failed_records:
            raise RuntimeError(f"{producer.failed_records} records were not delivered")
        return ProducerReport(
            sum(counts),
            started_ns,
            time.monotonic_ns(),
            samples,
            producer.requests_sent,
            time.process_time_ns() - started_cpu_ns,
        )


def report_from_process(role: str, process_index: int, barrier: Any, results: Any, work: Any) -> None:
    """Run ``work`` (a coroutine) on this process's loop and put ``(role, index, report)`` on ``results``.

    Any failure aborts the barrier and is reported as ``("error", index, text)``: the parent must
    hear of every failure, or it would wait forever.
    """
    quiet_logging()
    try:
        report = run_loop(work)
    except Exception as error:  # noqa: BLE001 - the parent must hear of any failure, or it would wait forever
        barrier.abort()
        results.put(("error", process_index, f"{role} process {process_index}: {error!r}"))
        return
    results.put((role, process_index, report))


def produce_process(
    spec: WorkloadSpec, urls: list[str], topic: str, process_index: int, barrier: Any, progress: Any, results: Any
) -> None:
    report_from_process(
        "producer", process_index, barrier, results, _produce(spec, urls, topic, process_index, barrier, progress)
    )


def _collect(records: list, partition: int, seen_ns: int, samples: list[SeenSample]) -> int:
    value_bytes = 0
    for record in records:
        value = record.value
        value_bytes += len(value)
        if value[8] == 1:
            samples.append((partition, record.offset, STAMP.unpack_from(value)[0], seen_ns))
    return value_bytes


async def _consume(
    urls: list[str],
    topic: str,
    partitions: list[int],
    expected: Any,
    barrier: Any,
    progress: Any,
    sample: bool,
    security: ClientSecurity,
) -> ConsumerReport:
    """Read ``partitions`` from the start until the consumers together have ``expected`` records.

    Every record's value is read, as a real consumer would: records are decoded on first
    read, so a loop that touched only one record per batch would measure the fetch, not the library.
    """
    async with Consumer(
        urls,
        auto_offset_reset="earliest",
        max_poll_records=MAX_POLL_RECORDS,
        fetch_max_wait_ms=100,
        **security.client_options(),
    ) as consumer:
        consumer.assign([TopicPartition(topic, partition) for partition in partitions])
        barrier.wait()
        started_ns = last_data_ns = time.monotonic_ns()
        records = value_bytes = 0
        samples: list[SeenSample] = []
        while not 0 <= expected.value <= progress.value:
            batches = await consumer.getmany(timeout_ms=200)
            now_ns = time.monotonic_ns()
            if not batches and now_ns - last_data_ns > STALL_TIMEOUT_S * 1e9:
                raise RuntimeError(f"no record for {STALL_TIMEOUT_S} s after {progress.value} of {expected.value}")
            for tp, batch in batches.items():
                records += len(batch)
                value_bytes += (
                    _collect(batch, tp.partition, now_ns, samples)
                    if sample
                    else sum(len(record.value or b"") for record in batch)
                )
                _add(progress, len(batch))
                last_data_ns = now_ns
        return ConsumerReport(records, value_bytes, started_ns, last_data_ns, samples)


def consume_process(
    urls: list[str],
    topic: str,
    partitions: list[int],
    process_index: int,
    expected: Any,
    barrier: Any,
    progress: Any,
    results: Any,
    sample: bool,
    security: ClientSecurity,
) -> None:
    work = _consume(urls, topic, partitions, expected, barrier, progress, sample, security)
    report_from_process("consumer", process_index, barrier, results, work)

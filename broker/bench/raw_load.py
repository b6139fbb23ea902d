"""The ``raw`` produce load: pre-encoded record batches posted to the binary produce endpoint.

It measures the broker's capacity without the producer library's per-record cost. Each
process encodes one record batch of ``spec.batch_records`` records of
``spec.record_size_bytes`` once (non-idempotent: no producer id, no sequence; CreateTime;
base offset 0, which the leader replaces with the offsets it assigns) and posts the same
bytes over and over to ``POST …/partitions/<p>/batches`` (``ClusterClient.produce``, the
call the producer's sender makes). A batch names no partition, so one encoding serves
every partition: a copy per partition would be the same bytes (and 10 000 partitions of
1 000 records would cost a gigabyte for nothing).

A process opens ``spec.producers`` connections and runs one loop per connection. aiohttp
speaks HTTP/1.1 without pipelining, so a connection carries one request at a time and the
window of in-flight requests of a process is its connections. Loop ``g`` (numbered over
all processes) sends its ``k``-th request to partition ``(g + k · tasks) mod partitions``,
so the load covers the partitions evenly. With ``--count`` a loop sends its share of the
records (``spec.records_for_task``), the last request carrying the remainder; with
``--duration-s`` it sends full batches until the deadline. Every request is a latency
sample ``(partition, base_offset, send_ns, ack_ns)``.

There are no retries: an error answer (a leader moved, a full queue) fails the run, since a
capacity figure that quietly retried would hide it. Values carry the stamp flag 0 (not
sampled), so a consumer reading the topic later treats them as the producer load's
unsampled values. The report is the producer load's
``ProducerReport``, so the runner, the table and the JSON treat both loads alike.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from broker.bench.spec import STAMP, WorkloadSpec
from broker.bench.workloads import AckSample, ProducerReport, report_from_process
from broker.client.http import ClusterClient
from broker.client.types import TopicPartition
from broker.record.codec import RecordInput, encode_batch
from broker.record.compression import CODEC_NAMES

REQUEST_TIMEOUT_MS = 30_000


def raw_batch(record_size_bytes: int, records: int, compression: str = "none") -> bytes:
    """One record batch of ``records`` values of ``record_size_bytes``, ready to post to any partition."""
    value = STAMP.pack(0, 0) + b"v" * (record_size_bytes - STAMP.size)
    codec = {name: code for code, name in CODEC_NAMES.items()}[compression]
    return encode_batch([RecordInput(None, value)] * records, compression=codec)


class _Batches:
    """The full batch, encoded once, and the shorter last batches of ``--count`` shares, each encoded once."""

    def __init__(self, spec: WorkloadSpec) -> None:
        self.spec = spec
        self._encoded = {spec.batch_records: raw_batch(spec.record_size_bytes, spec.batch_records, spec.compression)}

    def of(self, records: int) -> bytes:
        if records not in self._encoded:
            self._encoded[records] = raw_batch(self.spec.record_size_bytes, records, self.spec.compression)
        return self._encoded[records]


async def _connection_loop(
    client: ClusterClient,
    spec: WorkloadSpec,
    topic: str,
    batches: _Batches,
    loop_index: int,
    records: int | None,
    deadline_ns: int,
    samples: list[AckSample],
    progress: Any,
) -> tuple[int, int]:
    """Post batches one after another on one connection; (records acknowledged, requests sent)."""
    rate = spec.rate_per_task()
    started_ns = time.monotonic_ns()
    acknowledged = requests = 0
    while acknowledged < records if records is not None else time.monotonic_ns() < deadline_ns:
        size = spec.batch_records if records is None else min(spec.batch_records, records - acknowledged)
        if rate:
            delay_ns = started_ns + acknowledged * 1e9 / rate - time.monotonic_ns()
            if delay_ns > 0:
                await asyncio.sleep(delay_ns / 1e9)
        tp = TopicPartition(topic, (loop_index + requests * spec.tasks) % spec.partitions)
        leader_url = client.metadata.leader_url(tp)
        if leader_url is None:
            raise RuntimeError(f"no leader known for partition {tp.partition} of {topic}")
        send_ns = time.monotonic_ns()
        ack = await client.produce(leader_url, tp, batches.of(size), spec.acks, REQUEST_TIMEOUT_MS)
        samples.append((tp.partition, ack.base_offset or 0, send_ns, time.monotonic_ns()))
        requests += 1
        acknowledged += size
        with progress.get_lock():
            progress.value += size
    return acknowledged, requests


async def _produce_raw(
    spec: WorkloadSpec, urls: list[str], topic: str, process_index: int, barrier: Any, progress: Any
) -> ProducerReport:
    batches = _Batches(spec)
    client = ClusterClient(urls, max_connections=spec.producers, **spec.security.client_options())
    try:
        await client.ensure_topic(topic)
        barrier.wait()
        started_ns = time.monotonic_ns()
        started_cpu_ns = time.process_time_ns()
        deadline_ns = started_ns + int((spec.duration_s or 0) * 1e9)
        samples: list[AckSample] = []
        loops = [
            _connection_loop(
                client,
                spec,
                topic,
                batches,
                process_index * spec.producers + task,
                spec.records_for_task(process_index, task),
                deadline_ns,
                samples,
                progress,
            )
            for task in range(spec.producers)
        ]
        counts = await asyncio.gather(*loops)
        return ProducerReport(
            sum(records for records, _ in counts),
            started_ns,
            time.monotonic_ns(),
            samples,
            sum(requests for _, requests in counts),
            time.process_time_ns() - started_cpu_ns,
        )
    finally:
        await client.close()


def raw_produce_process(
    spec: WorkloadSpec, urls: list[str], topic: str, process_index: int, barrier: Any, progress: Any, results: Any
) -> None:
    """The body of one raw load-generator process; the same contract as ``workloads.produce_process``."""
    work = _produce_raw(spec, urls, topic, process_index, barrier, progress)
    report_from_process("producer", process_index, barrier, results, work)

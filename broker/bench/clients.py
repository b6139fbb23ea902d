"""Producer and consumer throughput through the client libraries, against real brokers.

Run ``python -m broker.bench.clients`` to start a one-broker cluster in a temporary
directory (a real ``highwater serve`` process), or ``--server URL`` to measure a
running one. For each value size (100 B, 1 KiB) and acks (1, all) it sends
``--records`` records to a fresh topic through ``Producer`` (keys none, sticky
partitioning, default ``linger_ms``/``batch_size`` unless given) and reports
records/s and MB/s of values, then reads them all back with ``Consumer`` and reports
records/s. Figures depend on the machine and the disk; the broker's flush policy
(``fsync`` by default) dominates acks=all.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import structlog

from broker.acks import Acks
from broker.bench.cluster import spawned_cluster
from broker.client.admin import AdminClient
from broker.client.http import ClusterClient
from broker.client.types import TopicPartition
from consumer import Consumer
from producer import Producer

_MB = 1_000_000
VALUE_SIZES_BYTES = (100, 1024)
ACKS = (Acks.ONE, Acks.ALL)
SEND_WINDOW = 20_000
"""Records sent before awaiting the oldest ones' futures: bounds the memory of the benchmark itself."""


@dataclass(frozen=True, slots=True)
class Figure:
    scenario: str
    records: int
    value_bytes: int
    seconds: float

    def row(self) -> str:
        rate = self.records / self.seconds
        return f"{self.scenario:<34} {rate:>12,.0f} {rate * self.value_bytes / _MB:>9.1f}"


async def _produce(url: str, topic: str, records: int, value_bytes: int, acks: Acks, settings: dict) -> Figure:
    value = b"v" * value_bytes
    async with Producer(url, acks=acks.value, **settings) as producer:
        started = time.perf_counter()
        window = []
        for _ in range(records):
            window.append(await producer.send(topic, value))
            if len(window) >= SEND_WINDOW:
                await asyncio.gather(*window)
                window.clear()
        await producer.flush()
        await asyncio.gather(*window)
        elapsed = time.perf_counter() - started
    return Figure(f"produce {value_bytes} B acks={acks.value}", records, value_bytes, elapsed)


async def _consume(url: str, topic: str, partitions: int, records: int, value_bytes: int) -> Figure:
    async with Consumer(url, auto_offset_reset="earliest", max_poll_records=10_000) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        started = time.perf_counter()
        seen = 0
        while seen < records:
            batches = await consumer.getmany(timeout_ms=5000)
            if not batches:
                raise RuntimeError(f"consumer stalled after {seen} of {records} records")
            seen += sum(len(batch) for batch in batches.values())
        elapsed = time.perf_counter() - started
    return Figure(f"consume {value_bytes} B", records, value_bytes, elapsed)


async def run(url: str, records: int, partitions: int, settings: dict) -> list[Figure]:
    client = ClusterClient([url])
    admin = AdminClient(client)
    figures = []
    try:
        for value_bytes in VALUE_SIZES_BYTES:
            for acks in ACKS:
                topic = f"bench-{value_bytes}-{acks.value}-{uuid.uuid4().hex[:8]}"
                await admin.create_topic(topic, partitions)
                figures.append(await _produce(url, topic, records, value_bytes, acks, settings))
                print(figures[-1].row(), flush=True)
            figures.append(await _consume(url, topic, partitions, records, value_bytes))
            print(figures[-1].row(), flush=True)
    finally:
        await client.close()
    return figures


@contextlib.contextmanager
def _broker(server: str | None) -> Iterator[str]:
    """The URL of ``server``, or of a ``highwater serve`` process started for the run and stopped after."""
    if server:
        yield server.rstrip("/")
        return
    with spawned_cluster(1) as brokers:
        yield brokers[0].url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", help="URL of a running broker; default: start one")
    parser.add_argument("--records", type=int, default=200_000, help="records per scenario")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64 * 1024, help="producer batch_size in bytes")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    settings = {"linger_ms": args.linger_ms, "batch_size": args.batch_size}
    with _broker(args.server) as url:
        print(f"broker {url}, {args.records} records per scenario, {args.partitions} partitions, {settings}")
        print(f"{'scenario':<34} {'records/s':>12} {'MB/s':>9}")
        asyncio.run(run(url, args.records, args.partitions, settings))


if __name__ == "__main__":
    main()

"""Figures for both metadata stores: single-writer CAS throughput and how long after
a lease's expiry a watcher sees the delete event.

Run: ``.venv/bin/python -m tests.metastore.measure`` (starts its own etcd).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator
from pathlib import Path

import structlog

from broker.cluster.store import MetadataStore
from broker.cluster.store_url import open_store
from tests.support.etcd import EtcdServer

CAS_DURATION_S = 3.0
EXPIRY_SAMPLES = 5


async def cas_operations_per_second(store: MetadataStore) -> float:
    expected = 0
    operations = 0
    deadline = time.monotonic() + CAS_DURATION_S
    while time.monotonic() < deadline:
        revision = await store.put_if("/bench/counter", str(operations).encode(), expected)
        assert revision is not None, "a single writer's CAS failed"
        expected = revision
        operations += 1
    return operations / CAS_DURATION_S


async def expiry_detection_latency_ms(holder: MetadataStore, watcher: MetadataStore, ttl_ms: int) -> float:
    """Time from the lease's deadline (grant + granted ttl) to the delete event."""
    granted_at = time.monotonic()
    lease = await holder.grant(ttl_ms)
    revision = await holder.put("/bench/lease-key", b"x", lease=lease.id)
    events = watcher.watch("/bench/lease-key", revision + 1)
    event = await anext(events)
    seen_at = time.monotonic()
    assert isinstance(events, AsyncGenerator), "the stores' watches are async generators"
    await events.aclose()
    assert event.type == "delete"
    return (seen_at - (granted_at + lease.ttl_ms / 1000)) * 1000


async def measure(name: str, url: str, ttl_ms: int) -> None:
    holder, watcher = await open_store(url), await open_store(url)
    try:
        throughput = await cas_operations_per_second(holder)
        latencies = [await expiry_detection_latency_ms(holder, watcher, ttl_ms) for _ in range(EXPIRY_SAMPLES)]
    finally:
        await holder.close()
        await watcher.close()
    print(
        f"{name:6s} CAS single writer: {throughput:8.0f} ops/s | lease expiry seen "
        f"{statistics.median(latencies):6.0f} ms median, {max(latencies):6.0f} ms max after the deadline "
        f"(ttl {ttl_ms} ms, {EXPIRY_SAMPLES} samples)"
    )


async def main() -> None:
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
    with tempfile.TemporaryDirectory() as scratch:
        await measure("sqlite", f"sqlite://{Path(scratch) / 'meta.db'}", ttl_ms=300)
        with EtcdServer(Path(scratch) / "etcd") as server:
            await measure("etcd", server.url, ttl_ms=1000)


if __name__ == "__main__":
    asyncio.run(main())

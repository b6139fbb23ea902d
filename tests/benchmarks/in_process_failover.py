"""Controller failover and leadership move times of the in-process cluster
(three brokers on one sqlite file, then on a real etcd; session timeout 1000 ms,
heartbeat 200 ms).

* failover: from the controller's "SIGKILL" (tasks stopped, lease not revoked) until
  another broker's controller term is active (has reconciled once);
* leadership move: from a non-controller leader's "SIGKILL" until no partition
  record names it as leader or ISR member.

Run: ``.venv/bin/python -m tests.benchmarks.in_process_failover`` (starts its own etcd; logs go to stderr).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import structlog

from broker.topics.new_topic import NewTopic
from tests.cluster.harness import SESSION_TIMEOUT_MS, start_cluster
from tests.support.etcd import EtcdServer
from tests.support.waiting import wait_until_async

RUNS = 5


async def one_run(scratch: Path, url: str | None) -> tuple[float, float]:
    cluster = await start_cluster(scratch, [1, 2, 3], url=url)
    try:
        await cluster.brokers[1].controller.create_topic(
            NewTopic(name="measured", partitions_count=3, replication_factor=3)
        )
        killed_at = time.monotonic()
        await cluster.kill(1)
        await cluster.wait_for_controller(timeout_s=5.0)
        failover_ms = (time.monotonic() - killed_at) * 1000
        await cluster.wait_until_controller_sees({2, 3})
        victim = next(b for b in cluster.brokers.values() if not b.controller.is_active).broker_id
        killed_at = time.monotonic()
        await cluster.kill(victim)

        async def moved() -> bool:
            return all(r.leader != victim and victim not in r.isr for r in await cluster.partitions("measured"))

        await wait_until_async(moved, "leadership move", 5.0)
        return failover_ms, (time.monotonic() - killed_at) * 1000
    finally:
        await cluster.close()


async def measure(backend: str) -> None:
    failovers, moves = [], []
    for run in range(RUNS):
        with tempfile.TemporaryDirectory() as scratch:
            if backend == "etcd":
                with EtcdServer(Path(scratch) / "etcd") as server:
                    failover_ms, move_ms = await one_run(Path(scratch), server.url)
            else:
                failover_ms, move_ms = await one_run(Path(scratch), None)
        failovers.append(failover_ms)
        moves.append(move_ms)
        print(f"{backend} run {run + 1}: controller failover {failover_ms:.0f} ms, leadership move {move_ms:.0f} ms")
    print(
        f"{backend}, session timeout {SESSION_TIMEOUT_MS} ms, {RUNS} runs: "
        f"controller failover median {statistics.median(failovers):.0f} ms "
        f"(min {min(failovers):.0f}, max {max(failovers):.0f}); "
        f"leadership move median {statistics.median(moves):.0f} ms "
        f"(min {min(moves):.0f}, max {max(moves):.0f})"
    )


async def main() -> None:
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
    await measure("sqlite")
    await measure("etcd")


if __name__ == "__main__":
    asyncio.run(main())

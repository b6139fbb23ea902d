"""How fast a reassignment copies a partition to a new replica: a measurement, run by hand.

``python -m tests.benchmarks.move_rate [MB] [RATE]`` starts four brokers, fills a one-partition,
replication factor 2 topic on brokers 1 and 2 with ``MB`` megabytes of 1 KB random
records (acks=all), then moves it back and forth between broker 1 and broker 4 (the
replica that leaves deletes its log, so each move copies the whole log to an empty
replica), and prints each move's rate: log bytes over the time from the request until
the partition's replicas and ISR are the target, polled every 20 ms. The cluster is
otherwise idle. With ``RATE`` (bytes/s) both replication throttle rates are set on the
brokers the moves involve, as ``partitions reassign --throttle`` does, and each move's
rate is also printed against it (the throttle's accuracy); without, the moves are
unthrottled.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from producer import Producer
from tests.support.cluster import Cluster, ClusterSpec, start_cluster

TOPIC = "moving"
RECORD_BYTES = 1000
MOVES = 4
POLL_S = 0.02


async def _fill(url: str, megabytes: int) -> None:
    value = os.urandom(RECORD_BYTES)
    async with Producer(url, acks="all", linger_ms=5, batch_size=1_000_000) as producer:
        futures = [await producer.send(TOPIC, value) for _ in range(megabytes * 1_000_000 // RECORD_BYTES)]
        await asyncio.gather(*futures)


def _move_s(cluster: Cluster, target: list[int]) -> float:
    body = {"data": [{"topic_name": TOPIC, "partition_id": 0, "replicas": target}]}
    started = time.monotonic()
    status, answer = cluster.v3("POST", "/topics/-/partitions/-/reassignment:alter", body, via=2)
    assert status == 202, answer
    while True:
        state = cluster.partitions(TOPIC, via=2)[0]
        if state.replicas == target and sorted(state.isr) == sorted(target):
            return time.monotonic() - started
        time.sleep(POLL_S)


def _throttle(cluster: Cluster, rate: int) -> None:
    for broker_id in (1, 2, 4):
        for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
            status, answer = cluster.v3("PUT", f"/brokers/{broker_id}/configs/{name}", {"value": str(rate)}, via=2)
            assert status == 204, answer


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    throttle = int(sys.argv[2]) if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory(prefix="move-rate-") as root:
        cluster = start_cluster(ClusterSpec(brokers=4), Path(root))
        try:
            status, answer = cluster.v3("POST", "/topics", {"topic_name": TOPIC, "replicas_assignments": {"0": [1, 2]}})
            assert status == 201, answer
            cluster.wait_for_topic(TOPIC, 1)
            asyncio.run(_fill(cluster.url(2), megabytes))
            log_bytes = sum(f.stat().st_size for f in Path(cluster.brokers[2].data_dir).glob(f"{TOPIC}-0/*.log"))
            if throttle is not None:
                _throttle(cluster, throttle)
            rates = []
            for move in range(MOVES):
                seconds = _move_s(cluster, [4, 2] if move % 2 == 0 else [1, 2])
                rates.append(log_bytes / 1e6 / seconds)
                against = f", {rates[-1] * 1e6 / throttle - 1:+.1%} of the throttle" if throttle else ""
                print(f"move {move + 1}: {log_bytes / 1e6:.1f} MB in {seconds:.2f} s, {rates[-1]:.2f} MB/s{against}")
        finally:
            cluster.shutdown()
    what = f"throttled to {throttle / 1e6:.2f} MB/s" if throttle else "unthrottled"
    print(f"\n{what}: median move rate {statistics.median(rates):.2f} MB/s over {MOVES} moves")


if __name__ == "__main__":
    main()

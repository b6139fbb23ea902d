"""CPU of an idle 3-broker cluster (one 3-partition topic, RF 3), as the suite keeps several up at once.

``python -m tests.benchmarks.idle_cluster_cpu [seconds]`` prints one ``FIGURE`` line per
store: the brokers' user + system CPU over ``seconds`` of doing nothing, as a share of
one core. It is the floor every broker-based test pays while it runs, and what a
developer's ``make run`` costs while no one uses it.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from broker.bench.cpu import cpu_seconds
from tests.support.cluster import ClusterSpec, start_cluster

SETTLE_S = 3.0


def idle_share(spec: ClusterSpec, seconds: float) -> float:
    cluster = start_cluster(spec, Path(tempfile.mkdtemp()))
    try:
        cluster.create_topic("idle", 3, 3)
        time.sleep(SETTLE_S)
        pids = [broker.process.pid for broker in cluster.brokers.values() if broker.process is not None]
        before = sum(map(cpu_seconds, pids))
        time.sleep(seconds)
        return (sum(map(cpu_seconds, pids)) - before) / seconds
    finally:
        cluster.shutdown()


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    for store in ("sqlite", "etcd"):
        share = idle_share(ClusterSpec(store=store), seconds)
        print(f"FIGURE idle_cluster_cpu store={store} brokers=3 seconds={seconds:g} core_share={share:.3f}")


if __name__ == "__main__":
    main()

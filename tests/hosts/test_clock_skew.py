"""Hosts whose clocks disagree: broker 2 an hour behind, broker 3 two hours ahead (libfaketime).

Nothing that keeps the cluster together reads the time of day: etcd expires leases on
its own leader's clock, a broker renews its lease and times its waits on the monotonic
clock, and a leader judges its followers' lag on its own clock alone. So under acks=all
load, with the two skewed brokers restarted into their skew one at a time, a failover of
the one true-clocked broker's partitions onto them goes as anywhere: the survivors keep
their leases, new leaders come within the session, the checker finds nothing lost.

What does follow the skew is what a broker stamps: a record produced without a timestamp
carries the time of the broker that took the request, as in Kafka. docs/operations.md
says the rest (time-based retention is judged on each broker's own clock, as in Kafka,
so hosts keep their clocks in sync).
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import urllib.request
from datetime import datetime

from tests.chaos.checker import summary_table
from tests.hosts.checked_load import CheckedLoad, wait_for_partitions, wait_in_sync
from tests.hosts.deployment import TOPIC_PARTITIONS, HostsDeployment

SKEWS = {2: ("-1h", -3600.0), 3: ("+2h", 7200.0)}
TRUE_CLOCK = 1
WAIT_S = 40.0
STOP_TIMEOUT_S = 40.0
TOLERANCE_S = 300.0


def _stamped_at(deployment: HostsDeployment, node_id: int, topic: str) -> float:
    """The timestamp broker ``node_id`` gives a record produced through it without one (epoch seconds)."""
    cluster = deployment.cluster(node_id)
    assert cluster is not None, f"broker {node_id} does not answer"
    request = urllib.request.Request(
        f"{deployment.url(node_id)}/v3/clusters/{cluster['cluster_id']}/topics/{topic}/records",
        data=json.dumps({"partition_id": 0, "value": {"type": "JSON", "data": "stamp"}}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    report = json.loads(urllib.request.urlopen(request, timeout=10).read())
    return datetime.fromisoformat(report["timestamp"]).timestamp()


async def _restart(deployment: HostsDeployment, node_id: int, clock_offset: str | None) -> None:
    process = deployment.brokers[node_id]
    process.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(process.wait, STOP_TIMEOUT_S) == 0, deployment.log_tail(node_id)
    deployment.start_broker(node_id, clock_offset)


async def test_brokers_hours_apart_in_time_of_day_fail_over_and_keep_every_acknowledged_write(
    deployment: HostsDeployment,
) -> None:
    topic, stamps = "skew", "skew-stamps"
    await deployment.create_topic(topic)
    await deployment.create_topic(stamps)
    await wait_in_sync(deployment, TRUE_CLOCK, topic)
    for node_id, (offset, _) in SKEWS.items():
        await _restart(deployment, node_id, offset)
        await wait_in_sync(deployment, TRUE_CLOCK, topic, "in sync again")
    for node_id, (_, offset_s) in SKEWS.items():
        skew_s = await asyncio.to_thread(_stamped_at, deployment, node_id, stamps) - time.time()
        assert abs(skew_s - offset_s) < TOLERANCE_S, f"broker {node_id} stamps {skew_s:+.0f} s off, not {offset_s:+.0f}"
    epochs = await deployment.broker_epochs(list(SKEWS))
    load = CheckedLoad(deployment, topic, TOPIC_PARTITIONS, via=2).start()
    try:
        # Not a wait for a condition: the workload's history before the failover.
        await asyncio.sleep(1.0)
        killed = deployment.brokers[TRUE_CLOCK]
        killed.send_signal(signal.SIGKILL)
        await asyncio.to_thread(killed.wait, 10)
        killed_at = time.monotonic()
        await asyncio.to_thread(
            wait_for_partitions,
            deployment,
            2,
            topic,
            lambda s: s.leader_id in SKEWS and TRUE_CLOCK not in s.isr,
            "led by a skewed broker",
            WAIT_S,
        )
        failover_s = time.monotonic() - killed_at
        deployment.start_broker(TRUE_CLOCK)
        await wait_in_sync(deployment, 2, topic, "in sync again")
    except BaseException:
        await load.stop()
        raise
    report = await load.finish()
    print(f"brokers 2 (-1 h) and 3 (+2 h): broker 1's partitions led by them {failover_s:.2f} s after its kill")
    print(summary_table([report]))
    assert await deployment.broker_epochs(list(SKEWS)) == epochs, "a skewed broker lost its lease"
    assert report.ok, report.violations

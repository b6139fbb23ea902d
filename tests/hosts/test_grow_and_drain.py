"""A broker added on a new host takes over the replicas of a broker drained for retirement,
under acks=all load.

Broker 4 starts on the spare host and registers; draining broker 1 moves each of its
replicas to the one broker that has none of the partition (broker 4) through the
reassignment of the previous issue: the new replica copies the log as a follower
outside the ISR, joins it once caught up, and broker 1 leaves the replica set. Broker 1
then holds nothing, and stopping it costs no partition anything. The chaos checker finds
nothing lost. Figure: the time to move every replica.
"""

from __future__ import annotations

import asyncio
import signal
import time

from broker.client.admin import AdminClient
from broker.client.http import ClusterClient
from tests.chaos.checker import summary_table
from tests.hosts.checked_load import start_checked_load, wait_for_partitions
from tests.hosts.deployment import HOSTS, HostsDeployment

WAIT_S = 60.0
STOP_TIMEOUT_S = 40.0
RETIRED = 1
ASKED = 2


async def _drain(deployment: HostsDeployment, broker_id: int) -> None:
    client = ClusterClient(deployment.urls)
    try:
        await AdminClient(client).drain_broker(broker_id)
    finally:
        await client.close()


async def test_a_broker_on_a_new_host_takes_over_a_drained_brokers_replicas_under_load(
    deployment: HostsDeployment,
) -> None:
    topic = "grow"
    added = HOSTS + 1
    remaining = {2, 3, added}
    load = await start_checked_load(deployment, topic, via=ASKED)
    try:
        # Not a wait for a condition: the workload's history before the cluster grows.
        await asyncio.sleep(1.0)
        deployment.start_broker(added)
        everyone = {1, 2, 3, added}
        await asyncio.to_thread(deployment.wait_for_brokers, everyone, everyone)
        started = time.monotonic()
        await _drain(deployment, RETIRED)
        await asyncio.to_thread(
            wait_for_partitions,
            deployment,
            ASKED,
            topic,
            lambda s: set(s.replica_leos) == remaining and set(s.isr) == remaining,
            f"on brokers {sorted(remaining)} only, all in sync",
            WAIT_S,
        )
        moved_s = time.monotonic() - started
        retired = deployment.brokers[RETIRED]
        retired.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(retired.wait, STOP_TIMEOUT_S) == 0, deployment.log_tail(RETIRED)
    except BaseException:
        await load.stop()
        raise
    report = await load.finish()
    racks = deployment.v3(ASKED, "/brokers")
    assert racks is not None
    assert {int(row["broker_id"]): row["rack"] for row in racks} == {2: "host-2", 3: "host-3", added: f"host-{added}"}
    print(f"broker {RETIRED} drained onto broker {added} (a new host): every replica moved in {moved_s:.2f} s")
    print(summary_table([report]))
    assert report.ok, report.violations

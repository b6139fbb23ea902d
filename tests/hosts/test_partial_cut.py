"""Two hosts cut from each other only: the controller's host and another, both still reaching
the third host and the client.

Liveness is the etcd lease, and etcd keeps its quorum (each member still reaches the third),
so no broker is taken for dead and no leadership moves. What cannot cross the cut is
replication between the two: a leader on one side stops hearing the follower on the
other, and after ``replica_lag_time_max_ms`` drops it from its ISR itself (a leader writes
its ISR changes to the store, not through the controller), so every partition takes
acks=all writes again. Once the cut heals, every ISR fills up again.

Figure: the longest time a partition went without an acknowledged write (about the lag
time: Kafka waits for a follower the same way).
"""

from __future__ import annotations

import asyncio
import time

from tests.chaos.checker import summary_table
from tests.hosts.checked_load import (
    CheckedLoad,
    acked_per_partition,
    longest_write_gap_s,
    wait_for_partitions,
    wait_in_sync,
)
from tests.hosts.deployment import HOSTS, TOPIC_PARTITIONS, HostsDeployment

WAIT_S = 40.0
LAG_TIME_S = 10.0
"""``replica_lag_time_max_ms``, the default: how long a leader waits for a follower it no longer hears."""


async def test_a_host_cut_from_the_controllers_host_only_leaves_every_partition_writable(
    deployment: HostsDeployment,
) -> None:
    topic = "partial"
    await deployment.create_topic(topic)
    states = await wait_in_sync(deployment, 1, topic)
    leaders = [state.leader_id for state in states]
    controller = deployment.controller_id(1)
    assert controller is not None
    other = min(index for index in range(1, HOSTS + 1) if index != controller)
    third = ({1, 2, 3} - {controller, other}).pop()
    epochs = await deployment.broker_epochs([1, 2, 3])
    load = CheckedLoad(deployment, topic, TOPIC_PARTITIONS, via=third).start()
    try:
        # Not a wait for a condition: the workload's history before the cut.
        await asyncio.sleep(1.0)
        cut_at = time.monotonic()
        deployment.host(controller).block(deployment.host(other).address)
        deployment.host(other).block(deployment.host(controller).address)
        await asyncio.to_thread(
            wait_for_partitions,
            deployment,
            third,
            topic,
            lambda s: not {controller, other} <= set(s.isr) or s.leader_id == third,
            f"without brokers {controller} and {other} together in an ISR they cannot share",
            WAIT_S,
        )
        shrunk_s = time.monotonic() - cut_at
        # Not a wait for a condition: writes after the shrinks, to count.
        await asyncio.sleep(2.0)
        acked = acked_per_partition(load.history, topic, TOPIC_PARTITIONS, cut_at + shrunk_s)
        after = await asyncio.to_thread(wait_for_partitions, deployment, third, topic, lambda s: True, "read", WAIT_S)
        deployment.host(controller).reconnect()
        deployment.host(other).reconnect()
        healed_at = time.monotonic()
        await wait_in_sync(deployment, third, topic, "in sync again")
        healed_s = time.monotonic() - healed_at
    except BaseException:
        await load.stop()
        raise
    report = await load.finish()
    gap_s = longest_write_gap_s(load.history, topic, TOPIC_PARTITIONS)
    print(
        f"brokers {controller} (controller) and {other} cut from each other: ISRs shrunk after {shrunk_s:.2f} s, "
        f"longest gap between acknowledged writes {gap_s:.2f} s; every ISR full {healed_s:.2f} s after the heal"
    )
    print(summary_table([report]))
    assert min(acked.values()) > 0, f"acknowledged writes per partition once the ISRs shrank: {acked}"
    assert [state.leader_id for state in after] == leaders, "a leadership moved, though every broker was alive"
    assert await deployment.broker_epochs([1, 2, 3]) == epochs, "a broker lost its lease over a cut etcd survives"
    assert shrunk_s < LAG_TIME_S + 10, f"the ISRs took {shrunk_s:.1f} s to shrink, the lag time is {LAG_TIME_S} s"
    assert report.ok, report.violations

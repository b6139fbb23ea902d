"""etcd losing members under acks=all load, and what highwater promises then.

- **One member lost**: nothing changes for clients, and a broker killed meanwhile has its
  partitions led elsewhere as ever (two members are a quorum).
- **Quorum lost** (two of three members down): no metadata can be written, so no ISR
  changes and no elections happen. Current leaders keep taking acks=all writes while their
  ISRs are intact: replication and the high watermark never go through etcd. No broker
  loses its registration over it: etcd expires no lease without a raft leader, and
  extends every lease when it elects one, so brokers are not taken for dead once the
  quorum returns. A write that would need a metadata change (a follower to drop from an
  ISR) waits and times out as "outcome unknown" instead.
- **Quorum back**: elections resume; a broker killed then has its partitions led
  elsewhere within its session.

The chaos checker judges the whole run: nothing acknowledged lost, nothing read taken back.
"""

from __future__ import annotations

import asyncio
import signal
import time

from tests.chaos.checker import summary_table
from tests.hosts.checked_load import acked_per_partition, start_checked_load, wait_for_partitions, wait_in_sync
from tests.hosts.deployment import TOPIC_PARTITIONS, HostsDeployment

WAIT_S = 40.0
SESSION_S = 6.0
"""The brokers' session timeout (the default): a lease etcd could expire would be gone by then."""
QUORUM_LOST_S = 10.0


async def _kill_broker(deployment: HostsDeployment, node_id: int) -> None:
    process = deployment.brokers[node_id]
    process.send_signal(signal.SIGKILL)
    await asyncio.to_thread(process.wait, 10)


async def _led_without(deployment: HostsDeployment, via: int, topic: str, node_id: int) -> float:
    """Seconds until every partition is led by another broker, with ``node_id`` out of its ISR."""
    started = time.monotonic()
    await asyncio.to_thread(
        wait_for_partitions,
        deployment,
        via,
        topic,
        lambda s: s.leader_id not in (None, node_id) and node_id not in s.isr,
        f"led without broker {node_id}",
        WAIT_S,
    )
    return time.monotonic() - started


async def _back_in_sync(deployment: HostsDeployment, node_id: int, via: int, topic: str) -> None:
    deployment.start_broker(node_id)
    await wait_in_sync(deployment, via, topic, "in sync again")


async def test_acks_all_writes_go_on_without_an_etcd_quorum_and_elections_resume_when_it_returns(
    deployment: HostsDeployment,
) -> None:
    topic = "quorum"
    load = await start_checked_load(deployment, topic, via=1)
    try:
        # Not a wait for a condition: the workload's history before the first fault.
        await asyncio.sleep(1.0)
        deployment.kill_etcd_member(3)
        await _kill_broker(deployment, 3)
        one_member_lost_s = await _led_without(deployment, 1, topic, 3)
        await _back_in_sync(deployment, 3, 1, topic)
        deployment.start_etcd_member(3)
        deployment.wait_for_etcd_member(deployment.host(3))

        epochs = await deployment.broker_epochs([1, 2, 3])
        leaders = [s.leader_id for s in wait_for_partitions(deployment, 1, topic, lambda s: True, "described", WAIT_S)]
        deployment.kill_etcd_member(2)
        deployment.kill_etcd_member(3)
        lost_at = time.monotonic()
        # Not a wait for a condition: the time without a quorum, longer than a session.
        await asyncio.sleep(QUORUM_LOST_S)
        acked = acked_per_partition(load.history, topic, TOPIC_PARTITIONS, lost_at + SESSION_S, time.monotonic())
        still = [s.leader_id for s in wait_for_partitions(deployment, 1, topic, lambda s: True, "described", WAIT_S)]
        deployment.start_etcd_member(2)
        deployment.start_etcd_member(3)
        for index in (1, 2, 3):
            deployment.wait_for_etcd_member(deployment.host(index))
        assert min(acked.values()) > 0, f"acknowledged writes per partition after a session without quorum: {acked}"
        assert still == leaders, "leadership moved without a quorum"
        assert await deployment.broker_epochs([1, 2, 3]) == epochs, "a broker lost its registration to the outage"

        await _kill_broker(deployment, 2)
        quorum_back_s = await _led_without(deployment, 1, topic, 2)
        await _back_in_sync(deployment, 2, 1, topic)
    except BaseException:
        await load.stop()
        raise
    report = await load.finish()
    print(
        f"etcd: one member lost, a broker killed: new leaders after {one_member_lost_s:.2f} s; "
        f"{QUORUM_LOST_S:.0f} s without quorum: acknowledged per partition after the first session {acked}; "
        f"quorum back, a broker killed: new leaders after {quorum_back_s:.2f} s"
    )
    print(summary_table([report]))
    assert report.ok, report.violations

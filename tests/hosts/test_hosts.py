"""The host tier, short: highwater on three hosts (network namespaces), one etcd member and
one broker on each, reached by the test process as a client host of its own.

- a topic replicated across the hosts takes acks=all writes, and a reader bootstrapped from
  any host's broker reads every one back; the brokers list their hosts as racks;
- a host cut off from everyone (its broker and its etcd member) under acks=all load: the
  others elect new leaders and keep their leases (etcd's quorum is on their side; a
  keep-alive sent to host 1's member moves on to another member in time), and the cut
  broker registers again and rejoins every ISR once its cable is back; the chaos checker
  finds nothing acknowledged lost and nothing read taken back;
- a rolling restart of every broker under acks=all load loses nothing (figure: the longest
  time a partition went without an acknowledged write);
- a broker stopped while its host is cut off exits cleanly within its bounds.
"""

from __future__ import annotations

import asyncio
import signal
import time

from tests.chaos.checker import summary_table
from tests.hosts.checked_load import longest_write_gap_s, start_checked_load, wait_for_partitions, wait_in_sync
from tests.hosts.clients import produce_all, read_back
from tests.hosts.deployment import HOSTS, TOPIC_PARTITIONS, HostsDeployment

STOP_TIMEOUT_S = 40.0
"""The controlled shutdown's 15 s and one 6 s session for the deregistration, with room to spare."""
WAIT_S = 40.0
"""For leadership to move (once a cut broker's lease, 6 s, runs out) or every ISR to be full again."""


async def test_acks_all_writes_to_a_topic_across_three_hosts_are_read_back_from_any_host(
    deployment: HostsDeployment,
) -> None:
    await deployment.create_topic("spread")
    values = [f"v{i}".encode() for i in range(300)]
    await produce_all(deployment.urls, "spread", values)
    for node_id in range(1, HOSTS + 1):
        seen = await read_back([deployment.url(node_id)], "spread", len(values))
        assert sorted(seen) == sorted(values), f"broker {node_id} served {len(seen)} of {len(values)}"
    brokers = deployment.v3(1, "/brokers")
    assert brokers is not None
    assert {int(row["broker_id"]): row["rack"] for row in brokers} == {
        1: "host-1",
        2: "host-2",
        3: "host-3",
    }


async def test_a_host_cut_off_loses_its_leaderships_and_rejoins_every_isr_once_reconnected(
    deployment: HostsDeployment,
) -> None:
    topic = "cut"
    load = await start_checked_load(deployment, topic, via=2)
    cut = deployment.host(1)
    survivors_before = await deployment.broker_epochs([2, 3])
    try:
        # Not a wait for a condition: the workload's history before the cut.
        await asyncio.sleep(1.0)
        cut_at = time.monotonic()
        cut.cut()
        await asyncio.to_thread(
            wait_for_partitions,
            deployment,
            2,
            topic,
            lambda s: s.leader_id in (2, 3) and 1 not in s.isr,
            "led by a broker on another host, without broker 1 in its ISR",
            WAIT_S,
        )
        new_leaders_s = time.monotonic() - cut_at
        reconnected_at = time.monotonic()
        cut.reconnect()
        await wait_in_sync(deployment, 2, topic, "in sync again")
        rejoined_s = time.monotonic() - reconnected_at
        await asyncio.to_thread(deployment.wait_for_brokers, {1, 2, 3}, {1, 2, 3})
        assert await deployment.broker_epochs([2, 3]) == survivors_before, (
            "a broker on another host lost its lease while host 1 (and its etcd member) was cut off"
        )
    except BaseException:
        await load.stop()
        raise
    finally:
        cut.reconnect()
    report = await load.finish()
    print(f"host 1 cut: new leaders after {new_leaders_s:.2f} s; every ISR full {rejoined_s:.2f} s after the return")
    print(summary_table([report]))
    assert report.counts["acked"] > 0, "the workload wrote nothing"
    assert report.ok, report.violations


async def test_a_rolling_restart_under_acks_all_load_loses_nothing(deployment: HostsDeployment) -> None:
    """Each broker in turn: SIGTERM (its controlled shutdown moves its leaderships), started
    again on its data, and every ISR full before the next. The figure is the longest time
    any partition went without an acknowledged write."""
    topic = "rolling"
    load = await start_checked_load(deployment, topic, via=2)
    started = time.monotonic()
    try:
        # Not a wait for a condition: the workload's history before the first restart.
        await asyncio.sleep(1.0)
        for node_id in range(1, HOSTS + 1):
            process = deployment.brokers[node_id]
            process.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(process.wait, STOP_TIMEOUT_S) == 0, deployment.log_tail(node_id)
            deployment.start_broker(node_id)
            asker = node_id % HOSTS + 1
            await wait_in_sync(deployment, asker, topic, "in sync again")
    except BaseException:
        await load.stop()
        raise
    restart_s = time.monotonic() - started
    report = await load.finish()
    gap_s = longest_write_gap_s(load.history, topic, TOPIC_PARTITIONS)
    print(f"rolling restart of 3 brokers in {restart_s:.1f} s; longest gap between acknowledged writes {gap_s:.2f} s")
    print(summary_table([report]))
    assert report.counts["acked"] > 0, "the workload wrote nothing"
    assert report.ok, report.violations


def test_a_broker_stopped_while_its_host_is_cut_off_exits_cleanly(deployment: HostsDeployment) -> None:
    """SIGTERM to a broker that reaches neither its peers nor a quorum of etcd: its controlled
    shutdown and its deregistration each give up after their bounds (15 s, one 6 s session),
    and it exits 0 without a traceback instead of retrying until the link returns."""
    broker = deployment.brokers[1]
    deployment.host(1).cut()
    stopped_at = time.monotonic()
    broker.send_signal(signal.SIGTERM)
    returncode = broker.wait(STOP_TIMEOUT_S)
    took_s = time.monotonic() - stopped_at
    log = deployment.log_tail(1, lines=400)
    print(f"broker 1 stopped while cut off: exited {returncode} after {took_s:.1f} s")
    assert returncode == 0, log
    assert "Traceback" not in log
    assert "broker.stopped" in log

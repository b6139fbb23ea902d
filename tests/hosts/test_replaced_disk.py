"""A host rebuilt with an empty disk: its broker copies every partition back from the leaders.

Broker 3 is killed and its data directory deleted, as when a host's disk is replaced, and
it starts again at once. Its old registration (another data directory's) holds its id
until that lease expires, so it registers with a new broker epoch; the controller has
dropped it from every ISR by then, so it starts as a follower with nothing, fetches each
partition from the log start, and joins an ISR only once caught up. Until then it leads
nothing: a leader without the data would serve an empty log.

Checked: broker 3 leads no partition before it is back in that partition's ISR; its copy
of a 30 MB topic is byte for byte the leader's; and the chaos checker finds nothing lost
on a topic under acks=all load throughout. Figure: the copy rate, MB/s.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import time
from datetime import datetime

from tests.chaos.checker import summary_table
from tests.chaos.cluster import PartitionState
from tests.hosts.checked_load import CheckedLoad, partition_states, replica_bytes, wait_for_partitions, wait_in_sync
from tests.hosts.clients import produce_all
from tests.hosts.deployment import TOPIC_PARTITIONS, HostsDeployment

FILL_TOPIC = "disk-fill"
FILL_RECORDS = 3000
FILL_RECORD_BYTES = 10_000
WAIT_S = 60.0
REBUILT = 3
ASKED = 1


async def _fill(deployment: HostsDeployment) -> None:
    values = [index.to_bytes(4, "big") * (FILL_RECORD_BYTES // 4) for index in range(FILL_RECORDS)]
    await produce_all(deployment.urls, FILL_TOPIC, values, linger_ms=5)


def _events(deployment: HostsDeployment, node_id: int, event: str) -> list[dict]:
    """Broker ``node_id``'s log lines for ``event`` about the fill topic, as parsed JSON."""
    lines = (deployment.root / f"host-{node_id}" / "broker.log").read_text().splitlines()
    parsed = [json.loads(line) for line in lines if line.startswith("{")]
    return [entry for entry in parsed if entry.get("event") == event and entry.get("topic") == FILL_TOPIC]


def _at(entry: dict) -> float:
    return datetime.fromisoformat(entry["timestamp"]).timestamp()


def _copy_seconds(deployment: HostsDeployment, restarted_at: float) -> float:
    """From the rebuilt broker following the fill topic's partitions (after its restart) to the
    last of them taking it back into its ISR, by the brokers' own log timestamps."""
    followed = [_at(e) for e in _events(deployment, REBUILT, "partition.became_follower") if _at(e) > restarted_at]
    joined = [
        _at(entry)
        for node_id in deployment.brokers
        for entry in _events(deployment, node_id, "isr_change_committed")
        if REBUILT in entry["isr"] and _at(entry) > restarted_at
    ]
    return max(joined) - min(followed)


def _leaders_without_data(deployment: HostsDeployment) -> set[int]:
    """Until broker ``REBUILT`` is in every ISR of the fill topic: the partitions it was
    seen leading while out of their ISR."""
    led_without_data: set[int] = set()
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        states: list[PartitionState] = partition_states(deployment, ASKED, FILL_TOPIC) or []
        led_without_data |= {p for p, s in enumerate(states) if s.leader_id == REBUILT and REBUILT not in s.isr}
        if states and all(REBUILT in s.isr for s in states):
            return led_without_data
        time.sleep(0.05)
    raise AssertionError(f"broker {REBUILT} not back in every ISR of {FILL_TOPIC} within {WAIT_S} s")


async def test_a_broker_whose_disk_was_replaced_copies_everything_back_and_leads_nothing_meanwhile(
    deployment: HostsDeployment,
) -> None:
    await deployment.create_topic(FILL_TOPIC)
    await deployment.create_topic("disk")
    for topic in (FILL_TOPIC, "disk"):
        await wait_in_sync(deployment, ASKED, topic)
    await _fill(deployment)
    load = CheckedLoad(deployment, "disk", TOPIC_PARTITIONS, via=ASKED).start()
    try:
        # Not a wait for a condition: the workload's history before the fault.
        await asyncio.sleep(1.0)
        process = deployment.brokers[REBUILT]
        process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(process.wait, 10)
        shutil.rmtree(deployment.data_dir(REBUILT))
        restarted_at = time.time()
        deployment.start_broker(REBUILT)
        led_without_data = await asyncio.to_thread(_leaders_without_data, deployment)
        await wait_in_sync(deployment, ASKED, "disk", "in sync again")
    except BaseException:
        await load.stop()
        raise
    report = await load.finish()
    settled = await asyncio.to_thread(
        wait_for_partitions, deployment, ASKED, FILL_TOPIC, lambda s: s.settled, "settled", WAIT_S
    )
    copied = 0
    for partition, state in enumerate(settled):
        assert state.high_watermark == FILL_RECORDS // TOPIC_PARTITIONS
        leader = replica_bytes(deployment, ASKED, FILL_TOPIC, partition, state.high_watermark)
        rebuilt = replica_bytes(deployment, REBUILT, FILL_TOPIC, partition, state.high_watermark)
        assert rebuilt == leader, f"partition {partition}: the rebuilt copy differs from broker {ASKED}'s"
        copied += len(rebuilt)
    copy_s = _copy_seconds(deployment, restarted_at)
    print(f"disk replaced: {copied / 1e6:.1f} MB copied back in {copy_s:.2f} s ({copied / 1e6 / copy_s:.0f} MB/s)")
    print(summary_table([report]))
    assert not led_without_data, f"broker {REBUILT} led partitions {sorted(led_without_data)} before it held them"
    assert report.ok, report.violations

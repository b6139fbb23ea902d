"""The chaos tier's acks=all workload against a host deployment, and the checker's verdict.

``CheckedLoad`` runs an idempotent producer, a single-request writer (never retried, so a
refusal is a definite failure) and a reader on one topic while a scenario acts; ``finish``
stops the writers, waits until every partition is settled (every replica at the HW), reads
the topic and each replica's segment files below the HW, and judges them all
(``tests.chaos.checker``: nothing acknowledged lost, nothing read taken back, no divergence).
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Callable

from broker.storage.log_manager import partition_directory_name
from tests.chaos.checker import CheckReport, check_topic
from tests.chaos.cluster import PartitionState, batches_below, partition_state
from tests.chaos.history import OK, UNKNOWN, History
from tests.chaos.workload import ProducerWriter, Reader, SingleRequestWriter, read_final_log
from tests.hosts.deployment import POLL_S, REPLICAS, TOPIC_PARTITIONS, HostsDeployment
from tests.support.waiting import wait_until

SETTLE_TIMEOUT_S = 40.0
SYNC_TIMEOUT_S = 40.0


def partition_states(deployment: HostsDeployment, via: int, topic: str) -> list[PartitionState] | None:
    rows = deployment.v3(via, f"/topics/{topic}/partitions")
    return None if rows is None else [partition_state(row) for row in rows]


def wait_for_partitions(
    deployment: HostsDeployment,
    via: int,
    topic: str,
    holds: Callable[[PartitionState], bool],
    what: str,
    timeout_s: float,
) -> list[PartitionState]:
    """Until broker ``via`` describes every partition of ``topic`` as ``holds`` says."""

    def reached() -> list[PartitionState] | None:
        states = partition_states(deployment, via, topic)
        return states if states and all(holds(state) for state in states) else None

    return wait_until(reached, f"every partition of {topic} {what} (asked broker {via})", timeout_s, POLL_S)


def in_sync(state: PartitionState) -> bool:
    """Every replica of the partition in its ISR."""
    return len(state.isr) == REPLICAS


async def wait_in_sync(
    deployment: HostsDeployment, via: int, topic: str, what: str = "in sync", timeout_s: float = SYNC_TIMEOUT_S
) -> list[PartitionState]:
    """Until broker ``via`` describes every partition of ``topic`` with every replica in its ISR."""
    return await asyncio.to_thread(wait_for_partitions, deployment, via, topic, in_sync, what, timeout_s)


def replica_bytes(deployment: HostsDeployment, node_id: int, topic: str, partition: int, high_watermark: int) -> bytes:
    """The batches below ``high_watermark`` in broker ``node_id``'s segment files, read while it runs (settled)."""
    directory = deployment.data_dir(node_id) / partition_directory_name(topic, partition)
    return batches_below(b"".join(path.read_bytes() for path in sorted(directory.glob("*.log"))), high_watermark)


def acked_per_partition(
    history: History, topic: str, partitions: int, since_s: float, until_s: float = math.inf
) -> dict[int, int]:
    """Acknowledged writes per partition whose acknowledgement came between ``since_s`` and ``until_s``."""
    counts = dict.fromkeys(range(partitions), 0)
    for op in history.writes:
        if op.topic == topic and op.outcome == OK and op.completed_s is not None and since_s < op.completed_s < until_s:
            counts[op.partition] += 1
    return counts


def longest_write_gap_s(history: History, topic: str, partitions: int) -> float:
    """The longest time, in any partition, between two consecutive acknowledged writes:
    under steady load, how long that partition refused or held writes."""
    gaps = [0.0]
    for partition in range(partitions):
        acked = sorted(
            op.completed_s
            for op in history.writes
            if op.topic == topic and op.partition == partition and op.outcome == OK and op.completed_s is not None
        )
        gaps += [later - earlier for earlier, later in itertools.pairwise(acked)]
    return max(gaps)


class CheckedLoad:
    """The workload on ``topic`` (``partitions`` partitions); ``finish`` judges what it saw."""

    def __init__(self, deployment: HostsDeployment, topic: str, partitions: int, via: int) -> None:
        self.deployment, self.topic, self.partitions, self.via = deployment, topic, partitions, via
        self.history = History()
        urls = deployment.urls
        self._writers: list[ProducerWriter | SingleRequestWriter] = [
            ProducerWriter("p0", urls, topic, partitions, "all", self.history),
            SingleRequestWriter("s0", urls, topic, partitions, self.history),
        ]
        self._readers = [Reader("r0", urls, topic, partitions, self.history)]
        self._stop_writers, self._stop_readers = asyncio.Event(), asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> CheckedLoad:
        self._tasks = [asyncio.create_task(writer.run(self._stop_writers)) for writer in self._writers]
        self._tasks += [asyncio.create_task(reader.run(self._stop_readers)) for reader in self._readers]
        return self

    async def stop(self) -> None:
        """Stop everything at once (a scenario that failed)."""
        self._stop_writers.set()
        self._stop_readers.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def finish(self) -> CheckReport:
        """Stop the writers, let the cluster settle, stop the readers, and judge the topic."""
        self._stop_writers.set()
        await asyncio.gather(*self._tasks[: len(self._writers)], return_exceptions=True)
        settled = await asyncio.to_thread(
            wait_for_partitions,
            self.deployment,
            self.via,
            self.topic,
            lambda state: state.settled,
            "settled",
            SETTLE_TIMEOUT_S,
        )
        await self.stop()
        for op in self.history.writes:
            if op.outcome is None:
                op.complete(UNKNOWN, error="never completed")
        high_watermarks = [state.high_watermark for state in settled]
        final_log = await read_final_log(self.deployment.urls, self.topic, high_watermarks)
        replicas = {
            partition: {
                node_id: replica_bytes(self.deployment, node_id, self.topic, partition, state.high_watermark)
                for node_id in state.replica_leos
            }
            for partition, state in enumerate(settled)
        }
        return check_topic(self.history, self.topic, final_log, replicas, durable=True)


async def start_checked_load(deployment: HostsDeployment, topic: str, via: int) -> CheckedLoad:
    """A new ``topic`` (``TOPIC_PARTITIONS`` partitions), once every ISR is full, under the workload."""
    await deployment.create_topic(topic)
    await wait_in_sync(deployment, via, topic)
    return CheckedLoad(deployment, topic, TOPIC_PARTITIONS, via).start()

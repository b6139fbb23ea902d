"""A ``FetchTransport`` that hands each fetch to a leader ``Partition``'s own fetch handler, in process.

The replica_io tests run the real follower loop (``ReplicaFetcher``) against the real
leader side (``serve_replica_fetch``) with no HTTP in between (``fetching``); ``down`` cuts the link.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from broker.clock import wall_clock_ms
from broker.replica_io.fetch_handler import serve_replica_fetch
from broker.replica_io.fetch_transport import FetchTransport, FetchTransportError
from broker.replica_io.fetcher import ReplicaFetcherManager
from broker.replica_io.partition import IsrProposer, Partition
from broker.replication.fetch_session import LeaderSessions
from broker.replication.fetch_wire import FetchRequest, FetchResponse
from tests.unit.replica_io.disk_partition import TOPIC, leadership, no_isr_proposals, partition_on_disk

BROKER_EPOCH = 5


class InProcessTransport:
    """Delivers each fetch to the leader's handler directly; ``failures`` fetches fail first, every one while ``down``.

    ``clock_ms`` is the leader's clock: the handler stamps each round with it.
    """

    def __init__(self, leader: Partition, failures: int = 0, clock_ms: Callable[[], int] = wall_clock_ms) -> None:
        self.leader = leader
        self.clock_ms = clock_ms
        self.sessions = LeaderSessions(new_session_id=lambda: 77)
        self.failures = failures
        self.down = False
        self.requests: list[FetchRequest] = []

    def reachable(self, leader_id: int) -> bool:
        return leader_id == self.leader.local_broker_id

    async def close(self) -> None:
        """Nothing kept between fetches."""

    async def send(self, leader_id: int, request: FetchRequest) -> FetchResponse:
        self.requests.append(request)
        if self.down or self.failures:
            self.failures = max(0, self.failures - 1)
            raise FetchTransportError("the link is down")
        return await serve_replica_fetch(
            request,
            lambda topic, partition: self.leader if (topic, partition) == (TOPIC, 0) else None,
            lambda broker_id: BROKER_EPOCH,
            self.sessions,
            clock_ms=self.clock_ms,
        )


def fetching(follower: Partition, transport: FetchTransport) -> ReplicaFetcherManager:
    """The broker's own follower fetch loop for ``follower``, fetching through ``transport``; close it after."""
    fetchers = ReplicaFetcherManager(
        local_broker_id=follower.local_broker_id,
        broker_epoch=lambda: BROKER_EPOCH,
        transport=transport,
        max_wait_ms=500,
        max_bytes=1 << 20,
    )
    fetchers.update(follower)
    return fetchers


def leader_and_follower(
    tmp_path: Path,
    *,
    min_insync_replicas: int = 1,
    propose_isr: IsrProposer = no_isr_proposals,
    clock_ms: Callable[[], int] = wall_clock_ms,
) -> tuple[Partition, Partition]:
    """Broker 1 leading partition 0 (its ISR changes go to ``propose_isr``) and broker 2 following it."""
    leader = partition_on_disk(tmp_path / "leader", broker_id=1, propose_isr=propose_isr, clock_ms=clock_ms)
    follower = partition_on_disk(tmp_path / "follower", broker_id=2, clock_ms=clock_ms)
    for partition in (leader, follower):
        partition.apply_record(leadership(1, replicas=(1, 2)), min_insync_replicas=min_insync_replicas)
    return leader, follower

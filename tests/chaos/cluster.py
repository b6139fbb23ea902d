"""A 3-broker harness cluster whose brokers reach each other only through cuttable proxies.

Clients use each broker's own port; brokers use the proxies (the ``inter_broker_url``
setting of each broker, ``ClusterSpec.per_broker``), so ``ProxyMesh`` can cut
inter-broker traffic while clients still get through. Every blocking call (HTTP,
process control) must run in a worker thread (``asyncio.to_thread``): the proxies live
on the test's event loop, and a broker answering a describe may ask its peers through
them, so a blocking call on the loop would deadlock until its timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.record.header import iter_batches
from broker.storage.log_manager import partition_directory_name
from tests.chaos.proxy import CuttableProxy, ProxyMesh
from tests.support.brokers import BrokerProcess
from tests.support.cluster import FAST_SETTINGS, Cluster, ClusterSpec
from tests.support.replication import replica_log_bytes
from tests.support.waiting import wait_until

BROKER_COUNT = 3
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
SESSION_TIMEOUT_MS = int(str(FAST_SETTINGS["broker_session_timeout_ms"]))
LAG_TIME_MAX_MS = int(str(FAST_SETTINGS["replica_lag_time_max_ms"]))
"""The harness's fast settings: failures noticed in about two seconds, leadership stays where failover put it."""
CHAOS_SETTINGS = {"log_level": "info"}
"""Over the fast settings: the brokers log every leadership and ISR change, for the post-mortem of a failed run."""
HW_CHECKPOINT_FILE = "replication-offset-checkpoint"
POLL_INTERVAL_S = 0.2
"""How often a wait asks the brokers: they are under the workload, so five times a second, not fifty."""


@dataclass(frozen=True)
class PartitionState:
    """One partition as its leader reports it; ``replica_leos`` maps broker id → LEO (empty when the
    describing broker could not ask the leader).

    ``isr`` is the partition record's; ``leader_isr`` is the committed ISR the leader itself
    holds, which decides whether acks=all is admitted. A broker's watch can show the stored
    record before the leader has applied its own ISR change, so the two differ for a moment.
    ``leader_isr`` is empty when the leader did not answer.
    """

    leader_id: int
    leader_epoch: int
    isr: tuple[int, ...]
    high_watermark: int
    log_end_offset: int
    replica_leos: dict[int, int]
    leader_isr: tuple[int, ...]
    last_stable_offset: int
    replicas: tuple[int, ...] = ()
    """The partition's replica ids, from its record: known even when the describe came from a broker's
    own replica because the leader could not be asked (then ``replica_leos`` is empty)."""

    @property
    def settled(self) -> bool:
        """Led, every replica in sync, every LEO equal to the HW: nothing left in flight."""
        return (
            self.leader_id >= 0
            and len(self.isr) == REPLICATION_FACTOR
            and self.high_watermark == self.log_end_offset
            and len(self.replica_leos) == REPLICATION_FACTOR
            and all(leo == self.high_watermark for leo in self.replica_leos.values())
        )

    @property
    def stable(self) -> bool:
        """Settled, and every transaction decided with its markers below the HW (LSO = HW)."""
        return self.settled and self.last_stable_offset == self.high_watermark


class ChaosCluster:
    """The harness's ``Cluster`` (brokers 1..3 on loopback), one ``CuttableProxy`` in front of each
    broker; on sqlite, or on the harness's etcd that each broker reaches through a proxy of its
    own (``store_mesh``), so a broker can also be cut off from the metadata store (the zombie leader)."""

    def __init__(
        self, cluster: Cluster, proxies: dict[int, CuttableProxy], store_proxies: dict[int, CuttableProxy] | None
    ) -> None:
        self.cluster = cluster
        self.mesh = ProxyMesh(proxies)
        self.store_mesh = ProxyMesh(store_proxies) if store_proxies else None
        for broker_id, broker in cluster.brokers.items():
            proxies[broker_id].upstream_port = broker.port
        self.cluster_id = ""

    @classmethod
    async def create(
        cls, root: Path, etcd: bool = False, kafka: bool = False, settings: dict[str, object] | None = None
    ) -> ChaosCluster:
        """Start the proxies first, on the running loop: their URLs go into the brokers' settings.

        ``etcd``: the metadata store is etcd, reached through a proxy per broker, instead of sqlite.
        ``kafka``: each broker also runs a Kafka listener (``Cluster.bootstrap``), which clients reach
        directly. ``settings`` go over ``CHAOS_SETTINGS``.
        """
        broker_ids = range(1, BROKER_COUNT + 1)
        proxies = {broker_id: await CuttableProxy(0).start() for broker_id in broker_ids}
        store_proxies = {broker_id: await CuttableProxy(0).start() for broker_id in broker_ids} if etcd else None
        spec = ClusterSpec(
            brokers=BROKER_COUNT,
            settings={**CHAOS_SETTINGS, **(settings or {})},
            per_broker={broker_id: {"inter_broker_url": proxy.url} for broker_id, proxy in proxies.items()},
            store="etcd" if etcd else "sqlite",
            kafka=kafka,
        )
        return cls(Cluster(spec, root), proxies, store_proxies)

    @property
    def meshes(self) -> list[ProxyMesh]:
        return [self.mesh] + ([self.store_mesh] if self.store_mesh else [])

    def heal_all(self) -> None:
        for mesh in self.meshes:
            mesh.heal_all()

    @property
    def brokers(self) -> dict[int, BrokerProcess]:
        return self.cluster.brokers

    @property
    def servers(self) -> list[str]:
        return [broker.url for broker in self.brokers.values()]

    def start(self) -> None:
        """Start the brokers (blocking: call it in a worker thread)."""
        self.cluster.root.mkdir(parents=True, exist_ok=True)
        self.cluster.start(before_brokers=self._route_store_through_proxies)
        self.cluster_id = self.cluster.cluster_id

    def _route_store_through_proxies(self, cluster: Cluster) -> None:
        if self.store_mesh is None:
            return
        assert cluster.etcd is not None
        for broker_id, proxy in self.store_mesh.proxies.items():
            proxy.upstream_port = cluster.etcd.client_port
            cluster.brokers[broker_id].metadata_store = f"etcd://127.0.0.1:{proxy.port}"

    def kill_all(self) -> None:
        """SIGKILL every broker: the quickest stop, and recovery must cope with it anyway."""
        for broker in self.brokers.values():
            broker.resume()
            broker.kill()

    async def close(self) -> None:
        self.heal_all()
        self.kill_all()
        await asyncio.to_thread(self.cluster.shutdown)
        for mesh in self.meshes:
            for proxy in mesh.proxies.values():
                await proxy.close()

    def create_topic(self, name: str, partitions: int) -> None:
        configs = {"min.insync.replicas": MIN_INSYNC_REPLICAS}
        self.cluster.create_topic(name, partitions, replication_factor=REPLICATION_FACTOR, configs=configs)

    def answered_states(self, topic: str) -> list[PartitionState] | None:
        """``topic``'s partitions, or None when the broker asked answers anything but 200 (one is restarting)."""
        status, reply = self.cluster.v3("GET", f"/topics/{topic}/partitions", timeout_s=5)
        return [partition_state(item) for item in reply["data"]] if status == 200 else None

    def partition_states(self, topic: str) -> list[PartitionState]:
        states = self.answered_states(topic)
        assert states is not None, f"no description of {topic}'s partitions"
        return states

    def leader_of(self, topic: str, partition: int) -> int:
        return self.partition_states(topic)[partition].leader_id

    def controller_id(self) -> int:
        return self.cluster.controller_id()

    def wait_healed(self, topics: list[str], timeout_s: float) -> dict[str, list[PartitionState]]:
        """Until every broker is registered and every partition is led with its full ISR (writes may go on)."""
        return self._wait_for(
            topics, timeout_s, lambda s: s.leader_id >= 0 and len(s.isr) == REPLICATION_FACTOR, "healed"
        )

    def wait_settled(self, topics: list[str], timeout_s: float) -> dict[str, list[PartitionState]]:
        """Until every broker is registered and every partition is settled (no writes in flight)."""
        return self._wait_for(topics, timeout_s, lambda state: state.settled, "settled")

    def wait_stable(self, topics: list[str], timeout_s: float) -> dict[str, list[PartitionState]]:
        """Until every partition is settled and stable (no transaction left undecided or unmarked)."""
        return self._wait_for(topics, timeout_s, lambda state: state.stable, "stable")

    def _wait_for(
        self, topics: list[str], timeout_s: float, condition: Callable[[PartitionState], bool], what: str
    ) -> dict[str, list[PartitionState]]:
        expected = set(self.brokers)

        def reached() -> dict[str, list[PartitionState]] | None:
            for broker in self.brokers.values():
                if not broker.alive:
                    raise AssertionError(f"broker {broker.node_id} is not running:\n{broker.log_tail()}")
                status, reply = self.cluster.v3("GET", "/brokers", via=broker.node_id, timeout_s=5)
                if status != 200 or {b["broker_id"] for b in reply["data"]} != expected:
                    return None
            states: dict[str, Any] = {topic: self.answered_states(topic) for topic in topics}
            if all(parts is not None and all(condition(state) for state in parts) for parts in states.values()):
                return states
            return None

        what = f"brokers {sorted(expected)} registered and every partition of {topics} {what}"
        return wait_until(reached, what, timeout_s, POLL_INTERVAL_S)

    def replica_bytes_live(self, topic: str, partition: int, broker_id: int, high_watermark: int) -> bytes:
        """Raw batches below ``high_watermark`` read straight from the segment files, read-only.

        Safe on a running broker once the partition is settled and no longer written:
        nothing is opened for writing and no recovery runs.
        """
        directory = self.brokers[broker_id].data_dir / partition_directory_name(topic, partition)
        raw = b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))
        return batches_below(raw, high_watermark)

    def replica_bytes_stopped(self, topic: str, partition: int, broker_id: int, high_watermark: int) -> bytes:
        """The same, through ``PartitionLog.open`` (recovery runs, as at the broker's next start), for a stopped broker."""
        return batches_below(replica_log_bytes(self.cluster, broker_id, topic, partition), high_watermark)


def batches_below(raw: bytes, high_watermark: int) -> bytes:
    """The prefix of ``raw`` made of whole batches that end below ``high_watermark``."""
    end = 0
    position = 0
    for header in iter_batches(raw, check_crc=True):
        position += header.size
        if header.last_offset < high_watermark:
            end = position
        else:
            break
    return raw[:end]


def partition_state(item: dict) -> PartitionState:
    rows = item.get("replicas_state") or []
    leos = {int(row["broker_id"]): int(row["log_end_offset"]) for row in rows}
    return PartitionState(
        leader_id=int(item["leader_id"]),
        leader_epoch=int(item["leader_epoch"]),
        isr=tuple(item["isr"]),
        high_watermark=int(item["high_watermark"]),
        log_end_offset=int(item["log_end_offset"]),
        replica_leos=leos,
        leader_isr=tuple(int(row["broker_id"]) for row in rows if row["in_sync"]),
        last_stable_offset=int(item["last_stable_offset"]),
        replicas=tuple(int(replica) for replica in item.get("replica_ids", ())),
    )
